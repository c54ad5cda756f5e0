"""trec_eval's ranking of one query and its measures by trec_eval's names, from its ranked grades.

:func:`~retrieval_conformance.reference.trec.evaluate_run` ranks each query as trec_eval does
and has the engine compute the measures of the ranking (AP, AP@k, P@k, H(k), R-precision,
RR, nDCG; every implementation).  This module names them as trec_eval prints them and adds the
measures that need the judgments themselves, in exact fractions (spec §13 trec_eval):

* ``bpref`` (``m_bpref.c``): with R relevant and N judged non-relevant documents (grade in
  ``[0, level)``) in the qrels, and n_r the judged non-relevant documents ranked above the
  relevant retrieved document r, ``bpref = (1/R) Σ_r (1 - min(n_r, R) / min(N, R))`` (a term
  is 1 when n_r = 0); documents not in the qrels or with a negative grade are skipped; 0 when
  R = 0.
* ``success_k`` (``m_success.c``): 1 when a relevant document is in the top k, else 0.
* ``R_cap_k``: BEIR's capped recall, ``H(k) / min(R, k)``, 0 when R = 0.
* ``Judged_k``: ir_measures' ``Judged@k``, the documents of the top k that are in the qrels
  (any grade), divided by k.
* ``ndcg`` with a user gain map (``trec_eval -m ndcg.1=3,2=9``, ``m_ndcg.c`` with
  ``gain_init.c``): a grade's gain is the map's value, or the grade itself when the map leaves it
  out; a retrieved document adds ``gain(g_r) d(r)`` (negative gains too; unjudged documents 0),
  the ideal places the judged documents of every grade whose gain is > 0 by gain descending,
  and nDCG = DCG / ideal (0 when the ideal is 0).  ``d(r)`` is the float64 table of spec §7
  discount=log2 (or, asked for, §7 discount=trec_eval_9.0a3), summed exactly.
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from operator import itemgetter
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from retrieval_conformance.reference.contract.discounts import rank_discounts
from retrieval_conformance.reference.readers.trec import id_bytes

Number = Union[Fraction, float]
ZERO = Fraction(0)


def trec_order(docs: Mapping[str, float]) -> List[Tuple[str, float]]:
    """``(docno, score)`` pairs in trec_eval's order: score descending, then docno descending.

    Docnos compare by their bytes (:func:`~retrieval_conformance.reference.trec_files.id_bytes`),
    as ``strcmp`` does in trec_eval's ``comp_sim_docno`` (for ASCII ids, ``str`` order is
    that order).  Python's sort is stable, also with ``reverse=True``, so sorting by docno
    and then by score gives the compound order.
    """
    items = list(docs.items())
    if all(map(str.isascii, docs)):
        items.sort(reverse=True)  # docnos are distinct: the tuples compare by docno
    else:
        items.sort(key=lambda item: id_bytes(item[0]), reverse=True)
    items.sort(key=itemgetter(1), reverse=True)
    return items


def ranked(qid: str, docs: Mapping[str, float], judged: Mapping[str, int], depth: Optional[int],
            judged_only: bool, ignore_identical_ids: bool) -> List[Tuple[str, float]]:
    """One query's ranked ``(docno, score)`` pairs after the options, in trec_eval's order of
    steps (``form_res_rels.c``): rank everything, keep the top ``depth`` (``-M``), then drop the
    documents without a judgment >= 0 (``-J``).  A document named like the query (BEIR's
    ``ignore_identical_ids``) is dropped before ranking, as BEIR drops it from the run."""
    if ignore_identical_ids and qid in docs:
        docs = {d: score for d, score in docs.items() if d != qid}
    ranked = trec_order(docs)
    if depth is not None:
        ranked = ranked[:depth]
    if judged_only:
        ranked = [(d, score) for d, score in ranked if judged.get(d, -1) >= 0]
    return ranked


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


def gain_map(gains: Any) -> Optional[Dict[int, Fraction]]:
    """A user gain map ``{grade: gain}`` checked and held exactly (None: the grades are the gains)."""
    if gains is None:
        return None
    if not isinstance(gains, Mapping):
        raise TypeError(f"gains: expected a dict {{grade: gain}} (trec_eval -m ndcg.GRADE=GAIN), got "
                        f"{type(gains).__name__}; e.g. gains={{1: 1, 2: 3, 3: 7}}")
    out: Dict[int, Fraction] = {}
    for grade, gain in gains.items():
        if isinstance(grade, bool) or not isinstance(grade, numbers.Integral) or grade < 0:
            raise ValueError(f"gains: expected integer grades >= 0 as keys (qrels grades), got {grade!r}")
        if isinstance(gain, bool) or not isinstance(gain, numbers.Real) or not math.isfinite(float(gain)):
            raise ValueError(f"gains: expected a finite number as the gain of grade {grade}, got {gain!r}")
        out[int(grade)] = Fraction(gain) if isinstance(gain, numbers.Rational) else Fraction(float(gain))
    return out


def ndcg_with_gains(grades: Sequence[Optional[int]], judged: Mapping[str, int], gains: Dict[int, Fraction],
                    k: Optional[int], discount: str = "log2") -> Fraction:
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


def named_measures(k: Optional[int], level: int, grades: Sequence[Sequence[Optional[int]]],
                   n_relevant: Sequence[int], n_nonrelevant: Sequence[int], n_retrieved: Sequence[int],
                   engine: Dict[str, Sequence[Number]]) -> Dict[str, List]:
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
