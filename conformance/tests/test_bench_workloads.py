"""The benchmark workloads: standard sizes, determinism, memory-mapped distances, storage; rounds and skips."""

from __future__ import annotations

import os

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench import candidates as C
from retrieval_conformance.conformance.bench import reid
from retrieval_conformance.conformance.bench import workloads as W

#: spec §12 standard sizes
STANDARD_SHAPES = {
    "cifar10-all": (1000, 54_000),
    "cifar10-1000": (1000, 54_000),
    "nuswide-5000": (2100, 193_734),
    "market1501": (3368, 15_913),
    "msmt17": (11_659, 82_161),
    "oxford5k": (55, 5063),
    "graded-ndcg10": (1000, 50_000),
    "scores-map": (1000, 50_000),
    "scores-map100": (1000, 50_000),
}


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


def _graded_structure(w, relevant_median):
    """Shared checks of the graded workload: dtypes, 3-decimal scores, grade shares, ties."""
    s, g = w.arrays["scores"], w.arrays["relevance"]
    assert (w.kind, w.protocol, w.k, w.metric) == ("scores", "sklearn-ndcg", 10, "ndcg_at_k")
    assert s.dtype == np.float32 and g.dtype == np.int8
    assert (s == np.round(s, 3)).all()  # a "%.3f" run file
    counts = np.bincount(g.ravel())
    assert counts.size == 4 and counts[0] > 0.95 * g.size and counts[1] > counts[2] > counts[3] > 0
    per_query = (g > 0).sum(1)
    assert np.median(per_query) == relevant_median and (per_query == 0).any()  # tens; a few empty queries
    sums = np.bincount(g.ravel(), weights=s.ravel().astype(np.float64))
    assert (np.diff(sums / counts) > 0).all()  # higher grades score higher on average
    top = np.sort(np.partition(s, s.shape[1] - 11, axis=1)[:, -11:], axis=1)
    assert (np.diff(top, axis=1) == 0).any(1).mean() > 0.2  # ties reach the top 10


def test_graded_smoke_workload_and_its_baseline():
    """Scores with ties and grades 0..3; the full-matrix baseline is sklearn-ndcg with stable ties,
    which differs from the tie-averaged value exactly on queries with tied scores in their top."""
    w = W.build("graded-ndcg10", "smoke")
    assert (w.n_queries, w.n_gallery) == (36, 400)
    _graded_structure(w, 10)
    base = C.make_runner(w, "full-matrix")()
    assert base.semantics["tie_order"] == "stable" and base.value == base.ndcg_at_k
    stable = rc.evaluate(**w.evaluate_kwargs(implementation="reference", ties="stable"))
    averaged = rc.evaluate(**w.evaluate_kwargs(implementation="reference"))
    np.testing.assert_allclose(base.ndcg, stable.per_query.ndcg, rtol=0, atol=1e-12)
    differ = np.flatnonzero(averaged.per_query.ndcg != stable.per_query.ndcg)
    assert differ.size >= 1
    s = w.arrays["scores"]
    for q in differ:  # a tie group of the top 10 reaches past it or mixes grades
        top = np.sort(s[q])[::-1][:11]
        assert (np.diff(top) == 0).any()
    sub = w.subset(np.array([0, 5]))
    assert sub.kind == "scores" and sub.metric == "ndcg_at_k" and sub.arrays["scores"].shape == (2, 400)
    part = rc.evaluate(**sub.evaluate_kwargs(implementation="reference"))
    np.testing.assert_array_equal(part.per_query.ndcg, averaged.per_query.ndcg[[0, 5]])
    with pytest.raises(ValueError, match="graded relevance"):
        from retrieval_conformance.conformance.bench.adapters import as_case

        as_case(w)


@pytest.mark.slow
def test_graded_full_scale_shape_and_structure():
    w = W.build("graded-ndcg10", "full")
    assert (w.n_queries, w.n_gallery) == STANDARD_SHAPES["graded-ndcg10"]
    _graded_structure(w, 29)


