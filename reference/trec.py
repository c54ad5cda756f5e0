"""TREC runs and qrels (files or ranx-style dicts) evaluated with trec_eval's semantics.

``evaluate_run`` reproduces trec_eval's ``map``, ``map_cut_k``, ``P_k``, ``recall_k``, ``Rprec``,
``recip_rank`` and ``ndcg`` / ``ndcg_cut_k`` with any implementation of the engine (``bpref``,
``success_k``: :mod:`.run_measures`; golden: ``golden/trec_eval.json``).  The conventions,
each read in usnistgov/trec_eval (tags v9.0.8 and v10.0; file names below are from there):

Which queries
    A query is evaluated when it has results in the run and judgments in the qrels.
    Queries only in the run are ignored; so are queries only in the qrels ("queries for
    which there are relevant docs but no retrieved docs are also ignored by default", the
    help text of ``trec_eval.c``; 9.0.8 loops over the run's queries and skips those without
    judgments).  ``complete=True`` is ``trec_eval -c``: every query of the qrels is
    evaluated, one absent from the run with 0 everywhere, and means divide by the number of
    qrels queries (``meas_avg.c``).  trec_eval 10.0 without ``-c`` stops instead ("result
    qid ... not found in qrels", exit 4) when a qrels query is absent from the run; we
    follow the documented behaviour of 9.0.8.  A query whose judgments hold no relevant
    document is evaluated: 0 everywhere, counted in the means (trec_eval zeroes each
    query's values and counts every evaluated query; only when the first query it meets
    has nothing but negative grades does it stop, "Can't calculate measure", from an
    allocation of size 0 in ``form_res_rels.c``).  An empty dict (``{qid: {}}``) is
    no results (in a run) or no judgments (in qrels), as a query without lines in a file.
Ranking
    By score descending, ties by docno in *descending* byte order (``comp_sim_docno`` in
    ``form_res_rels.c`` returns ``strcmp(p2->docno, p1->docno)``); the rank column of the
    file is ignored.  Here each query's documents are put in that order and handed to the
    engine with their scores and ``ties="stable"`` (ties keep gallery order), which
    reproduces it.  trec_eval 10.0 compares scores as doubles; 9.0.8 stored them as C
    ``float`` (``trec_format.h``), so scores equal in float32 tie there:
    ``score_dtype="float32"`` rounds them first to reproduce it.
Relevance
    ``grade >= relevance_level`` (default 1, ``trec_eval -l``).  R is the number of such
    documents in the qrels, retrieved or not (``num_rel``, ``form_res_rels.c``).
Measures (per query; R as above, H(k) relevant documents in the top k, n retrieved)
    ``map``: AP = (1/R) Σ_{retrieved relevant at rank r} H(r)/r (``m_map.c``), 0 if R = 0.
    ``P_k``: P@k = H(k)/k, also when fewer than k documents are retrieved (``m_P.c``:
    "nonrelevant docs fill in the rest").  ``recall_k``: H(k)/R, 0 if R = 0
    (``m_recall.c``).  ``Rprec``: H(R)/R, 0 if R = 0 (``m_Rprec.c``).  ``recip_rank``:
    1 / the rank of the first relevant retrieved document, 0 if none (``m_recip_rank.c``).
    ``ndcg`` (``ndcg_cut_k`` with k): the qrels grades as gains, whatever the relevance
    level; the document at rank r divided by log2(r + 1) (``m_ndcg.c`` since 9.0.4; spec
    §7 discount=log2); the ideal from every positively judged
    document, 0 when there is none.  Means are plain means over the evaluated queries
    (``meas_avg.c``).

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
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import aggregate
from retrieval_conformance.reference.contract.evaluate import MAX_CUTOFFS, evaluate
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Result, ResultsAtK
from retrieval_conformance.reference.contract.validation import MAX_GRADE
from retrieval_conformance.reference.readers.grades import Grade
from retrieval_conformance.reference.run_measures import (
    gain_map,
    mean,
    named_measures,
    ndcg_with_gains,
    ranked,
    trec_order,
)
from retrieval_conformance.reference.readers.trec import SCORE_DTYPES, as_qrels, as_run, id_bytes, read_qrels, read_run

__all__ = ["SCORE_DTYPES", "as_qrels", "as_run", "evaluate_run", "read_qrels", "read_run", "trec_order"]

#: cells (queries x columns) of one engine call; queries are grouped by width under it
_CELLS = 1 << 22
ZERO = Fraction(0)


@dataclass
class _Query:
    """One evaluated query: its retrieved documents in trec_eval's order, and its judgments."""

    qid: str
    docs: List[str]
    scores: List[float]
    judged: Dict[str, Grade]
    level: int
    grades: List[Optional[Grade]] = field(init=False)
    relevant: List[bool] = field(init=False)
    n_relevant: int = field(init=False)
    relevant_retrieved: int = field(init=False)
    n_nonrelevant: int = field(init=False)
    retrieved: set = field(init=False)

    def __post_init__(self) -> None:
        self.retrieved = set(self.docs)
        self.grades = list(map(self.judged.get, self.docs))
        self.relevant = [g is not None and g >= self.level for g in self.grades]
        self.n_relevant = sum(1 for g in self.judged.values() if g >= self.level)
        self.relevant_retrieved = sum(self.relevant)
        self.n_nonrelevant = sum(1 for g in self.judged.values() if 0 <= g < self.level)

    @property
    def n_retrieved(self) -> int:
        return len(self.docs)

    @property
    def width(self) -> int:
        """Columns this query needs: the padded list, then its phantoms."""
        return max(self.n_retrieved, self.n_relevant, 1) + self.n_relevant - self.relevant_retrieved


