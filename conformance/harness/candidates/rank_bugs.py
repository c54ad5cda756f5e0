"""Exact models of the nDCG and MRR bugs of spec §11, per query, under a concrete tie policy.

* ``ndcg-ideal-from-retrieved``: nDCG@k whose ideal DCG is the DCG of the retrieved top k's own
  grades sorted from the highest (0 when the top k holds no relevant item);
* ``mrr-counting-junk``: the reciprocal rank read from the ranking with the junk items still in
  it (every item ordered by distance, ties by the policy, junk counting as not relevant).

Both use the reference's tie groups, gains and float64 discount table, so that they differ from
``§7 nDCG`` and ``§7 MRR`` only in the bug.  A query without a relevant item gets 0 (the
empty-query policy is applied afterwards, as for every value).
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional

from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES

ZERO = Fraction(0)


def _rows(cache, case, conv):
    from retrieval_conformance.reference.distances import query_distances
    from retrieval_conformance.reference.relevance import query_grades, query_junk, query_relevance

    p = cache.problem(case, conv.base)
    for q in range(p.n_queries):
        yield query_distances(p, q), query_relevance(p, q), query_junk(p, q), query_grades(p, q)


def ndcg_ideal_from_retrieved(cache, case, conv, k: Optional[int]) -> Optional[List[Fraction]]:
    """Per-query nDCG@k with the ideal DCG from the top k's own grades (None: no concrete order)."""
    from retrieval_conformance.reference.rank_metrics import discount, gain
    from retrieval_conformance.reference.ranking import ranked_grades, tie_groups

    if conv.ties not in CONCRETE_POLICIES:
        return None
    out = []
    for dist, rel, junk, grades in _rows(cache, case, conv):
        ranked = ranked_grades(tie_groups(dist, rel, junk, grades), conv.ties)
        top = ranked[: len(ranked) if k is None else min(k, len(ranked))]
        dcg = sum((gain(g, conv.gain) * discount(r, conv.discount) for r, g in enumerate(top, 1) if g > 0), ZERO)
        ideal = sum(
            (
                gain(g, conv.gain) * discount(i, conv.discount)
                for i, g in enumerate(sorted(top, reverse=True), 1)
                if g > 0
            ),
            ZERO,
        )
        out.append(dcg / ideal if ideal else ZERO)
    return out


def rr_counting_junk(cache, case, conv, k: Optional[int]) -> Optional[List[Fraction]]:
    """Per-query reciprocal rank whose rank counts the junk items ranked before the first
    relevant one (0 beyond the cut-off k, or without a relevant item)."""
    from retrieval_conformance.reference.ranking import ranked_relevance, tie_groups

    if conv.ties not in CONCRETE_POLICIES:
        return None
    out = []
    for dist, rel, junk, _ in _rows(cache, case, conv):
        counted = [bool(r) and not j for r, j in zip(rel, junk)]
        ranked = ranked_relevance(tie_groups(dist, counted, [False] * len(dist)), conv.ties)
        first = next((i for i, r in enumerate(ranked, 1) if r), None)
        out.append(Fraction(1, first) if first is not None and (k is None or first <= k) else ZERO)
    return out