def test_msmt17_full_scale_ids_without_writing_the_matrix():
    spec = reid._ReidSpec(n_ids=3060, n_cams=15, n_queries=11_659, n_identity_gallery=82_161)
    q_pid, q_cam, g_pid, g_cam = reid._reid_ids(np.random.default_rng(0), spec)
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
    spec = reid._ReidSpec(n_ids=50, n_cams=3, n_queries=150, n_identity_gallery=200)
    qf, gf, *_ = reid._reid_embeddings(spec, 1)
    mapped = reid.write_distances_npy(str(tmp_path / "d.npy"), qf, gf, block_rows=70)  # 2 blocks of 64, 1 of 22
    assert isinstance(mapped, np.memmap) and mapped.dtype == np.float32
    np.testing.assert_array_equal(mapped, reid.squared_euclidean(qf, gf))
    w = W.build("msmt17", "smoke", directory=str(tmp_path / "m"))
    assert w.memory_mapped and os.path.exists(tmp_path / "m" / "distances.npy")
    w.cleanup()
    assert not os.path.exists(tmp_path / "m")


def test_save_load_and_subset_round_trip(tmp_path):
    w = W.build("market1501", "smoke")
    back = W.Workload.load(w.save(str(tmp_path / "w")))
    assert (back.name, back.protocol, back.options, back.metric) == (w.name, w.protocol, w.options, "map")
    graded = W.build("graded-ndcg10", "smoke")
    graded_back = W.Workload.load(graded.save(str(tmp_path / "g")))
    assert (graded_back.kind, graded_back.metric, graded_back.n_gallery) == ("scores", "ndcg_at_k", 400)
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
        C.make_runner(W.build("oxford5k", "smoke"), "fastest")


def test_full_matrix_is_skipped_where_it_needs_gigabytes():
    class Big:
        n_queries, n_gallery, scale, name = 11_659, 82_161, "full", "msmt17"

    assert "fast-reid#404" in C.skip_reason(Big(), "full-matrix")
    assert C.skip_reason(Big(), "c") is None


def test_rounds_fast_runs_get_many_slow_runs_one():
    class Fake:
        def __init__(self, name, scale="full"):
            self.name, self.scale = name, scale

    assert C.rounds(Fake("oxford5k"), "c") is None  # probe first
    assert C.rounds(Fake("oxford5k"), "c", probe_seconds=0.012) == C.MAX_ROUNDS
    assert C.rounds(Fake("market1501"), "c", probe_seconds=0.2) == 15
    assert C.rounds(Fake("cifar10-all"), "full-matrix", probe_seconds=11.0) == C.MIN_ROUNDS
    assert C.rounds(Fake("nuswide-5000"), "loop") == 1 and C.rounds(Fake("msmt17"), "torch") == 1
    assert C.rounds(Fake("market1501", "smoke"), "c") == 1


def test_rounds_of_the_large_scaling_sizes_follow_their_probe():
    class Scaling:
        name, scale, n_gallery = "scaling-floats-4m", "full", 4_000_000

    assert C.rounds(Scaling(), "c") is None  # a probe (and warm-up) first
    assert C.rounds(Scaling(), "c", probe_seconds=4.0) == C.SCALING_ROUNDS
    assert C.rounds(Scaling(), "numpy", probe_seconds=60.0) == 1


def test_graded_candidates():
    assert C.candidate_names("graded-ndcg10") == list(C.IMPLEMENTATIONS) + ["full-matrix", "argsort"]
    w = W.build("graded-ndcg10", "smoke")
    assert C.skip_reason(w, "full-matrix") is None
    order = C.make_runner(w, "argsort")()  # the anchor sorts the scores (ascending: the same cost)
    assert (np.diff(np.take_along_axis(w.arrays["scores"], order, axis=1), axis=1) >= 0).all()
    with pytest.raises(ValueError, match="candidate: expected"):
        C.make_runner(w, "loop")


def test_scores_map_smoke_structure():
    """Rounded positive scores with ties, every query with a relevant item, relevant items scored higher."""
    w = W.build("scores-map", "smoke")
    w100 = W.build("scores-map100", "smoke")
    assert (w.kind, w.protocol, w.k, w.metric, w100.k) == ("scores", "hashing", None, "map", 40)
    s, rel = w.arrays["scores"], w.arrays["relevance"]
    np.testing.assert_array_equal(s, w100.arrays["scores"])  # one input, two metrics
    assert s.dtype == np.float32 and rel.dtype == bool and (s == np.round(s, 3)).all() and s.min() > 0
    assert rel.any(axis=1).all() and s[rel].mean() > s[~rel].mean()
    assert any(np.unique(row).size < row.size for row in s)  # ties
    stable = rc.evaluate(**w.evaluate_kwargs(implementation="reference"))
    grouped = rc.evaluate(**w.evaluate_kwargs(implementation="reference", ties="grouped"))
    assert stable.map != grouped.map  # the tie policy matters here (sklearn computes the grouped one)


