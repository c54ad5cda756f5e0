"""The fuzz campaign for hostile ``check`` targets: functions that do what lab code does to a harness.

A case (:func:`draw_hostile_case`) is a correct ``hashing`` mAP@k function (seed 000's
``CalcTopMap`` with a stable sort) that also does one to three things of :data:`BEHAVIOURS`
on every call -- fork (the child returning into the harness, or left running), start threads,
a ``multiprocessing.Pool`` or a subprocess and leave them running, sleep, print to stdout and
stderr (a little, or megabytes), modify its inputs, raise ``SystemExit`` or
``KeyboardInterrupt``, end the process with ``os._exit``, hang -- and returns its value as one
of :data:`RETURNS`: a float, a float subclass (one whose ``__float__`` raises), ``Decimal``,
``Fraction``, numpy scalars, a 0-d array, a list of them, a string, a huge list.

What a correct ``check`` does with it (:func:`classify_hostile_case`):

* it returns a report whose exit status is the case's: the largest of its parts' (0: the value
  still conforms; 1: a deviation, the inputs modified; 2: nothing could be read or called);
  a different status is a ``wrong_verdict``, an exception out of ``check`` an ``unnamed_error``;
* nothing of what the function writes reaches the harness's own stdout or stderr (file
  descriptors 1 and 2), and neither they nor the report hold a traceback;
* no process started during the case is alive after it (``leaked_process``), and nothing is
  written to the current folder (``cwd_write``).

Run with ``python -m retrieval_conformance.conformance.fuzz --target check --cases N``.
"""

from __future__ import annotations

import decimal
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.calling.processes import (
    adopt_orphans,
    descendants,
    end_adopted,
    kill_tree,
    living_children,
)

from .classify import Outcome

__all__ = ["BEHAVIOURS", "RETURNS", "HostileCase", "classify_hostile_case", "draw_hostile_case", "hostile_function"]

#: what the function writes: none of it may reach the harness's own output
MARKER = "HOSTILE-TARGET-OUTPUT"
#: seconds a call may take in the campaign's checks (a hang costs the warm-up limit and this)
CALL_SECONDS = 5.0
#: the first call in a worker (a pool's first processes on a busy machine)
WARMUP_SECONDS = 30.0
#: the checks run: golden cases (values), then the same input twice and the inputs compared
CHECKS = ("golden/seed000*", "call/*")


def _value_in_thread(value, args):
    box: List[float] = []
    worker = threading.Thread(target=lambda: box.append(value))
    worker.start()
    worker.join()
    return box[0]


def _thread_left_running(value, args):
    threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
    return value


def _identity(x):
    return x


def _through_a_pool(value, args):
    with multiprocessing.Pool(2) as pool:
        return pool.map(_identity, [value])[0]


def _pool_left_running(value, args):
    pool = multiprocessing.Pool(1)  # never closed nor joined
    pool.apply_async(time.sleep, (300,))
    return value


def _fork_child_returns(value, args):
    pid = os.fork()
    if pid == 0:
        return -1.0  # the child returns a wrong value into whatever called the function
    os.waitpid(pid, 0)
    return value


def _fork_child_left_running(value, args):
    if os.fork() == 0:
        time.sleep(300)
        os._exit(0)
    return value


def _subprocess_left_running(value, args):
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    subprocess.Popen(sleeper, start_new_session=bool(args[0].size % 2))  # sometimes out of the group
    return value


def _prints(value, args):
    print(f"{MARKER} stdout")
    print(f"{MARKER} stderr", file=sys.stderr)
    os.write(1, f"{MARKER} fd 1\n".encode())
    os.write(2, f"{MARKER} fd 2\n".encode())
    return value


def _prints_megabytes(value, args):
    sys.stdout.write((MARKER + "\n") * 100_000)
    os.write(2, (MARKER + "\n").encode() * 50_000)
    return value


def _mutates(value, args):
    args[2][...] = 0  # the query labels
    return value


def _sleeps(value, args):
    time.sleep(0.01)
    return value


def _hangs(value, args):
    time.sleep(300)
    return value


def _system_exit(value, args):
    raise SystemExit(3)


def _keyboard_interrupt(value, args):
    raise KeyboardInterrupt("raised by the function")


def _os_exit(value, args):
    os._exit(0)


#: name -> (what it does to a call, the exit status of check on a correct value that does it)
BEHAVIOURS: Dict[str, Tuple[Callable[[float, tuple], Any], int]] = {
    "thread": (_value_in_thread, 0),
    "thread-left-running": (_thread_left_running, 0),
    "pool": (_through_a_pool, 0),
    "pool-left-running": (_pool_left_running, 0),
    "fork-child-returns": (_fork_child_returns, 0),
    "fork-child-left-running": (_fork_child_left_running, 0),
    "subprocess-left-running": (_subprocess_left_running, 0),
    "prints": (_prints, 0),
    "prints-megabytes": (_prints_megabytes, 0),
    "sleeps": (_sleeps, 0),
    "mutates-inputs": (_mutates, 1),
    "hangs": (_hangs, 2),
    "system-exit": (_system_exit, 2),
    "keyboard-interrupt": (_keyboard_interrupt, 2),
    "os-exit": (_os_exit, 2),
}


class PlainFloatSubclass(float):
    """A float subclass that behaves (a numpy or library scalar type of its own)."""


class UnreadableFloat(float):
    """A float subclass whose conversion to float raises."""

    def __float__(self):
        raise RuntimeError("this number cannot be converted")


