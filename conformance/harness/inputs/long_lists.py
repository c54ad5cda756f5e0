"""The long inputs: ranked lists longer than the cut-offs real code applies on its own.

The generated families hold at most 24 items, so a cut-off a function applies without saying so
(``topk=1000``, ``mrr_at_k=[10]``, ``np.argsort(d)[:100]``, GLDv2's cut at 100) never binds on them.
These inputs are longer than each of :data:`DEFAULT_CUTOFFS`: lists with relevant items beyond
each of them (what AP, nDCG and Recall@k read), lists whose first relevant item lies beyond each
(what MRR, the hit rate and Rank-1 read: a list that always holds a relevant item at rank 1 to 3
gives MRR@100 the value of the whole ranking's MRR), in either direction of the sort, one query
with more than 100 relevant items, and a one-item gallery asked for k > 1.  They are the only long
inputs, so a check stays fast.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.inputs.case import Case

#: the cut-offs real evaluation code defaults to (``topk=1000``, ``map_at_k=[100]``, ``mrr_at_k=[10]``...)
DEFAULT_CUTOFFS = (10, 20, 50, 100, 1000)
LONG_LISTS = "k/long-lists"


def ranked_case(name: str, n_gallery: int, relevant_ranks: Sequence[Sequence[int]], seed: int, k=None) -> Case:
    """A case whose query q ranks its relevant items at the 1-based ``relevant_ranks[q]`` (no ties).

    Distances are a permutation of 0..N-1 per query, so the gallery order is not the ranking."""
    rng = np.random.default_rng(seed)
    n_q = len(relevant_ranks)
    dist = np.empty((n_q, n_gallery), dtype=np.float64)
    rel = np.zeros((n_q, n_gallery), dtype=bool)
    for q, ranks in enumerate(relevant_ranks):
        perm = rng.permutation(n_gallery)  # perm[r - 1] is the item ranked r
        dist[q, perm] = np.arange(n_gallery)
        rel[q, perm[np.asarray(ranks, dtype=np.int64) - 1]] = True
    return Case(name=name, distances=dist, relevance=rel, k=k, family=LONG_LISTS)


def first_relevant_ranks(cutoffs: Sequence[int], n_gallery: int) -> Tuple[Tuple[int, ...], ...]:
    """One query per cut-off below ``n_gallery`` whose first relevant item lies just beyond it,
    between it and the next cut-off, with two more relevant items further down (so that a cut at
    any of the cut-offs changes the query's every value, and each cut-off changes a different query)."""
    bounds = [c for c in cutoffs if c < n_gallery]
    out = []
    for c, nxt in zip(bounds, bounds[1:] + [n_gallery]):
        first = c + max(1, (nxt - c) // 3)
        out.append((first, (first + nxt) // 2, nxt))
    return tuple(out)


@lru_cache(maxsize=1)
def long_cases() -> Tuple[Case, ...]:
    """The dedicated long inputs (built once)."""
    # 120 relevant items among 130 (R > 100): the first 100 nearly all at the top, the rest after a
    # gap, so that an AP over the first 100 relevant items (dcmh's AP@100) and over all of them differ
    # by more than a rounding to two decimals hides
    many = [r for r in range(1, 101) if r != 50] + list(range(110, 131))
    return (
        ranked_case(
            f"{LONG_LISTS}#past-10-20-50",
            60,
            [[1, 4, 9, 12, 18, 23, 37, 49, 52, 58], [2, 11, 15, 21, 44, 51, 60]],
            seed=10,
        ),
        ranked_case(f"{LONG_LISTS}#past-100", 130, [many, [3, 50, 99, 101, 120]], seed=100),
        ranked_case(f"{LONG_LISTS}#past-1000", 1030, [[1, 7, 15, 40, 90, 300, 999, 1001, 1015, 1030]], seed=1000),
        # the first relevant item beyond 10, 20, 50 and 100 (queries 0 to 3), then beyond 1000 alone
        ranked_case(f"{LONG_LISTS}#first-past-10-20-50-100", 130, first_relevant_ranks(DEFAULT_CUTOFFS[:4], 130), 11),
        ranked_case(f"{LONG_LISTS}#first-past-1000", 1030, first_relevant_ranks(DEFAULT_CUTOFFS[4:], 1030), 1001),
        # every relevant item near the top: sorted the wrong way (largest distance first), the first
        # one lies beyond 1000 (each list above ends in a relevant item, first in that order)
        ranked_case(f"{LONG_LISTS}#near-top-1030", 1030, [[3, 12, 25]], 1002),
    )
