"""Calling a user's function safely: time limit, captured output, exceptions turned into data.

Whatever the function does -- raise, hang, print, warn, return a tensor, crash the
interpreter -- the harness gets an :class:`Outcome` back and never crashes itself.

Isolation modes:

* ``process`` (default where ``fork`` exists): the function runs in a forked worker process,
  reused from call to call; on a time-out the worker is killed and a new one forked for the
  next call, so a hang costs one time limit and nothing keeps running.  A crash of the worker
  (segfault, ``os._exit``) is reported as ``crashed``.
* ``thread``: a daemon thread per call; a hung call cannot be stopped (it keeps running in
  the background), so the harness stops calling the function after it hangs.
* ``none``: a plain call in this thread, no time limit (for debugging the harness).
"""
from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

OUTPUT_LIMIT = 2000


@dataclass
class Outcome:
    """What one call did.

    ``kind`` is ``ok`` (``value`` holds the result converted by :func:`to_plain`),
    ``raised`` (``error`` is ``"TypeName: message"``), ``timeout`` or ``crashed``.
    ``type_name`` describes the returned object before conversion (e.g. ``torch.Tensor``).
    """

    kind: str
    value: Any = None
    type_name: str = ""
    error: str = ""
    traceback: str = ""
    stdout: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def type_name(obj: Any) -> str:
    t = type(obj)
    mod = t.__module__
    name = t.__qualname__
    if mod in ("builtins",):
        base = name
    else:
        base = f"{mod.split('.')[0]}.{name}" if mod.startswith(("torch", "numpy")) else f"{mod}.{name}"
    if isinstance(obj, (tuple, list)) and len(obj) <= 5:
        return f"{base}[{', '.join(type_name(x) for x in obj)}]"
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return f"{base}(shape={tuple(obj.shape)}, dtype={obj.dtype})"
    return base


class Opaque:
    """Stand-in for a returned object the harness cannot use (kept as its repr)."""

    def __init__(self, obj: Any):
        self.type_name = type_name(obj)
        text = repr(obj)
        self.text = text if len(text) <= 200 else text[:200] + "..."

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


def to_plain(obj: Any) -> Any:
    """Tensors -> numpy arrays, containers converted element-wise, other objects -> :class:`Opaque`.

    Numbers, numpy scalars and arrays, strings and None pass through unchanged.
    """
    if obj is None or isinstance(obj, (bool, int, float, complex, str, np.generic, np.ndarray)):
        return obj
    if hasattr(obj, "detach") and hasattr(obj, "cpu") and hasattr(obj, "numpy"):  # torch.Tensor
        try:
            return obj.detach().cpu().numpy()
        except Exception:  # e.g. bfloat16
            return obj.detach().cpu().float().numpy()
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_plain(x) for x in obj) if isinstance(obj, list) else tuple(to_plain(x) for x in obj)
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return Opaque(obj)