def _torch_scalar(value):
    try:
        import torch
    except ImportError:
        return value
    return torch.tensor(value, dtype=torch.float64)


#: name -> (the value returned as that type, the exit status of check on it)
RETURNS: Dict[str, Tuple[Callable[[float], Any], int]] = {
    "float": (float, 0),
    "float-subclass": (PlainFloatSubclass, 0),
    "float-subclass-unreadable": (UnreadableFloat, 2),
    "decimal": (lambda v: decimal.Decimal(float(v)), 0),
    "fraction": (lambda v: Fraction(float(v)), 0),
    "numpy-float64": (np.float64, 0),
    "numpy-0d-array": (np.array, 0),
    "torch-scalar": (_torch_scalar, 0),
    "list-of-float-subclass": (lambda v: [PlainFloatSubclass(v)], 2),
    "list-of-decimal": (lambda v: [decimal.Decimal(float(v))], 2),
    "string": (lambda v: repr(float(v)), 2),
    "huge-list": (lambda v: [v] * 100_000, 2),
}


@dataclass
class HostileCase:
    behaviours: Tuple[str, ...]
    returns: str

    @property
    def change(self) -> str:
        return "+".join(self.behaviours) + "->" + self.returns

    @property
    def may_hang(self) -> bool:
        """The function forks while threads of its own run: a pool left running keeps its handler
        threads alive in the worker, and every later call forks (its own pool, or another). Python
        documents that a fork in a multi-threaded process may deadlock the child, so a call that
        hangs is as right a verdict as a value."""
        return "pool-left-running" in self.behaviours

    @property
    def status(self) -> int:
        """The exit status a correct ``check`` gives: the largest of its parts'."""
        return max([RETURNS[self.returns][1]] + [BEHAVIOURS[b][1] for b in self.behaviours])

    def describe(self) -> str:
        return f"a correct hashing mAP@k that does {', '.join(self.behaviours)} and returns a {self.returns}"


def draw_hostile_case(d) -> HostileCase:
    names = sorted(BEHAVIOURS)
    count = d.integer(1, 3)
    behaviours = tuple(dict.fromkeys(d.choice(names) for _ in range(count)))
    return HostileCase(behaviours, d.choice(sorted(RETURNS)))


def hostile_function(case: HostileCase) -> Callable:
    """The case's function: ``hashing_correct``'s value, the behaviours in order, the return type."""
    from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map

    actions = [BEHAVIOURS[name][0] for name in case.behaviours]
    convert = RETURNS[case.returns][0]
    convert(0.5)  # its imports (torch) happen here, once, not in each worker's first call

    def calc_map(qB, rB, query_L, retrieval_L, topk):
        value = calc_top_map(qB, rB, query_L, retrieval_L, topk)
        for action in actions:
            value = action(value, (qB, rB, query_L, retrieval_L))
        return convert(value)

    return calc_map


class _OwnOutput:
    """File descriptors 1 and 2 of this process sent to a temporary file during the block."""

    def __enter__(self) -> "_OwnOutput":
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc) -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()


def _living_descendants() -> List[int]:
    return descendants(os.getpid())


def classify_hostile_case(case: HostileCase) -> Outcome:
    """``check`` on the case's function, in a fresh current folder (module doc)."""
    from retrieval_conformance.conformance.harness import check

    before = set(_living_descendants())
    own_children = set(living_children(zombies=True))
    cwd = os.getcwd()
    # a process the harness left behind, orphaned, comes to this process and shows as a descendant
    adopted_before = adopt_orphans(True)
    with tempfile.TemporaryDirectory(prefix="rc-hostile-") as folder:
        os.chdir(folder)
        try:
            with _OwnOutput() as own:
                try:
                    report = check(
                        hostile_function(case),
                        adapter="hashing-codes",
                        protocol="hashing",
                        max_examples=2,
                        only=CHECKS,
                        timeout=CALL_SECONDS,
                        warmup_timeout=WARMUP_SECONDS,
                    )
                    text, status, error = report.text(), report.exit_code, ""
                except Exception as exc:
                    where = traceback.extract_tb(exc.__traceback__)[-1]
                    text, status = "", None
                    error = f"check raised {type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
            written = os.listdir(folder)
        finally:
            os.chdir(cwd)
    deadline = time.monotonic() + 5.0  # killed processes are reaped by init a moment later
    while True:
        leaked = sorted(set(_living_descendants()) - before)
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in leaked:  # the next cases start clean
        kill_tree(pid)
    end_adopted(own_children | {p.pid for p in multiprocessing.active_children()})  # and the killed ones reaped
    adopt_orphans(adopted_before)
    if error:
        return Outcome("unnamed_error", error[:400])
    if leaked:
        return Outcome("leaked_process", f"{len(leaked)} process(es) alive after check returned")
    if written:
        return Outcome("cwd_write", f"written to the current folder: {sorted(written)[:5]}")
    if "Traceback" in own.text or "Traceback" in text:
        where = "the harness's output" if "Traceback" in own.text else "the report"
        return Outcome("traceback", f"a traceback in {where}: {(own.text or text)[-300:]}")
    if MARKER in own.text:
        return Outcome("leaked_output", f"the function's output reached the harness's: {own.text[:200]!r}")
    if case.may_hang and status in (1, 2) and "did not return within" in text:
        return Outcome("named_error")  # the deadlock of a fork among the function's own threads
    if status != case.status:
        return Outcome("wrong_verdict", f"exit status {status}, expected {case.status}: {text[-600:]}")
    return Outcome("value" if status == 0 else "named_error")
