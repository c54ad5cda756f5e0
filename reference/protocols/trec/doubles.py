"""trec_eval's doubles: each measure summed in float64 as trec_eval's C code sums it, in its order.

The exact values (:mod:`.engine`, :mod:`.measures`) are what the formulas mean; trec_eval
prints its running float64 sums, and on a ``.00005`` boundary the two round apart (exact
71/160 prints ``0.4437``; trec_eval's sum is 0.44375000000000003 and prints ``0.4438``).  So
the ``trec`` preset's floats are these doubles (spec §13 trec_eval, printed values), and the
exact fractions stay in ``extras["trec_eval_exact"]``.

Only the measures that sum are computed here; a measure that is one division of two integers
(``P_k``, ``recall_k``, ``Rprec``, ``recip_rank``, ``success_k``, ``set_*``) is the correctly
rounded quotient in C as in ``float(Fraction)``.  Each function follows its C file (trec_eval
9.0.8 and 10.0 compute alike; they differ in how they print):

* ``map`` and ``map_cut_k`` (``m_map.c``, ``m_map_cut.c``): ``s += H(r) / r`` at each relevant
  rank r, then ``s / R``;
* ``bpref`` (``m_bpref.c``): ``b += 1.0 - min(n_r, R) / min(N, R)`` (``1.0`` when n_r = 0),
  then ``b / R``;
* ``ndcg`` (``m_ndcg.c`` with ``gain_init.c``): ``dcg += gain / log2(i + 2)`` over the ranking
  and over the ideal ranking, then ``dcg / ideal``; ``ndcg_cut_k`` (``m_ndcg_cut.c``): the
  same over the top k with the grade as its gain;
* the mean over queries (``meas_acc.c``, ``meas_avg.c``): the per-query doubles added in
  trec_eval's order of query ids, then divided by the number of queries.

Grades that are not integers (``float_grades="exact"``) are none of trec_eval's: there each
function returns None and the caller keeps the exact value, rounded once.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, Optional, Sequence, Tuple

from retrieval_conformance.reference.readers.grades import Grade

__all__ = ["average_precision", "bpref", "dcg_and_ideal", "integer_grades", "ndcg", "ndcg_cut", "running_mean"]


def integer_grades(grades: Sequence[Optional[Grade]], judged: Mapping[str, Grade]) -> bool:
    """Whether every grade is an integer, as trec_eval reads them (``atol``)."""
    return all(type(g) is int for g in judged.values()) and all(g is None or type(g) is int for g in grades)


def _log2_rank(i: int) -> float:
    # trec_eval: log2((double) (i + 2)) for the document at 0-based place i; math.log2 is the C
    # library's log2, as trec_eval's
    return math.log2(float(i + 2))


def average_precision(
    grades: Sequence[Optional[int]], level: int, n_relevant: int, cutoffs: Sequence[int] = ()
) -> Dict[Optional[int], float]:
    """``map`` (key None) and ``map_cut_k`` (key k) of one query, as trec_eval sums them."""
    total = 0.0
    hits = 0
    at_cut: Dict[Optional[int], float] = {}
    wanted = sorted(set(cutoffs))
    for i, grade in enumerate(grades):
        while wanted and i == wanted[0]:
            at_cut[wanted.pop(0)] = total
        if grade is not None and grade >= level:
            hits += 1
            total += float(hits) / float(i + 1)
    for k in wanted:
        at_cut[k] = total
    out: Dict[Optional[int], float] = {None: total / float(n_relevant) if hits else 0.0}
    for k, partial in at_cut.items():
        out[k] = partial / float(n_relevant) if n_relevant else 0.0
    return out


def bpref(grades: Sequence[Optional[int]], level: int, n_relevant: int, n_nonrelevant: int) -> float:
    """``bpref`` of one query, as ``m_bpref.c`` sums it."""
    value = 0.0
    above = 0
    for grade in grades:
        if grade is None or grade < 0:
            continue  # not in the pool, or in the pool but unjudged
        if grade < level:
            above += 1
        elif above > 0:
            value += 1.0 - float(min(above, n_relevant)) / float(min(n_nonrelevant, n_relevant))
        else:
            value += 1.0
    return value / n_relevant if n_relevant else value


def _dcg(gains: Sequence[float]) -> float:
    total = 0.0
    for i, gain in enumerate(gains):
        if gain != 0:
            total += gain / _log2_rank(i)
    return total


def ndcg(grades: Sequence[Optional[int]], judged: Mapping[str, int], gains: Optional[Mapping[int, float]]) -> float:
    """``ndcg`` (no cut-off) of one query, under trec_eval's gain map (None: the grade).

    A grade's gain is the map's value, or the grade itself; documents not judged, or judged
    below 0, gain 0.  The ideal ranking places the judged documents by gain, highest first,
    while the gain is > 0 (``gain_init.c``, ``m_ndcg.c``)."""
    dcg, ideal_dcg = dcg_and_ideal(grades, judged, gains)
    return dcg / ideal_dcg if ideal_dcg > 0.0 else 0.0


def dcg_and_ideal(
    grades: Sequence[Optional[int]], judged: Mapping[str, int], gains: Optional[Mapping[int, float]]
) -> Tuple[float, float]:
    """trec_eval's ``dcg`` and ``ideal_dcg`` of one query (``m_ndcg.c``), under the gain map."""
    table = dict(gains or {})

    def gain(grade: Optional[int]) -> float:
        if grade is None or grade < 0:
            return 0.0
        return float(table.get(grade, grade))

    ideal = sorted((gain(g) for g in judged.values() if g >= 0), reverse=True)
    return _dcg([gain(g) for g in grades]), _dcg([g for g in ideal if g > 0.0])


def ndcg_cut(grades: Sequence[Optional[int]], judged: Mapping[str, int], k: int) -> float:
    """``ndcg_cut_k`` of one query (``m_ndcg_cut.c``: the grade is the gain, no gain map)."""
    top = [float(g) if g is not None and g > 0 else 0.0 for g in grades[:k]]
    ideal = sorted((float(g) for g in judged.values() if g > 0), reverse=True)[:k]
    dcg = _dcg(top)
    ideal_dcg = _dcg(ideal)
    return dcg / ideal_dcg if ideal_dcg > 0.0 else dcg


def running_mean(values: Sequence[float], n_queries: int) -> float:
    """trec_eval's mean: the per-query doubles added in order, then divided by the count."""
    total = 0.0
    for value in values:
        total += float(value)
    return total / n_queries if n_queries else total
