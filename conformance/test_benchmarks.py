"""Speed benchmarks at real dataset scales (pytest-benchmark) and their tiny smoke versions.

Every workload of :mod:`.workloads` is a benchmark group; every implementation and the
baselines of :mod:`.baselines` run in it.  Results are checked AFTER timing:

* implementations, against the exact reference on one or two queries, and on every query
  against the numpy implementation (itself proven equal to the reference by the
  cross-implementation tests), because the pure-Python reference with exact fractions would
  take hours at full scale (it runs whole only on Oxford5k and in the smoke versions);
* baselines, against the same implementation under the conventions the baseline computes
  (``BaselineResult.semantics``); a baseline whose tie order is unspecified (numpy's default
  argsort, as torchreid) must lie between the ``pessimistic`` and ``optimistic`` values.

Full scale runs only with ``RC_BENCH=1`` (``tox -e bench``); without it those tests are
skipped and the smoke versions (not marked ``benchmark``, so a gate never compares their
microsecond timings) run in the normal suite with the benchmark fixture disabled.

Peak extra memory is measured in a child process per (workload, candidate) (see
:func:`.bench_report.measure_peak_memory`) and stored in ``extra_info``; ``RC_BENCH_MEMORY=0``
skips it.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance import workloads as W
from retrieval_conformance.conformance.baselines import BaselineResult
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.conformance.requirements import require_implementation

RUN_FULL = os.environ.get("RC_BENCH", "").strip() == "1"
MEASURE_MEMORY = os.environ.get("RC_BENCH_MEMORY", "1").strip() != "0"
TOLERANCE = 1e-12
FIELDS = ("ap", "hits_at_k", "precision_at_k", "recall_at_k", "inp", "r_precision")

FULL_CASES = [(name, cand) for name in W.WORKLOAD_NAMES for cand in W.candidate_names(name)]
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
    options = rc.resolve_options(kw["protocol"], kw.get("k"), kw.get("max_rank", 50), kw.get("ties"),
                                 kw.get("ap_rule"), kw.get("ap_at_k"), kw.get("empty"), kw.get("radius"))
    return (w.name, w.scale, kw["protocol"], options)


def _truth(store: _Store, w: W.Workload, **overrides) -> rc.Result:
    """The value to check against: the reference at smoke scale (and on Oxford5k), else numpy."""
    key = _semantics_key(w, overrides)
    if key not in store.truth:
        exact = w.scale == "smoke" or w.name == "oxford5k"
        store.truth[key] = rc.evaluate(**w.evaluate_kwargs(implementation="reference" if exact else "numpy",
                                                           **overrides))
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
        np.testing.assert_allclose(pick(getattr(got, field)), getattr(want, field), rtol=0, atol=TOLERANCE,
                                   err_msg=f"{label}: {field}")


def check_implementation(store: _Store, w: W.Workload, name: str, result: rc.Result) -> None:
    assert result.implementation == name
    if w.scale == "smoke" or w.name == "oxford5k":
        truth = _truth(store, w)
        assert compare_per_query(truth.per_query, result.per_query, label=f"{name} vs reference: ") == []
        assert abs(result.map - float(truth.exact.map)) <= TOLERANCE
        return
    rows, ref = _reference_subset(store, w)
    assert compare_per_query(ref.per_query, _rows(result.per_query, rows), label=f"{name} vs reference: ") == []
    if name == "numpy":
        store.truth.setdefault(_semantics_key(w, {}), result)  # numpy is the full-scale truth
        return
    truth = _truth(store, w)
    _assert_per_query_close(result.per_query, truth.per_query, f"{name} vs numpy")
    assert abs(result.map - truth.map) <= TOLERANCE
    np.testing.assert_allclose(result.cmc, truth.cmc, rtol=0, atol=TOLERANCE)


def _rows(pq, rows: np.ndarray):
    out = rc.PerQuery(**{f: (None if getattr(pq, f) is None else np.asarray(getattr(pq, f))[rows])
                         for f in ("ap", "n_relevant", "hits_at_k", "precision_at_k", "recall_at_k", "cmc",
                                   "inp", "r_precision", "precision_at_radius", "recall_at_radius")})
    return out


def check_baseline(store: _Store, w: W.Workload, name: str, result: Any) -> None:
    if name == "argsort":  # a timing anchor: it must have sorted every row
        d = np.asarray(w.arrays["distances"])
        assert result.shape == d.shape
        sorted_rows = np.take_along_axis(d, result, axis=1)
        assert (np.diff(sorted_rows, axis=1) >= 0).all()
        return
    assert isinstance(result, BaselineResult)
    sem = result.semantics
    overrides = {"protocol": sem["protocol"], "k": sem["k"], "ap_rule": sem["ap_rule"]}
    if "max_rank" in sem:
        overrides["max_rank"] = sem["max_rank"]
    if sem["tie_order"] == "stable":
        truth = _truth(store, w, ties="stable", **overrides)
        np.testing.assert_allclose(result.ap, truth.per_query.ap, rtol=0, atol=TOLERANCE,
                                   err_msg=f"{name}: per-query AP")
        counted = truth.per_query.n_relevant > 0 if sem["empty"] == "skip" else slice(None)
        assert abs(result.map - float(np.mean(truth.per_query.ap[counted]))) <= TOLERANCE
        return
    # unspecified tie order: between the pessimistic and the optimistic value, per query
    low = _truth(store, w, ties="pessimistic", **overrides).per_query
    high = _truth(store, w, ties="optimistic", **overrides).per_query
    for field, got in (("ap", result.ap), ("inp", result.inp), ("cmc", result.cmc)):
        lo, hi = getattr(low, field), getattr(high, field)
        inside = (got >= lo - TOLERANCE).all() and (got <= hi + TOLERANCE).all()
        assert inside, f"{name}: {field} outside the tie bounds"


# ---------------------------------------------------------------------------------------------
# the benchmarks
# ---------------------------------------------------------------------------------------------
def _run(benchmark, store: _Store, w: W.Workload, candidate: str) -> None:
    if candidate in W.IMPLEMENTATIONS:
        require_implementation(candidate)
    reason = W.skip_reason(w, candidate)
    if reason is not None:
        pytest.skip(reason)
    benchmark.group = w.group
    benchmark.extra_info.update(w.extra_info())
    benchmark.extra_info["candidate"] = candidate
    benchmark.extra_info["role"] = "implementation" if candidate in W.IMPLEMENTATIONS else "baseline"
    runner = W.make_runner(w, candidate)
    n_rounds = W.rounds(w, candidate)
    if n_rounds is None:  # a fast run: one untimed probe (also a warm-up) sets the rounds
        start = time.perf_counter()
        runner()
        n_rounds = W.rounds(w, candidate, probe_seconds=time.perf_counter() - start)
    result = benchmark.pedantic(runner, rounds=n_rounds, iterations=1, warmup_rounds=0)
    if candidate in W.IMPLEMENTATIONS:
        check_implementation(store, w, candidate, result)
        benchmark.extra_info["map"] = float(result.map)
    else:
        check_baseline(store, w, candidate, result)
        if isinstance(result, BaselineResult):
            benchmark.extra_info["map"] = float(result.map)
    if benchmark.enabled and MEASURE_MEMORY:
        from retrieval_conformance.conformance.bench_report import measure_peak_memory

        median = benchmark.stats.stats.median if benchmark.stats is not None else None
        benchmark.extra_info.update(measure_peak_memory(store.saved_dir(w), candidate,
                                                        query_limit=W.memory_query_limit(w, candidate, median)))


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


# ---------------------------------------------------------------------------------------------
# the workloads, the memory measurement, the summary and the gate
# ---------------------------------------------------------------------------------------------
#: CONVENTIONS §12 standard sizes
STANDARD_SHAPES = {"cifar10-all": (1000, 54_000), "cifar10-1000": (1000, 54_000), "nuswide-5000": (2100, 193_734),
                   "market1501": (3368, 15_913), "msmt17": (11_659, 82_161), "oxford5k": (55, 5063)}


@pytest.mark.parametrize("name", ["cifar10-1000", "market1501", "oxford5k"])
def test_full_scale_shapes_are_the_standard_sizes(name):
    w = W.build(name, "full")
    assert (w.n_queries, w.n_gallery) == STANDARD_SHAPES[name]
    if name == "cifar10-1000":
        assert w.arrays["query_codes"].shape[1] == 64 and w.k == 1000
        assert set(np.unique(w.arrays["db_codes"])) == {-1.0, 1.0}
    if name == "market1501":
        g = w.arrays["db_labels"]
        assert (g == 0).sum() == 2793 and (g == -1).sum() > 0  # distractors and junk images
        assert len(np.unique(w.arrays["query_labels"])) == 751 and len(np.unique(w.arrays["db_cams"])) == 6
        assert w.arrays["distances"].dtype == np.float32


@pytest.mark.slow
def test_nuswide_full_scale_shape():
    w = W.build("nuswide-5000", "full")
    assert (w.n_queries, w.n_gallery) == STANDARD_SHAPES["nuswide-5000"]
    assert w.arrays["db_labels"].shape[1] == 21 and w.k == 5000
    assert (w.arrays["db_labels"].sum(1) >= 1).all()  # every image has a concept


def test_msmt17_full_scale_ids_without_writing_the_matrix():
    spec = W._ReidSpec(n_ids=3060, n_cams=15, n_queries=11_659, n_identity_gallery=82_161)
    q_pid, q_cam, g_pid, g_cam = W._reid_ids(np.random.default_rng(0), spec)
    assert (q_pid.size, g_pid.size) == STANDARD_SHAPES["msmt17"]
    assert len(np.unique(q_pid)) == 3060 and g_cam.max() < 15
    assert len({(p, c) for p, c in zip(q_pid.tolist(), q_cam.tolist())}) == q_pid.size  # one query per pair


@pytest.mark.parametrize("name", W.WORKLOAD_NAMES)
def test_workloads_are_deterministic(name, tmp_path):
    a = W.build(name, "smoke", directory=str(tmp_path / "a"))
    b = W.build(name, "smoke", directory=str(tmp_path / "b"))
    assert a.arrays.keys() == b.arrays.keys()
    for key in a.arrays:
        np.testing.assert_array_equal(a.arrays[key], b.arrays[key], err_msg=key)
    a.cleanup(), b.cleanup()


def test_memory_mapped_distances_are_written_block_by_block(tmp_path):
    spec = W._ReidSpec(n_ids=50, n_cams=3, n_queries=150, n_identity_gallery=200)
    qf, gf, *_ = W._reid_embeddings(spec, 1)
    mapped = W.write_distances_npy(str(tmp_path / "d.npy"), qf, gf, block_rows=70)  # 2 blocks of 64, 1 of 22
    assert isinstance(mapped, np.memmap) and mapped.dtype == np.float32
    np.testing.assert_array_equal(mapped, W.squared_euclidean(qf, gf))
    w = W.build("msmt17", "smoke", directory=str(tmp_path / "m"))
    assert w.memory_mapped and os.path.exists(tmp_path / "m" / "distances.npy")
    w.cleanup()
    assert not os.path.exists(tmp_path / "m")


def test_save_load_and_subset_round_trip(tmp_path):
    w = W.build("market1501", "smoke")
    back = W.Workload.load(w.save(str(tmp_path / "w")))
    assert (back.name, back.protocol, back.options) == (w.name, w.protocol, w.options)
    for key in w.arrays:
        np.testing.assert_array_equal(back.arrays[key], w.arrays[key])
    sub = w.subset(np.array([2, 5]))
    np.testing.assert_array_equal(sub.arrays["distances"], w.arrays["distances"][[2, 5]])
    np.testing.assert_array_equal(sub.arrays["db_labels"], w.arrays["db_labels"])
    full = rc.evaluate(**w.evaluate_kwargs(implementation="numpy"))
    part = rc.evaluate(**sub.evaluate_kwargs(implementation="numpy"))
    np.testing.assert_array_equal(part.per_query.ap, full.per_query.ap[[2, 5]])


def test_unknown_names_are_rejected():
    with pytest.raises(ValueError, match="name: expected one of"):
        W.build("cifar100")
    with pytest.raises(ValueError, match="scale: expected"):
        W.build("oxford5k", "huge")
    with pytest.raises(ValueError, match="candidate: expected"):
        W.make_runner(W.build("oxford5k", "smoke"), "fastest")


def test_full_matrix_is_skipped_where_it_needs_gigabytes():
    class Big:
        n_queries, n_gallery, scale, name = 11_659, 82_161, "full", "msmt17"

    assert "fast-reid#404" in W.skip_reason(Big(), "full-matrix")
    assert W.skip_reason(Big(), "c") is None


def allocate_256_mib(workload):
    """A stand-in for a lab's evaluation function: holds 256 MiB while it runs."""
    block = np.ones(256 * 2**20, dtype=np.uint8)
    return int(block[::4096].sum())


