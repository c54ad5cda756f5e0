"""Speed benchmarks at real dataset scales (pytest-benchmark) and their tiny smoke versions.

Every workload of :mod:`.bench.workloads` is a benchmark group; every implementation, the
baselines of :mod:`.bench.baselines` and the installed peers of :mod:`.bench.peers` run in it.
Each is timed interleaved with an anchor (:mod:`.bench.anchor`: anchor, candidate, anchor,
candidate, ...); the per-round candidate/anchor ratios, their median, the run's noise and
the load average go into ``extra_info`` for the ratio gate (:mod:`.bench.ratio`).  Results
are checked AFTER timing:

* implementations, against the exact reference on one or two queries, and on every query
  against the numpy implementation (itself proven equal to the reference by the
  cross-implementation tests), because the pure-Python reference with exact fractions would
  take hours at full scale (it runs whole only on Oxford5k and in the smoke versions);
* baselines, against the same implementation under the conventions the baseline computes
  (``BaselineResult.semantics``); a baseline whose tie order is unspecified (numpy's default
  argsort, as torchreid) must lie between the ``pessimistic`` and ``optimistic`` values;
* peers, by :func:`.bench.verify.check_peer`: equal to ours under the conventions they name,
  and where their tie order is unspecified, within the tie bounds, through their own ranking
  when they expose it, and equal on a tie-free copy of some queries.

Full scale runs only with ``RC_BENCH=1`` (``tox -e bench``); without it those tests are
skipped and the smoke versions (not marked ``benchmark``, so a gate never compares their
microsecond timings) run in the normal suite with the benchmark fixture disabled.

Peak extra memory is measured in a child process per (workload, candidate) (see
:func:`.bench.memory.measure_peak_memory`) and stored in ``extra_info``; ``RC_BENCH_MEMORY=0``
skips it.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench import anchor as A
from retrieval_conformance.conformance.bench import candidates as C
from retrieval_conformance.conformance.bench import verify
from retrieval_conformance.conformance.bench import workloads as W
from retrieval_conformance.conformance.bench.baselines import BaselineResult
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS, PerQuery

RUN_FULL = os.environ.get("RC_BENCH", "").strip() == "1"
MEASURE_MEMORY = os.environ.get("RC_BENCH_MEMORY", "1").strip() != "0"
TOLERANCE = 1e-12
FIELDS = tuple(f for f in PerQuery.FIELDS if f != "cmc")  # every per-query value, nDCG, RR and AP@R included

FULL_CASES = [(name, cand) for name in W.WORKLOAD_NAMES for cand in C.candidate_names(name)]
IDS = [f"{name}-{cand}" for name, cand in FULL_CASES]


# ---------------------------------------------------------------------------------------------
# workloads and the values they are checked against (built once per session)
# ---------------------------------------------------------------------------------------------
class _Store:
    """Workloads, their saved copies for child processes, and truth values, per session."""

    def __init__(self, root: str):
        self.root = root
        self.workloads: Dict[Tuple[str, str], W.Workload] = {}
        self.saved: Dict[Tuple[str, str], str] = {}
        self.truth: Dict[Tuple, Any] = {}
        self.anchors: Dict[Tuple[str, str], Any] = {}

    def get(self, name: str, scale: str) -> W.Workload:
        key = (name, scale)
        if key not in self.workloads:
            directory = os.path.join(self.root, f"{name}-{scale}") if name == "msmt17" else None
            self.workloads[key] = W.build(name, scale, directory=directory)
        return self.workloads[key]

    def saved_dir(self, w: W.Workload) -> str:
        key = (w.name, w.scale)
        if key not in self.saved:
            self.saved[key] = w.save(w.directory or os.path.join(self.root, f"{w.name}-{w.scale}"))
        return self.saved[key]

    def anchor(self, w: W.Workload):
        """The workload's timing anchor (its input built once)."""
        key = (w.name, w.scale)
        if key not in self.anchors:
            self.anchors[key] = A.make_anchor(A.anchor_matrix(w))
        return self.anchors[key]

    def close(self) -> None:
        for w in self.workloads.values():
            w.cleanup()


@pytest.fixture(scope="session")
def store():
    with tempfile.TemporaryDirectory(prefix="rc-bench-") as root:
        s = _Store(root)
        yield s
        s.close()


