"""The slow oracle of nDCG@k, RR@k, AP@R and the hit rate (spec §7), read plainly from the
definitions, sharing no code with ``reference/rank_metrics.py`` or the implementations.

* the discount ``d(r)``: the float64 nearest to ``1 / log2(r + 1)``, found here with 50-digit
  ``decimal`` arithmetic (not from ``reference/contract/discounts.py``'s table);
* concrete tie policies: the kept items sorted by an explicit key per policy, then the
  textbook sums;
* ``expected``: brute force, the average over every distinct arrangement of the grades inside
  every tie group (each distinct arrangement stands for the same number of item orders);
* ``grouped``: every item of a tie group sits at the group's end rank.

Tiny inputs only (the arrangements are enumerated).
"""

from __future__ import annotations

import functools
import itertools
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Dict, List, Sequence

import numpy as np

#: the metrics this oracle gives, by the name of their ``PerQuery`` field (``hit`` is
#: ``recall_at_k`` under ``recall="hit"``)
FIELDS = ("ndcg", "rr", "ap_at_r", "hit")


@functools.lru_cache(maxsize=None)
def discount(r: int) -> Fraction:
    """The float64 nearest to 1 / log2(r + 1), as an exact Fraction (50 significant digits
    decide the rounding)."""
    with localcontext() as ctx:
        ctx.prec = 50
        value = Decimal(2).ln() / Decimal(r + 1).ln()
    exact = Fraction(value)
    f = float(value)
    return Fraction(
        min((f, float(np.nextafter(f, 0.0)), float(np.nextafter(f, 2.0))), key=lambda c: abs(Fraction(c) - exact))
    )


def rank_discount(r: int, rule: str) -> Fraction:
    """log2: d(r); trec_eval_9.0a3: 1 at rank 1, then the float nearest to 1 / log2(r) (= d(r - 1))."""
    if rule == "trec_eval_9.0a3":
        return Fraction(1) if r == 1 else discount(r - 1)
    return discount(r)


def gain(g: int, rule: str) -> int:
    return g if rule == "linear" else 2**g - 1


def _dcg(positions: Sequence[tuple], K: int, rule: str, discount_rule: str) -> Fraction:
    """Σ gain(grade) d(rank) over (rank, grade) pairs with rank <= K."""
    return sum((gain(g, rule) * rank_discount(r, discount_rule) for r, g in positions if r <= K and g), Fraction(0))


def ranked_metrics(groups: List[List[int]], k, rule: str, discount_rule: str = "log2") -> Dict[str, Fraction]:
    """The metrics of consecutive groups of grades whose items all sit at the group's end rank
    (a concrete ranking is groups of one item)."""
    n_kept = sum(map(len, groups))
    K = n_kept if k is None else min(k, n_kept)
    positions, e = [], 0
    for g in groups:
        e += len(g)
        positions += [(e, x) for x in g]
    grades = sorted((x for _, x in positions if x > 0), reverse=True)
    R = len(grades)
    if R == 0:
        return {f: Fraction(0) for f in FIELDS}
    ideal = _dcg(list(enumerate(grades, 1)), K, rule, discount_rule)
    ranks = [r for r, x in positions if x > 0]
    precision_terms = [Fraction(sum(1 for s in ranks if s <= r), r) for r in ranks]
    return {
        "ndcg": _dcg(positions, K, rule, discount_rule) / ideal,
        "rr": Fraction(1, ranks[0]) if ranks[0] <= K else Fraction(0),
        "ap_at_r": sum((t for r, t in zip(ranks, precision_terms) if r <= R), Fraction(0)) / R,
        "hit": Fraction(int(ranks[0] <= K)),
    }


def query_metrics(
    dist: Sequence[float],
    grades: Sequence[int],
    junk: Sequence[bool],
    ties: str,
    k,
    rule: str,
    discount_rule: str = "log2",
) -> Dict[str, Fraction]:
    """Exact metrics of one query under a tie policy (the caller rules out a grouped k inside a
    tie group)."""
    kept = [j for j in range(len(dist)) if not junk[j]]
    keys = {
        "stable": lambda j: (dist[j], j),
        "reverse": lambda j: (dist[j], -j),
        "optimistic": lambda j: (dist[j], -grades[j], j),
        "pessimistic": lambda j: (dist[j], grades[j], j),
    }
    if ties in keys:
        return ranked_metrics([[grades[j]] for j in sorted(kept, key=keys[ties])], k, rule, discount_rule)
    order = sorted(kept, key=lambda j: (dist[j], j))
    groups = [[grades[j] for j in g] for _, g in itertools.groupby(order, key=lambda j: dist[j])]
    if ties == "grouped":
        return ranked_metrics(groups, k, rule, discount_rule)
    # expected: every distinct arrangement of every group, equally likely
    per_group = [sorted(set(itertools.permutations(g))) for g in groups]
    total, count = {f: Fraction(0) for f in FIELDS}, 0
    for combo in itertools.product(*per_group):
        values = ranked_metrics([[x] for part in combo for x in part], k, rule, discount_rule)
        total = {f: total[f] + values[f] for f in FIELDS}
        count += 1
    return {f: v / count for f, v in total.items()}
