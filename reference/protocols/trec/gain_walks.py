"""trec_eval's families that walk the gains of the ideal ranking beside the run's: ``G``, ``ndcg_rel``,
``Rndcg`` and ``rbp``, per query as its doubles (``m_G.c``, ``m_ndcg_rel.c``, ``m_Rndcg.c``,
``m_rbp.c`` with ``gain_init.c``).

A grade's gain is the gain map's value or the grade itself (trec_eval's ``-m G.1=3,2=9``); the ideal
ranking takes the judged documents by gain, highest first, and each walk below steps through it
as the C code does, so the sums happen in the same order.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Tuple

from retrieval_conformance.reference.protocols.trec.families import C_NAN, Ranking, Values, c_div


def _levels(q: Ranking, gains: Optional[Mapping[int, float]]) -> List[Tuple[float, int, int]]:
    """``setup_gains``: (gain, grade, documents of the grade) of the map's grades and of every grade
    0 .. the highest judged, by gain ascending."""
    table = {g: v for g, v in (gains or {}).items() if isinstance(g, int)}
    top = max(q.levels) if q.levels else -1
    grades = set(table) | set(range(top + 1))
    return sorted((float(table.get(g, g)), g, q.levels.get(g, 0)) for g in grades)


class _IdealWalk:
    """The ideal ranking's gain at each place: the highest level first, each for as many places as
    it has documents; after the last level, 0."""

    def __init__(self, levels: List[Tuple[float, int, int]]) -> None:
        self.levels = levels
        self.current = len(levels) - 1
        self.gain = levels[self.current][0] if self.current >= 0 else 0.0
        self.taken = 0

    def step(self) -> float:
        self.taken += 1
        while self.current >= 0 and self.taken > self.levels[self.current][2]:
            self.taken = 1
            self.current -= 1
            self.gain = self.levels[self.current][0] if self.current >= 0 else 0.0
        return self.gain


def _gain_of(levels: List[Tuple[float, int, int]]) -> Dict[int, float]:
    return {grade: gain for gain, grade, _ in levels}


def _c_log2(x: float) -> float:
    """C's ``log2`` (NaN below 0, -inf at 0) for the cost of ``G``, which a gain map can push below 1."""
    return math.log2(x) if x > 0 else (-math.inf if x == 0 else C_NAN)


def _log2(i: int) -> float:
    return math.log2(float(i + 2))


def g_measure(q: Ranking, gains, version) -> Values:
    """``G``: each document's gain over ``log2(2 + ideal cost - gain so far)`` (``m_G.c``)."""
    levels = _levels(q, gains or None)
    gain_of = _gain_of(levels)
    walk = _IdealWalk(levels)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    ideal = walk.gain
    i = 0
    while i < q.num_ret and ideal > 0.0:
        gain = gain_of.get(q.rels[i], 0.0)
        sum_results += gain
        ideal = walk.step()
        if ideal > 0.0:
            sum_ideal += ideal
        sum_cost += ideal if ideal >= 1.0 else 1.0
        if gain != 0:
            results_g += c_div(gain, _c_log2(2 + sum_cost - sum_results))
        i += 1
    while i < q.num_ret:
        gain = gain_of.get(q.rels[i], 0.0)
        sum_results += gain
        sum_cost += 1.0
        if gain != 0:
            results_g += c_div(gain, _c_log2(2 + sum_cost - sum_results))
        i += 1
    while ideal > 0.0:
        ideal = walk.step()
        if ideal > 0.0:
            sum_ideal += ideal
    return [("G", results_g / sum_ideal if sum_ideal > 0.0 else 0.0)]


def ndcg_rel(q: Ranking, gains, version) -> Values:
    """``ndcg_rel``: nDCG averaged over the relevant documents' places (``m_ndcg_rel.c``)."""
    levels = _levels(q, gains or None)
    gain_of = _gain_of(levels)
    walk = _IdealWalk(levels)
    dcg = ideal_dcg = total = 0.0
    n_rel = n_rel_ret = 0
    ideal = walk.gain
    i = 0
    while i < q.num_ret and ideal > 0.0:
        gain = gain_of.get(q.rels[i], 0.0)
        if gain != 0:
            dcg += gain / _log2(i)
        ideal = walk.step()
        if ideal > 0.0:
            n_rel += 1
            ideal_dcg += ideal / _log2(i)
        if gain > 0:
            total += c_div(dcg, ideal_dcg)
            n_rel_ret += 1
        i += 1
    while i < q.num_ret:
        gain = gain_of.get(q.rels[i], 0.0)
        if gain != 0:
            dcg += gain / _log2(i)
        if gain > 0:
            total += c_div(dcg, ideal_dcg)
            n_rel_ret += 1
        i += 1
    while ideal > 0.0:
        ideal = walk.step()
        if ideal > 0.0:
            n_rel += 1
            ideal_dcg += ideal / _log2(i)
        i += 1
    if n_rel - n_rel_ret:
        total += float(n_rel - n_rel_ret) * dcg / ideal_dcg
    return [("ndcg_rel", total / n_rel if total > 0.0 else 0.0)]


def rndcg(q: Ranking, gains, version) -> Values:
    """``Rndcg``: nDCG averaged over the places where the ideal gain changes (``m_Rndcg.c``)."""
    if not q.num_rel:
        return [("Rndcg", 0.0)]
    levels = _levels(q, gains or None)
    gain_of = _gain_of(levels)
    walk = _IdealWalk(levels)
    dcg = ideal_dcg = total = 0.0
    changes = 0
    ideal = old = walk.gain
    i = 0
    while i < q.num_ret and ideal > 0.0:
        gain = gain_of.get(q.rels[i], 0.0)
        ideal = walk.step()
        if old != ideal:
            if ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                changes += 1
            old = ideal
        if gain != 0:
            dcg += gain / _log2(i)
        if ideal > 0.0:
            ideal_dcg += ideal / _log2(i)
        i += 1
    if i < q.num_ret:
        while i < q.num_ret:
            gain = gain_of.get(q.rels[i], 0.0)
            if gain != 0:
                dcg += gain / _log2(i)
            i += 1
        if ideal_dcg > 0.0:
            total += dcg / ideal_dcg
            changes += 1
    while ideal > 0.0:
        ideal = walk.step()
        if old != ideal:
            if ideal_dcg > 0.0:
                total += dcg / ideal_dcg
                changes += 1
            old = ideal
        if ideal > 0.0:
            ideal_dcg += ideal / _log2(i)
        i += 1
    return [("Rndcg", total / changes if changes else C_NAN)]


def rbp(q: Ranking, gains, version) -> Values:
    """``rbp``: rank-biased precision with persistence p (default 0.9; ``-m rbp.p=0.8``), the gains
    scaled to [0, 1] when they leave it (``m_rbp.c``; it reads its running weight and the gains'
    bounds uninitialised, so these are the values it intends: 1, and the gains' min and max)."""
    p = float((gains or {}).get("p", 0.9))
    levels = _levels(q, gains or None)
    low = min((gain for gain, _, _ in levels), default=0.0)
    high = max((gain for gain, _, _ in levels), default=0.0)
    gain_of = _gain_of(levels)
    if low < 0 or high > 1:
        gain_of = {grade: (gain - low) / (high - low) for grade, gain in gain_of.items()}
    total = 0.0
    weight = 1.0
    for rel in q.rels:
        gain = gain_of.get(rel, 0.0)
        if gain != 0:
            total += gain * weight
        weight = weight * p
    return [("rbp", (1.0 - p) * total)]
