"""The timing anchor and the interleaved rounds that the ratio gate reads.

On a shared machine the same code runs 10-50% slower or faster from one minute to the next
(other processes, frequency, memory traffic).  A time measured right next to a fixed piece of
work suffers the same load, so their ratio moves far less than either.  Every benchmark
therefore times its candidate interleaved with an anchor, round by round (anchor, candidate,
anchor, candidate, ...): the anchor is a bare ``np.argsort`` of the first rows of the
workload's own ranking input (the score or distance matrix; for codes, the Hamming
distances of the first queries), :data:`ANCHOR_ELEMENTS` values in all, so it is the same
work in every run on every machine.  :func:`interleaved` returns both series and the load
average before and after; :mod:`.ratio` turns them into the per-round ratios, their median
and the run's noise.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.bench.workload import Workload

#: values sorted by one anchor run (~50-100 ms on a 2-core VM): long enough to see the load
#: the candidate sees, short enough to run before every round of a millisecond candidate
ANCHOR_ELEMENTS = 1 << 20


def anchor_rows(w: Workload) -> int:
    """Query rows of the anchor matrix: :data:`ANCHOR_ELEMENTS` values (at least one row)."""
    return int(min(w.n_queries, max(1, ANCHOR_ELEMENTS // max(w.n_gallery, 1))))


def anchor_matrix(w: Workload) -> np.ndarray:
    """The anchor's input: the first :func:`anchor_rows` rows of the ranking input, in memory."""
    rows = anchor_rows(w)
    if w.matrix_key is not None:
        return np.array(w.arrays[w.matrix_key][:rows], dtype=np.float32)
    a = w.arrays
    bits = a["db_codes"].shape[1]
    queries = a["query_codes"][:rows].astype(np.float32)
    return (0.5 * (bits - queries @ a["db_codes"].astype(np.float32).T)).astype(np.float32)


def make_anchor(matrix: np.ndarray) -> Callable[[], Any]:
    """The anchor run: ``np.argsort(matrix, axis=1)``."""
    return lambda: np.argsort(matrix, axis=1)


def load_average() -> Optional[List[float]]:
    """``os.getloadavg()`` (1, 5 and 15 minutes), None where the system has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):  # pragma: no cover - not on Linux
        return None


@dataclass
class Interleaved:
    """The times of one interleaved measurement, round by round (seconds)."""

    candidate: List[float] = field(default_factory=list)
    anchor: List[float] = field(default_factory=list)
    load_before: Optional[List[float]] = None
    load_after: Optional[List[float]] = None

    def extra_info(self) -> Dict[str, Any]:
        """What goes into ``benchmark.extra_info``: both series, the ratio statistics, the load."""
        from retrieval_conformance.conformance.bench.ratio import ratio_stats

        info: Dict[str, Any] = {
            "anchor": f"np.argsort of {ANCHOR_ELEMENTS:,} values of the workload's ranking input",
            "anchor_times": list(self.anchor),
            "candidate_times": list(self.candidate),
            "loadavg_before": self.load_before,
            "loadavg": self.load_after,
        }
        info.update(ratio_stats(self.candidate, self.anchor))
        return info


def interleaved(
    benchmark, runner: Callable[[], Any], anchor: Callable[[], Any], rounds: int
) -> Tuple[Any, Interleaved]:
    """Run ``rounds`` rounds of (anchor, candidate), the candidate timed by ``benchmark``.

    The anchor runs in pytest-benchmark's untimed ``setup`` of each round, timed here; the
    candidate's times are pytest-benchmark's own (its stats, storage and history stay as
    they were).  With the benchmark fixture disabled (the smoke runs of the normal suite)
    one round is timed here, so the same code path and statistics run everywhere.
    """
    times = Interleaved(load_before=load_average())

    def timed_anchor():
        start = time.perf_counter()
        anchor()
        times.anchor.append(time.perf_counter() - start)

    def timed_runner():
        start = time.perf_counter()
        out = runner()
        times.candidate.append(time.perf_counter() - start)
        return out

    if benchmark is not None and benchmark.enabled:
        result = benchmark.pedantic(runner, setup=timed_anchor, rounds=rounds, iterations=1, warmup_rounds=0)
        times.candidate = list(benchmark.stats.stats.data)
    elif benchmark is not None:  # disabled: pedantic runs setup and target once, untimed
        result = benchmark.pedantic(timed_runner, setup=timed_anchor, rounds=1, iterations=1, warmup_rounds=0)
    else:
        timed_anchor()
        result = timed_runner()
    times.load_after = load_average()
    return result, times
