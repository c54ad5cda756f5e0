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
  The worker may start processes (a ``multiprocessing.Pool``, a torch ``DataLoader`` with
  workers, ``os.fork``); it leads a process group of its own, and when it is stopped (closed,
  timed out, crashed, or the harness interrupted or exiting) that group and every descendant
  are killed (:mod:`.processes`), so nothing the function started outlives the runner.
* ``thread``: a daemon thread per call; a hung call cannot be stopped (it keeps running in
  the background), so the harness stops calling the function after it hangs.  Processes the
  function starts and leaves running are not stopped.
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

This module holds the time limits and the isolation modes; the rest lives in :mod:`.outcome`
(what a call returned, importable from here too), :mod:`.arguments` (private copies, modified
inputs), :mod:`.capture` (stdout and stderr) and :mod:`.invoke` (one call, the worker loop).
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.util  # its exit hook registered first, so that ours (below) runs before it
import os
import signal
import tempfile
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.calling.capture import flush_c_stdio, flush_python_streams, read_back
from retrieval_conformance.conformance.harness.calling.invoke import invoke, trim_fault_report, worker_main
from retrieval_conformance.conformance.harness.calling.outcome import (
    OUTPUT_LIMIT,
    Opaque,
    Outcome,
    clip_output,
    to_plain,
    to_torch,
    type_name,
)
from retrieval_conformance.conformance.harness.calling.processes import (
    adopt_orphans,
    descendants,
    end_adopted,
    kill_group,
    living_children,
)

