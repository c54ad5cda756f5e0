"""Properties of nDCG@k, RR@k, AP@R and the hit rate (spec §7), for every implementation; each
test names its clause."""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import given
from hypothesis import strategies as st
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.conformance.support.strategies import tie_heavy_problems
from retrieval_conformance.reference.contract.conventions import DISCOUNTS, GAINS, TIE_POLICIES

IMPLS = implementation_params()
EPS = 1e-12
NEW_FIELDS = ("ndcg", "rr", "ap_at_r")
CUTOFFS = st.one_of(st.none(), st.integers(1, 10))


def per_query(name, dist, rel, junk=None, **kw):
    kw.setdefault("empty", "zero")
    return rc.evaluate(distances=dist, relevance=rel, junk=junk, implementation=name, **kw).per_query


@pytest.mark.parametrize("name", IMPLS)
@given(
    problem=tie_heavy_problems(graded=True),
    ties=st.sampled_from(TIE_POLICIES),
    gain=st.sampled_from(GAINS),
    discount=st.sampled_from(DISCOUNTS),
)
def test_values_lie_in_the_unit_interval(name, problem, ties, gain, discount):
    """§7 nDCG, §7 MRR, §7 MAP@R: each lies in [0, 1] (no k here: grouped accepts any)."""
    require_implementation(name)
    pq = per_query(name, *problem, ties=ties, gain=gain, discount=discount)
    for field in NEW_FIELDS:
        values = getattr(pq, field)
        assert np.all(values >= -EPS) and np.all(values <= 1 + EPS), field


@pytest.mark.parametrize("name", IMPLS)
@given(
    problem=tie_heavy_problems(graded=True), gain=st.sampled_from(GAINS), discount=st.sampled_from(DISCOUNTS), k=CUTOFFS
)
def test_optimistic_ge_expected_ge_pessimistic(name, problem, gain, discount, k):
    """§4: the expectation of nDCG, RR and AP@R lies between the best and the worst tie order
    (optimistic sorts a tie group by grade from the highest, pessimistic from the lowest)."""
    require_implementation(name)
    kw = dict(gain=gain, discount=discount, k=k)
    opt, exp, pes = (per_query(name, *problem, ties=t, **kw) for t in ("optimistic", "expected", "pessimistic"))
    for field in NEW_FIELDS:
        a, b, c = (getattr(pq, field) for pq in (opt, exp, pes))
        assert np.all(a >= b - EPS) and np.all(b >= c - EPS), field


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(graded=True), seed=st.integers(0, 2**32 - 1), gain=st.sampled_from(GAINS), k=CUTOFFS)
def test_expected_is_invariant_under_gallery_permutation(name, problem, seed, gain, k):
    """§4 ties=expected depends only on the tie groups, not on gallery order."""
    require_implementation(name)
    dist, rel, junk = problem
    perm = np.random.default_rng(seed).permutation(dist.shape[1])
    a = per_query(name, dist, rel, junk, ties="expected", gain=gain, k=k)
    b = per_query(
        name, dist[:, perm], rel[:, perm], None if junk is None else junk[:, perm], ties="expected", gain=gain, k=k
    )
    for field in NEW_FIELDS:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(TIE_POLICIES), k=st.integers(1, 6))
def test_hit_rate_is_the_cmc_at_k_and_bounds_the_fraction(name, problem, ties, k):
    """§7 recall=hit: Recall@k as the hit rate is CMC@k, and at least H(k)/R."""
    require_implementation(name)
    dist = problem[0]
    if ties == "grouped":
        ties = "expected"  # grouped rejects a k inside a tie group; the property is the same
    hit = per_query(name, *problem, ties=ties, k=k, recall="hit", max_rank=k)
    fraction = per_query(name, *problem, ties=ties, k=k, max_rank=k)
    assert dist.shape[0] == hit.recall_at_k.shape[0]
    np.testing.assert_allclose(hit.recall_at_k, hit.cmc[:, k - 1], rtol=0, atol=EPS)
    assert np.all(hit.recall_at_k >= fraction.recall_at_k - EPS)


@pytest.mark.parametrize("name", IMPLS)
@given(problem=tie_heavy_problems(), ties=st.sampled_from(TIE_POLICIES), discount=st.sampled_from(DISCOUNTS))
def test_binary_relevance_gains_agree(name, problem, ties, discount):
    """§7 gain=exponential: with binary relevance both gains give the same bits."""
    require_implementation(name)
    a = per_query(name, *problem, ties=ties, discount=discount)
    b = per_query(name, *problem, ties=ties, discount=discount, gain="exponential")
    np.testing.assert_array_equal(a.ndcg, b.ndcg)


@pytest.mark.parametrize("name", IMPLS)
@given(st.integers(1, 3), st.integers(1, 25), st.integers(0, 2**32 - 1))
def test_distinct_scores_sorted_by_grade_score_one(name, nq, n, seed):
    """§7 nDCG: a ranking in order of grade has nDCG 1; RR is 1 / the first relevant rank."""
    require_implementation(name)
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 4, size=(nq, n))
    dist = np.argsort(np.argsort(-grades, axis=1, kind="stable"), axis=1).astype(np.float64)
    pq = per_query(name, dist, grades)
    has = grades.max(axis=1) > 0
    np.testing.assert_array_equal(pq.ndcg, np.where(has, 1.0, 0.0))
    np.testing.assert_array_equal(pq.rr, np.where(has, 1.0, 0.0))
    np.testing.assert_array_equal(pq.ap_at_r, np.where(has, 1.0, 0.0))
