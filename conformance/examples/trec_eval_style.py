"""trec_eval's ``map``, ``map_cut``, ``P``, ``recall``, ``Rprec``, ``recip_rank``, ``bpref``,
``success`` and ``ndcg_cut``, written the way trec_eval computes them.

Our own code, written from reading trec_eval's sources (usnistgov/trec_eval v9.0.8 and
v10.0), to check :func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run` against an
independent loop: no engine, no padding, no rescaling.  Values are exact ``Fraction``.

* ``trec_eval.c``: a query is evaluated when it is in the run and in the qrels (with ``-c``,
  every qrels query; one absent from the run has an empty ranking).  Means divide by the
  number of evaluated queries.
* ``form_res_rels.c``: the retrieved documents are sorted by a comparator: higher score
  first, and for equal scores ``strcmp(docno2, docno1)`` (docnos in descending byte order).
  Each retrieved document gets its grade from the qrels, -1 when it is not in the qrels.
  ``num_rel`` counts the qrels documents with ``rel >= relevance_level``.
* ``m_map.c``: walk the ranking, add ``rel_so_far / rank`` at each relevant document, divide
  by ``num_rel`` (0 when nothing relevant was retrieved).
* ``m_P.c``: relevant documents among the first ``k``, divided by ``k`` (missing ranks count
  as non-relevant).  ``m_recall.c``: the same count divided by ``num_rel`` (0 when
  ``num_rel`` is 0).  ``m_Rprec.c``: relevant documents among the first
  ``min(num_ret, num_rel)``, divided by ``num_rel``.
* ``m_map_cut.c``: as ``map``, stopping at rank k.  ``m_recip_rank.c``: 1 / rank of the first
  relevant document.  ``m_success.c``: 1 when the first k hold a relevant document.
* ``m_bpref.c``: walk the ranking skipping documents not judged (or judged < 0); count the
  judged non-relevant seen; each relevant document adds ``1 - min(seen, num_rel) /
  min(num_nonrel, num_rel)`` (1 when none was seen); divide by ``num_rel``.
* ``m_ndcg_cut.c`` (9.0.4 and later): the sum of ``grade / log2(i + 2)`` over the first k
  (0-based i, positive grades), over the same sum of the grades sorted from the highest
  (a float, from ``math.log2``).
* ``form_res_rels.c``: ``-M n`` keeps the first n after sorting; ``-J`` then keeps the
  documents with a grade >= 0.
"""

import math
from fractions import Fraction
from functools import cmp_to_key


def _raw(name):
    """The bytes trec_eval compares with strcmp."""
    return name.encode("utf-8", "surrogateescape")


def _compare(first, second):
    """comp_sim_docno: -1 when ``first`` ranks before ``second``."""
    (doc1, sim1), (doc2, sim2) = first, second
    if sim1 > sim2:
        return -1
    if sim1 < sim2:
        return 1
    b1, b2 = _raw(doc1), _raw(doc2)
    return (b2 > b1) - (b2 < b1)


def query_measures(ranking, judgments, cutoffs=(), relevance_level=1, depth=None, judged_only=False):
    """Exact ``map``, ``Rprec``, ``P_k``, ``recall_k``, ``map_cut_k``, ``recip_rank``, ``bpref``,
    ``success_k``, and ``ndcg_cut_k`` (a float) of one query.

    ``ranking``: ``{docno: score}``; ``judgments``: ``{docno: grade}``.
    """
    ranked = sorted(ranking.items(), key=cmp_to_key(_compare))
    if depth is not None:
        ranked = ranked[:depth]
    if judged_only:
        ranked = [(doc, score) for doc, score in ranked if judgments.get(doc, -1) >= 0]
    rel_list = [judgments.get(doc, -1) for doc, _ in ranked]
    num_rel = 0
    for grade in judgments.values():
        if grade >= relevance_level:
            num_rel += 1
    out = {}

    rel_so_far = 0
    total = Fraction(0)
    for i, grade in enumerate(rel_list):
        if grade >= relevance_level:
            rel_so_far += 1
            total += Fraction(rel_so_far, i + 1)
    out["map"] = total / num_rel if rel_so_far else Fraction(0)

    look_at = min(len(rel_list), num_rel)
    found = 0
    for i in range(look_at):
        if rel_list[i] >= relevance_level:
            found += 1
    out["Rprec"] = Fraction(found, num_rel) if look_at else Fraction(0)

    out["recip_rank"] = Fraction(0)
    for i, grade in enumerate(rel_list):
        if grade >= relevance_level:
            out["recip_rank"] = Fraction(1, i + 1)
            break

    num_nonrel = 0
    for grade in judgments.values():
        if 0 <= grade < relevance_level:
            num_nonrel += 1
    nonrel_so_far = 0
    bpref = Fraction(0)
    for grade in rel_list:
        if grade < 0:
            continue
        if grade < relevance_level:
            nonrel_so_far += 1
        elif nonrel_so_far:
            bpref += 1 - Fraction(min(nonrel_so_far, num_rel), min(num_nonrel, num_rel))
        else:
            bpref += 1
    out["bpref"] = bpref / num_rel if num_rel else Fraction(0)

    for k in cutoffs:
        found = 0
        for i in range(min(k, len(rel_list))):
            if rel_list[i] >= relevance_level:
                found += 1
        out[f"P_{k}"] = Fraction(found, k)
        out[f"recall_{k}"] = Fraction(found, num_rel) if num_rel else Fraction(0)
        out[f"success_{k}"] = Fraction(1 if found else 0)
        rel_so_far = 0
        total = Fraction(0)
        for i, grade in enumerate(rel_list[:k]):
            if grade >= relevance_level:
                rel_so_far += 1
                total += Fraction(rel_so_far, i + 1)
        out[f"map_cut_{k}"] = total / num_rel if num_rel else Fraction(0)
        dcg = 0.0
        for i, grade in enumerate(rel_list[:k]):
            if grade > 0:
                dcg += grade / math.log2(i + 2)
        best = sorted((g for g in judgments.values() if g > 0), reverse=True)[:k]
        ideal = 0.0
        for i, grade in enumerate(best):
            ideal += grade / math.log2(i + 2)
        out[f"ndcg_cut_{k}"] = dcg / ideal if ideal > 0 else 0.0
    return out


def trec_eval_style(run, qrels, cutoffs=(), relevance_level=1, complete=False, depth=None, judged_only=False):
    """Per-query and mean measures of a ranx-style run against qrels, trec_eval's way.

    Returns ``(per_query, means)``: ``per_query`` maps each evaluated qid (in trec_eval's
    order, by bytes) to its measures, ``means`` maps each measure name to its mean.
    """
    judged = [q for q in qrels if qrels[q]]
    if complete:
        evaluated = judged
    else:
        evaluated = [q for q in judged if run.get(q)]
    per_query = {}
    for qid in sorted(evaluated, key=_raw):
        per_query[qid] = query_measures(run.get(qid, {}), qrels[qid], cutoffs, relevance_level, depth, judged_only)
    means = {}
    for values in per_query.values():
        for name, value in values.items():
            means[name] = means.get(name, Fraction(0)) + value
    for name in means:
        means[name] /= len(per_query)
    return per_query, means