def test_peak_memory_is_measured_in_a_child_process(tmp_path):
    from retrieval_conformance.conformance.bench_report import measure_peak_memory

    w = W.build("oxford5k", "smoke")
    directory = w.save(str(tmp_path / "w"))
    big = measure_peak_memory(directory, "py:retrieval_conformance.conformance.test_benchmarks:allocate_256_mib")
    assert big.get("memory_error") is None, big
    assert 250 <= big["peak_extra_mib"] < 400, big
    small = measure_peak_memory(directory, "numpy")
    assert small["peak_extra_mib"] < 100, small
    broken = measure_peak_memory(directory, "py:no_such_module_rc:f")
    assert broken["peak_extra_mib"] is None and "no_such_module_rc" in broken["memory_error"]


def _fake_run(medians: Dict[str, Dict[str, float]], memory=None) -> Dict[str, Any]:
    benches = []
    for workload, cands in medians.items():
        for cand, med in cands.items():
            info = {"workload": workload, "candidate": cand, "title": f"{workload} title", "queries": 10,
                    "peak_extra_mib": (memory or {}).get((workload, cand))}
            benches.append({"group": f"{workload} 10x20", "name": f"test_full_scale[{workload}-{cand}]",
                            "fullname": f"x::test_full_scale[{workload}-{cand}]", "extra_info": info,
                            "stats": {"median": med, "rounds": 1}})
    return {"benchmarks": benches, "datetime": "2026-01-01T00:00:00", "machine_info": {}, "commit_info": {}}


