"""Calling a user's function safely: time limit, captured output, exceptions turned into data.

Whatever the function does -- raise, hang, print, write progress bars to stderr, modify its
inputs, warn, return a tensor, crash the interpreter -- the harness gets an :class:`Outcome`
back and never crashes itself.

Isolation modes:

* ``process`` (default where ``fork`` exists): the function runs in a forked worker process,
  reused from call to call; on a time-out the worker is killed and a new one forked for the
  next call, so a hang costs one time limit and nothing keeps running.  A crash of the worker
  (segfault, ``os._exit``) is reported as ``crashed`` (with what the function wrote, including
  the Python-level fault report of a segfault).  The OS-level file descriptors 1 and 2 are
  redirected to temporary files during each call, so even C code writing to them is captured.
* ``thread``: a daemon thread per call; a hung call cannot be stopped (it keeps running in
  the background), so the harness stops calling the function after it hangs.
* ``none``: a plain call in this thread, no time limit (for debugging the harness).

In every mode the function's ``sys.stdout``/``sys.stderr`` output lands in
:attr:`Outcome.stdout`/:attr:`Outcome.stderr`, never in the harness's own output.  (In
``thread``/``none`` mode only Python-level writes of the calling thread are captured: output
of threads the function starts, and writes to the file descriptors, are not.)

The function always gets private copies of the arguments; after the call they are compared
with pristine copies, and arguments the function modified are listed in
:attr:`Outcome.mutated`.  The caller's arrays are never modified.

Warm-up: a JIT (numba, torch.compile) compiles on the first call, which can take far longer
than a normal call.  A call is a *warm-up* when no call has completed yet in the process that
runs it (the first call of a :class:`Runner`, and in ``process`` mode the first call in each
new worker after a time-out or crash); it gets ``warmup_timeout`` instead of ``timeout``.
"""
from __future__ import annotations

import copy
import io
import math
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

OUTPUT_LIMIT = 2000
WARMUP_MIN_SECONDS = 60.0  # the default warm-up limit is max(WARMUP_MIN_SECONDS, WARMUP_FACTOR * timeout)
WARMUP_FACTOR = 6.0


@dataclass
class Outcome:
    """What one call did.

    ``kind`` is ``ok`` (``value`` holds the result converted by :func:`to_plain`),
    ``raised`` (``error`` is ``"TypeName: message"``, its first OUTPUT_LIMIT characters), ``timeout`` or
    ``crashed``.
    ``type_name`` describes the returned object before conversion (e.g. ``torch.Tensor``).
    ``stdout``/``stderr``: what the function wrote (at most :data:`OUTPUT_LIMIT` characters each,
    the last part, see :func:`clip_output`).  ``seconds``: how long the call took.
    ``mutated``: labels of the arguments the function modified in place, e.g.
    ``"argument 2 (query_labels)"`` or ``"keyword argument k"`` (empty when unknown, i.e. after a
    time-out or crash).  ``warmup``: the call was a warm-up (see the module docstring) and ran
    under the warm-up time limit.  ``limit``: the time limit that applied (None: no limit).
    """

    kind: str
    value: Any = None
    type_name: str = ""
    error: str = ""
    traceback: str = ""
    stdout: str = ""
    seconds: float = 0.0
    stderr: str = ""
    mutated: Tuple[str, ...] = ()
    warmup: bool = False
    limit: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def clip_output(text: str, limit: int = OUTPUT_LIMIT, cut: int = 0) -> str:
    """``text`` if it has at most ``limit`` characters, else its last part behind a
    ``"[... N characters cut]"`` line, ``limit`` characters in all.  ``cut`` counts characters
    already dropped before ``text``."""
    if cut <= 0 and len(text) <= limit:
        return text
    keep = limit
    for _ in range(3):  # the marker's length depends on the count it shows
        marker = f"[... {cut + len(text) - keep} characters cut]\n"
        keep = max(0, min(len(text), limit - len(marker)))
    marker = f"[... {cut + len(text) - keep} characters cut]\n"
    return (marker + text[len(text) - keep:])[-limit:] if keep else marker[:limit]


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
        try:
            return f"{base}(shape={tuple(obj.shape)}, dtype={obj.dtype})"
        except Exception:
            return base
    return base


class Opaque:
    """Stand-in for a returned object the harness cannot use (kept as its repr)."""

    def __init__(self, obj: Any):
        self.type_name = type_name(obj)
        try:
            text = repr(obj)
        except Exception as exc:  # a broken __repr__ is the function's problem, not ours
            text = f"<repr() raised {type(exc).__name__}>"
        self.text = text if len(text) <= 200 else text[:200] + "..."

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


