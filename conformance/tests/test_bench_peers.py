"""The peers (other libraries' mAP): their conventions against ours, and the checks that catch a wrong one.

Every installed peer is also run and checked on the smoke workloads by test_bench_speed; this
module pins the conventions on small hand-made inputs, and shows that :func:`verify.check_peer`
rejects a peer that computes something else.  A peer that is not installed is skipped.
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench import candidates as C
from retrieval_conformance.conformance.bench import peers as P
from retrieval_conformance.conformance.bench import verify
from retrieval_conformance.conformance.bench import workloads as W
from retrieval_conformance.conformance.bench.baselines import BaselineResult

# one query, tied scores: relevant items at positions 1 and 3 of a tie group of four, then one more
SCORES = np.array([[0.9, 0.5, 0.5, 0.5, 0.5, 0.3, 0.2]], dtype=np.float32)
RELEVANT = np.array([[False, True, False, True, False, False, True]])


def needs(peer):
    reason = P.unavailable_reason(peer)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def ours(k=None, **options):
    return rc.evaluate(
        scores=SCORES, relevance=RELEVANT, protocol="hashing", k=k, implementation="reference", **options
    ).per_query.ap


def test_a_missing_peer_is_a_skip_with_its_install_command(monkeypatch):
    monkeypatch.setitem(P._MODULES, "ranx", ("no_such_module_rc_ranx", "ranx"))
    reason = C.skip_reason(W.build("scores-map", "smoke"), "ranx")
    assert "ranx is not installed" in reason and "pip install 'retrieval-conformance[bench]'" in reason


def test_peers_per_workload_and_the_ranx_size_limit():
    assert C.candidate_names("scores-map") == [
        "numpy",
        "c",
        "torch",
        "reference",
        "plain-numpy",
        "sklearn",
        "torchmetrics",
        "ranx",
        "argsort",
    ]
    assert "sklearn" not in C.candidate_names("scores-map100")  # average_precision_score has no cut-off
    assert C.candidate_names("scaling-codes-4m") == ["numpy", "c", "torch", "reference", "plain-numpy"]
    assert "faiss" in C.candidate_names("cifar10-1000") and "faiss" not in C.candidate_names("cifar10-all")

    class Big:
        name, kind, scale, k, n_queries, n_gallery = "scores-map", "scores", "full", None, 1000, 50_000

    reason = P.skip_reason(Big(), "ranx")
    assert P.unavailable_reason("ranx") is not None or "50,000,000" in reason
    with pytest.raises(ValueError, match="does not run on workload"):
        P.make_peer_runner(W.build("market1501", "smoke"), "sklearn")


def test_plain_numpy_is_stable_ties_and_its_top_k_a_valid_ranking():
    full = P.numpy_map(SCORES, RELEVANT)
    assert full.semantics["tie_order"] == "stable"
    np.testing.assert_allclose(full.ap, ours(), rtol=0, atol=1e-15)
    top = P.numpy_map(SCORES, RELEVANT, k=3)  # k=3 cuts the tie group: argpartition picks its members
    assert top.semantics["tie_order"] == "unspecified" and top.ranking.shape == (1, 3)


@needs("sklearn")
def test_sklearn_is_the_grouped_tie_policy():
    got = P.sklearn_map(SCORES, RELEVANT).ap
    np.testing.assert_allclose(got, ours(ties="grouped"), rtol=0, atol=1e-15)
    assert abs(got[0] - ours()[0]) > 0.01  # on tied scores it is not the stable value


@needs("torchmetrics")
def test_torchmetrics_counts_an_item_scoring_zero_or_less_as_non_relevant():
    free = np.array([[0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.2]], dtype=np.float32)  # tie-free
    negative = free - np.float32(0.4)  # the relevant item at 0.2 now scores -0.2
    got = P.torchmetrics_map(negative, RELEVANT).ap[0]
    hidden = RELEVANT.copy()
    hidden[0, 6] = False
    assert got == pytest.approx(
        rc.evaluate(scores=negative, relevance=hidden, protocol="hashing", implementation="reference").per_query.ap[0],
        abs=1e-6,
    )
    assert got > P.torchmetrics_map(free, RELEVANT).ap[0]  # same order, its worst-ranked relevant item dropped


@needs("ranx")
def test_ranx_map_at_k_divides_by_all_relevant_items():
    free = np.array([[0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.2]], dtype=np.float32)  # tie-free
    got = P.ranx_map(free, RELEVANT, 3, P.ranx_names(1, 7)).ap
    np.testing.assert_allclose(
        got,
        rc.evaluate(
            scores=free, relevance=RELEVANT, protocol="hashing", k=3, ap_at_k="r", implementation="reference"
        ).per_query.ap,
        atol=1e-12,
    )
    assert P.ranx_names(12, 3)[0][:3] == ["q0000000", "q0000001", "q0000002"]  # sorted by name = by number


def test_check_peer_accepts_ours_and_rejects_a_different_computation():
    w = W.build("scores-map100", "smoke")
    good = P.numpy_map(w.arrays["scores"], w.arrays["relevance"], w.k)
    assert verify.check_peer(w, "plain-numpy", good) == []
    # claims the hits denominator but divides by k
    bad_ap = good.ap * np.array([(w.arrays["relevance"][q][good.ranking[q]]).sum() for q in range(w.n_queries)]) / w.k
    bad = BaselineResult(float(bad_ap.mean()), bad_ap, semantics=good.semantics, ranking=good.ranking)
    problems = verify.check_peer(w, "plain-numpy", bad, rerun=lambda free: _divided_by_k(free))
    assert any("tie bounds" in p for p in problems) and any("tie-free" in p for p in problems)
    assert any("own ranking" in p for p in problems)
    # claims stable ties but sorts ascending (the worst order)
    wrong = P.numpy_map(-w.arrays["scores"], w.arrays["relevance"])
    wrong.semantics["k"] = w.k
    assert verify.check_peer(w, "plain-numpy", wrong) != []


def _divided_by_k(free):
    r = P.numpy_map(free.arrays["scores"], free.arrays["relevance"], free.k)
    hits = np.array([free.arrays["relevance"][q][r.ranking[q]].sum() for q in range(free.n_queries)])
    return BaselineResult(float(np.mean(r.ap * hits / free.k)), r.ap * hits / free.k, semantics=r.semantics)


def test_tie_free_copy_keeps_the_stable_order():
    w = W.build("scores-map", "smoke")
    free = verify.tie_free(w, np.arange(5))
    s = free.arrays["scores"]
    assert all(np.unique(row).size == row.size for row in s) and s.min() >= 1
    stable = rc.evaluate(**w.subset(np.arange(5)).evaluate_kwargs(implementation="reference"))
    for ties in ("pessimistic", "optimistic", "grouped"):
        np.testing.assert_array_equal(
            rc.evaluate(**free.evaluate_kwargs(implementation="reference", ties=ties)).per_query.ap, stable.per_query.ap
        )
