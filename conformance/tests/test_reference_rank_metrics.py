"""The reference's nDCG@k, RR@k, AP@R and hit rate against the slow oracle of
``support/rank_oracle.py`` (spec §7 nDCG, §7 MRR, §7 MAP@R, §7 recall=hit), for every tie
policy, both gains, graded and binary relevance, junk and cut-offs inside and beyond the list.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import example, given
from hypothesis import strategies as st
from retrieval_conformance.conformance.support import rank_oracle
from retrieval_conformance.reference.contract.conventions import DISCOUNTS, GAINS, TIE_POLICIES


@st.composite
def graded_problems(draw, max_gallery: int = 7):
    """1-2 queries over a tiny gallery: distances from three levels (many ties), grades 0..3,
    optional junk."""
    q = draw(st.integers(1, 2))
    n = draw(st.integers(1, max_gallery))
    dist = np.array(
        draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n), min_size=q, max_size=q))
    )
    grades = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=n, max_size=n), min_size=q, max_size=q)))
    junk = None
    if draw(st.booleans()):
        junk = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=q, max_size=q)))
    return dist, grades, junk


def _grouped_k_inside(dist_row, junk_row, k) -> bool:
    kept = sorted(d for d, j in zip(dist_row, junk_row) if not j)
    return k is not None and 0 < k < len(kept) and kept[k - 1] == kept[k]


@given(
    graded_problems(),
    st.sampled_from(TIE_POLICIES),
    st.sampled_from(GAINS),
    st.one_of(st.none(), st.integers(1, 8)),
    st.sampled_from(DISCOUNTS),
)
@example((np.array([[0.0, 1.0, 1.0, 2.0]]), np.array([[0, 3, 1, 2]]), None), "expected", "exponential", 2, "log2")
@example((np.array([[1.0, 1.0, 1.0]]), np.array([[0, 0, 2]]), None), "expected", "linear", 1, "trec_eval_9.0a3")
def test_reference_equals_the_oracle(problem, ties, gain, k, discount):
    dist, grades, junk = problem
    junk_rows = np.zeros(dist.shape, bool) if junk is None else junk
    if ties == "grouped" and any(_grouped_k_inside(d, j, k) for d, j in zip(dist, junk_rows)):
        with pytest.raises(ValueError, match="falls inside a tie group"):
            rc.evaluate(distances=dist, relevance=grades, junk=junk, ties=ties, k=k, implementation="reference")
        return
    for recall in ("fraction", "hit"):
        res = rc.evaluate(
            distances=dist,
            relevance=grades,
            junk=junk,
            ties=ties,
            gain=gain,
            k=k,
            recall=recall,
            discount=discount,
            empty="zero",
            implementation="reference",
        )
        exact = res.per_query.exact
        for q in range(dist.shape[0]):
            want = rank_oracle.query_metrics(
                dist[q].tolist(), grades[q].tolist(), junk_rows[q].tolist(), ties, k, gain, discount
            )
            for field in ("ndcg", "rr", "ap_at_r"):
                assert exact[field][q] == want[field], (field, q, exact[field][q], want[field])
            if recall == "hit":
                assert exact["recall_at_k"][q] == want["hit"], (q, exact["recall_at_k"][q], want["hit"])


def test_binary_relevance_is_grade_one_and_gains_agree():
    """spec §7 gain=exponential: with binary relevance both gains give the same nDCG; labels
    give binary relevance."""
    dist = np.array([[0.3, 0.1, 0.2, 0.4, 0.5]])
    rel = np.array([[True, False, True, False, True]])
    lin = rc.evaluate(distances=dist, relevance=rel, implementation="reference")
    exp = rc.evaluate(distances=dist, relevance=rel, gain="exponential", implementation="reference")
    assert lin.per_query.exact["ndcg"] == exp.per_query.exact["ndcg"]
    labels = rc.evaluate(distances=dist, query_labels=[1], db_labels=[1, 0, 1, 0, 1], implementation="reference")
    assert labels.per_query.exact["ndcg"] == lin.per_query.exact["ndcg"]


def test_hand_example():
    """Ranked grades 3, 0, 2 (k = None): DCG = 3 + 2 d(3) = 3 + 1 = 4 (d(3) = 1/2 exactly);
    IDCG = 3 + 2 d(2); RR = 1; AP@R = (1/1) / 2 = 1/2 (R = 2: the item at rank 3 is beyond R)."""
    res = rc.evaluate(distances=[[0.1, 0.2, 0.3]], relevance=[[3, 0, 2]], implementation="reference")
    exact = res.per_query.exact
    d2 = Fraction(rank_oracle.discount(2))
    assert exact["ndcg"][0] == Fraction(4) / (3 + 2 * d2)
    assert exact["rr"][0] == 1 and exact["ap_at_r"][0] == Fraction(1, 2)
    exp = rc.evaluate(
        distances=[[0.1, 0.2, 0.3]], relevance=[[3, 0, 2]], gain="exponential", implementation="reference"
    ).per_query.exact
    assert exp["ndcg"][0] == (7 + Fraction(3, 2)) / (7 + 3 * d2)  # gains 2**3 - 1 = 7 and 2**2 - 1 = 3


@pytest.mark.parametrize(
    "bad, message",
    [
        ([[0, -1, 2]], "relevance: expected bool or integer grades 0 .. 52"),
        ([[0, 53, 2]], "found 53"),
        ([[0, 0.5, 2]], "found 0.5"),
    ],
)
def test_bad_grades_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        rc.evaluate(distances=[[0.1, 0.2, 0.3]], relevance=bad, implementation="reference")


def test_trec_discount_hand_example():
    """spec §7 discount=trec_eval_9.0a3: ranked grades 0, 1, 2 -> DCG = 0 + 1/log2(2) + 2/log2(3), ideal
    2 + 1 (ranks 1 and 2 both undiscounted)."""
    res = rc.evaluate(
        distances=[[0.1, 0.2, 0.3]], relevance=[[0, 1, 2]], discount="trec_eval_9.0a3", implementation="reference"
    )
    d3 = rank_oracle.rank_discount(3, "trec_eval_9.0a3")  # the float nearest to 1 / log2(3)
    assert d3 == rank_oracle.discount(2)
    assert res.per_query.exact["ndcg"][0] == (1 + 2 * d3) / 3
