"""``evaluate_run``: a TREC run evaluated against qrels as trec_eval does.

The options are checked here, the queries ranked by :mod:`.queries`, the engine's values
computed by :mod:`.engine`, the other measures named by :mod:`.measures` (with nDCG under a
gain map from :mod:`.ndcg_gains`), and everything put into one ``Result``.  The conventions are
listed in :mod:`retrieval_conformance.reference.protocols.trec`.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import aggregate
from retrieval_conformance.reference.contract.evaluate import MAX_CUTOFFS
from retrieval_conformance.reference.contract.problem import Options, Result, ResultsAtK
from retrieval_conformance.reference.contract.validation import MAX_GRADE
from retrieval_conformance.reference.protocols.trec import doubles
from retrieval_conformance.reference.protocols.trec.engine import engine_per_query
from retrieval_conformance.reference.protocols.trec.measures import mean, named_measures
from retrieval_conformance.reference.protocols.trec.ndcg_gains import gain_map, ndcg_with_gains
from retrieval_conformance.reference.protocols.trec.queries import Query, evaluated_queries
from retrieval_conformance.reference.readers.trec import SCORE_DTYPES, as_qrels, as_run

__all__ = ["evaluate_run", "run_queries"]


# --------------------------------------------------------------------------- public
def evaluate_run(
    run,
    qrels,
    *,
    k: Union[None, int, Sequence[int]] = None,
    relevance_level: int = 1,
    complete: bool = False,
    score_dtype: str = "float64",
    max_rank: int = 50,
    depth: Optional[int] = None,
    judged_only: bool = False,
    ignore_identical_ids: bool = False,
    gains: Optional[Mapping[int, float]] = None,
    float_grades: Optional[str] = None,
    implementation: str = "auto",
) -> Union[Result, ResultsAtK]:
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
    >>> from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
    >>> res = evaluate_run({"q1": {"a": 1.0, "b": 1.0, "c": 1.0}},
    ...                    {"q1": {"a": 1, "b": 0, "c": 2, "z": 1}}, k=2, implementation="reference")
    >>> res.extras["ranked"][0], res.exact.map, res.exact.precision_at_k
    (['c', 'b', 'a'], Fraction(5, 9), Fraction(1, 2))

    Ties rank ``c, b, a`` (docno descending); R = 3 counts ``z``, never retrieved:
    AP = (1/1 + 2/3) / 3 = 5/9 and P@2 = 1/2.
    """
    exact_gains = gain_map(gains)
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
    queries, left_out, settings = run_queries(
        run, qrels, relevance_level, complete, score_dtype, depth, judged_only, ignore_identical_ids, float_grades
    )
    settings["gains"] = exact_gains
    if cutoffs is not None:
        return ResultsAtK((c, _result(queries, left_out, c, max_rank, implementation, settings)) for c in cutoffs)
    return _result(queries, left_out, k, max_rank, implementation, settings)


def run_queries(
    run,
    qrels,
    relevance_level: int = 1,
    complete: bool = False,
    score_dtype: str = "float64",
    depth: Optional[int] = None,
    judged_only: bool = False,
    ignore_identical_ids: bool = False,
    float_grades: Optional[str] = None,
) -> Tuple[List[Query], Dict[str, List[str]], Dict[str, object]]:
    """The options of a run evaluation checked, and the queries trec_eval evaluates, with the ids
    left out and the options as settled (``evaluate_run``'s keywords of the same names)."""
    level = v.positive_int("relevance_level", relevance_level)
    for flag, value in (
        ("complete", complete),
        ("judged_only", judged_only),
        ("ignore_identical_ids", ignore_identical_ids),
    ):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{flag}: expected True or False, got {type(value).__name__}")
    depth = v.positive_int("depth", depth, allow_none=True)
    score_dtype = v.choice("score_dtype", score_dtype, SCORE_DTYPES)
    queries, left_out = evaluated_queries(
        as_run(run, score_dtype),
        as_qrels(qrels, float_grades),
        level,
        bool(complete),
        depth,
        bool(judged_only),
        bool(ignore_identical_ids),
    )
    settings: Dict[str, object] = dict(
        relevance_level=level,
        complete=bool(complete),
        score_dtype=score_dtype,
        depth=depth,
        judged_only=bool(judged_only),
        ignore_identical_ids=bool(ignore_identical_ids),
        float_grades="exact" if float_grades is None else float_grades,
    )
    return queries, left_out, settings


