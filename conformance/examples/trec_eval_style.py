"""trec_eval's ``map``, ``P``, ``recall`` and ``Rprec``, written the way trec_eval computes them.

Our own code, written from reading trec_eval's sources (usnistgov/trec_eval v9.0.8 and
v10.0), to check :func:`~retrieval_conformance.reference.trec.evaluate_run` against an
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
"""
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


def query_measures(ranking, judgments, cutoffs=(), relevance_level=1):
    """Exact ``map``, ``Rprec``, ``P_k`` and ``recall_k`` of one query.

    ``ranking``: ``{docno: score}``; ``judgments``: ``{docno: grade}``.
    """
    ranked = sorted(ranking.items(), key=cmp_to_key(_compare))
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

    for k in cutoffs:
        found = 0
        for i in range(min(k, len(rel_list))):
            if rel_list[i] >= relevance_level:
                found += 1
        out[f"P_{k}"] = Fraction(found, k)
        out[f"recall_{k}"] = Fraction(found, num_rel) if num_rel else Fraction(0)
    return out


def trec_eval_style(run, qrels, cutoffs=(), relevance_level=1, complete=False):
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
        per_query[qid] = query_measures(run.get(qid, {}), qrels[qid], cutoffs, relevance_level)
    means = {}
    for values in per_query.values():
        for name, value in values.items():
            means[name] = means.get(name, Fraction(0)) + value
    for name in means:
        means[name] /= len(per_query)
    return per_query, means