def test_report_prints_ratios_memory_and_targets():
    from retrieval_conformance.conformance.bench_report import format_report

    run = _fake_run({"cifar10-all": {"c": 0.1, "loop": 7.6, "numpy": 0.5},
                     "market1501": {"c": 0.2, "argsort": 0.6, "full-matrix": 0.7, "loop": 5.0}},
                    memory={("market1501", "c"): 250.0})
    text = format_report(run)
    assert "76.0x" in text  # 7.6 / 0.1
    assert "0.33x" in text  # c / argsort at Market scale
    assert "250 MiB" in text
    assert "PASS  C >= 50x the per-query loop at CIFAR-10 scale (mAP@ALL): 76.0x" in text
    assert "PASS  C <= 0.5x a bare np.argsort" in text
    assert "MISS  C >= 4x faster than the torchreid-style evaluator (Market-1501): 3.5x" in text
    assert "MISS  C peak extra memory < 200 MB" in text


def test_report_and_plot_commands(tmp_path, capsys):
    from retrieval_conformance.conformance import bench_report as br

    storage = tmp_path / "store"
    assert br.bench_main(["report", "--storage", str(storage)]) == 2
    assert br.bench_main(["plot", "--storage", str(storage)]) == 2
    for c_median in [0.10, 0.11, 0.30]:
        br._save(str(storage), _fake_run({"market1501": {"c": c_median, "argsort": 0.6}}))
    assert [os.path.basename(p)[:4] for p in br.saved_runs(str(storage))] == ["0001", "0002", "0003"]
    capsys.readouterr()
    assert br.bench_main(["report", "--storage", str(storage)]) == 0
    assert "0003_" in capsys.readouterr().out
    out = tmp_path / "history.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # the missing extra is a usage error naming its install command
        assert br.bench_main(["plot", "--storage", str(storage), "--out", str(out)]) == 2
        assert "pip install 'retrieval-conformance[plot]'" in capsys.readouterr().err
        assert not out.exists()
    else:
        assert br.bench_main(["plot", "--storage", str(storage), "--out", str(out)]) == 0
        assert out.exists() and out.stat().st_size > 1000


