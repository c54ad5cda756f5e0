"""The campaign: cases run in worker processes, so a crash or a hang is a finding, not the end.

Case ``i`` of seed ``s`` is rebuilt from ``(s, i)`` in whichever process needs it
(:func:`~retrieval_conformance.conformance.problems.choices.case_rng`), so the parent only hands
out index ranges.  A worker announces each case before running it; when a worker dies (a
segfault, an abort) the case it announced is a ``crash``, when it stays silent longer than the
time limit it is killed and the case is a ``hang``; either way a fresh worker takes over from the next case.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.problems.choices import RandomChoices, case_rng

from .cases import draw_case
from .classify import CLEAN, Outcome, classify

__all__ = ["PROFILES", "Finding", "Profile", "Report", "run_campaign", "reproduce_command"]


@dataclass(frozen=True)
class Profile:
    name: str
    cases: int
    timeout: float  # seconds one case may take before it counts as a hang
    description: str


PROFILES: Dict[str, Profile] = {
    "quick": Profile("quick", 400, 120.0, "CI: a few hundred cases, seed 0, derandomised"),
    "long": Profile("long", 1_000_000, 300.0, "RC_FUZZ=long: a million cases (hours on 2 cores)"),
}

CHUNK = 100  # cases handed to a worker at a time
#: thread counts of a worker's numerical libraries and of our C code
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "RC_NUM_THREADS": "1"}


@dataclass
class Finding:
    index: int
    kind: str
    change: str
    implementation: str
    detail: str


@dataclass
class Report:
    seed: int
    start: int
    stop: int
    implementations: Tuple[str, ...]
    counts: Counter = field(default_factory=Counter)  # outcome kind -> cases
    changes: Counter = field(default_factory=Counter)  # change family -> cases
    findings: List[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> bool:
        return bool(self.findings)

    def as_dict(self) -> dict:
        return {
            "seed": self.seed,
            "cases": self.cases,
            "start": self.start,
            "stop": self.stop,
            "implementations": list(self.implementations),
            "seconds": round(self.seconds, 1),
            "outcomes": dict(self.counts),
            "changes": dict(self.changes),
            "findings": [f.__dict__ for f in self.findings],
        }


def reproduce_command(seed: int, index: int) -> str:
    return f"python -m retrieval_conformance.conformance.fuzz --seed {seed} --case {index}"


# --------------------------------------------------------------------------- worker side
def _worker(conn, seed: int, implementations: Sequence[str], selftest: Dict[int, str]) -> None:
    """Run the index ranges the parent sends; report each case before and after it runs."""
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the parent is gone: nothing left to report to
            return
        if job is None:
            return
        for index in range(*job):
            conn.send(("start", index))

            def build(index=index):
                return draw_case(RandomChoices(case_rng(seed, index)))

            change = build().change.split(":")[0].split("=")[0]
            action = selftest.get(index)
            if action == "crash":
                os.abort()
            if action == "hang":
                time.sleep(10**6)
            if action == "raise":
                outcome = Outcome("unnamed_error", "self-test: the classifier itself raised", "")
            else:
                try:
                    outcome = classify(build, implementations)
                except Exception as exc:  # the campaign's own code failing is a finding too
                    outcome = Outcome("unnamed_error", f"classifier raised {type(exc).__name__}: {exc}"[:400])
            try:
                conn.send(("done", index, outcome.kind, change, outcome.implementation, outcome.detail))
            except (BrokenPipeError, OSError):
                return
        conn.send(("idle",))


# --------------------------------------------------------------------------- parent side
class _Slot:
    """One worker process, the range it works on, and the case it announced last."""

    def __init__(self, ctx, seed, implementations, selftest):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, seed, tuple(implementations), selftest), daemon=True)
        # one thread per worker (the workers are the parallelism), unless the caller chose a count
        saved = {name: os.environ.get(name) for name in SINGLE_THREAD}
        os.environ.update({name: value for name, value in SINGLE_THREAD.items() if saved[name] is None})
        try:
            self.process.start()  # a spawned child copies the environment now
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
        child.close()
        self.job: Optional[Tuple[int, int]] = None
        self.next = 0
        self.current: Optional[int] = None
        self.since = time.monotonic()

    def give(self, job: Tuple[int, int]) -> None:
        self.job, self.current, self.since = job, None, time.monotonic()
        self.next = job[0]  # the first case of the range not finished yet
        self.conn.send(job)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


def run_campaign(
    seed: int = 0,
    cases: int = PROFILES["quick"].cases,
    implementations: Optional[Sequence[str]] = None,
    workers: Optional[int] = None,
    timeout: float = PROFILES["quick"].timeout,
    start: int = 0,
    progress: Optional[Callable[[Report], None]] = None,
    selftest: Optional[Dict[int, str]] = None,
) -> Report:
    """Run cases ``start .. start + cases - 1`` of ``seed`` and classify every one.

    Parameters
    ----------
    implementations : names, the first being the oracle; default ``reference`` and every
        other available implementation.
    workers : worker processes (default: the CPU count).
    timeout : seconds one case may take before its worker is killed and the case is a hang.
    progress : called with the report so far, about once a second.
    selftest : ``{index: "crash" | "hang" | "raise"}`` makes that case crash, hang or fail in
        the worker (to test the campaign itself).
    """
    if implementations is None:
        from retrieval_conformance.reference.contract.registry import available

        implementations = ["reference"] + [n for n in available() if n != "reference"]
    report = Report(seed, start, start + cases, tuple(implementations))
    jobs = [(i, min(i + CHUNK, start + cases)) for i in range(start, start + cases, CHUNK)]
    jobs.reverse()  # popped from the end: lowest indices first
    ctx = mp.get_context("spawn")  # no fork of a process that may hold torch's threads
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
    slots = [_Slot(ctx, seed, implementations, selftest or {}) for _ in range(workers)]
    t0 = last = time.monotonic()
    try:
        while jobs or any(slot.job is not None for slot in slots):
            for slot in slots:
                if slot.job is None and jobs:
                    slot.give(jobs.pop())
            ready = wait([s.conn for s in slots if s.job is not None], timeout=1.0)
            for slot in [s for s in slots if s.conn in ready]:
                _receive(slot, report, jobs, slots, ctx, seed, implementations, selftest or {})
            now = time.monotonic()
            for i, slot in enumerate(slots):
                if slot.job is not None and slot.current is not None and now - slot.since > timeout:
                    slots[i] = _replace(
                        slot,
                        "hang",
                        f"no answer within {timeout:g} s",
                        report,
                        ctx,
                        seed,
                        implementations,
                        selftest or {},
                    )
            if progress is not None and now - last >= 1.0:
                report.seconds, last = now - t0, now
                progress(report)
    finally:
        for slot in slots:
            if slot.process.is_alive() and slot.job is None:
                try:
                    slot.conn.send(None)
                except OSError:
                    pass
            slot.stop()
    report.seconds = time.monotonic() - t0
    report.findings.sort(key=lambda f: f.index)
    return report


def _receive(slot: _Slot, report: Report, jobs, slots, ctx, seed, implementations, selftest) -> None:
    try:
        message = slot.conn.recv()
    except (EOFError, OSError):
        code = slot.process.exitcode if not slot.process.is_alive() else None
        if code is None:
            slot.process.join(5)
            code = slot.process.exitcode
        slots[slots.index(slot)] = _replace(
            slot, "crash", f"worker died (exit code {code})", report, ctx, seed, implementations, selftest
        )
        return
    if message[0] == "start":
        slot.current, slot.since = message[1], time.monotonic()
    elif message[0] == "done":
        _, index, kind, change, implementation, detail = message
        _record(report, index, kind, change, implementation, detail)
        slot.current, slot.next = None, index + 1
    elif message[0] == "idle":
        slot.job = None


def _record(report: Report, index: int, kind: str, change: str, implementation: str, detail: str) -> None:
    report.counts[kind] += 1
    report.changes[change] += 1
    if kind not in CLEAN:
        report.findings.append(Finding(index, kind, change, implementation, detail))


def _replace(slot: _Slot, kind: str, detail: str, report: Report, ctx, seed, implementations, selftest) -> _Slot:
    """Record the announced case as a crash or hang; a new worker continues the range after it."""
    index, job, rest = slot.current, slot.job, slot.next
    slot.stop()
    new = _Slot(ctx, seed, implementations, selftest)
    if index is not None:
        change = draw_case(RandomChoices(case_rng(seed, index))).change.split(":")[0].split("=")[0]
        _record(report, index, kind, change, "", detail)
        rest = index + 1
    if job is not None and rest < job[1]:
        new.give((rest, job[1]))
    return new
