"""Properties of the definitions, for every implementation; each test names its clause."""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import example, given
from hypothesis import strategies as st
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.conformance.support.strategies import tie_heavy_problems
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    CONCRETE_POLICIES,
    TIE_POLICIES,
)

IMPLS = implementation_params()
CONCRETE = CONCRETE_POLICIES
#: hits is not monotone in the ranking (§6 ap_at_k=hits), so the extremes need not bound the
#: expectation; dcmh is left out as the property's docstring (full AP, r and min_k_r) says
MONOTONE_DENOMINATORS = tuple(d for d in AP_AT_K_DENOMINATORS if d not in ("hits", "dcmh"))
#: dcmh is full AP by definition once k >= R (§6 ap_at_k=dcmh): the property is about the others
TRUNCATING_DENOMINATORS = tuple(d for d in AP_AT_K_DENOMINATORS if d != "dcmh")
EPS = 1e-12


def per_query(name, dist, rel, junk=None, **kw):
    kw.setdefault("empty", "zero")
    return rc.evaluate(distances=dist, relevance=rel, junk=junk, implementation=name, **kw).per_query


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(TIE_POLICIES), rule=st.sampled_from(AP_RULES))
def test_ap_in_unit_interval(name, problem, ties, rule):
    """§5: AP of a ranking without repeated items lies in [0, 1]; so do INP and CMC."""
    require_implementation(name)
    pq = per_query(name, *problem, ties=ties, ap_rule=rule)
    for values in (pq.ap, pq.inp, pq.cmc.ravel(), pq.precision_at_k, pq.recall_at_k):
        assert np.all(values >= -EPS) and np.all(values <= 1 + EPS)


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(CONCRETE), rule=st.sampled_from(AP_RULES))
def test_ap_is_one_iff_relevant_items_come_first(name, problem, ties, rule):
    """§5: AP = 1 exactly when every relevant item precedes every other one."""
    require_implementation(name)
    dist, rel, junk = problem
    pq = per_query(name, dist, rel, junk, ties=ties, ap_rule=rule)
    ref = rc.evaluate(
        distances=dist, relevance=rel, junk=junk, ties=ties, ap_rule=rule, empty="zero", implementation="reference"
    )
    for q in range(dist.shape[0]):
        R = int(pq.n_relevant[q])
        if R:
            first = ref.per_query.exact["inp"][q] == 1  # the last relevant item sits at rank R
            assert (abs(pq.ap[q] - 1) <= EPS) == first