def to_plain(obj: Any) -> Any:
    """Tensors -> numpy arrays, containers converted element-wise, other objects -> :class:`Opaque`.

    Numbers, numpy scalars and arrays, strings and None pass through unchanged.
    """
    if obj is None or isinstance(obj, (bool, int, float, complex, str, np.generic, np.ndarray)):
        return obj
    if _is_tensor(obj):
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


# -- input copies and mutation detection --------------------------------------------------------

def _is_tensor(obj: Any) -> bool:
    return hasattr(obj, "detach") and hasattr(obj, "cpu") and hasattr(obj, "numpy")


class _Uncopyable:
    """Marks a value that could not be copied, so it cannot be checked for changes either."""


_UNCOPYABLE = _Uncopyable()
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, np.generic)


def _snapshot(obj: Any) -> Any:
    """An independent copy: arrays and tensors copied, containers element-wise, other objects deep-copied."""
    if isinstance(obj, _IMMUTABLE):
        return obj
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if _is_tensor(obj) and hasattr(obj, "clone"):
        try:
            return obj.detach().clone()
        except Exception:
            return _UNCOPYABLE
    if type(obj) is list:
        return [_snapshot(x) for x in obj]
    if type(obj) is tuple:
        return tuple(_snapshot(x) for x in obj)
    if type(obj) is dict:
        return {k: _snapshot(v) for k, v in obj.items()}
    try:
        return copy.deepcopy(obj)
    except Exception:
        return _UNCOPYABLE


def _same_tensor(now: Any, before: Any) -> bool:
    if not _is_tensor(now) or tuple(now.shape) != tuple(before.shape) or now.dtype != before.dtype:
        return False
    now, before = now.detach(), before.detach()
    if now.is_floating_point() or now.is_complex():
        return bool(((now == before) | (now.isnan() & before.isnan())).all())
    return bool((now == before).all())


def _same(now: Any, before: Any) -> bool:
    """Whether ``now`` (what the function got) still equals ``before`` (its pristine copy).
    Values that cannot be compared count as unchanged."""
    if before is _UNCOPYABLE or now is before:
        return True
    try:
        if isinstance(before, np.ndarray):
            if not isinstance(now, np.ndarray) or now.shape != before.shape or now.dtype != before.dtype:
                return False
            try:
                return bool(np.array_equal(now, before, equal_nan=True))
            except TypeError:  # equal_nan on non-numeric dtypes
                return bool(np.array_equal(now, before))
        if _is_tensor(before):
            return _same_tensor(now, before)
        if isinstance(before, (list, tuple)):
            return (type(now) is type(before) and len(now) == len(before)
                    and all(_same(a, b) for a, b in zip(now, before)))
        if isinstance(before, dict):
            return (isinstance(now, dict) and list(now) == list(before)
                    and all(_same(now[k], before[k]) for k in before))
        if isinstance(before, float) and isinstance(now, float) and math.isnan(before):
            return math.isnan(now)
        equal = now == before
        return bool(equal) if isinstance(equal, (bool, np.bool_)) else True
    except Exception:
        return True


def _argument_label(index: int, names: Sequence[str]) -> str:
    if index < len(names) and names[index]:
        return f"argument {index + 1} ({names[index]})"
    return f"argument {index + 1}"


def _mutations(args: Sequence, kwargs: Dict[str, Any], pristine: Tuple[Sequence, Dict[str, Any]],
               names: Sequence[str]) -> Tuple[str, ...]:
    before_args, before_kwargs = pristine
    out = [_argument_label(i, names) for i, (now, before) in enumerate(zip(args, before_args))
           if not _same(now, before)]
    out += [f"keyword argument {key}" for key in kwargs
            if key in before_kwargs and not _same(kwargs[key], before_kwargs[key])]
    return tuple(out)


# -- output capture ----------------------------------------------------------------------------

_ROUTES_LOCK = threading.Lock()
_ROUTES: Dict[int, Tuple[io.StringIO, io.StringIO]] = {}  # thread id -> (stdout, stderr) buffers


