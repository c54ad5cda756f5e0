"""trec_eval's measures of a ranking computed by the engine, with no engine change.

How the engine computes them exactly, with no engine change: a query's retrieved list, in
the order above, is padded to a common width W >= max(n, R) with non-relevant items
(scored like its last item, so stable ties keep them after it), followed by R - H(n)
relevant *phantoms* (its relevant documents missing from the run).  AP@W with
``ap_at_k="r"`` then divides the sum over the retrieved relevant documents by R, and
R-precision H(R)/R looks only within the padded list (R <= W): both are trec_eval's, in
one rounding (exact ``Fraction`` with the reference).  P@k, the CMC and INP come from a
second call without phantoms (so the CMC and INP describe the retrieved list only), and
recall@k = H(k)/R is one exact division here.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.reference.contract.evaluate import evaluate
from retrieval_conformance.reference.contract.problem import PerQuery
from retrieval_conformance.reference.contract.validation import MAX_GRADE
from retrieval_conformance.reference.protocols.trec.queries import Query
from retrieval_conformance.reference.readers.grades import Grade

#: cells (queries x columns) of one engine call; queries are grouped by width under it
_CELLS = 1 << 22
ZERO = Fraction(0)


def _chunks(queries: Sequence[Query]) -> List[List[int]]:
    """Query indices in groups whose padded matrices stay under ``_CELLS`` cells."""
    chunks: List[List[int]] = []
    chunk: List[int] = []
    pad = phantoms = 0
    for i in sorted(range(len(queries)), key=lambda j: queries[j].width):
        q = queries[i]
        new_pad = max(pad, q.n_retrieved, q.n_relevant, 1)
        new_phantoms = max(phantoms, q.n_relevant - q.relevant_retrieved)
        if chunk and (len(chunk) + 1) * (new_pad + new_phantoms) > _CELLS:
            chunks.append(chunk)
            chunk = []
            new_pad = max(q.n_retrieved, q.n_relevant, 1)
            new_phantoms = q.n_relevant - q.relevant_retrieved
        chunk.append(i)
        pad, phantoms = new_pad, new_phantoms
    if chunk:
        chunks.append(chunk)
    return chunks


def _engine_calls(
    queries: Sequence[Query], k: Optional[int], max_rank: int, implementation: str
) -> Tuple[PerQuery, PerQuery, PerQuery, str]:
    """(per query from the call with phantoms, per query from the retrieved lists, per query
    whose ``ap`` is trec_eval's ``map_cut_k``, who computed)."""
    width = max(max(q.n_retrieved, q.n_relevant, 1) for q in queries)
    phantoms = max(q.n_relevant - q.relevant_retrieved for q in queries)
    scores = np.zeros((len(queries), width + phantoms), dtype=np.float64)
    # the grades of relevant documents (nDCG's gains; below the relevance level: 0)
    relevance = np.zeros(scores.shape, dtype=np.int64)
    for row, q in enumerate(queries):
        n = q.n_retrieved
        if n:
            scores[row, :n] = q.scores
            scores[row, n:] = q.scores[-1]  # the lowest score: stable ties keep padding after it
            relevance[row, :n] = [_engine_grade(g) if rel else 0 for g, rel in zip(q.grades, q.relevant)]
        missing = sorted((g for d, g in q.judged.items() if g >= q.level and d not in q.retrieved), reverse=True)
        relevance[row, width : width + len(missing)] = [_engine_grade(g) for g in missing]
    common = dict(
        ties="stable",
        ap_rule="precision_sum",
        ap_at_k="r",
        empty="zero",
        discount="log2",
        implementation=implementation,
    )
    full = evaluate(scores=scores, relevance=relevance, k=width, max_rank=1, **common)
    listed = evaluate(scores=scores[:, :width], relevance=relevance[:, :width], k=k, max_rank=max_rank, **common)
    # map_cut_k: AP@k over R with the phantoms (k < width keeps them out of the top k); from
    # k = width on, every retrieved document is inside the cut and it is the full AP
    cut = full if k is None or k >= width else evaluate(scores=scores, relevance=relevance, k=k, max_rank=1, **common)
    if (k is not None and k < width) or any(q.level != 1 for q in queries):
        _replace_ndcg(full.per_query, _ndcg_call(queries, k, common))
    return full.per_query, listed.per_query, cut.per_query, full.implementation


def _ndcg_call(queries: Sequence[Query], k: Optional[int], common: dict) -> PerQuery:
    """trec_eval's ``ndcg`` (``ndcg_cut_k`` with k): the gains are the positive grades of the
    qrels whatever the relevance level (``m_ndcg.c`` reads the grades, not ``-l``), the top k
    against the ideal of every positively judged document (its missing ones as phantoms)."""
    positive = [
        sorted((g for d, g in q.judged.items() if g > 0 and d not in q.retrieved), reverse=True) for q in queries
    ]
    # at least as wide as every ideal list, so that the cut-off min(k, width) never shortens one
    width = max(max(q.n_retrieved, sum(1 for g in q.judged.values() if g > 0), 1) for q in queries)
    scores = np.zeros((len(queries), width + max(map(len, positive))), dtype=np.float64)
    grades = np.zeros(scores.shape, dtype=np.int64)
    for row, (q, missing) in enumerate(zip(queries, positive)):
        if q.n_retrieved:
            scores[row, : q.n_retrieved] = q.scores
            scores[row, q.n_retrieved :] = q.scores[-1]
            grades[row, : q.n_retrieved] = [_engine_grade(g) for g in q.grades]
        grades[row, width : width + len(missing)] = [_engine_grade(g) for g in missing]
    cut = width if k is None else min(k, width)
    return evaluate(scores=scores, relevance=grades, k=cut, max_rank=1, **common).per_query


def _engine_grade(grade: Optional[Grade]) -> int:
    """The engine's grade of a document (0 .. MAX_GRADE, > 0 when the grade is positive).  It is
    the nDCG gain only for integer grades up to MAX_GRADE; nDCG is summed exactly otherwise."""
    if grade is None or grade <= 0:
        return 0
    return min(math.ceil(grade), MAX_GRADE)


def _replace_ndcg(target: PerQuery, source: PerQuery) -> None:
    target.ndcg = source.ndcg
    if source.exact is not None and target.exact is not None:
        target.exact["ndcg"] = source.exact["ndcg"]


def engine_per_query(
    queries: Sequence[Query], k: Optional[int], max_rank: int, implementation: str
) -> Tuple[PerQuery, str, list]:
    """trec_eval's per-query values, in the order of ``queries``, and ``map_cut_k`` (exact
    ``Fraction`` from the reference, float otherwise)."""
    n = len(queries)
    ap, rprec, hits, prec, inp, ndcg, rr, ap_at_r, map_cut = (np.zeros(n) for _ in range(9))
    exact_map_cut: List[Fraction] = [ZERO] * n
    cmc = np.zeros((n, max_rank))
    exact: Optional[Dict[str, List]] = None
    name = implementation
    for chunk in _chunks(queries):
        full, listed, cut, name = _engine_calls([queries[i] for i in chunk], k, max_rank, implementation)
        ap[chunk], rprec[chunk], map_cut[chunk] = full.ap, full.r_precision, cut.ap
        # recip_rank and ndcg read the whole retrieved list (ndcg_cut_k its top k)
        ndcg[chunk], rr[chunk], ap_at_r[chunk] = full.ndcg, full.rr, full.ap_at_r
        hits[chunk], prec[chunk] = listed.hits_at_k, listed.precision_at_k
        inp[chunk], cmc[chunk] = listed.inp, listed.cmc
        if full.exact is not None and listed.exact is not None:
            if exact is None:
                exact = {
                    key: [ZERO] * n
                    for key in ("ap", "r_precision", "hits_at_k", "precision_at_k", "inp", "ndcg", "rr", "ap_at_r")
                }
                exact["cmc"] = [[]] * n
            for pos, i in enumerate(chunk):
                exact_map_cut[i] = cut.exact["ap"][pos]
                for key in ("ap", "r_precision", "ndcg", "rr", "ap_at_r"):
                    exact[key][i] = full.exact[key][pos]
                for key in ("hits_at_k", "precision_at_k", "inp", "cmc"):
                    exact[key][i] = listed.exact[key][pos]
    n_relevant = np.array([q.n_relevant for q in queries], dtype=np.int64)
    found = [int(h) for h in hits]  # H(k), or H(n) without k: integers under stable ties
    recall = [Fraction(h, r) if r else ZERO for h, r in zip(found, n_relevant.tolist())]
    if k is None:  # trec_eval's set_P: relevant retrieved / retrieved
        set_p = [Fraction(q.relevant_retrieved, q.n_retrieved) if q.n_retrieved else ZERO for q in queries]
        prec = np.array([float(p) for p in set_p])
        if exact is not None:
            exact["precision_at_k"] = set_p
    if exact is not None:
        exact["recall_at_k"] = recall
    pq = PerQuery(
        ap=ap,
        n_relevant=n_relevant,
        hits_at_k=hits,
        precision_at_k=prec,
        recall_at_k=np.array([float(r) for r in recall]),
        cmc=cmc,
        inp=inp,
        r_precision=rprec,
        ndcg=ndcg,
        rr=rr,
        ap_at_r=ap_at_r,
        exact=exact,
    )
    return pq, name, (exact_map_cut if exact is not None else map_cut.tolist())
