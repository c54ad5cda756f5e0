"""trec_eval's measures by name, with those that need the judgments themselves, in exact fractions.

:mod:`.engine` computes the measures of a ranking (AP, AP@k, P@k, H(k), R-precision, RR, nDCG;
every implementation).  This module names them as trec_eval prints them and adds (spec §13
trec_eval):

* ``bpref`` (``m_bpref.c``): with R relevant and N judged non-relevant documents (grade in
  ``[0, level)``) in the qrels, and n_r the judged non-relevant documents ranked above the
  relevant retrieved document r, ``bpref = (1/R) Σ_r (1 - min(n_r, R) / min(N, R))`` (a term
  is 1 when n_r = 0); documents not in the qrels or with a negative grade are skipped; 0 when
  R = 0.
* ``success_k`` (``m_success.c``): 1 when a relevant document is in the top k, else 0.
* ``R_cap_k``: BEIR's capped recall, ``H(k) / min(R, k)``, 0 when R = 0.
* ``Judged_k``: ir_measures' ``Judged@k``, the documents of the top k that are in the qrels
"""

from __future__ import annotations

from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Union

Number = Union[Fraction, float]
ZERO = Fraction(0)


def bpref(grades: Sequence[Optional[int]], n_relevant: int, n_nonrelevant: int, level: int) -> Fraction:
    """trec_eval's ``bpref`` of one ranked list (``grades``: None for a document not in the qrels)."""
    if n_relevant == 0:
        return ZERO
    cap = min(n_nonrelevant, n_relevant)
    above = 0
    total = ZERO
    for grade in grades:
        if grade is None or grade < 0:
            continue  # not in the pool, or in the pool but unjudged
        if grade < level:
            above += 1
        else:
            total += 1 - Fraction(min(above, n_relevant), cap) if above else 1
    return total / n_relevant


def judged_at_k(grades: Sequence[Optional[int]], k: int) -> Fraction:
    """ir_measures' ``Judged@k``: documents of the top k in the qrels, over k."""
    return Fraction(sum(1 for g in grades[:k] if g is not None), k)


def capped_recall(hits: int, n_relevant: int, k: int) -> Fraction:
    """BEIR's ``R_cap@k`` = H(k) / min(R, k); 0 when R = 0."""
    return Fraction(hits, min(n_relevant, k)) if n_relevant else ZERO


def named_measures(
    k: Optional[int],
    level: int,
    grades: Sequence[Sequence[Optional[int]]],
    n_relevant: Sequence[int],
    n_nonrelevant: Sequence[int],
    n_retrieved: Sequence[int],
    engine: Dict[str, Sequence[Number]],
) -> Dict[str, List]:
    """Per-query values by trec_eval name, in query order.

    ``engine``: the engine's per-query values (``Fraction`` from the reference, float
    otherwise) under the keys ``map``, ``Rprec``, ``recip_rank``, ``ndcg`` and, with ``k``,
    ``P``, ``recall``, ``map_cut`` and ``hits`` (H(k), an integer).  Counts are ints, the
    measures of this module exact ``Fraction``.
    """
    out: Dict[str, List] = {
        "num_ret": list(n_retrieved),
        "num_rel": list(n_relevant),
        "num_rel_ret": [sum(1 for g in row if g is not None and g >= level) for row in grades],
        "map": list(engine["map"]),
        "Rprec": list(engine["Rprec"]),
        "recip_rank": list(engine["recip_rank"]),
        "bpref": [bpref(row, r, n, level) for row, r, n in zip(grades, n_relevant, n_nonrelevant)],
        "ndcg" if k is None else f"ndcg_cut_{k}": list(engine["ndcg"]),
    }
    if k is not None:
        hits = [int(h) for h in engine["hits"]]
        out[f"P_{k}"] = list(engine["P"])
        out[f"recall_{k}"] = list(engine["recall"])
        out[f"map_cut_{k}"] = list(engine["map_cut"])
        out[f"success_{k}"] = [Fraction(int(h > 0)) for h in hits]
        out[f"R_cap_{k}"] = [capped_recall(h, r, k) for h, r in zip(hits, n_relevant)]
        out[f"Judged_{k}"] = [judged_at_k(row, k) for row in grades]
    return out


def mean(values: Sequence[Number]) -> float:
    """The exact mean of per-query values (exact fractions, or the float64 values themselves),
    rounded once, as the engine's aggregation does."""
    if not values:
        return 0.0
    return float(sum((v if isinstance(v, Fraction) else Fraction(v) for v in values), ZERO) / len(values))
