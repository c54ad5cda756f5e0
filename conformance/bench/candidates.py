"""What runs on a workload: the implementations, the baselines and the peers, their rounds and skips.

:func:`candidate_names` lists them per workload, :func:`make_runner` turns one into a
no-argument callable, :func:`rounds` and :func:`memory_query_limit` say how it is timed and
measured, :func:`skip_reason` why it is not run.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from retrieval_conformance.conformance.bench import peers
from retrieval_conformance.conformance.bench.workload import Workload

IMPLEMENTATIONS = ("numpy", "c", "torch", "reference")
BASELINES = ("loop", "full-matrix", "argsort")
#: other libraries, timed in the same run (:mod:`.peers`)
PEERS = peers.PEERS

#: Q x N int64 index arrays above this many bytes are not built (they are the failure mode the
#: streaming evaluation exists to avoid: torchreid at MSMT17 scale, JDAI-CV/fast-reid#404)
FULL_MATRIX_LIMIT = 3 * 2**30

#: (workload, candidate) pairs that are not run at full scale, with the reason
_FULL_SKIPS = {
    ("*", "reference"): "the pure-Python exact reference would take hours at this scale; results are "
    "checked against the numpy implementation (itself proven equal to the reference "
    "by the cross-implementation tests) and the reference runs in the smoke version",
}


_CODES = ("cifar10-all", "cifar10-1000", "nuswide-5000")
#: graded-relevance workloads (scores and grades): only the full-matrix nDCG baseline exists
_GRADED = ("graded-ndcg10",)


def _baselines(name: str) -> List[str]:
    if name in _GRADED:
        return ["full-matrix"]
    if name.startswith("scores-") or name.startswith("scaling-"):
        return []  # score matrices and the scaling series: the peers (plain numpy first) are the baselines
    return ["loop", "full-matrix"]


def candidate_names(workload) -> List[str]:
    """Implementations, the baselines that make sense for the workload's input, its peers, the anchor.

    ``workload`` is a :class:`Workload` or a name from :data:`WORKLOAD_NAMES`.  The
    per-query AP loop has no graded-relevance counterpart (nDCG has only the full-matrix
    baseline); score matrices with binary relevance and the scaling series are compared with
    the peers of :mod:`.peers` instead.
    """
    name = workload if isinstance(workload, str) else workload.name
    names = list(IMPLEMENTATIONS) + _baselines(name) + peers.peer_names(name)
    if name not in _CODES and not name.startswith("scaling-codes"):
        names.append("argsort")  # sorting alone, for float inputs (distances, scores)
    return names


#: adaptive rounds: about this many seconds of timed rounds, at least/at most this many rounds
ROUND_BUDGET, MIN_ROUNDS, MAX_ROUNDS = 3.0, 3, 50
#: the scaling series from this gallery size on: seconds per round; the untimed probe decides
#: between SCALING_ROUNDS rounds (a probe of at most SCALING_ROUND_LIMIT seconds) and one
SCALING_LARGE = 1_000_000
SCALING_ROUNDS, SCALING_ROUND_LIMIT = 3, 10.0


def rounds(workload: Workload, candidate: str, probe_seconds: Optional[float] = None) -> Optional[int]:
    """Timed rounds of ``candidate`` on ``workload``.

    Known slow runs (the per-query loop, the pure-Python reference, numpy and torch at
    NUS-WIDE and MSMT17 scale: tens of seconds each) get one round: the median of one round of
    a 40-second run is as informative as it gets, and the whole run stays within minutes.
    Otherwise this returns None until the time of one untimed probe run is known, then
    ``clamp(ROUND_BUDGET / probe_seconds, MIN_ROUNDS, MAX_ROUNDS)``: many rounds for
    millisecond runs, whose medians are noisy, and at least three for the rest.  The scaling
    series from ``SCALING_LARGE`` items on takes ``SCALING_ROUNDS`` rounds when the probe took
    at most ``SCALING_ROUND_LIMIT`` seconds, else one.
    """
    if workload.scale == "smoke":
        return 1
    if candidate in ("loop", "reference") and workload.name != "oxford5k":
        return 1
    if candidate in ("numpy", "torch") and workload.name in ("nuswide-5000", "msmt17"):
        return 1
    if probe_seconds is None:
        return None
    if workload.name.startswith("scaling-") and workload.n_gallery >= SCALING_LARGE:
        # seconds to a minute a round, several sizes in a row: the median of a few rounds where
        # a round takes seconds (a single 4M round of C varied by 7% between runs), else one
        return SCALING_ROUNDS if probe_seconds <= SCALING_ROUND_LIMIT else 1
    return int(min(MAX_ROUNDS, max(MIN_ROUNDS, ROUND_BUDGET / max(probe_seconds, 1e-9))))


#: a candidate slower than this (median, seconds) has its peak memory measured on fewer queries
MEMORY_SUBSET_AFTER = 20.0


def memory_query_limit(workload: Workload, candidate: str, median: Optional[float] = None) -> Optional[int]:
    """Queries used when measuring peak memory (None: all).

    A slow candidate (median above :data:`MEMORY_SUBSET_AFTER`) is measured on fewer queries
    where its peak does not depend on their number: the per-query loop holds one row at a time
    (100 queries), and the implementations evaluate query blocks of bounded size, so two
    blocks of ``rc.evaluate`` (whose peak then repeats for every block) show the same peak.
    The whole-matrix baselines are always measured on every query: their memory is Q x N.
    """
    if workload.scale != "full" or median is None or median <= MEMORY_SUBSET_AFTER:
        return None
    if candidate == "loop":
        return 100
    if candidate in IMPLEMENTATIONS:
        from retrieval_conformance.reference.contract.query_blocks import block_rows

        limit = 2 * block_rows(workload.n_queries, workload.n_gallery, None)
        return limit if limit < workload.n_queries else None
    return None


def skip_reason(workload: Workload, candidate: str) -> Optional[str]:
    """Why ``candidate`` is not run on ``workload`` (None: it runs)."""
    if candidate in PEERS:
        return peers.skip_reason(workload, candidate)
    if workload.scale == "full" and candidate == "reference" and workload.name != "oxford5k":
        return _FULL_SKIPS[("*", "reference")]
    if candidate in ("full-matrix", "argsort"):
        need = workload.n_queries * workload.n_gallery * 8
        if need > FULL_MATRIX_LIMIT:
            return (
                f"{candidate}: needs a {workload.n_queries:,} x {workload.n_gallery:,} int64 index array "
                f"({need / 2**30:.1f} GiB) plus as much again for the match matrix, the failure mode "
                "the streaming evaluation avoids (torchreid at MSMT17 scale: JDAI-CV/fast-reid#404)"
            )
    return None


def make_runner(workload: Workload, candidate: str) -> Callable[[], Any]:
    """A no-argument callable running ``candidate`` on ``workload`` once.

    Implementations return a :class:`~retrieval_conformance.reference.contract.problem.Result`;
    baselines and peers return a :class:`~retrieval_conformance.conformance.bench.baselines.BaselineResult`
    (``argsort`` returns the index array).  ``"py:module:function"`` calls
    ``function(workload)`` (a lab's own code, e.g. to measure its peak memory).
    """
    from retrieval_conformance.conformance.bench import baselines as bl

    if candidate.startswith("py:"):
        import importlib

        module, _, attr = candidate[3:].rpartition(":")
        if not module:
            raise ValueError(f"candidate: expected 'py:module:function', got {candidate!r}")
        func = getattr(importlib.import_module(module), attr)
        return lambda: func(workload)

    if candidate in IMPLEMENTATIONS:
        import retrieval_conformance as rc

        kwargs = workload.evaluate_kwargs(implementation=candidate)
        return lambda: rc.evaluate(**kwargs)
    if candidate in PEERS:
        return peers.make_peer_runner(workload, candidate)
    a = workload.arrays
    if candidate == "argsort" and workload.matrix_key is not None:
        return lambda: bl.bare_argsort(a[workload.matrix_key])
    if workload.kind == "scores":
        if candidate == "full-matrix" and workload.name in _GRADED:
            return lambda: bl.full_matrix_ndcg(a["scores"], a["relevance"], workload.k)
    elif workload.kind == "codes":
        topk = workload.k if workload.k is not None else workload.n_gallery
        if candidate == "loop":
            return lambda: bl.calc_top_map(a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"], topk)
        if candidate == "full-matrix":
            return lambda: bl.full_matrix_hashing(
                a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"], topk
            )
    elif "query_cams" in a:
        ids = (a["query_labels"], a["db_labels"], a["query_cams"], a["db_cams"])
        if candidate == "loop":
            return lambda: bl.loop_reid(a["distances"], *ids)
        if candidate == "full-matrix":
            return lambda: bl.torchreid_style(a["distances"], *ids)
    else:
        if candidate == "loop":
            return lambda: bl.loop_masked(a["distances"], a["relevance"], a["junk"])
        if candidate == "full-matrix":
            return lambda: bl.full_matrix_masked(a["distances"], a["relevance"], a["junk"])
    raise ValueError(f"candidate: expected one of {candidate_names(workload)}, got {candidate!r}")