# --------------------------------------------------------------------------- inputs
def _queries(run: Dict[str, Dict[str, float]], qrels: Dict[str, Dict[str, int]], level: int,
             complete: bool, depth: Optional[int] = None, judged_only: bool = False,
             ignore_identical_ids: bool = False) -> Tuple[List[_Query], Dict[str, List[str]]]:
    """The evaluated queries in trec_eval's order (qid bytes), and the ids left out."""
    wanted = set(qrels) if complete else set(run) & set(qrels)
    if not wanted:
        raise ValueError(
            f"run, qrels: no query has both results and judgments (run: {len(run)} queries, e.g. "
            f"{_some(run)}; qrels: {len(qrels)} queries, e.g. {_some(qrels)}); trec_eval stops here too "
            "('No queries with both results and relevance info'): check that both use the same query ids")
    queries = []
    for qid in sorted(wanted, key=id_bytes):
        pairs = ranked(qid, run.get(qid, {}), qrels[qid], depth, judged_only, ignore_identical_ids)
        queries.append(_Query(qid, [d for d, _ in pairs], [s for _, s in pairs], qrels[qid], level))
    left_out = {"run_only": sorted(set(run) - set(qrels), key=id_bytes),
                "qrels_only": sorted(set(qrels) - set(run) - wanted, key=id_bytes)}
    return queries, left_out


def _some(ids: Mapping) -> str:
    shown = [repr(q) for q, _ in zip(ids, range(3))]
    return ", ".join(shown) if shown else "none"


# --------------------------------------------------------------------------- engine
def _chunks(queries: Sequence[_Query]) -> List[List[int]]:
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


def _engine_calls(queries: Sequence[_Query], k: Optional[int], max_rank: int,
                  implementation: str) -> Tuple[PerQuery, PerQuery, PerQuery, str]:
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
        relevance[row, width:width + len(missing)] = [_engine_grade(g) for g in missing]
    common = dict(ties="stable", ap_rule="precision_sum", ap_at_k="r", empty="zero", discount="log2",
                  implementation=implementation)
    full = evaluate(scores=scores, relevance=relevance, k=width, max_rank=1, **common)
    listed = evaluate(scores=scores[:, :width], relevance=relevance[:, :width], k=k, max_rank=max_rank, **common)
    # map_cut_k: AP@k over R with the phantoms (k < width keeps them out of the top k); from
    # k = width on, every retrieved document is inside the cut and it is the full AP
    cut = full if k is None or k >= width else evaluate(scores=scores, relevance=relevance, k=k, max_rank=1,
                                                        **common)
    if (k is not None and k < width) or any(q.level != 1 for q in queries):
        _replace_ndcg(full.per_query, _ndcg_call(queries, k, common))
    return full.per_query, listed.per_query, cut.per_query, full.implementation