class _ThreadRoutedStream:
    """Stands in for ``sys.stdout``/``sys.stderr`` while calls run in this process: writes of a
    thread running a call go to that call's buffer, all other writes to the original stream.
    (Replacing ``sys.stdout`` outright would swallow the harness's own output while a call
    runs in a thread, and forever after a call hangs.)"""

    def __init__(self, original: Any, index: int):
        self._original = original
        self._index = index

    def _target(self) -> Any:
        bufs = _ROUTES.get(threading.get_ident())
        return bufs[self._index] if bufs is not None else self._original

    def write(self, text: str) -> int:
        target = self._target()
        if target is None:  # no console (pythonw)
            return len(text)
        return target.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        target = self._target()
        if target is not None:
            target.flush()

    def isatty(self) -> bool:
        target = self._target()
        if target is None or target is not self._original:
            return False  # captured: progress bars should not draw for a terminal
        try:
            return bool(target.isatty())
        except Exception:
            return False

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self._original, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._original, "errors", None) or "strict"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


# Routers are kept alive after they are taken out of ``sys.stdout``: CPython's print() (before
# 3.12) holds a *borrowed* reference to sys.stdout while it writes, so a router freed because a
# call's thread put the original stream back would crash a print() running in another thread.
_ROUTERS: Dict[Tuple[int, int], _ThreadRoutedStream] = {}


def _router_for(original: Any, index: int) -> _ThreadRoutedStream:
    key = (id(original), index)
    router = _ROUTERS.get(key)
    if router is None or router._original is not original:
        router = _ROUTERS[key] = _ThreadRoutedStream(original, index)
        while len(_ROUTERS) > 256:  # long gone streams (e.g. pytest's per-test captures)
            del _ROUTERS[next(iter(_ROUTERS))]
    return router


class _PythonCapture:
    """Captures ``sys.stdout``/``sys.stderr`` writes of the current thread (``thread``/``none`` mode)."""

    stdout = ""
    stderr = ""

    def __enter__(self) -> "_PythonCapture":
        self._ident = threading.get_ident()
        self._bufs = (io.StringIO(), io.StringIO())
        with _ROUTES_LOCK:
            _ROUTES[self._ident] = self._bufs
            for index, name in enumerate(("stdout", "stderr")):
                if not isinstance(getattr(sys, name), _ThreadRoutedStream):
                    setattr(sys, name, _router_for(getattr(sys, name), index))
        return self

    def __exit__(self, *exc) -> None:
        with _ROUTES_LOCK:
            _ROUTES.pop(self._ident, None)
            if not _ROUTES:  # no call running any more: put the original streams back
                for name in ("stdout", "stderr"):
                    stream = getattr(sys, name)
                    if isinstance(stream, _ThreadRoutedStream):
                        setattr(sys, name, stream._original)
        self.stdout = clip_output(self._bufs[0].getvalue())
        self.stderr = clip_output(self._bufs[1].getvalue())


_LIBC: Any = None


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: C code's buffered ``printf`` output reaches its file descriptor now."""
    global _LIBC
    try:
        if _LIBC is None:
            import ctypes

            _LIBC = ctypes.CDLL(None)
        _LIBC.fflush(None)
    except Exception:
        _LIBC = False  # not available here; do not try again


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _read_back(fd: int, budget: int = 4 * OUTPUT_LIMIT + 16, trim: Optional[Callable[[str], str]] = None) -> str:
    """What a call wrote to the capture file ``fd`` (the last ``budget`` bytes, ``trim``-med and
    clipped), read without moving the file offset."""
    try:
        size = os.fstat(fd).st_size
        tail = min(size, budget)
        data = os.pread(fd, tail, size - tail) if tail else b""
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if trim is not None:
        return clip_output(trim(text), cut=size - tail)  # dropped frames are not "cut" output
    return clip_output(text, cut=size - tail)


def _trim_fault_report(text: str) -> str:
    """Shortens faulthandler's report of a crash (``Fatal Python error: Segmentation fault`` and
    the stack, most recent call first) to the function's frames: the harness's and pytest's
    frames below them and the list of extension modules are dropped."""
    start = text.find("Fatal Python error")
    if start < 0:
        return text
    out = [text[:start]]
    skipping = False
    for line in text[start:].splitlines(keepends=True):
        is_frame = line.lstrip().startswith("File ")
        if is_frame and __file__ in line and not skipping:
            skipping = True
            out.append("  ... (the harness's frames)\n")
            continue
        if skipping and is_frame:
            continue
        skipping = False
        if not line.startswith("Extension modules:"):
            out.append(line)
    return "".join(out)


