"""The one lookup from a metric's name to a run's per-query values, for every kind of run.

A run is one of:

* an ``rc.Result`` of :func:`retrieval_conformance.evaluate` (or the ``Accumulator``): its
  metrics are the means of ``Result`` named by ``PerQuery``'s field metadata (``map``,
  ``precision_at_k``, ``recall_at_k``, ``minp``, ``r_precision``, ``ndcg_at_k``, ``mrr``,
  ``map_at_r``, ...), so a per-query metric added there appears here, plus ``rankN``
  (the CMC at rank N);
* an ``rc.Result`` of :func:`retrieval_conformance.evaluate_run` (a TREC run): its metrics
  are trec_eval's names, those of ``result.extras["trec_eval"]`` (``map``, ``P_10``,
  ``recall_10``, ``Rprec``, ``recip_rank``, ``ndcg``, ``ndcg_cut_10``, ...) less the counts
  (``num_*``); the per-query values of a name come from ``result.extras["trec_eval_per_query"]``
  when it holds that name (where a measure without a ``PerQuery`` field keeps them), else
  from the ``PerQuery`` field the measure is (``map``: ``ap``, ``P_k``:
  ``precision_at_k``, ...; ``success_k``: the CMC at k);
* a ``ResultsAtK`` (several cut-offs): the union of its results' metrics (``P_5`` and
  ``P_10``);
* per-query values of one metric: a 1-D array (the position is the query id) or a mapping
  ``{query id: value}``.

:func:`run_metrics` lists a run's metrics with their labels; :func:`metric_values` gives one
metric's per-query values and the mask of the queries its empty-query policy counts;
:func:`query_ids` the query ids (None: by position).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.measure_names import JUDGED_ONLY, Measure, parse_measure
from retrieval_conformance.reference.contract.metric_names import RANK_NAME, canonical_metric, trec_spelling
from retrieval_conformance.reference.contract.problem import MEANS, Result, ResultsAtK

__all__ = [
    "ARRAY_METRIC",
    "TREC_FIELDS",
    "canonical_metric",
    "is_trec",
    "metric_key",
    "metric_values",
    "query_ids",
    "run_metrics",
]

#: the name of the one metric of per-query arrays given without a name
ARRAY_METRIC = "value"
#: how tables show the means of ``Result`` (``{k}``: the cut-off); a mean not listed shows its name
_LABELS = {
    "map": "mAP",
    "precision_at_k": "P@{k}",
    "recall_at_k": "R@{k}",
    "minp": "mINP",
    "r_precision": "R-precision",
    "ndcg_at_k": "nDCG@{k}",
    "mrr": "MRR@{k}",
    "map_at_r": "MAP@R",
}
#: the means whose per-query values change with the cut-off (their label names it)
_CUT = ("map", "precision_at_k", "recall_at_k", "ndcg_at_k", "mrr")
#: the CMC at a rank (rank1, rank_5, cmc10): the vocabulary of ``metrics=`` (``reference/contract/metric_names.py``,
#: which also holds the aliases ``canonical_metric`` reads)
_RANK = RANK_NAME
#: trec_eval's measure (its name before any ``_k``) -> the ``PerQuery`` field holding it per query
TREC_FIELDS = {
    "map": "ap",
    "P": "precision_at_k",
    "recall": "recall_at_k",
    "Rprec": "r_precision",
    "recip_rank": "rr",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
}
#: trec_eval's counts: sums over queries, not means of per-query values
_COUNTS = re.compile(r"^num_")


def metric_key(name: str) -> str:
    """How a name asked for is looked up: a trec_eval or ir_measures name as given (its cut-off and
    case matter: ``P_10``, ``nDCG@10``), any other canonically (``mAP`` -> ``map``)."""
    return name.strip() if parse_measure(name) is not None else canonical_metric(name)


def is_trec(run: Any) -> bool:
    """Whether ``run`` is a result of ``evaluate_run`` (it carries trec_eval's measures)."""
    return isinstance(run, Result) and isinstance(run.extras.get("trec_eval"), Mapping)


def _result_metrics(res: Result) -> Dict[str, str]:
    if is_trec(res):
        return {name: name for name in res.extras["trec_eval"] if not _COUNTS.match(name)}
    k = res.options.k
    out = {}
    for mean, (_, needs) in MEANS.items():
        if (needs is not None and getattr(res.options, needs) is None) or not res.has(mean):
            continue
        label = _LABELS.get(mean, mean)
        if mean in _CUT:
            label = label.replace("@{k}", "") if k is None else (label + "@{k}" if "{k}" not in label else label)
        out[mean] = label.format(k=k)
    return out


def run_metrics(run: Any) -> Dict[str, str]:
    """The metrics a run offers: name -> how tables show it (``rankN`` is offered by any ``evaluate`` run)."""
    if isinstance(run, ResultsAtK):
        out: Dict[str, str] = {}
        for res in run.values():
            out.update(_result_metrics(res))
        return out
    if isinstance(run, Result):
        return _result_metrics(run)
    return {ARRAY_METRIC: ARRAY_METRIC}


def _trec_values(res: Result, name: str) -> Optional[np.ndarray]:
    extra = res.extras.get("trec_eval_per_query")
    if isinstance(extra, Mapping) and name in extra:
        return np.asarray(extra[name], dtype=np.float64)
    if name not in res.extras["trec_eval"] or _COUNTS.match(name):
        return None
    measure, _, cutoff = name.rpartition("_") if re.search(r"_\d+$", name) else (name, "", "")
    if measure == "success" and 1 <= int(cutoff) <= res.per_query.cmc.shape[1]:
        # success@k (a relevant document in the top k) is the CMC of the retrieved list at k
        return np.asarray(res.per_query.cmc[:, int(cutoff) - 1], dtype=np.float64)
    field_name = TREC_FIELDS.get(measure)
    return None if field_name is None else np.asarray(getattr(res.per_query, field_name), dtype=np.float64)


def _resolve(run: Any, name: str) -> Tuple[Optional[Result], str]:
    """(the result holding ``name``, its canonical name); (None, name) when no result offers it."""
    results: List[Result] = list(run.values()) if isinstance(run, ResultsAtK) else [run]
    for res in results:
        if is_trec(res):  # trec_eval's names: ir_measures' (P@10, nDCG@10, AP) are read as theirs
            trec = name if name in _result_metrics(res) else trec_spelling(name)
            if trec in _result_metrics(res):
                return res, trec
            continue
        measure = parse_measure(name)
        if measure is not None:  # trec_eval's or ir_measures' name (success_5: rank5)
            if measure.cutoff is not None and measure.cutoff != res.options.k:
                continue  # P_10: the result at cut-off 10 (of several), never P@k at another k
            key = measure.metric
        else:
            key = canonical_metric(name)
        if key in _result_metrics(res) or (_RANK.match(key) and res.has("cmc") and res.per_query.cmc.ndim == 2):
            return res, key
    return None, name


def metric_values(run: Any, name: str, run_name: str) -> Tuple[str, np.ndarray, np.ndarray]:
    """One metric of one run: (canonical name, float64 per-query values, bool mask of the counted queries).

    For ``Result`` runs a query counts when its empty-query policy counts it
    (``res.counted``, and not NaN under ``empty="nan"``); the values themselves are not
    screened here (see ``pairing``).

    Raises
    ------
    ValueError
        ``name`` is not offered by the run (the message lists what is), or a CMC rank beyond
        the run's curve.
    """
    if not isinstance(run, Result) and not isinstance(run, ResultsAtK):
        values = np.asarray(list(run.values()) if isinstance(run, Mapping) else run, dtype=np.float64)
        return name, values, np.ones(values.shape[0], dtype=bool)
    res, key = _resolve(run, name)
    needs = MEANS.get(key, (None, None))[1]
    if res is None and needs is not None and not is_trec(_first(run)):
        raise ValueError(
            f"metrics: {name!r} needs {'a cut-off' if needs == 'k' else needs}, but run {run_name!r} "
            f"was evaluated with {needs}=None; evaluate with {needs}=... or drop it"
        )
    if res is None and is_trec(_first(run)) and _COUNTS.match(name) and name in _first(run).extras["trec_eval"]:
        raise ValueError(
            f"metrics: {name!r} is a count summed over queries, with no per-query values to pair; "
            f"compare a measure ({list(run_metrics(run))})"
        )
    measure = parse_measure(name)
    if res is None and measure is not None and not is_trec(_first(run)):
        _refuse_measure(run, name, measure, run_name)
    if res is None:
        offered = list(run_metrics(run)) + ([] if is_trec(_first(run)) else ["rank1", "rank5", "..."])
        hint = " (cut-offs: evaluate_run(..., k=(5, 10)))" if is_trec(_first(run)) else ""
        raise ValueError(f"metrics: unknown metric {name!r} for run {run_name!r}; it offers {offered}{hint}")
    if is_trec(res):
        trec_values = _trec_values(res, key)
        if trec_values is None:
            raise ValueError(
                f"metrics: run {run_name!r} reports {key!r} only as a mean, with no per-query values "
                "to pair (looked in result.extras['trec_eval_per_query'] and the PerQuery fields); "
                "compare another measure"
            )
        values = trec_values
    elif _RANK.match(key):
        rank, cmc = int(key[4:]), res.per_query.cmc
        if not 1 <= rank <= cmc.shape[1]:
            raise ValueError(
                f"metrics: {key!r} is beyond run {run_name!r}'s CMC of {cmc.shape[1]} ranks; "
                f"evaluate with max_rank >= {rank}, or compare rank1..rank{cmc.shape[1]}"
            )
        values = np.asarray(cmc[:, rank - 1], dtype=np.float64)
    else:
        values = np.asarray(getattr(res.per_query, MEANS[key][0]), dtype=np.float64)
    counted = np.asarray(res.counted, dtype=bool)
    if res.has("map"):  # AP is NaN where empty="nan" leaves a query out
        counted &= ~np.isnan(res.ap)
    elif res.options.empty == "nan":  # (the queries without a relevant item)
        counted &= np.asarray(res.per_query.n_relevant) > 0
    return key, values, counted


def _refuse_measure(run: Any, name: str, measure: Measure, run_name: str) -> None:
    """Why an evaluate run has no trec_eval or ir_measures measure it was asked for, where it is not
    unknown: a cut-off it was not evaluated at, or a measure that needs the qrels."""
    if measure.metric in JUDGED_ONLY or measure.level is not None:
        raise ValueError(
            f"metrics: {name!r} needs the judgments of a TREC run (its qrels), and run {run_name!r} "
            "is an evaluation of arrays; compare TREC runs for it"
        )
    if measure.cutoff is not None:
        results = list(run.values()) if isinstance(run, ResultsAtK) else [run]
        evaluated = ", ".join(str(res.options.k) for res in results)
        raise ValueError(
            f"metrics: {name!r} is {measure.metric} at cut-off {measure.cutoff}, but run {run_name!r} was "
            f"evaluated at k={evaluated}; evaluate it at cut-off {measure.cutoff}, or ask for {measure.metric}"
        )


def metric_label(run: Any, key: str) -> str:
    """How tables show the canonical metric ``key`` of ``run``."""
    if _RANK.match(key):
        return f"Rank-{key[4:]}"
    return run_metrics(run).get(key, key)


def _first(run: Any) -> Any:
    return next(iter(run.values())) if isinstance(run, ResultsAtK) else run


def query_ids(run: Any) -> Optional[List[Any]]:
    """The query ids of a run, in its order: a TREC run's qids, a mapping's keys; None: by position."""
    first = _first(run)
    if isinstance(first, Result):
        ids = first.extras.get("query_ids")
        return None if ids is None else list(ids)
    if isinstance(run, Mapping):
        return list(run.keys())
    return None