WARMUP_MIN_SECONDS = 60.0  # the default warm-up limit is max(WARMUP_MIN_SECONDS, WARMUP_FACTOR * timeout)
WARMUP_FACTOR = 6.0


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

    def __init__(
        self,
        func: Callable,
        timeout: float = 10.0,
        isolation: str = "auto",
        arrays: str = "numpy",
        warmup_timeout: Optional[float] = None,
    ):
        if isolation == "auto":
            isolation = "process" if "fork" in multiprocessing.get_all_start_methods() else "thread"
        if isolation not in ("process", "thread", "none"):
            raise ValueError(f"isolation: expected 'process', 'thread', 'none' or 'auto', got {isolation!r}")
        if arrays not in ("numpy", "torch"):
            raise ValueError(f"arrays: expected 'numpy' or 'torch', got {arrays!r}")
        self.func = func
        self.timeout = float(timeout)
        self.warmup_timeout = max(
            self.timeout, default_warmup_timeout(self.timeout) if warmup_timeout is None else float(warmup_timeout)
        )
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
            parts.append(
                f"{self.slow_calls} call{'s' if self.slow_calls != 1 else ''} took more than half "
                f"the time limit of {self.timeout:g} s"
            )
        return "; ".join(parts)

    # -- process isolation ------------------------------------------------------------
    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        files = (tempfile.TemporaryFile(prefix="rc-stdout-"), tempfile.TemporaryFile(prefix="rc-stderr-"))
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child, self.func, self.arrays, files), daemon=True)
        flush_python_streams()  # else the child inherits (and may write again) pending output
        flush_c_stdio()
        if not _RUNNING:  # the first worker alive: what its function orphans comes to this process
            _ADOPTING["before"] = adopt_orphans(True)
        self._known_children = set(living_children(zombies=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "fork() in a multi-threaded process" (python >= 3.12)
            proc.start()
        child.close()
        try:  # the worker does it too; whichever runs first, the group exists before a kill
            os.setpgid(proc.pid, proc.pid)
        except OSError:
            pass
        self._proc, self._conn, self._files = proc, parent, files
        _RUNNING.add(self)
        self._warm = False  # a new process: a JIT compiles again

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        # found now: once the worker has ended, its children no longer show as its descendants
        started = descendants(self._proc.pid) if self._proc.is_alive() else []
        try:
            if not kill:
                self._conn.send(None)
                self._proc.join(1.0)
        except (OSError, BrokenPipeError):
            pass
        kill_group(self._proc.pid, started)  # what the function started, also after a clean exit
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join(5.0)
        _RUNNING.discard(self)
        # a process the function started in a session of its own, orphaned when the worker died,
        # is in neither the group nor the tree: it was adopted, and ends here
        workers = {p.pid for p in multiprocessing.active_children()}
        end_adopted(self._known_children | workers | {r._proc.pid for r in list(_RUNNING) if r._proc})
        if not _RUNNING:
            adopt_orphans(_ADOPTING.get("before", False))
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
        return {
            "stdout": read_back(self._files[0].fileno()),
            "stderr": read_back(self._files[1].fileno(), 64 * 1024, trim=trim_fault_report),
        }

    def _call_process(self, args, kwargs, names) -> Tuple[Outcome, bool, bool]:
        """The outcome, whether the call was a warm-up, whether the function was called at all."""
        if self._proc is None or not self._proc.is_alive():
            self._stop(kill=True)
            self._start()
        try:
            return self._call_worker(args, kwargs, names)
        except BaseException:  # Ctrl-C, or the caller's own alarm: the call is abandoned
            self._stop(kill=True)
            raise

    def _await_answer(self, deadline: float) -> bool:
        """Wait for the worker's answer or its end (True), or the deadline (False).  Its end is
        seen by waitpid: a process the function forked holds the worker's pipe and sentinel
        open after the worker died, so neither would say so before the time limit."""
        pause = 0.01
        while True:
            left = deadline - time.perf_counter()
            if self._conn.poll(max(0.0, min(pause, left))):
                return True
            if not self._proc.is_alive():
                return True
            if left <= 0:
                return False
            pause = min(pause * 2, 0.25)

    def _call_worker(self, args, kwargs, names) -> Tuple[Outcome, bool, bool]:
        warmup = not self._warm
        limit = self._limit(warmup)
        start = time.perf_counter()
        try:
            self._conn.send((args, kwargs, tuple(names)))
        except Exception as exc:
            out = Outcome("raised", error=f"the inputs could not be sent to the worker: {exc}", limit=limit)
            return out, warmup, False
        if not self._await_answer(start + limit):
            seconds = time.perf_counter() - start
            output = self._partial_output()
            self._stop(kill=True)
            return Outcome("timeout", seconds=seconds, limit=limit, **output), warmup, True
        try:
            if not self._conn.poll(0):  # the worker ended without an answer
                raise EOFError
            out = self._conn.recv()
        except (EOFError, OSError):
            seconds = time.perf_counter() - start
            code = None
            if self._proc is not None:
                self._proc.join(2.0)
                code = self._proc.exitcode
            output = self._partial_output()
            self._stop(kill=True)
            return (
                Outcome(
                    "crashed",
                    error=f"the worker process died ({_exit_text(code)})",
                    seconds=seconds,
                    limit=limit,
                    **output,
                ),
                warmup,
                True,
            )
        out.limit = limit
        return out, warmup, True

    # -- thread isolation -------------------------------------------------------------
    def _call_thread(self, args, kwargs, names, limit: float) -> Outcome:
        box: Dict[str, Outcome] = {}

        def target():
            box["outcome"] = invoke(self.func, args, kwargs, self.arrays, names)

        start = time.perf_counter()
        th = threading.Thread(target=target, daemon=True, name="retrieval-conformance-call")
        th.start()
        th.join(limit)
        if th.is_alive():
            return Outcome("timeout", seconds=time.perf_counter() - start, limit=limit)
        out = box.get("outcome")
        if out is None:
            return Outcome(
                "crashed",
                error="the call's thread ended without a result",
                seconds=time.perf_counter() - start,
                limit=limit,
            )
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
                out = invoke(self.func, args, kwargs, self.arrays, names)
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


#: runners with a worker: an interpreter that exits without closing them (Ctrl-C, an error)
#: still kills their trees, before multiprocessing's own exit hook reaps the workers
_RUNNING: "weakref.WeakSet[Runner]" = weakref.WeakSet()
#: whether this process adopted orphans before the first worker started (restored when the last ends)
_ADOPTING: Dict[str, bool] = {}


@atexit.register
def _stop_every_worker() -> None:  # pragma: no cover - runs at exit
    for runner in list(_RUNNING):
        try:
            runner._stop(kill=True)
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


# the outcome of a call and its conversions live in .outcome; importable from here as before
__all__ = [
    "Runner",
    "Outcome",
    "Opaque",
    "OUTPUT_LIMIT",
    "clip_output",
    "to_plain",
    "to_torch",
    "type_name",
    "default_warmup_timeout",
    "torch_available",
    "WARMUP_MIN_SECONDS",
    "WARMUP_FACTOR",
]
