"""One call of a user's function in the current thread, and the worker process that makes them.

:func:`invoke` runs the function on private copies of its arguments with output and warnings
captured and turns whatever happens into an :class:`~.outcome.Outcome`; :func:`worker_main`
is the loop of the forked worker (``process`` isolation).  The function's frames in a crash
report are told from the harness's by this module's file (:func:`trim_fault_report`).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.calling.arguments import mutations, snapshot
from retrieval_conformance.conformance.harness.calling.capture import FdCapture, PythonCapture, flush_python_streams
from retrieval_conformance.conformance.harness.calling.outcome import (
    OUTPUT_LIMIT,
    Opaque,
    Outcome,
    clip_output,
    to_plain,
    to_torch,
    type_name,
)


def _format_exception(exc: BaseException) -> str:
    tb = exc.__traceback__
    tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb  # drop the harness's own frame
    return "".join(traceback.format_exception(type(exc), exc, tb))


@contextmanager
def _noting_ctrl_c() -> Iterator[List[bool]]:
    """A box that turns true when a real Ctrl-C (SIGINT) arrives during the block.

    Only the main thread gets signals, and only where Python's handler is installed: in a
    call's thread and in the worker (which ignores SIGINT) every KeyboardInterrupt is the
    function's own."""
    seen = [False]
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous):
        yield seen
        return

    def note(signum, frame):
        seen[0] = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _leave_if_forked(caller: int) -> None:
    """The child of an ``os.fork`` in the function that returned (or raised) into the harness:
    it ends here, silently, or it would run the harness a second time (answer the parent's
    calls, send outcomes nobody asked for)."""
    if os.getpid() != caller:
        flush_python_streams()  # what it printed goes to the call's capture
        os._exit(0)


def invoke(
    func: Callable,
    args: Tuple,
    kwargs: Dict,
    arrays: str,
    names: Sequence[str] = (),
    owned: bool = False,
    capture: Any = None,
) -> Outcome:
    """Run one call in the current thread with output and warnings captured.

    ``owned``: ``args``/``kwargs`` are private to this call (unpickled in the worker), so the
    function may get them directly; otherwise it gets copies and the caller's objects stay as
    they are.  ``capture``: a :class:`FdCapture` or :class:`PythonCapture` (the default).
    """
    capture = PythonCapture() if capture is None else capture
    start = time.perf_counter()
    try:
        call_args, call_kwargs = (tuple(args), dict(kwargs)) if owned else (snapshot(tuple(args)), snapshot(kwargs))
        if arrays == "torch":
            call_args, call_kwargs = to_torch(call_args), to_torch(call_kwargs)
        if owned or arrays == "torch":
            pristine = (snapshot(call_args), snapshot(call_kwargs))
        else:
            pristine = (tuple(args), kwargs)  # the caller's objects: the function never sees them
    except Exception as exc:  # e.g. torch missing with arrays='torch'
        return Outcome(
            "raised",
            error=f"{type(exc).__name__}: {exc}"[:OUTPUT_LIMIT],
            traceback=clip_output(traceback.format_exc()),
            seconds=time.perf_counter() - start,
        )
    result: Any = None
    failure: Optional[BaseException] = None
    caller = os.getpid()
    with capture, _noting_ctrl_c() as ctrl_c:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            try:
                result = func(*call_args, **call_kwargs)
            except BaseException as exc:  # the user's error is data, whatever it is (SystemExit too)
                _leave_if_forked(caller)
                if isinstance(exc, KeyboardInterrupt) and ctrl_c[0]:
                    raise  # the user pressed Ctrl-C: stop the harness
                failure = exc
            _leave_if_forked(caller)
            seconds = time.perf_counter() - start
    mutated = mutations(call_args, call_kwargs, pristine, names)
    common = dict(stdout=capture.stdout, stderr=capture.stderr, seconds=seconds, mutated=mutated)
    if failure is not None:
        return Outcome(
            "raised",
            error=f"{type(failure).__name__}: {failure}"[:OUTPUT_LIMIT],
            traceback=clip_output(_format_exception(failure)),
            **common,
        )
    try:
        return Outcome("ok", to_plain(result), type_name(result), **common)
    except Exception as exc:
        return Outcome(
            "raised",
            error=f"the returned {type(result).__name__} could not be read: {type(exc).__name__}: {exc}",
            **common,
        )


def trim_fault_report(text: str) -> str:
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


def _own_process_group() -> None:  # pragma: no cover - runs in the child
    """The worker leads a process group, which the processes the function starts inherit: the
    runner kills the group when it stops the worker.  A terminal's Ctrl-C goes to the
    foreground group only, i.e. the harness, which answers it (exit 130, one line) and kills
    this group.  The worker may start processes (a daemonic process may not, in
    multiprocessing), and reads nothing from the terminal (a read would stop the process
    group in the background)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    multiprocessing.current_process().daemon = False  # the runner still kills it at exit
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    except OSError:
        pass


def worker_main(conn, func: Callable, arrays: str, files: Tuple[Any, Any]) -> None:  # pragma: no cover - child
    # a traceback from here on Ctrl-C would only bury the harness's line
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _own_process_group()
    _single_threaded_after_fork()
    try:  # a segfault's Python traceback goes to fd 2, i.e. into the capture file during a call
        import faulthandler

        faulthandler.enable(file=2, all_threads=False)
    except Exception:
        pass
    capture = FdCapture(files)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        args, kwargs, names = msg
        outcome = invoke(func, args, kwargs, arrays, names, owned=True, capture=capture)
        try:
            conn.send(outcome)
        except Exception as exc:  # an unpicklable value slipped through
            conn.send(replace(outcome, value=Opaque(outcome.value), error=f"unpicklable result ({exc})"))