@pytest.mark.parametrize("name", IMPLS)
@given(
    problem=tie_heavy_problems(),
    seed=st.integers(0, 2**32 - 1),
    rule=st.sampled_from(AP_RULES),
    k=st.one_of(st.none(), st.integers(1, 10)),
)
def test_expected_is_invariant_under_gallery_permutation(name, problem, seed, rule, k):
    """§4 ties=expected depends only on the tie groups, not on gallery order."""
    require_implementation(name)
    dist, rel, junk = problem
    perm = np.random.default_rng(seed).permutation(dist.shape[1])
    a = per_query(name, dist, rel, junk, ties="expected", ap_rule=rule, k=k)
    b = per_query(
        name, dist[:, perm], rel[:, perm], None if junk is None else junk[:, perm], ties="expected", ap_rule=rule, k=k
    )
    for field in ("ap", "precision_at_k", "inp", "r_precision"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.cmc, b.cmc, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", IMPLS)
@given(st.integers(1, 4), st.integers(1, 30), st.integers(0, 2**32 - 1), st.sampled_from(CONCRETE))
def test_any_policy_is_permutation_invariant_without_ties(name, nq, n, seed, ties):
    """§4: with distinct distances every tie policy gives the same ranking."""
    require_implementation(name)
    rng = np.random.default_rng(seed)
    dist = rng.permutation(nq * n).reshape(nq, n).astype(np.float64)
    rel = rng.random((nq, n)) < 0.3
    perm = rng.permutation(n)
    a = per_query(name, dist, rel, ties=ties)
    b = per_query(name, dist[:, perm], rel[:, perm], ties="stable")
    np.testing.assert_allclose(a.ap, b.ap, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", IMPLS)
@given(
    problem=tie_heavy_problems(),
    rule=st.sampled_from(AP_RULES),
    denominator=st.sampled_from(MONOTONE_DENOMINATORS),
    k=st.one_of(st.none(), st.integers(1, 10)),
)
def test_optimistic_ge_expected_ge_pessimistic(name, problem, rule, denominator, k):
    """§4: for full AP and the r / min_k_r denominators the expectation lies between the extremes."""
    require_implementation(name)
    kw = dict(ap_rule=rule, ap_at_k=denominator, k=k)
    opt = per_query(name, *problem, ties="optimistic", **kw).ap
    exp = per_query(name, *problem, ties="expected", **kw).ap
    pes = per_query(name, *problem, ties="pessimistic", **kw).ap
    assert np.all(opt >= exp - EPS) and np.all(exp >= pes - EPS)


@pytest.mark.parametrize("name", IMPLS)
def test_hits_denominator_is_not_monotone_in_the_ranking(name):
    """§6 ap_at_k=hits (swuxyj/DeepHash-pytorch#33): a better ranking can score lower."""
    require_implementation(name)
    # relevant at rank 1, then a tie group at ranks 4-5 holding one relevant item; k = 4
    dist = np.array([[0.0, 1.0, 2.0, 3.0, 3.0]])
    rel = np.array([[True, False, False, True, False]])
    opt = per_query(name, dist, rel, ties="optimistic", k=4).ap[0]
    pes = per_query(name, dist, rel, ties="pessimistic", k=4).ap[0]
    assert (opt, pes) == (0.75, 1.0)  # optimistic puts the hit inside the top 4: (1 + 2/4) / 2
    # and the usual direction: first item irrelevant, the hit decides whether anything counts
    dist = np.array([[0.0, 1.0, 1.0]])
    rel = np.array([[False, True, False]])
    assert per_query(name, dist, rel, ties="optimistic", k=2).ap[0] == 0.5
    assert per_query(name, dist, rel, ties="pessimistic", k=2).ap[0] == 0.0


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(TIE_POLICIES), max_rank=st.integers(1, 12))
def test_cmc_is_non_decreasing_and_reaches_share_with_a_match(name, problem, ties, max_rank):
    """§7: CMC never decreases, and at the gallery size reaches the share of queries with a match."""
    require_implementation(name)
    dist, rel, junk = problem
    res = rc.evaluate(
        distances=dist, relevance=rel, junk=junk, ties=ties, max_rank=max_rank, empty="zero", implementation=name
    )
    assert np.all(np.diff(res.cmc) >= -EPS)
    if max_rank >= dist.shape[1]:
        assert abs(res.cmc[-1] - np.mean(res.per_query.n_relevant > 0)) <= EPS


@pytest.mark.parametrize("name", IMPLS)
# grouped left out, as before: the one-item-at-a-time orders and expected (their mean) are the
# subject here (a k >= N is at a group boundary, which grouped would accept)
@given(
    problem=tie_heavy_problems(),
    ties=st.sampled_from([t for t in TIE_POLICIES if t != "grouped"]),
    rule=st.sampled_from(AP_RULES),
    denominator=st.sampled_from(TRUNCATING_DENOMINATORS),
    extra=st.integers(0, 5),
)
@example(
    problem=(np.array([[0.0, 1.0, 1.0]]), np.array([[False, True, True]]), None),
    ties="stable",
    rule="precision_sum",
    denominator="hits",
    extra=0,
)
def test_ap_at_k_beyond_gallery_is_full_ap(name, problem, ties, rule, denominator, extra):
    """§6: with k >= N, AP@k equals full AP for the hits, r and min_k_r denominators."""
    require_implementation(name)
    dist = problem[0]
    kw = dict(ties=ties, ap_rule=rule)
    full = per_query(name, *problem, **kw).ap
    at_k = per_query(name, *problem, k=dist.shape[1] + extra, ap_at_k=denominator, **kw).ap
    np.testing.assert_allclose(at_k, full, rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:no query is counted")
@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(TIE_POLICIES))
def test_minp_at_most_one(name, problem, ties):
    """§7: INP = R / r_R <= 1, so mINP <= 1."""
    require_implementation(name)
    res = rc.evaluate(
        distances=problem[0], relevance=problem[1], junk=problem[2], ties=ties, empty="skip", implementation=name
    )
    assert np.isnan(res.minp) or res.minp <= 1 + EPS


@pytest.mark.parametrize("name", IMPLS)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_trapezoid_equals_precision_sum_when_relevant_items_come_first(name, R, extra, seed):
    """§5: with every relevant item ranked first every precision is 1 under both rules."""
    require_implementation(name)
    n = R + extra
    dist = np.arange(n, dtype=np.float64)[None, :]
    rel = (np.arange(n) < R)[None, :]
    perm = np.random.default_rng(seed).permutation(n)
    a = per_query(name, dist[:, perm], rel[:, perm], ap_rule="trapezoid").ap
    b = per_query(name, dist[:, perm], rel[:, perm], ap_rule="precision_sum").ap
    assert a[0] == b[0] == 1.0