class _FdCapture:
    """Captures a call's output in the worker process at the OS level: file descriptors 1 and 2
    point to the worker's capture files during the call, and ``sys.stdout``/``sys.stderr`` write
    straight to them (so Python and C output keep their order)."""

    stdout = ""
    stderr = ""

    def __init__(self, files: Tuple[Any, Any]):
        self.fds = (files[0].fileno(), files[1].fileno())
        # made once and kept: a thread of the function may still be inside print() when they are swapped out
        self._streams = (self._text_stream(1), self._text_stream(2))

    def __enter__(self) -> "_FdCapture":
        _flush_python_streams()
        _flush_c_stdio()
        for fd in self.fds:  # empty the files: each call's output starts at offset 0
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        self._saved_fds = (os.dup(1), os.dup(2))
        self._saved_streams = (sys.stdout, sys.stderr)
        os.dup2(self.fds[0], 1)
        os.dup2(self.fds[1], 2)
        sys.stdout, sys.stderr = self._streams
        return self

    @staticmethod
    def _text_stream(fd: int) -> io.TextIOWrapper:
        # unbuffered: every write reaches the descriptor at once, interleaved correctly with C output
        return io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                write_through=True)

    def __exit__(self, *exc) -> None:
        _flush_python_streams()
        _flush_c_stdio()
        sys.stdout, sys.stderr = self._saved_streams
        for fd, saved in zip((1, 2), self._saved_fds):
            os.dup2(saved, fd)
            os.close(saved)
        self.stdout = _read_back(self.fds[0])
        self.stderr = _read_back(self.fds[1])


# -- one call ----------------------------------------------------------------------------------

def _format_exception(exc: BaseException) -> str:
    tb = exc.__traceback__
    tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb  # drop the harness's own frame
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _invoke(func: Callable, args: Tuple, kwargs: Dict, arrays: str, names: Sequence[str] = (),
            owned: bool = False, capture: Any = None) -> Outcome:
    """Run one call in the current thread with output and warnings captured.

    ``owned``: ``args``/``kwargs`` are private to this call (unpickled in the worker), so the
    function may get them directly; otherwise it gets copies and the caller's objects stay as
    they are.  ``capture``: a :class:`_FdCapture` or :class:`_PythonCapture` (the default).
    """
    capture = _PythonCapture() if capture is None else capture
    start = time.perf_counter()
    try:
        call_args, call_kwargs = (tuple(args), dict(kwargs)) if owned else (_snapshot(tuple(args)), _snapshot(kwargs))
        if arrays == "torch":
            call_args, call_kwargs = to_torch(call_args), to_torch(call_kwargs)
        if owned or arrays == "torch":
            pristine = (_snapshot(call_args), _snapshot(call_kwargs))
        else:
            pristine = (tuple(args), kwargs)  # the caller's objects: the function never sees them
    except Exception as exc:  # e.g. torch missing with arrays='torch'
        return Outcome("raised", error=f"{type(exc).__name__}: {exc}"[:OUTPUT_LIMIT],
                       traceback=clip_output(traceback.format_exc()), seconds=time.perf_counter() - start)
    result: Any = None
    failure: Optional[BaseException] = None
    with capture:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            try:
                result = func(*call_args, **call_kwargs)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the user's error is data, whatever it is (SystemExit too)
                failure = exc
            seconds = time.perf_counter() - start
    mutated = _mutations(call_args, call_kwargs, pristine, names)
    common = dict(stdout=capture.stdout, stderr=capture.stderr, seconds=seconds, mutated=mutated)
    if failure is not None:
        return Outcome("raised", error=f"{type(failure).__name__}: {failure}"[:OUTPUT_LIMIT],
                       traceback=clip_output(_format_exception(failure)), **common)
    try:
        return Outcome("ok", to_plain(result), type_name(result), **common)
    except Exception as exc:
        return Outcome("raised", error=f"the returned {type(result).__name__} could not be read: "
                                       f"{type(exc).__name__}: {exc}", **common)


# -- the worker process ------------------------------------------------------------------------

