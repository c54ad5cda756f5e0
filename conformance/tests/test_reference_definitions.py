"""The reference against independent slow implementations of the definitions.

* concrete tie policies: an explicit sort key per policy + the textbook metrics;
* ``expected``: brute force over every order of every tie group (spec §4);
* ``grouped``: scikit-learn's sum over distinct thresholds.

The slow implementations are ``support/oracle.py``'s.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import retrieval_conformance as rc
from hypothesis import example, given
from hypothesis import strategies as st
from retrieval_conformance.conformance.support import oracle
from retrieval_conformance.conformance.support.strategies import tie_heavy_problems
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS, AP_RULES, CONCRETE_POLICIES
from retrieval_conformance.reference.contract.problem import Options


def _check_against_oracle(dist, rel, junk, opts: Options):
    """The reference's exact values of every query == the oracle's (``support/oracle.py``)."""
    res = rc.evaluate(
        distances=dist,
        relevance=rel,
        junk=junk,
        empty="zero",
        implementation="reference",
        ties=opts.ties,
        ap_rule=opts.ap_rule,
        ap_at_k=opts.ap_at_k,
        k=opts.k,
        max_rank=opts.max_rank,
    )
    exact = res.per_query.exact
    for q in range(dist.shape[0]):
        want = oracle.query_metrics(
            dist[q].tolist(), rel[q].tolist(), [False] * dist.shape[1] if junk is None else junk[q].tolist(), opts, q
        )
        for field in oracle.SCALARS + ("cmc",):
            assert exact[field][q] == want[field], (field, q, exact[field][q], want[field])


@given(
    tie_heavy_problems(),
    st.sampled_from(CONCRETE_POLICIES),
    st.sampled_from(AP_RULES),
    st.sampled_from(AP_AT_K_DENOMINATORS),
    st.one_of(st.none(), st.integers(1, 10)),
)
@example(
    (np.array([[0.0, 1.0, 1.0, 1.0]]), np.array([[True, False, True, False]]), None), "reverse", "trapezoid", "hits", 2
)
def test_concrete_policies_match_textbook(problem, ties, rule, ap_at_k, k):
    """spec §4-§7: a concrete tie order, then the textbook definitions."""
    dist, rel, junk = problem
    _check_against_oracle(dist, rel, junk, Options(ties=ties, ap_rule=rule, ap_at_k=ap_at_k, k=k, max_rank=5))


@given(
    tie_heavy_problems(max_gallery=8),
    st.sampled_from(AP_RULES),
    st.sampled_from(AP_AT_K_DENOMINATORS),
    st.one_of(st.none(), st.integers(1, 9)),
)
@example(
    (np.array([[1.0, 1.0, 1.0, 1.0, 1.0, 2.0]]), np.array([[True, False, True, False, False, True]]), None),
    "precision_sum",
    "hits",
    3,
)
@example(
    (np.array([[0.0, 0.5, 0.5, 0.5, 1.0]]), np.array([[True, True, False, True, True]]), None), "trapezoid", "hits", 2
)
def test_expected_equals_average_over_all_tie_orders(problem, rule, ap_at_k, k):
    """spec §4 ties=expected: E[metric] over uniformly random orders of each group."""
    dist, rel, junk = problem
    _check_against_oracle(dist, rel, junk, Options(ties="expected", ap_rule=rule, ap_at_k=ap_at_k, k=k, max_rank=5))


@given(tie_heavy_problems(junk=False))
def test_grouped_equals_sklearn_threshold_ap(problem):
    """spec §4 ties=grouped: scikit-learn's average_precision_score on tied scores."""
    dist, rel, _ = problem
    exact = rc.evaluate(
        distances=dist, relevance=rel, ties="grouped", empty="zero", implementation="reference"
    ).per_query.exact
    for q in range(dist.shape[0]):
        d, r = [float(x) for x in dist[q]], [bool(x) for x in rel[q]]
        if sum(r):
            assert exact["ap"][q] == oracle.sklearn_style_ap(d, r)


def test_expected_on_the_seed_matches_enumeration_script():
    """The golden seed-000 values under ``expected`` are reproduced by the enumeration script
    (``python -m retrieval_conformance.conformance.support.brute_force``)."""
    aps = oracle.seed000_expected_ap(5)
    assert sum(aps) / 3 == Fraction(1241, 2160)