def to_torch(obj: Any) -> Any:
    """numpy arrays -> CPU tensors of the same dtype (containers element-wise)."""
    import torch

    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj).copy())
    if isinstance(obj, tuple):
        return tuple(to_torch(x) for x in obj)
    if isinstance(obj, list):
        return [to_torch(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_torch(v) for k, v in obj.items()}
    return obj


def _invoke(func: Callable, args: Tuple, kwargs: Dict, arrays: str) -> Outcome:
    """Run one call in the current thread with output and warnings captured."""
    buf = io.StringIO()
    start = time.perf_counter()
    try:
        if arrays == "torch":
            args, kwargs = to_torch(args), to_torch(kwargs)
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = func(*args, **kwargs)
        return Outcome("ok", to_plain(result), type_name(result), stdout=buf.getvalue()[:OUTPUT_LIMIT],
                       seconds=time.perf_counter() - start)
    except BaseException as exc:  # the user's error is data, whatever it is
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exc()
        return Outcome("raised", error=f"{type(exc).__name__}: {exc}"[:OUTPUT_LIMIT],
                       traceback=tb[-OUTPUT_LIMIT:], stdout=buf.getvalue()[:OUTPUT_LIMIT],
                       seconds=time.perf_counter() - start)


def _single_threaded_after_fork() -> None:  # pragma: no cover - runs in the child
    """OpenMP thread pools (libgomp, used by torch and by our C library) do not survive fork():
    a parallel region in the child waits forever for threads that only existed in the parent.
    The worker therefore runs single-threaded."""
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["RC_NUM_THREADS"] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _worker_main(conn, func: Callable, arrays: str) -> None:  # pragma: no cover - runs in the child
    _single_threaded_after_fork()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        args, kwargs = msg
        outcome = _invoke(func, args, kwargs, arrays)
        try:
            conn.send(outcome)
        except Exception as exc:  # an unpicklable value slipped through
            conn.send(Outcome("ok", Opaque(outcome.value), outcome.type_name,
                              error=f"unpicklable result ({exc})"))


class Runner:
    """Calls ``func`` with a time limit under one isolation mode (see the module docstring)."""

    def __init__(self, func: Callable, timeout: float = 10.0, isolation: str = "auto", arrays: str = "numpy"):
        if isolation == "auto":
            isolation = "process" if "fork" in multiprocessing.get_all_start_methods() else "thread"
        if isolation not in ("process", "thread", "none"):
            raise ValueError(f"isolation: expected 'process', 'thread', 'none' or 'auto', got {isolation!r}")
        if arrays not in ("numpy", "torch"):
            raise ValueError(f"arrays: expected 'numpy' or 'torch', got {arrays!r}")
        self.func = func
        self.timeout = float(timeout)
        self.isolation = isolation
        self.arrays = arrays
        self.hangs = 0
        self.calls = 0
        self._proc = None
        self._conn = None

    # -- process isolation ------------------------------------------------------------
    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, self.func, self.arrays), daemon=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "fork() in a multi-threaded process" (python >= 3.12)
            proc.start()
        child.close()
        self._proc, self._conn = proc, parent

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        try:
            if not kill:
                self._conn.send(None)
                self._proc.join(1.0)
        except (OSError, BrokenPipeError):
            pass
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5.0)
        self._conn.close()
        self._proc = self._conn = None

    def _call_process(self, args, kwargs) -> Outcome:
        if self._proc is None or not self._proc.is_alive():
            self._stop(kill=True)
            self._start()
        start = time.perf_counter()
        try:
            self._conn.send((args, kwargs))
        except Exception as exc:
            return Outcome("raised", error=f"the inputs could not be sent to the worker: {exc}")
        if not self._conn.poll(self.timeout):
            self._stop(kill=True)
            return Outcome("timeout", seconds=time.perf_counter() - start)
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            code = None
            if self._proc is not None:
                self._proc.join(2.0)
                code = self._proc.exitcode
            self._stop(kill=True)
            return Outcome("crashed", error=f"the worker process died (exit code {code})",
                           seconds=time.perf_counter() - start)

    # -- thread isolation -------------------------------------------------------------
    def _call_thread(self, args, kwargs) -> Outcome:
        box: Dict[str, Outcome] = {}

        def target():
            box["outcome"] = _invoke(self.func, args, kwargs, self.arrays)

        start = time.perf_counter()
        th = threading.Thread(target=target, daemon=True, name="retrieval-conformance-call")
        th.start()
        th.join(self.timeout)
        if th.is_alive():
            return Outcome("timeout", seconds=time.perf_counter() - start)
        return box["outcome"]

    def call(self, args: Tuple, kwargs: Optional[Dict] = None) -> Outcome:
        """Call the function once; never raises for anything the function does."""
        kwargs = kwargs or {}
        self.calls += 1
        if self.isolation == "process":
            out = self._call_process(args, kwargs)
        elif self.isolation == "thread":
            out = self._call_thread(args, kwargs)
        else:
            out = _invoke(self.func, args, kwargs, self.arrays)
        if out.kind == "timeout":
            self.hangs += 1
        return out

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self._stop(kill=True)
        except Exception:
            pass


def torch_available() -> Optional[str]:
    """None when torch can be imported, else why not."""
    try:
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        return f"torch is not importable ({type(exc).__name__}: {exc})"
    return None