def _single_threaded_after_fork() -> None:  # pragma: no cover - runs in the child
    """OpenMP thread pools (libgomp, used by torch and by our C library) do not survive fork():
    a parallel region in the child waits forever for threads that only existed in the parent.
    The worker therefore runs single-threaded."""
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["RC_NUM_THREADS"] = "1"
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _worker_main(conn, func: Callable, arrays: str, files: Tuple[Any, Any]) -> None:  # pragma: no cover - child
    _single_threaded_after_fork()
    try:  # a segfault's Python traceback goes to fd 2, i.e. into the capture file during a call
        import faulthandler

        faulthandler.enable(file=2, all_threads=False)
    except Exception:
        pass
    capture = _FdCapture(files)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        args, kwargs, names = msg
        outcome = _invoke(func, args, kwargs, arrays, names, owned=True, capture=capture)
        try:
            conn.send(outcome)
        except Exception as exc:  # an unpicklable value slipped through
            conn.send(replace(outcome, value=Opaque(outcome.value), error=f"unpicklable result ({exc})"))


def _exit_text(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            return f"exit code {code}, killed by signal {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


def _seconds_text(seconds: float) -> str:
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 0.005:
        return f"{seconds:.2f} s"
    return "< 0.01 s"


class Runner:
    """Calls ``func`` with a time limit under one isolation mode (see the module docstring).

    ``timeout``: seconds a call may take.  ``warmup_timeout``: seconds a warm-up call may take
    (None: ``max(60, 6 * timeout)``; never less than ``timeout``).  ``arrays='torch'``: numpy
    arrays in the arguments are turned into CPU tensors (in the worker) before the call.

    Counters: ``calls``; ``hangs`` (time-outs); ``slow_calls`` (completed calls, warm-ups
    excluded, that took more than half of ``timeout``); ``max_seconds`` (the longest completed
    call, warm-ups excluded; 0.0 when there was none); ``warmup_seconds`` (how long the first
    completed warm-up call took; None when none completed).  :meth:`timing_text` says it in words.
    """

    def __init__(self, func: Callable, timeout: float = 10.0, isolation: str = "auto", arrays: str = "numpy",
                 warmup_timeout: Optional[float] = None):
        if isolation == "auto":
            isolation = "process" if "fork" in multiprocessing.get_all_start_methods() else "thread"
        if isolation not in ("process", "thread", "none"):
            raise ValueError(f"isolation: expected 'process', 'thread', 'none' or 'auto', got {isolation!r}")
        if arrays not in ("numpy", "torch"):
            raise ValueError(f"arrays: expected 'numpy' or 'torch', got {arrays!r}")
        self.func = func
        self.timeout = float(timeout)
        self.warmup_timeout = max(self.timeout, default_warmup_timeout(self.timeout) if warmup_timeout is None
                                  else float(warmup_timeout))
        self.isolation = isolation
        self.arrays = arrays
        self.hangs = 0
        self.calls = 0
        self.slow_calls = 0
        self.max_seconds = 0.0
        self.warmup_seconds: Optional[float] = None
        self.warmups = 0  # calls that ran as warm-ups
        self._timed_calls = 0  # completed calls after the warm-up
        self._longest_warmup: Optional[float] = None
        self._warm = False  # a call has completed in the process that runs the next call
        self._proc = None
        self._conn = None
        self._files: Optional[Tuple[Any, Any]] = None

    # -- limits and timings -------------------------------------------------------------
    def _limit(self, warmup: bool) -> float:
        if not warmup:
            return self.timeout
        if self._longest_warmup is None:
            return self.warmup_timeout
        # a new worker re-compiles: about as long as the first warm-up took, with room to spare
        return max(self.timeout, min(self.warmup_timeout, self.timeout + 2.0 * self._longest_warmup))

    def _record(self, out: Outcome, warmup: bool, ran: bool = True) -> None:
        out.warmup = warmup
        if not ran:  # the inputs never reached the function
            return
        if warmup:
            self.warmups += 1
        if out.kind == "timeout":
            self.hangs += 1
        if out.kind not in ("ok", "raised"):
            return
        self._warm = True
        if warmup:
            if self.warmup_seconds is None:
                self.warmup_seconds = out.seconds
            self._longest_warmup = max(self._longest_warmup or 0.0, out.seconds)
        else:
            self._timed_calls += 1
            self.max_seconds = max(self.max_seconds, out.seconds)
            if out.seconds > self.timeout / 2:
                self.slow_calls += 1

    def timing_text(self) -> str:
        """E.g. ``"the first call took 12.3 s (allowed as a warm-up); later calls at most 0.02 s"``."""
        parts = []
        if self.warmup_seconds is not None:
            allowed = " (allowed as a warm-up)" if self.warmup_seconds > self.timeout else ""
            parts.append(f"the first call took {_seconds_text(self.warmup_seconds)}{allowed}")
        if self._timed_calls:
            parts.append(f"later calls at most {_seconds_text(self.max_seconds)}")
        if self.slow_calls:
            parts.append(f"{self.slow_calls} call{'s' if self.slow_calls != 1 else ''} took more than half "
                         f"the time limit of {self.timeout:g} s")
        return "; ".join(parts)

    # -- process isolation ------------------------------------------------------------
    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        files = (tempfile.TemporaryFile(prefix="rc-stdout-"), tempfile.TemporaryFile(prefix="rc-stderr-"))
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, self.func, self.arrays, files), daemon=True)
        _flush_python_streams()  # else the child inherits (and may write again) pending output
        _flush_c_stdio()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "fork() in a multi-threaded process" (python >= 3.12)
            proc.start()
        child.close()
        self._proc, self._conn, self._files = proc, parent, files
        self._warm = False  # a new process: a JIT compiles again

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
        for f in self._files or ():
            try:
                f.close()
            except OSError:
                pass
        self._proc = self._conn = self._files = None

    def _partial_output(self) -> Dict[str, str]:
        """What the worker wrote during an unfinished call (time-out, crash)."""
        if self._files is None:
            return {}
        return {"stdout": _read_back(self._files[0].fileno()),
                "stderr": _read_back(self._files[1].fileno(), 64 * 1024, trim=_trim_fault_report)}

    def _call_process(self, args, kwargs, names) -> Tuple[Outcome, bool, bool]:
        """The outcome, whether the call was a warm-up, whether the function was called at all."""
        if self._proc is None or not self._proc.is_alive():
            self._stop(kill=True)
            self._start()
        warmup = not self._warm
        limit = self._limit(warmup)
        start = time.perf_counter()
        try:
            self._conn.send((args, kwargs, tuple(names)))
        except Exception as exc:
            out = Outcome("raised", error=f"the inputs could not be sent to the worker: {exc}", limit=limit)
            return out, warmup, False
        if not self._conn.poll(limit):
            seconds = time.perf_counter() - start
            output = self._partial_output()
            self._stop(kill=True)
            return Outcome("timeout", seconds=seconds, limit=limit, **output), warmup, True
        try:
            out = self._conn.recv()
        except (EOFError, OSError):
            seconds = time.perf_counter() - start
            code = None
            if self._proc is not None:
                self._proc.join(2.0)
                code = self._proc.exitcode
            output = self._partial_output()
            self._stop(kill=True)
            return Outcome("crashed", error=f"the worker process died ({_exit_text(code)})", seconds=seconds,
                           limit=limit, **output), warmup, True
        out.limit = limit
        return out, warmup, True

    # -- thread isolation -------------------------------------------------------------
    def _call_thread(self, args, kwargs, names, limit: float) -> Outcome:
        box: Dict[str, Outcome] = {}

        def target():
            box["outcome"] = _invoke(self.func, args, kwargs, self.arrays, names)

        start = time.perf_counter()
        th = threading.Thread(target=target, daemon=True, name="retrieval-conformance-call")
        th.start()
        th.join(limit)
        if th.is_alive():
            return Outcome("timeout", seconds=time.perf_counter() - start, limit=limit)
        out = box.get("outcome")
        if out is None:
            return Outcome("crashed", error="the call's thread ended without a result",
                           seconds=time.perf_counter() - start, limit=limit)
        out.limit = limit
        return out

    def call(self, args: Tuple, kwargs: Optional[Dict] = None, names: Sequence[str] = ()) -> Outcome:
        """Call the function once; never raises for anything the function does.

        ``names`` names the positional arguments for :attr:`Outcome.mutated`.
        """
        kwargs = dict(kwargs or {})
        names = tuple(names)
        self.calls += 1
        if self.isolation == "process":
            out, warmup, ran = self._call_process(args, kwargs, names)
        else:
            warmup, ran = not self._warm, True
            if self.isolation == "thread":
                out = self._call_thread(args, kwargs, names, self._limit(warmup))
            else:
                out = _invoke(self.func, args, kwargs, self.arrays, names)
        self._record(out, warmup, ran)
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


def default_warmup_timeout(timeout: float) -> float:
    """The warm-up limit used when none is given: ``max(60, 6 * timeout)`` seconds."""
    return max(WARMUP_MIN_SECONDS, WARMUP_FACTOR * float(timeout))


def torch_available() -> Optional[str]:
    """None when torch can be imported, else why not."""
    try:
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        return f"torch is not importable ({type(exc).__name__}: {exc})"
    return None