def _ndcg_call(queries: Sequence[_Query], k: Optional[int], common: dict) -> PerQuery:
    """trec_eval's ``ndcg`` (``ndcg_cut_k`` with k): the gains are the positive grades of the
    qrels whatever the relevance level (``m_ndcg.c`` reads the grades, not ``-l``), the top k
    against the ideal of every positively judged document (its missing ones as phantoms)."""
    positive = [sorted((g for d, g in q.judged.items() if g > 0 and d not in q.retrieved), reverse=True)
                for q in queries]
    # at least as wide as every ideal list, so that the cut-off min(k, width) never shortens one
    width = max(max(q.n_retrieved, sum(1 for g in q.judged.values() if g > 0), 1) for q in queries)
    scores = np.zeros((len(queries), width + max(map(len, positive))), dtype=np.float64)
    grades = np.zeros(scores.shape, dtype=np.int64)
    for row, (q, missing) in enumerate(zip(queries, positive)):
        if q.n_retrieved:
            scores[row, :q.n_retrieved] = q.scores
            scores[row, q.n_retrieved:] = q.scores[-1]
            grades[row, :q.n_retrieved] = [_engine_grade(g) for g in q.grades]
        grades[row, width:width + len(missing)] = [_engine_grade(g) for g in missing]
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


