"""``trec_eval_measures``: a TREC run's measures selected as with ``trec_eval -m``, as trec_eval prints them."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from retrieval_conformance.reference.contract.random_ranking import below_random_warning, expected_random_ap, worst_ap
from retrieval_conformance.reference.protocols.trec import doubles
from retrieval_conformance.reference.protocols.trec.evaluation import run_queries
from retrieval_conformance.reference.protocols.trec.measure_sets import (
    VERSIONS,
    MeasureTable,
    evaluate_measures,
    parse_selection,
)
from retrieval_conformance.reference.protocols.trec.queries import Query

__all__ = ["below_random", "trec_eval_measures"]

#: the precision in which each trec_eval version compares scores (9.0.8 stores C float)
SCORE_DTYPE = {"9.0.8": "float32", "10.0": "float64"}


def trec_eval_measures(
    run,
    qrels,
    measures: Union[str, Sequence[str]] = "official",
    *,
    version: str = "10.0",
    relevance_level: int = 1,
    complete: bool = False,
    score_dtype: Optional[str] = None,
    depth: Optional[int] = None,
    judged_only: bool = False,
    ignore_identical_ids: bool = False,
    float_grades: Optional[str] = None,
) -> MeasureTable:
    """trec_eval's measures of a run, per query and over queries, as its doubles.

    Parameters
    ----------
    run, qrels
        As :func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run` takes
        them (files, dicts, DataFrames).
    measures : str or sequence of str
        trec_eval's ``-m`` words: ``"official"`` (what trec_eval prints without ``-m``),
        ``"all_trec"``, a family (``"map"``, ``"P"``, ``"ndcg_cut"``) with trec_eval's default
        parameters, or with its own (``"P.5,10"``, ``"ndcg_cut.10,20"``, ``"ndcg.1=3,2=9"``,
        ``"iprec_at_recall.0.5"``).  Families trec_eval has and this project does not compute
        (``infAP``, ``binG``, ``G``, ``ndcg_rel``, ``Rndcg``, ``rbp``, ``unj``) are refused by name.
    version : {"10.0", "9.0.8"}
        The trec_eval whose arithmetic to follow: where they differ (the recall points of
        ``iprec_at_recall`` and ``11pt_avg``: 10.0 rounds ``f R``, 9.0.8 adds 0.9 and truncates)
        and the precision of scores (float64 in 10.0, float32 in 9.0.8, unless ``score_dtype``).
    relevance_level, complete, depth, judged_only, ignore_identical_ids, float_grades
        trec_eval's ``-l``, ``-c``, ``-M``, ``-J``; BEIR's identical ids; grades that are not
        integers (trec_eval reads integers: give ``"truncate"`` for its ``atol``).

    Returns
    -------
    MeasureTable
        ``per_query`` (``[(qid, [(name, value), ...])]`` in trec_eval's order of query ids, the
        lines of ``trec_eval -q``), ``summary`` (the ``all`` lines), ``as_dict()``; its text is
        :func:`~retrieval_conformance.reference.protocols.trec.measure_sets.trec_eval_text`.

    Examples
    --------
    >>> from retrieval_conformance.reference.protocols.trec.trec_eval_measures import trec_eval_measures
    >>> table = trec_eval_measures({"q1": {"a": 2.0, "b": 1.0}}, {"q1": {"a": 0, "b": 1}}, ["map", "P.1,2"])
    >>> table.summary
    [('num_q', 1), ('map', 0.5), ('P_1', 0.0), ('P_2', 0.5)]
    """
    if version not in VERSIONS:
        raise ValueError(f"version: expected one of {', '.join(VERSIONS)} (trec_eval's), got {version!r}")
    words = [measures] if isinstance(measures, str) else list(measures)
    if not words or not all(isinstance(w, str) for w in words):
        raise TypeError(f"measures: expected trec_eval -m words like 'map' or 'P.5,10', got {measures!r}")
    selection = parse_selection(words, version)
    queries, _, settings = run_queries(
        run,
        qrels,
        relevance_level,
        complete,
        score_dtype or SCORE_DTYPE[version],
        depth,
        judged_only,
        ignore_identical_ids,
        float_grades,
    )
    fractional = next((g for q in queries for g in q.judged.values() if type(g) is not int), None)
    if fractional is not None:
        raise ValueError(
            f"qrels: a grade that is not an integer ({fractional}): trec_eval's measures read integer "
            "grades; give float_grades='truncate' (trec_eval's atol) or integer grades"
        )
    complete_num_rel = sum(1 for q in queries for g in q.judged.values() if g > 0) if complete else None
    return evaluate_measures(queries, selection, version, complete_num_rel, bool(judged_only))


def below_random(queries: Sequence[Query]) -> Optional[str]:
    """The warning of :func:`~retrieval_conformance.reference.contract.random_ranking.below_random_warning`
    for a run: each query's AP against a random order of its retrieved documents, whose expected AP
    is ``r/R`` times that of ``r`` relevant among the ``n`` retrieved (R: relevant in the qrels)."""
    aps, expected, worst = [], [], []
    for q in queries:
        if not q.n_relevant or not q.relevant_retrieved:
            continue
        aps.append(doubles.average_precision(q.grades, q.level, q.n_relevant)[None])
        share = q.relevant_retrieved / q.n_relevant
        expected.append(share * expected_random_ap(q.n_retrieved, q.relevant_retrieved))
        worst.append(share * worst_ap(q.n_retrieved, q.relevant_retrieved))
    return below_random_warning(aps, expected, worst, "the run's scores (a higher score must rank first)")