def _seed000_style(query_codes, db_codes, query_labels, db_labels, topk):
    from retrieval_conformance.conformance.baselines import calc_top_map

    return calc_top_map(query_codes, db_codes, query_labels, db_labels, topk).map


def _divides_by_k(query_codes, db_codes, query_labels, db_labels, topk):
    """AP@k divided by k instead of by the hits (a CONVENTIONS §11 mistake)."""
    total = 0.0
    for i in range(len(query_codes)):
        gnd = (query_labels[i] @ db_labels.T > 0)[np.argsort(-(query_codes[i] @ db_codes.T), kind="stable")][:topk]
        ranks = np.flatnonzero(gnd) + 1.0
        total += float(np.sum(np.arange(1, ranks.size + 1) / ranks)) / topk
    return total / len(query_codes)


def test_a_lab_function_is_benchmarked_through_the_harness_adapter(benchmark):
    run = W.benchmark_function(benchmark, _seed000_style, "hashing-codes", "cifar10-1000", scale="smoke")
    assert run.differences == [] and abs(run.values["mAP"] - run.expected["mAP"]) < 1e-12


def test_a_wrong_lab_function_fails_after_timing(benchmark):
    with pytest.raises(AssertionError, match="differs from the 'hashing' protocol: mAP"):
        W.benchmark_function(benchmark, _divides_by_k, "hashing-codes", "cifar10-1000", scale="smoke")


