"""trec_eval's ``ndcg`` under a user gain map, summed exactly.

(any grade), divided by k.
``ndcg`` with a user gain map (``trec_eval -m ndcg.1=3,2=9``, ``m_ndcg.c`` with
``gain_init.c``): a grade's gain is the map's value, or the grade itself when the map leaves it
out; a retrieved document adds ``gain(g_r) d(r)`` (negative gains too; unjudged documents 0),
the ideal places the judged documents of every grade whose gain is > 0 by gain descending,
and nDCG = DCG / ideal (0 when the ideal is 0).  ``d(r)`` is the float64 table of spec §7
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any, Dict, Mapping, Optional, Sequence

from retrieval_conformance.reference.contract.discounts import rank_discounts

ZERO = Fraction(0)


def gain_map(gains: Any) -> Optional[Dict[int, Fraction]]:
    """A user gain map ``{grade: gain}`` checked and held exactly (None: the grades are the gains)."""
    if gains is None:
        return None
    if not isinstance(gains, Mapping):
        raise TypeError(
            f"gains: expected a dict {{grade: gain}} (trec_eval -m ndcg.GRADE=GAIN), got "
            f"{type(gains).__name__}; e.g. gains={{1: 1, 2: 3, 3: 7}}"
        )
    out: Dict[int, Fraction] = {}
    for grade, gain in gains.items():
        if isinstance(grade, bool) or not isinstance(grade, numbers.Integral) or grade < 0:
            raise ValueError(f"gains: expected integer grades >= 0 as keys (qrels grades), got {grade!r}")
        if isinstance(gain, bool) or not isinstance(gain, numbers.Real) or not math.isfinite(float(gain)):
            raise ValueError(f"gains: expected a finite number as the gain of grade {grade}, got {gain!r}")
        out[int(grade)] = Fraction(gain) if isinstance(gain, numbers.Rational) else Fraction(float(gain))
    return out


def ndcg_with_gains(
    grades: Sequence[Optional[int]],
    judged: Mapping[str, int],
    gains: Dict[int, Fraction],
    k: Optional[int],
    discount: str = "log2",
) -> Fraction:
    """trec_eval's ``ndcg`` under a gain map (``ndcg_cut_k`` with ``k``: the top k, the ideal's
    first k places); ``discount`` is the rule of spec §7 (``"trec_eval_9.0a3"``: the 2008 one)."""

    def gain(grade: Optional[int]) -> Fraction:
        return ZERO if grade is None or grade < 0 else gains.get(grade, Fraction(grade))

    top = list(grades) if k is None else list(grades[:k])
    ideal = sorted((gain(g) for g in judged.values() if g >= 0 and gain(g) > 0), reverse=True)
    if k is not None:
        ideal = ideal[:k]
    d = rank_discounts(max(len(top), len(ideal), 1), discount).tolist()

    def dcg(ranked_gains) -> Fraction:  # only the ranks that gain (most retrieved documents gain 0)
        return sum((g * Fraction(d[i]) for i, g in enumerate(ranked_gains) if g), ZERO)

    best = dcg(ideal)
    if best <= 0:
        return ZERO
    return dcg(map(gain, top)) / best