def _semantics_key(w: W.Workload, overrides: Dict[str, Any]) -> Tuple:
    """The resolved options (so equal conventions share one truth value)."""
    kw = w.evaluate_kwargs(**overrides)
    options = rc.resolve_options(
        kw["protocol"],
        kw.get("k"),
        kw.get("max_rank", 50),
        kw.get("ties"),
        kw.get("ap_rule"),
        kw.get("ap_at_k"),
        kw.get("empty"),
        kw.get("radius"),
        gain=kw.get("gain"),
        recall=kw.get("recall"),
        discount=kw.get("discount"),
    )
    return (w.name, w.scale, kw["protocol"], options)


def _truth(store: _Store, w: W.Workload, **overrides) -> rc.Result:
    """The value to check against: the reference at smoke scale (and on Oxford5k), else numpy."""
    key = _semantics_key(w, overrides)
    if key not in store.truth:
        exact = w.scale == "smoke" or w.name == "oxford5k"
        store.truth[key] = rc.evaluate(
            **w.evaluate_kwargs(implementation="reference" if exact else "numpy", **overrides)
        )
    return store.truth[key]


def _reference_rows(w: W.Workload) -> np.ndarray:
    """Queries checked against the exact reference at full scale: first and last (one for NUS-WIDE,
    whose 193,734 Python Hamming distances per query take ~14 s)."""
    return np.array([0]) if w.name == "nuswide-5000" else np.array([0, w.n_queries - 1])


def _reference_subset(store: _Store, w: W.Workload) -> Tuple[np.ndarray, rc.Result]:
    rows = _reference_rows(w)
    key = ("reference-subset", w.name, w.scale)
    if key not in store.truth:
        store.truth[key] = rc.evaluate(**w.subset(rows).evaluate_kwargs(implementation="reference"))
    return rows, store.truth[key]


# ---------------------------------------------------------------------------------------------
# checks (after timing)
# ---------------------------------------------------------------------------------------------
def _assert_per_query_close(got, want, label: str, rows: Optional[np.ndarray] = None) -> None:
    """Every per-query field within 1e-12 (the implementations' contract with each other)."""
    pick = (lambda a: a) if rows is None else (lambda a: np.asarray(a)[rows])
    np.testing.assert_array_equal(pick(got.n_relevant), want.n_relevant, err_msg=f"{label}: n_relevant")
    for field in FIELDS + ("cmc",):
        np.testing.assert_allclose(
            pick(getattr(got, field)), getattr(want, field), rtol=0, atol=TOLERANCE, err_msg=f"{label}: {field}"
        )


def check_implementation(store: _Store, w: W.Workload, name: str, result: rc.Result) -> None:
    assert result.implementation == name
    if w.scale == "smoke" or w.name == "oxford5k":
        truth = _truth(store, w)
        assert compare_per_query(truth.per_query, result.per_query, label=f"{name} vs reference: ") == []
        assert abs(result.map - float(truth.exact.map)) <= TOLERANCE
        assert abs(getattr(result, w.metric) - getattr(truth, w.metric)) <= TOLERANCE
        return
    rows, ref = _reference_subset(store, w)
    assert compare_per_query(ref.per_query, _rows(result.per_query, rows), label=f"{name} vs reference: ") == []
    if name == "numpy":
        store.truth.setdefault(_semantics_key(w, {}), result)  # numpy is the full-scale truth
        return
    truth = _truth(store, w)
    _assert_per_query_close(result.per_query, truth.per_query, f"{name} vs numpy")
    assert abs(result.map - truth.map) <= TOLERANCE
    assert abs(getattr(result, w.metric) - getattr(truth, w.metric)) <= TOLERANCE
    np.testing.assert_allclose(result.cmc, truth.cmc, rtol=0, atol=TOLERANCE)


def _rows(pq, rows: np.ndarray):
    return rc.PerQuery(
        **{f: (None if getattr(pq, f) is None else np.asarray(getattr(pq, f))[rows]) for f in ARRAY_FIELDS}
    )