def _per_query(queries: Sequence[_Query], k: Optional[int], max_rank: int, implementation: str
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
                exact = {key: [ZERO] * n for key in ("ap", "r_precision", "hits_at_k", "precision_at_k", "inp",
                                                       "ndcg", "rr", "ap_at_r")}
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
    pq = PerQuery(ap=ap, n_relevant=n_relevant, hits_at_k=hits, precision_at_k=prec,
                  recall_at_k=np.array([float(r) for r in recall]), cmc=cmc, inp=inp, r_precision=rprec,
                  ndcg=ndcg, rr=rr, ap_at_r=ap_at_r, exact=exact)
    return pq, name, (exact_map_cut if exact is not None else map_cut.tolist())


# --------------------------------------------------------------------------- public
def evaluate_run(run, qrels, *, k: Union[None, int, Sequence[int]] = None, relevance_level: int = 1,
                 complete: bool = False, score_dtype: str = "float64", max_rank: int = 50,
                 depth: Optional[int] = None, judged_only: bool = False, ignore_identical_ids: bool = False,
                 gains: Optional[Mapping[int, float]] = None, float_grades: Optional[str] = None,
                 implementation: str = "auto") -> Union[Result, ResultsAtK]:
    r"""Evaluate a TREC run against qrels as trec_eval does (``map``, ``map_cut_k``, ``P_k``, ``ndcg_cut_k``, ...).

    Parameters
    ----------
    run : path or dict
        A TREC run file (``qid Q0 docno rank score tag``, :func:`read_run`), a ranx-style dict
        ``{qid: {docno: score}}`` (higher scores rank first), or an object with
        ``to_dict()`` returning one (a ``ranx.Run``).  Ids are ``str``.
    qrels : path or dict
        A TREC qrels file (``qid iter docno rel``, :func:`read_qrels`), a dict
        ``{qid: {docno: grade}}`` with int or float grades, or an object with ``to_dict()``.
    k : int, sequence of int, or None
        Cut-off of trec_eval's ``P_k``, ``recall_k``, ``map_cut_k``, ``ndcg_cut_k`` and
        ``success_k`` (and of ``R_cap_k``, ``Judged_k``); it does not cut ``map``, which is
        trec_eval's ``map`` for every k (``map_cut_k`` is the cut one).  Several cut-offs (``k=(5, 10)``)
        return a :class:`ResultsAtK`.  None: no cut-off; ``precision_at_k`` and
        ``recall_at_k`` per query are then trec_eval's ``set_P`` (relevant retrieved /
        retrieved) and ``set_recall`` (relevant retrieved / R), and their means are None.
    relevance_level : int
        Least grade that is relevant (``trec_eval -l``), >= 1.
    complete : bool
        ``trec_eval -c``: evaluate every qrels query, with 0 for those absent from the run.
    score_dtype : {"float64", "float32"}
        Precision in which scores are compared: float64 as trec_eval 10.0, float32 as
        trec_eval 9.0.8 and earlier (scores that differ only beyond float32 tie there).
    max_rank : int
        Length of the CMC (success@j of the retrieved list: a relevant document in the top j).
    depth : int or None
        ``trec_eval -M depth``: only the top ``depth`` documents of each ranking count.
    judged_only : bool
        ``trec_eval -J``: after ``depth``, documents without a grade >= 0 in the qrels are
        dropped from each ranking (the others move up).
    ignore_identical_ids : bool
        BEIR's ``ignore_identical_ids``: a document whose id equals its query's id is dropped
        from the run before ranking (the qrels are kept as they are).
    gains : dict or None
        nDCG's gain of each grade, ``{grade: gain}`` (``trec_eval -m ndcg.1=3,2=9``; grades left
        out gain their own value; spec §13 trec_eval); None: the grade is the gain.
    float_grades : {None, "exact", "truncate", "refuse"}
        Grades that are not integers (``2.5``; spec §13 trec_eval, float grades).
        ``"exact"``: their exact value (5/2), relevant when ``>= relevance_level`` and their own
        nDCG gain; ``"truncate"``: trec_eval's reading (C ``atol`` of the file's text, 2;
        a dict's float truncated toward zero); ``"refuse"``: a ``ValueError`` / ``TypeError``.
        None: ``"exact"``, with a warning when trec_eval would read a grade otherwise.
    implementation : {"auto", "reference", "numpy", "torch", "c"}
        Who computes (see :func:`~retrieval_conformance.reference.contract.evaluate.evaluate`);
        ``"reference"`` also returns exact ``Fraction`` values in ``result.exact``.

    Returns
    -------
    Result
        With R the relevant documents of a query in the qrels (retrieved or not), H(j) the
        relevant ones in the top j and n the number retrieved, per query (in trec_eval's
        order of qids, ``result.extras["query_ids"]``):

        .. math::

            AP = \frac{1}{R} \sum_{\text{relevant at rank } r \le n} \frac{H(r)}{r}, \quad
            P@k = \frac{H(k)}{k}, \quad R@k = \frac{H(k)}{R}, \quad
            \mathrm{Rprec} = \frac{H(R)}{R},

        each 0 when R = 0 (such a query still counts in the means).  ``result.map``,
        ``precision_at_k``, ``recall_at_k`` and ``r_precision`` are their means;
        ``result.ap`` and ``result.per_query`` hold the per-query values, and
        ``result.per_query_table(result.extras["query_ids"])`` gives trec_eval ``-q`` rows.
        ``result.cmc`` and ``result.minp`` describe the retrieved lists only.
        ``result.extras`` holds ``query_ids``; ``trec_eval`` (the summary under trec_eval's
        names: ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret`` (sums), ``map``,
        ``Rprec``, ``recip_rank``, ``bpref``, ``ndcg`` without k; with k ``ndcg_cut_k``,
        ``P_k``, ``recall_k``, ``map_cut_k``, ``success_k``, and BEIR's ``R_cap_k`` =
        H(k)/min(R, k) and ir_measures' ``Judged_k``, means over the evaluated queries);
        ``trec_eval_per_query`` (the same names but ``num_q``, one float64 or int64 array
        each, aligned with ``query_ids``: trec_eval ``-q``); with the reference,
        ``trec_eval_exact`` (the per-query measures as exact ``Fraction``); ``ranked`` (each
        query's docnos in ranking order) with ``grades`` aligned to it (None: not in the
        qrels) and ``qrels_grades`` (each query's judgments), for graded measures; ``n_retrieved``; ``left_out``
        (``run_only`` and ``qrels_only`` query ids, as trec_eval ignores them silently);
        and the options ``relevance_level``, ``complete``, ``score_dtype``, ``depth``,
        ``judged_only``, ``ignore_identical_ids``, ``gains``, ``float_grades``.

    Raises
    ------
    ValueError, TypeError
        Malformed files or dicts (naming the file and line, or the key), no query with
        both results and judgments, or invalid options.

    Examples
    --------
    >>> from retrieval_conformance.reference.trec import evaluate_run
    >>> res = evaluate_run({"q1": {"a": 1.0, "b": 1.0, "c": 1.0}},
    ...                    {"q1": {"a": 1, "b": 0, "c": 2, "z": 1}}, k=2, implementation="reference")
    >>> res.extras["ranked"][0], res.exact.map, res.exact.precision_at_k
    (['c', 'b', 'a'], Fraction(5, 9), Fraction(1, 2))

    Ties rank ``c, b, a`` (docno descending); R = 3 counts ``z``, never retrieved:
    AP = (1/1 + 2/3) / 3 = 5/9 and P@2 = 1/2.
    """
    level = v.positive_int("relevance_level", relevance_level)
    for flag, value in (("complete", complete), ("judged_only", judged_only),
                        ("ignore_identical_ids", ignore_identical_ids)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{flag}: expected True or False, got {type(value).__name__}")
    depth = v.positive_int("depth", depth, allow_none=True)
    exact_gains = gain_map(gains)
    score_dtype = v.choice("score_dtype", score_dtype, SCORE_DTYPES)
    max_rank = v.max_rank_value(max_rank)
    cutoffs = None
    if isinstance(k, (tuple, list)):
        if len(k) > MAX_CUTOFFS:
            raise ValueError(f"k: at most {MAX_CUTOFFS} cut-offs in one call, got {len(k)}")
        cutoffs = [v.positive_int("k", c) for c in k]
        if not cutoffs or len(set(cutoffs)) != len(cutoffs):
            raise ValueError(f"k: expected distinct cut-offs, got {v.shown(list(k))}; e.g. k=(5, 10, 100)")
    else:
        k = v.positive_int("k", k, allow_none=True)
    queries, left_out = _queries(as_run(run, score_dtype), as_qrels(qrels, float_grades), level, bool(complete), depth,
                                 bool(judged_only), bool(ignore_identical_ids))
    settings = dict(relevance_level=level, complete=bool(complete), score_dtype=score_dtype, depth=depth,
                    judged_only=bool(judged_only), ignore_identical_ids=bool(ignore_identical_ids), gains=exact_gains,
                    float_grades="exact" if float_grades is None else float_grades)
    if cutoffs is not None:
        return ResultsAtK((c, _result(queries, left_out, c, max_rank, implementation, settings)) for c in cutoffs)
    return _result(queries, left_out, k, max_rank, implementation, settings)


def _result(queries: List[_Query], left_out: Dict[str, List[str]], k: Optional[int], max_rank: int,
            implementation: str, settings: Dict[str, object]) -> Result:
    pq, name, map_cut = _per_query(queries, k, max_rank, implementation)
    # the engine's gains are its integer grades (at most MAX_GRADE): a gain map, grades above it
    # (trec_eval reads any integer as its own gain) and grades that are not integers are summed here
    if settings["gains"] is not None or any(type(g) is not int or g > MAX_GRADE
                                            for q in queries for g in q.judged.values()):
        ndcg = [ndcg_with_gains(q.grades, q.judged, settings["gains"] or {}, k) for q in queries]
        pq.ndcg = np.array([float(x) for x in ndcg])
        if pq.exact is not None:
            pq.exact["ndcg"] = ndcg
    options = Options(ties="stable", ap_rule="precision_sum", k=k, ap_at_k="r", empty="zero", max_rank=max_rank,
                      discount="log2")
    result = aggregate(pq, options, "trec", name)
    values = pq.exact if pq.exact is not None else {
        "ap": pq.ap, "r_precision": pq.r_precision, "rr": pq.rr, "ndcg": pq.ndcg,
        "precision_at_k": pq.precision_at_k, "recall_at_k": pq.recall_at_k}
    engine = {"map": values["ap"], "Rprec": values["r_precision"], "recip_rank": values["rr"],
              "ndcg": values["ndcg"], "P": values["precision_at_k"], "recall": values["recall_at_k"],
              "map_cut": map_cut, "hits": pq.hits_at_k}
    per_query = named_measures(k, queries[0].level, [q.grades for q in queries], [q.n_relevant for q in queries],
                               [q.n_nonrelevant for q in queries], [q.n_retrieved for q in queries], engine)
    measures: Dict[str, object] = {"num_q": len(queries)}
    for measure, column in per_query.items():
        measures[measure] = sum(column) if measure.startswith("num_") else mean(column)
    if settings["complete"]:  # -c: trec_eval's summary counts every grade > 0, whatever -l (m_num_rel.c)
        measures["num_rel"] = sum(1 for q in queries for g in q.judged.values() if g > 0)
    result.extras.update(
        query_ids=[q.qid for q in queries],
        trec_eval=measures,
        trec_eval_per_query={measure: np.array([c if measure.startswith("num_") else float(c) for c in column],
                                               dtype=np.int64 if measure.startswith("num_") else np.float64)
                             for measure, column in per_query.items()},
        ranked=[q.docs for q in queries],
        grades=[q.grades for q in queries],
        qrels_grades=[q.judged for q in queries],
        n_retrieved=np.array([q.n_retrieved for q in queries], dtype=np.int64),
        left_out=left_out,
        **settings,
    )
    if pq.exact is not None:
        result.extras["trec_eval_exact"] = {m: column for m, column in per_query.items() if not m.startswith("num_")}
    return result
