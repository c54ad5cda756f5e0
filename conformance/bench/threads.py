"""Thread scaling of the C implementation, measured: CIFAR-10 mAP@ALL on 1 and 2 threads.

Three conditions, each timed in interleaved rounds (one thread, two threads and the default
thread count, in an order that rotates from round to round, so a change of load hits all
alike):

* ``quiet``: nothing of ours competes (other users of the machine may: the load average is
  reported before and after);
* ``busy``: a competing busy process pinned to one core of this process's CPU set, at normal
  priority;
* ``busy, nice 19``: the same process at the lowest priority.

The competing process is a child of this one, in its session (and so, where the kernel groups
processes by session, ``autogroup``, in its scheduling group, where niceness acts).

Every run's per-query arrays must be bit for bit those of the first one-thread run (a
difference raises).  :func:`thread_figures` returns the medians, the speed-ups of two threads
and of the default over one (the median of the per-round ratios) and the load averages as a
dict, :func:`figures` as the section ``threads`` of the feature benchmarks (``retrieval-conformance
bench features``); :func:`report` prints them.  Targets: two threads at least
:data:`QUIET_TARGET` times one thread on a quiet machine, at least :data:`BUSY_TARGET` with the
competing process.  Run:
``python -m retrieval_conformance.conformance.bench.threads [smoke|full] [rounds]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

import retrieval_conformance as rc
from retrieval_conformance.conformance.bench.hashing import cifar10
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.implementations.c.threads import default_threads

#: the speed-up of two threads over one the report checks, quiet and with a competing process
QUIET_TARGET = 1.7
BUSY_TARGET = 1.0
#: the conditions: label and the niceness of the competing process (None: no such process)
CONDITIONS = (("quiet", None), ("busy", 0), ("busy, nice 19", 19))
#: the thread settings timed in every round: label and RC_NUM_THREADS (None: the default rule)
SETTINGS = (("1 thread", 1), ("2 threads", 2), ("default", None))
#: seconds the competing process runs before the first round (the scheduler places it)
SETTLE_SECONDS = 0.2


@contextmanager
def thread_environment(threads: Optional[int]) -> Iterator[None]:
    """``RC_NUM_THREADS`` set to ``threads`` (None: unset, the default rule) inside the block."""
    before = os.environ.get("RC_NUM_THREADS")
    if threads is None:
        os.environ.pop("RC_NUM_THREADS", None)
    else:
        os.environ["RC_NUM_THREADS"] = str(int(threads))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RC_NUM_THREADS", None)
        else:
            os.environ["RC_NUM_THREADS"] = before


def _own_cpus() -> List[int]:
    getaffinity = getattr(os, "sched_getaffinity", None)
    return sorted(getaffinity(0)) if getaffinity is not None else list(range(os.cpu_count() or 1))


@contextmanager
def competing_process(niceness: Optional[int]) -> Iterator[Optional[int]]:
    """A busy Python process pinned to this process's last CPU at ``niceness`` (None: none),
    ended when the block ends; yields the CPU it is pinned to."""
    if niceness is None:
        yield None
        return
    cpu = _own_cpus()[-1]
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(proc.pid, {cpu})
        if niceness and hasattr(os, "setpriority"):
            os.setpriority(os.PRIO_PROCESS, proc.pid, niceness)
        time.sleep(SETTLE_SECONDS)
        yield cpu
    finally:
        proc.terminate()
        proc.wait()


def _condition(work, rounds: int, niceness: Optional[int]) -> Dict[str, Any]:
    """Interleaved rounds of every thread setting under one condition."""
    seconds: Dict[str, List[float]] = {label: [] for label, _ in SETTINGS}
    first = None
    load_before = os.getloadavg()
    with competing_process(niceness) as cpu:
        for r in range(rounds):
            order = SETTINGS[r % len(SETTINGS) :] + SETTINGS[: r % len(SETTINGS)]
            for label, threads in order:
                with thread_environment(threads):
                    start = time.perf_counter()
                    result = rc.evaluate(**work.arrays, protocol=work.protocol, implementation="c", **work.options)
                    seconds[label].append(time.perf_counter() - start)
                if first is None:
                    first = result.per_query
                differences = same_bits(first, result.per_query, label)
                if differences:
                    raise RuntimeError(f"threads: {label} changed the per-query arrays: {differences[0]}")
    load_after = os.getloadavg()
    one = seconds["1 thread"]
    return {
        "competing_cpu": cpu,
        "niceness": niceness,
        "load_before": load_before,
        "load_after": load_after,
        "seconds": {label: statistics.median(values) for label, values in seconds.items()},
        "speedup": {
            label: statistics.median(a / b for a, b in zip(one, values))
            for label, values in seconds.items()
            if label != "1 thread"
        },
        "same_bits": True,
    }


def thread_figures(scale: str = "full", rounds: int = 5) -> Dict[str, Any]:
    """1 vs 2 threads (and the default) on CIFAR-10 mAP@ALL under each of :data:`CONDITIONS`.

    Returns
    -------
    dict
        ``workload`` (title), ``scale``, ``rounds``, ``cpus`` (this process's CPU set),
        ``default_threads`` (what the default rule picks for this workload), and
        ``conditions``: label to a dict of ``seconds`` (setting to median seconds),
        ``speedup`` (setting to the median per-round ratio of one thread's time to its time),
        ``load_before``, ``load_after``, ``competing_cpu``, ``niceness``, ``same_bits``
        (always True: a difference raises), ``target`` and ``met`` (two threads' speed-up
        at least the target).
    """
    if rounds < 1:
        raise ValueError(f"rounds: expected at least 1, got {rounds}")
    work = cifar10(scale, None, "cifar10-all")
    figures: Dict[str, Any] = {
        "workload": work.title,
        "scale": scale,
        "rounds": rounds,
        "cpus": _own_cpus(),
        "default_threads": default_threads(work.n_queries, work.n_gallery),
        "conditions": {},
    }
    with thread_environment(1):  # warm-up: the gallery packed, the library loaded
        rc.evaluate(**work.arrays, protocol=work.protocol, implementation="c", **work.options)
    for label, niceness in CONDITIONS:
        cond = _condition(work, rounds, niceness)
        cond["target"] = QUIET_TARGET if niceness is None else BUSY_TARGET
        cond["met"] = cond["speedup"]["2 threads"] >= cond["target"]
        figures["conditions"][label] = cond
    return figures


#: rounds of the feature benchmark's section, per scale
FIGURE_ROUNDS = {"full": 5, "smoke": 1}


def figures(scale: str = "full") -> Dict[str, Dict[str, Any]]:
    """The section ``threads`` of the feature benchmarks: per condition, the speed-up of two
    threads and of the default over one thread (median of the per-round ratios)."""
    if scale not in FIGURE_ROUNDS:
        raise ValueError(f"scale: expected one of {sorted(FIGURE_ROUNDS)}, got {scale!r}")
    fig = thread_figures(scale, FIGURE_ROUNDS[scale])
    out: Dict[str, Dict[str, Any]] = {}
    for label, cond in fig["conditions"].items():
        s, x = cond["seconds"], cond["speedup"]
        one = {"name": "one thread", "value": 1e3 * s["1 thread"], "unit": "ms"}
        load = f"load average {cond['load_before'][0]:.2f} before, {cond['load_after'][0]:.2f} after"
        out[f"2 threads, {label}"] = {
            "value": x["2 threads"],
            "unit": "x one thread",
            "target": f">= {cond['target']}x",
            "baseline": one,
            "note": f"{1e3 * s['2 threads']:.3g} ms; same bits; {load}",
        }
        n = fig["default_threads"]
        out[f"default ({n} thread{'' if n == 1 else 's'}), {label}"] = {
            "value": x["default"],
            "unit": "x one thread",
            "target": f">= {BUSY_TARGET}x",
            "baseline": one,
            "note": f"{1e3 * s['default']:.3g} ms; never below one thread is the rule's aim",
        }
    return out


def report(scale: str = "full", rounds: int = 5) -> str:
    """:func:`thread_figures` as a table."""
    fig = thread_figures(scale, rounds)
    lines = [
        f"threads: {fig['workload']}; CPUs {fig['cpus']}, default {fig['default_threads']} thread(s)",
        f"median of {fig['rounds']} interleaved rounds; same bits for every thread count",
        f"{'condition':16} {'1 thread ms':>11} {'2 threads ms':>12} {'default ms':>10} {'2 vs 1':>7} "
        f"{'dflt vs 1':>9} {'target':>7}  load before/after",
    ]
    for label, cond in fig["conditions"].items():
        s, x = cond["seconds"], cond["speedup"]
        mark = "" if cond["met"] else " (missed)"
        lines.append(
            f"{label:16} {1e3 * s['1 thread']:11.2f} {1e3 * s['2 threads']:12.2f} {1e3 * s['default']:10.2f} "
            f"{x['2 threads']:7.2f} {x['default']:9.2f} {cond['target']:7.1f}  "
            f"{cond['load_before'][0]:.2f}/{cond['load_after'][0]:.2f}{mark}"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(report(sys.argv[1] if len(sys.argv) > 1 else "full", int(sys.argv[2]) if len(sys.argv) > 2 else 5))
