"""Per-query values of a candidate on one input, per concrete tie order, and their envelope.

:class:`Table` holds a candidate's per-query values under one tie order (exact Fractions, as
intervals); :func:`_envelope` spans the tables of the extreme tie orders for the ``unstable``
candidate; :func:`_rank_sum` is AP from the ranks of the relevant items under a rank-level bug
(0-based ranks, the previous-hit trapezoid).  :mod:`.predict` builds the tables and reads the
adapter's fields from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.bugs import Bug

Interval = Tuple[Any, Any]  # exact Fractions, or float inf where a bug divides by zero


@dataclass
class Table:
    """Per-query values under one tie order (each an interval once enveloped)."""

    ap: List[Interval]
    cmc: List[List[Interval]]
    inp: List[Interval]
    n_relevant: List[int]
    hits: List[float]
    extra: Dict[str, List[Interval]] = field(default_factory=dict)  # ndcg, rr, ap_at_r, r_precision, recall, p1

    def values(self, name: str) -> List[Interval]:
        return self.ap if name == "ap" else self.extra[name]


def _point(v) -> Interval:
    return (v, v)


def _envelope(tables: Sequence[Table], hits_denominator: bool = False, unbounded: bool = False) -> Table:
    """Per-query intervals spanning the tables of the extreme tie orders.

    Every AP is monotone in "relevant items earlier" (so the extreme orders bound it) except
    AP@k divided by the hits in the top k when the cut-off falls inside a tie group: the number
    of hits then changes with the order and the value is not monotone, so such a query's AP is
    only known to lie in [0, 1] (in [0, inf] with a rank-level bug, ``unbounded``: 0-based
    ranks divide by zero).
    """
    if len(tables) == 1:
        return tables[0]

    def env(values: Sequence[Interval]) -> Interval:
        return (min(v[0] for v in values), max(v[1] for v in values))

    first = tables[0]
    n_q = len(first.ap)

    def ap(q: int) -> Interval:
        if hits_denominator and len({t.hits[q] for t in tables}) > 1:
            return (Fraction(0), math.inf if unbounded else Fraction(1))
        return env([t.ap[q] for t in tables])

    return Table(
        ap=[ap(q) for q in range(n_q)],
        cmc=[[env([t.cmc[q][j] for t in tables]) for j in range(len(first.cmc[q]))] for q in range(n_q)],
        inp=[env([t.inp[q] for t in tables]) for q in range(n_q)],
        n_relevant=first.n_relevant,
        hits=first.hits
        if all([h > 0 for h in t.hits] == [h > 0 for h in first.hits] for t in tables)
        else [math.nan] * n_q,
        extra={name: [env([t.extra[name][q] for t in tables]) for q in range(n_q)] for name in first.extra},
    )


def _rank_sum(ranks: List[int], R: int, k: Optional[int], ap_at_k: str, k_div: Optional[int], bug: Bug):
    """AP from the 1-based ranks of the relevant items with a rank-level bug; inf where it divides by 0."""
    if k is None:
        used = ranks
    elif ap_at_k == "dcmh":
        used = ranks[: min(k, R)]
    else:
        used = [r for r in ranks if r <= k]
    if R == 0 or not used:
        return Fraction(0)
    total = bug.rank_sum(used)
    if total == math.inf:
        return total
    if k_div:
        denom = k_div
    elif k is None:
        denom = R
    else:
        denom = {"hits": len(used), "r": R, "min_k_r": min(k, R), "dcmh": min(k, R)}[ap_at_k]
    return total / denom