def test_a_lab_reid_function_through_the_reid_adapter(benchmark):
    from retrieval_conformance.conformance.baselines import torchreid_style

    def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
        res = torchreid_style(distmat, q_pids, g_pids, q_camids, g_camids, max_rank)
        valid = res.inp > 0  # queries with a valid match (torchreid leaves the others out)
        return res.cmc[valid].mean(0), res.map, res.inp[valid].mean()

    run = W.benchmark_function(benchmark, evaluate, "reid", "market1501", scale="smoke")
    assert run.differences == [] and set(run.values) == {"cmc", "mAP", "mINP"}
    assert abs(run.values["mINP"] - run.expected["mINP"]) < 1e-9


@pytest.mark.slow
def test_gate_saves_first_then_compares(tmp_path, capsys):
    """First run: no saved run, so no compare (a usage error otherwise) and the run is saved.
    A saved run that was much faster makes the next run fail, and a failed run is not saved."""
    from retrieval_conformance.conformance import bench_report as br

    storage = str(tmp_path / "store")
    args = ["run", "--storage", storage, "--no-memory", "-k", "oxford5k-c or oxford5k-argsort"]
    assert br.bench_main(args) == 0
    out = capsys.readouterr().out
    assert "this run becomes the baseline" in out and "saved as" in out
    (first,) = br.saved_runs(storage)
    data = br.load_run(first)
    from retrieval_conformance.implementations import registry

    expected = {"argsort"} | ({"c"} if registry.unavailable_reason("c") is None else set())
    assert {b["extra_info"]["candidate"] for b in data["benchmarks"]} == expected
    for b in data["benchmarks"]:  # pretend the saved run was 100x faster
        for key in ("min", "max", "mean", "median"):
            b["stats"][key] /= 100
    with open(first, "w") as fh:
        json.dump(data, fh)
    assert br.bench_main(args) != 0
    out = capsys.readouterr().out
    assert "comparing with the last saved run 0001_" in out and "not saved" in out
    assert len(br.saved_runs(storage)) == 1


def test_rounds_fast_runs_get_many_slow_runs_one():
    class Fake:
        def __init__(self, name, scale="full"):
            self.name, self.scale = name, scale

    assert W.rounds(Fake("oxford5k"), "c") is None  # probe first
    assert W.rounds(Fake("oxford5k"), "c", probe_seconds=0.012) == W.MAX_ROUNDS
    assert W.rounds(Fake("market1501"), "c", probe_seconds=0.2) == 15
    assert W.rounds(Fake("cifar10-all"), "full-matrix", probe_seconds=11.0) == W.MIN_ROUNDS
    assert W.rounds(Fake("nuswide-5000"), "loop") == 1 and W.rounds(Fake("msmt17"), "torch") == 1
    assert W.rounds(Fake("market1501", "smoke"), "c") == 1