@pytest.mark.slow
def test_scores_map_full_scale_share_and_ties():
    w = W.build("scores-map", "full")
    assert (w.n_queries, w.n_gallery) == STANDARD_SHAPES["scores-map"]
    per_query = w.arrays["relevance"].sum(1)
    assert 400 <= np.median(per_query) <= 600 and per_query.min() >= 1  # ~1% relevant
    top = np.sort(np.partition(-w.arrays["scores"], (99, 100), axis=1)[:, :101], axis=1)
    assert (top[:, 99] == top[:, 100]).mean() > 0.5  # k=100 cuts a tie group on most queries


def test_scaling_series_names_sizes_and_inputs():
    from retrieval_conformance.conformance.bench import scores

    assert W.SCALING_NAMES[:4] == (
        "scaling-floats-10k",
        "scaling-floats-100k",
        "scaling-floats-1m",
        "scaling-floats-4m",
    )
    assert list(scores.SCALING_SIZES.values()) == [10_000, 100_000, 1_000_000, 4_000_000]
    floats = W.build("scaling-floats-1m", "smoke")
    codes = W.build("scaling-codes-4m", "smoke")
    assert (floats.n_queries, floats.n_gallery) == (4, scores.SMOKE_SIZES["1m"])
    assert (codes.n_queries, codes.n_gallery) == (4, scores.SMOKE_SIZES["4m"])
    assert codes.arrays["db_codes"].dtype == np.int8 and set(np.unique(codes.arrays["db_codes"])) == {-1, 1}
    assert codes.arrays["db_labels"].ndim == 1 and codes.k is None and floats.k is None
    with pytest.raises(ValueError, match="size: expected"):
        scores.scaling_floats("smoke", "2m")


def test_scaling_full_scale_smallest_size_and_blockwise_codes(monkeypatch):
    from retrieval_conformance.conformance.bench import scores

    floats = W.build("scaling-floats-10k", "full")
    assert (floats.n_queries, floats.n_gallery) == (100, 10_000)
    assert 0.005 < floats.arrays["relevance"].mean() < 0.03
    codes = W.build("scaling-codes-10k", "full")
    assert codes.arrays["db_codes"].shape == (10_000, 64) and len(np.unique(codes.arrays["db_labels"])) == 100
    monkeypatch.setattr(scores, "CODE_BLOCK", 4096)  # three blocks: the same classes, codes still ±1
    blocked = W.build("scaling-codes-10k", "full")
    np.testing.assert_array_equal(blocked.arrays["db_labels"], codes.arrays["db_labels"])
    assert set(np.unique(blocked.arrays["db_codes"])) == {-1, 1}


def test_anchor_is_a_fixed_slice_of_the_same_input():
    from retrieval_conformance.conformance.bench import anchor as A

    w = W.build("market1501", "smoke")
    m = A.anchor_matrix(w)
    assert A.anchor_rows(w) == w.n_queries and m.shape == w.arrays["distances"].shape  # smoke: every row
    np.testing.assert_array_equal(m, w.arrays["distances"])

    class Big:
        n_queries, n_gallery = 100, 4_000_000

    assert A.anchor_rows(Big()) == 1
    Big.n_gallery = 50_000
    assert A.anchor_rows(Big()) == A.ANCHOR_ELEMENTS // 50_000
    codes = W.build("cifar10-1000", "smoke")
    hamming = A.anchor_matrix(codes)
    assert hamming.shape == (codes.n_queries, codes.n_gallery) and hamming.max() <= 64 and hamming.min() >= 0
    order = A.make_anchor(hamming)()
    assert (np.diff(np.take_along_axis(hamming, order, axis=1), axis=1) >= 0).all()


def test_interleaved_timing_without_the_benchmark_fixture():
    """The smoke path (fixture disabled): one round of each, the ratio and the load recorded."""
    from retrieval_conformance.conformance.bench import anchor as A

    calls = []
    result, times = A.interleaved(None, lambda: calls.append("candidate") or 7, lambda: calls.append("anchor"), 5)
    assert result == 7 and calls == ["anchor", "candidate"]
    info = times.extra_info()
    assert info["ratio_rounds"] == 1 and info["ratio_noise"] is None and len(info["ratios"]) == 1
    assert info["loadavg"] is None or len(info["loadavg"]) == 3