def check_baseline(store: _Store, w: W.Workload, name: str, result: Any) -> None:
    if name == "argsort":  # a timing anchor: it must have sorted every row (distances or scores)
        d = np.asarray(w.arrays[w.matrix_key])
        assert result.shape == d.shape
        sorted_rows = np.take_along_axis(d, result, axis=1)
        assert (np.diff(sorted_rows, axis=1) >= 0).all()
        return
    assert isinstance(result, BaselineResult)
    sem = result.semantics
    # the options the baseline names (ap_rule for AP, gain and discount for nDCG)
    overrides = {key: sem[key] for key in ("protocol", "k", "ap_rule", "max_rank", "gain", "discount") if key in sem}
    if sem["tie_order"] == "stable":
        truth = _truth(store, w, ties="stable", **overrides)
        counted = truth.per_query.n_relevant > 0 if sem["empty"] == "skip" else slice(None)
        for field, mean in (("ap", "map"), ("ndcg", "ndcg_at_k")):
            if getattr(result, field) is None:
                continue
            want = getattr(truth.per_query, field)
            np.testing.assert_allclose(
                getattr(result, field), want, rtol=0, atol=TOLERANCE, err_msg=f"{name}: per-query {field}"
            )
            assert abs(getattr(result, mean) - float(np.mean(want[counted]))) <= TOLERANCE, f"{name}: {mean}"
        return
    # unspecified tie order: between the pessimistic and the optimistic value, per query
    low = _truth(store, w, ties="pessimistic", **overrides).per_query
    high = _truth(store, w, ties="optimistic", **overrides).per_query
    for field in ("ap", "inp", "cmc", "ndcg"):
        got = getattr(result, field)
        if got is None:
            continue
        lo, hi = getattr(low, field), getattr(high, field)
        inside = (got >= lo - TOLERANCE).all() and (got <= hi + TOLERANCE).all()
        assert inside, f"{name}: {field} outside the tie bounds"


# ---------------------------------------------------------------------------------------------
# the benchmarks
# ---------------------------------------------------------------------------------------------
def check_peer(store: _Store, w: W.Workload, name: str, result: BaselineResult) -> None:
    def evaluate(workload: W.Workload, **overrides) -> rc.Result:
        if workload is w:  # the benchmark's own input: the session's cached truth
            return _truth(store, w, **overrides)
        return verify.default_evaluate(workload, **overrides)  # a derived input (tie-free, forced order)

    assert verify.check_peer(w, name, result, evaluate) == []


def _role(candidate: str) -> str:
    return "implementation" if candidate in C.IMPLEMENTATIONS else "peer" if candidate in C.PEERS else "baseline"


def _run(benchmark, store: _Store, w: W.Workload, candidate: str) -> None:
    if candidate in C.IMPLEMENTATIONS:
        require_implementation(candidate)
    reason = C.skip_reason(w, candidate)
    if reason is not None:
        pytest.skip(reason)
    benchmark.group = w.group
    benchmark.extra_info.update(w.extra_info())
    benchmark.extra_info["candidate"] = candidate
    benchmark.extra_info["role"] = _role(candidate)
    runner = C.make_runner(w, candidate)
    anchor = store.anchor(w)
    n_rounds = C.rounds(w, candidate)
    if n_rounds is None:
        # one untimed probe sets the rounds; it is also a warm-up (of the anchor too), so no
        # timed round pays what a process does once per gallery size (the rank-discount table:
        # about 2.6 s at 4M items) or cold caches
        anchor()
        start = time.perf_counter()
        runner()
        n_rounds = C.rounds(w, candidate, probe_seconds=time.perf_counter() - start)
    result, times = A.interleaved(benchmark, runner, anchor, n_rounds)
    benchmark.extra_info.update(times.extra_info())
    if candidate in C.IMPLEMENTATIONS:
        check_implementation(store, w, candidate, result)
        benchmark.extra_info["value"] = float(getattr(result, w.metric))
    elif candidate in C.PEERS:
        check_peer(store, w, candidate, result)
        benchmark.extra_info["value"] = float(result.value)
        benchmark.extra_info["peer_conventions"] = result.semantics.get("note", "")
    else:
        check_baseline(store, w, candidate, result)
        if isinstance(result, BaselineResult):
            benchmark.extra_info["value"] = float(result.value)
    if benchmark.enabled and MEASURE_MEMORY:
        from retrieval_conformance.conformance.bench.memory import measure_peak_memory

        median = benchmark.stats.stats.median if benchmark.stats is not None else None
        benchmark.extra_info.update(
            measure_peak_memory(store.saved_dir(w), candidate, query_limit=C.memory_query_limit(w, candidate, median))
        )


@pytest.mark.benchmark
@pytest.mark.skipif(not RUN_FULL, reason="full-scale benchmark: set RC_BENCH=1 (tox -e bench)")
@pytest.mark.parametrize("case", FULL_CASES, ids=IDS)
def test_full_scale(benchmark, store, case):
    name, candidate = case
    _run(benchmark, store, store.get(name, "full"), candidate)


@pytest.mark.parametrize("case", FULL_CASES, ids=IDS)
def test_smoke(benchmark, store, case):
    """The same benchmark on a tiny version of the workload, checked against the exact reference."""
    name, candidate = case
    _run(benchmark, store, store.get(name, "smoke"), candidate)