def _result(
    queries: List[Query],
    left_out: Dict[str, List[str]],
    k: Optional[int],
    max_rank: int,
    implementation: str,
    settings: Dict[str, object],
) -> Result:
    pq, name, map_cut = engine_per_query(queries, k, max_rank, implementation)
    # the engine's gains are its integer grades (at most MAX_GRADE): a gain map, grades above it
    # (trec_eval reads any integer as its own gain) and grades that are not integers are summed here
    if settings["gains"] is not None or any(
        type(g) is not int or g > MAX_GRADE for q in queries for g in q.judged.values()
    ):
        ndcg = [ndcg_with_gains(q.grades, q.judged, settings["gains"] or {}, k) for q in queries]
        pq.ndcg = np.array([float(x) for x in ndcg])
        if pq.exact is not None:
            pq.exact["ndcg"] = ndcg
    options = Options(
        ties="stable", ap_rule="precision_sum", k=k, ap_at_k="r", empty="zero", max_rank=max_rank, discount="log2"
    )
    result = aggregate(pq, options, "trec", name)
    values = (
        pq.exact
        if pq.exact is not None
        else {
            "ap": pq.ap,
            "r_precision": pq.r_precision,
            "rr": pq.rr,
            "ndcg": pq.ndcg,
            "precision_at_k": pq.precision_at_k,
            "recall_at_k": pq.recall_at_k,
        }
    )
    engine = {
        "map": values["ap"],
        "Rprec": values["r_precision"],
        "recip_rank": values["rr"],
        "ndcg": values["ndcg"],
        "P": values["precision_at_k"],
        "recall": values["recall_at_k"],
        "map_cut": map_cut,
        "hits": pq.hits_at_k,
    }
    per_query = named_measures(
        k,
        queries[0].level,
        [q.grades for q in queries],
        [q.n_relevant for q in queries],
        [q.n_nonrelevant for q in queries],
        [q.n_retrieved for q in queries],
        engine,
    )
    exact_columns = {m: list(column) for m, column in per_query.items() if not m.startswith("num_")}
    trec_doubles = _trec_doubles(queries, k, settings["gains"])
    per_query.update(trec_doubles)
    measures: Dict[str, object] = {"num_q": len(queries)}
    for measure, column in per_query.items():
        if measure.startswith("num_"):
            measures[measure] = sum(column)
        elif _is_trec_eval_measure(measure):  # trec_eval's running sum, in its order of queries
            measures[measure] = doubles.running_mean([float(c) for c in column], len(queries))
        else:  # BEIR's and ir_measures' measures: the exact mean, rounded once
            measures[measure] = mean(column)
    if settings["complete"]:  # -c: trec_eval's summary counts every grade > 0, whatever -l (m_num_rel.c)
        measures["num_rel"] = sum(1 for q in queries for g in q.judged.values() if g > 0)
    result.extras.update(
        query_ids=[q.qid for q in queries],
        trec_eval=measures,
        trec_eval_per_query={
            measure: np.array(
                [c if measure.startswith("num_") else float(c) for c in column],
                dtype=np.int64 if measure.startswith("num_") else np.float64,
            )
            for measure, column in per_query.items()
        },
        ranked=[q.docs for q in queries],
        grades=[q.grades for q in queries],
        qrels_grades=[q.judged for q in queries],
        n_retrieved=np.array([q.n_retrieved for q in queries], dtype=np.int64),
        left_out=left_out,
        **settings,
    )
    if pq.exact is not None:
        result.extras["trec_eval_exact"] = exact_columns
    return _with_trec_means(result, measures, per_query, k)


#: trec_eval's own measures in the summary, whose means are its running sums; the others (BEIR's
#: ``R_cap_k``, ir_measures' ``Judged_k``) keep the exact mean
_TREC_EVAL_MEASURES = ("map", "Rprec", "recip_rank", "bpref", "ndcg")
_TREC_EVAL_CUT_MEASURES = ("ndcg_cut_", "P_", "recall_", "map_cut_", "success_")


def _is_trec_eval_measure(name: str) -> bool:
    return name in _TREC_EVAL_MEASURES or name.startswith(_TREC_EVAL_CUT_MEASURES)


def _trec_doubles(queries: List[Query], k: Optional[int], gains) -> Dict[str, List[float]]:
    """The per-query doubles of the measures trec_eval sums (:mod:`.doubles`), by name; none when
    a grade is not an integer (trec_eval reads none such), and no ``ndcg_cut_k`` under a gain map
    (trec_eval's ``ndcg_cut`` takes none: that value is the exact one, rounded once)."""
    if not all(doubles.integer_grades(q.grades, q.judged) for q in queries):
        return {}
    cuts = () if k is None else (k,)
    aps = [doubles.average_precision(q.grades, q.level, q.n_relevant, cuts) for q in queries]
    out = {
        "map": [ap[None] for ap in aps],
        "bpref": [doubles.bpref(q.grades, q.level, q.n_relevant, q.n_nonrelevant) for q in queries],
    }
    if k is None:
        out["ndcg"] = [doubles.ndcg(q.grades, q.judged, gains) for q in queries]
    else:
        out[f"map_cut_{k}"] = [ap[k] for ap in aps]
        if gains is None:
            out[f"ndcg_cut_{k}"] = [doubles.ndcg_cut(q.grades, q.judged, k) for q in queries]
    return out


def _with_trec_means(
    result: Result, measures: Dict[str, object], per_query: Dict[str, List], k: Optional[int]
) -> Result:
    """The ``Result``'s means and per-query values of trec_eval's measures as trec_eval's doubles."""
    ndcg_name = "ndcg" if k is None else f"ndcg_cut_{k}"
    fields = {"map": "map", "r_precision": "Rprec", "mrr": "recip_rank", "ndcg_at_k": ndcg_name}
    if k is not None:
        fields.update(precision_at_k=f"P_{k}", recall_at_k=f"recall_{k}")
    changes = {name: measures[measure] for name, measure in fields.items() if result.has(name)}
    if result.has("map"):
        changes["ap"] = np.asarray([float(v) for v in per_query["map"]], dtype=np.float64)
    return dataclasses.replace(result, **changes)
