"""Runs made comparable: one definition, queries paired by id, every value screened.

:func:`pair_runs` checks that the runs were evaluated under one definition (every field
of ``Options``, the protocol and a TREC run's settings; :func:`definition`), lines their
per-query values up by query id (a TREC run's qids, a mapping's keys; the position for
arrays and ``evaluate`` results), keeps the queries every run answers and says how many
it dropped from each, and refuses infinite values.  NaN in per-query arrays marks a query
not counted; how many there are is reported, never dropped silently.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.comparison.arguments import check_names
from retrieval_conformance.comparison.metrics import (
    ARRAY_METRIC,
    is_trec,
    metric_label,
    metric_values,
    query_ids,
    run_metrics,
)
from retrieval_conformance.reference.contract.conventions import OPTIONS
from retrieval_conformance.reference.contract.problem import Options, Result, ResultsAtK

__all__ = ["PairedRuns", "TREC_SETTINGS", "default_metrics", "definition", "pair_runs"]

#: the settings of ``evaluate_run`` kept in ``result.extras`` that change a number
TREC_SETTINGS = (
    "relevance_level",
    "complete",
    "score_dtype",
    "depth",
    "judged_only",
    "ignore_identical_ids",
    "gains",
    "float_grades",
)
#: every field of ``Options`` that defines the numbers: the conventions table's options first, then the
#: rest (k, max_rank, ...); not ``metrics``, which says only which of them were computed (each has the
#: same bits whatever else was asked for; a metric one run lacks is refused by name when read)
_OPTION_FIELDS = tuple(OPTIONS) + tuple(
    f.name for f in fields(Options) if f.name not in OPTIONS and f.name != "metrics"
)


def definition(run: Any) -> Dict[str, Any]:
    """What defines a run's numbers: the protocol (its junk rule), every ``Options`` field, TREC settings.

    A ``ResultsAtK`` gives its cut-offs as ``k``.
    """
    results = list(run.values()) if isinstance(run, ResultsAtK) else [run]
    first = results[0]
    out: Dict[str, Any] = {"protocol": first.protocol}
    out.update({name: getattr(first.options, name) for name in _OPTION_FIELDS})
    if isinstance(run, ResultsAtK):
        out["k"] = tuple(r.options.k for r in results)
    for name in TREC_SETTINGS:
        if name in first.extras:
            out[name] = first.extras[name]
    return out


@dataclass
class PairedRuns:
    """The runs' per-query values, lined up on the queries every run answers.

    Attributes
    ----------
    names : tuple of str
        The runs, in the order given.
    labels : dict
        Metric name -> display label, in the order asked.
    query_ids : list or None
        The paired queries' ids, in the first run's order (None: paired by position).
    dropped : dict
        Run -> how many of its queries no other run answers (left out of every comparison).
    not_counted : dict
        Run -> metric -> how many paired queries hold NaN (per-query arrays: not counted).
    values : dict
        Run -> metric -> (float64 values, bool mask of the counted queries), aligned.
    """

    names: Tuple[str, ...]
    labels: Dict[str, str]
    query_ids: Optional[List[Any]]
    dropped: Dict[str, int]
    not_counted: Dict[str, Dict[str, int]]
    values: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]]

    @property
    def n_queries(self) -> int:
        return next(iter(next(iter(self.values.values())).values()))[0].shape[0]


def _check_runs(runs: Any) -> Tuple[str, ...]:
    if not isinstance(runs, Mapping) or isinstance(runs, (Result, ResultsAtK)):
        raise TypeError(
            f"runs: expected a mapping name -> rc.Result (or per-query array), got {type(runs).__name__};"
            " e.g. compare({'A': res_a, 'B': res_b})"
        )
    if len(runs) < 1:
        raise ValueError("runs: expected at least 1 run, got none")
    bad = [n for n in runs if not isinstance(n, str)]
    if bad:
        raise TypeError(f"runs: expected str names, got {type(bad[0]).__name__} {bad[0]!r}")
    names = tuple(runs)
    is_result = {name: isinstance(value, (Result, ResultsAtK)) for name, value in runs.items()}
    odd = [n for n in names if is_result[n] != is_result[names[0]]]
    if odd:
        raise TypeError(f"runs[{odd[0]!r}]: mixes rc.Result runs with per-query arrays; give every run the same way")
    for name, value in runs.items():
        if isinstance(value, ResultsAtK) and not all(is_trec(r) for r in value.values()):
            raise TypeError(
                f"runs[{name!r}]: a ResultsAtK of evaluate() holds one mAP per cut-off under one name; "
                "pass one cut-off's Result, e.g. res[10]"
            )
        if isinstance(value, ResultsAtK) and not value:
            raise ValueError(f"runs[{name!r}]: an empty ResultsAtK; evaluate with at least one cut-off")
    return names


def _check_definitions(runs: Mapping[str, Any], names: Sequence[str]) -> None:
    first = definition(runs[names[0]])
    for name in names[1:]:
        other = definition(runs[name])
        for option in dict.fromkeys(list(first) + list(other)):
            mine, theirs = other.get(option, "(not set)"), first.get(option, "(not set)")
            if mine != theirs:
                raise ValueError(
                    f"runs[{name!r}]: evaluated with {option}={mine!r}, but runs[{names[0]!r}] with "
                    f"{option}={theirs!r}; the metric is not the same, evaluate every run with the same protocol "
                    "and options"
                )


def _array_run(name: str, value: Any) -> Any:
    """A run given as per-query values, checked: a 1-D sequence, or a mapping id -> value, of real
    numbers (NaN: not counted; infinite values are refused in :func:`pair_runs`)."""
    ids = list(value.keys()) if isinstance(value, Mapping) else None
    items = list(value.values()) if isinstance(value, Mapping) else value
    try:
        arr = np.asarray(items)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    if arr.dtype.kind not in "biuf":  # strings, None and other objects are never read as numbers
        flat = list(items) if arr.ndim == 1 else []
        odd = next(
            (i for i, x in enumerate(flat) if isinstance(x, (str, bytes)) or not isinstance(x, numbers.Real)), None
        )
        if odd is not None:
            where = ids[odd] if ids is not None else odd
            raise TypeError(
                f"runs[{name!r}]: the value of query {where!r} is {flat[odd]!r} "
                f"({type(flat[odd]).__name__}); expected real numbers (NaN marks a query not counted)"
            )
        if arr.ndim != 1:
            raise TypeError(
                f"runs[{name!r}]: expected an rc.Result, a 1-D array of per-query values or a mapping "
                f"query id -> value, got {type(value).__name__}"
            )
        try:  # real numbers held as objects (Fraction, ints beyond int64)
            arr = arr.astype(np.float64)
        except OverflowError:
            raise ValueError(
                f"runs[{name!r}]: a per-query value beyond the float64 range; values must be finite"
            ) from None
    if arr.ndim != 1:
        raise ValueError(f"runs[{name!r}]: expected a 1-D array of per-query values, got shape {arr.shape}")
    return value


def default_metrics(run: Any) -> List[str]:
    """What ``compare`` compares when no metric is named: every measure of a TREC run; for
    ``evaluate`` results mAP, P@k and R@k (with a cut-off), Rank-1, mINP and R-precision."""
    offered = run_metrics(run)
    if isinstance(run, ResultsAtK) or is_trec(run):
        return list(offered)
    default = ["map", "precision_at_k", "recall_at_k", "rank1", "minp", "r_precision"]
    return [m for m in default if m in offered or m == "rank1"]


def _wanted(runs: Mapping[str, Any], names: Sequence[str], metrics: Any) -> List[str]:
    first = runs[names[0]]
    if not isinstance(first, (Result, ResultsAtK)):
        wanted = [ARRAY_METRIC] if metrics is None else check_names("metrics", metrics)
        if len(wanted) != 1:
            raise ValueError(
                f"metrics: per-query arrays hold one metric, but {len(wanted)} names were given "
                f"({wanted}); pass one name, e.g. metrics='ndcg'"
            )
        return wanted
    if metrics is not None:
        wanted = check_names("metrics", metrics)
        if not wanted:
            raise ValueError("metrics: expected at least one metric, got none")
        return wanted
    return default_metrics(first)


def _positions(
    names: Sequence[str], ids: Dict[str, Optional[List[Any]]], lengths: Dict[str, int]
) -> Tuple[Optional[List[Any]], Dict[str, np.ndarray]]:
    """The paired query ids and, per run, the positions of those queries in the run."""
    given = [n for n in names if ids[n] is not None]
    if not given:
        for name in names[1:]:
            if lengths[name] != lengths[names[0]]:
                raise ValueError(
                    f"runs[{name!r}]: {lengths[name]} queries, but runs[{names[0]!r}] has "
                    f"{lengths[names[0]]}; runs without query ids are paired by position, so every run "
                    "must hold the same queries in the same order (or give a mapping query id -> value)"
                )
        return None, {n: np.arange(lengths[n]) for n in names}
    if len(given) != len(names):
        odd = next(n for n in names if ids[n] is None)
        raise TypeError(
            f"runs[{odd!r}]: has no query ids while runs[{given[0]!r}] has; give every run with ids "
            "(a mapping query id -> value, or evaluate_run results) or none"
        )
    listed = {n: run_ids for n, run_ids in ids.items() if run_ids is not None}  # every run, here
    index: Dict[str, Dict[Any, int]] = {}
    for name in names:
        index[name] = {qid: i for i, qid in enumerate(listed[name])}
        if len(index[name]) != len(listed[name]):
            dup = next(q for q in listed[name] if listed[name].count(q) > 1)
            raise ValueError(f"runs[{name!r}]: query id {dup!r} appears twice; each query once")
    common = [q for q in listed[names[0]] if all(q in index[n] for n in names[1:])]
    return common, {n: np.array([index[n][q] for q in common], dtype=np.int64) for n in names}


def _keyed(value: Any) -> Any:
    """A one-dimensional object with an index (a pandas Series of per-query values) as a mapping
    ``{query id: value}``, so it pairs by its index, never by position."""
    if isinstance(value, (Result, ResultsAtK, Mapping, np.ndarray)):
        return value
    if getattr(value, "ndim", None) == 1 and callable(getattr(value, "to_dict", None)):
        return dict(value.to_dict())
    return value


def pair_runs(runs: Any, metrics: Any) -> PairedRuns:
    """Check the runs and line their per-query values up by query id.

    Raises
    ------
    TypeError
        ``runs`` not a mapping of str names; ``Result`` runs mixed with arrays; runs with and
        without query ids; a run that is neither.
    ValueError
        Runs evaluated under different definitions (the option and both values named); runs
        without ids of different lengths; no query common to every run; a repeated query id;
        an unknown metric; an infinite per-query value (the run, metric and query named).

    Warns
    -----
    UserWarning
        When queries are dropped because not every run answers them (how many, per run).
    """
    names = _check_runs(runs)
    runs = {name: _keyed(runs[name]) for name in names}
    kind_result = isinstance(runs[names[0]], (Result, ResultsAtK))
    if kind_result:
        _check_definitions(runs, names)
    else:
        for name in names:
            _array_run(name, runs[name])
    raw: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]] = {n: {} for n in names}
    labels: Dict[str, str] = {}
    for given in _wanted(runs, names, metrics):
        key = given
        for name in names:
            key, per_query, counted = metric_values(runs[name], given, name)
            raw[name][key] = (per_query, counted)
        labels[key] = metric_label(runs[names[0]], key) if kind_result else key
    ids = {n: query_ids(runs[n]) for n in names}
    lengths = {n: next(iter(raw[n].values()))[0].shape[0] for n in names}
    common, positions = _positions(names, ids, lengths)
    if common is not None and not common:
        raise ValueError(
            f"runs: no query is answered by every run ({', '.join(f'{n!r}: {lengths[n]}' for n in names)}"
            " queries); compare runs over the same topics"
        )
    dropped = {n: int(lengths[n] - positions[n].shape[0]) for n in names}
    if common is not None and any(dropped.values()):  # by position (no ids), nothing is dropped
        warnings.warn(
            f"compare: runs answer different queries; paired on the {len(common)} queries every run "
            "answers, dropped "
            + ", ".join(f"{d} of {lengths[n]} from {n!r}" for n, d in dropped.items())
            + " (TREC runs: evaluate_run(..., complete=True), or compare --complete, evaluates every "
            "qrels query as trec_eval -c does)",
            UserWarning,
            stacklevel=3,
        )
    values: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]] = {n: {} for n in names}
    not_counted: Dict[str, Dict[str, int]] = {n: {} for n in names}
    for name in names:
        for key, (vals, counted) in raw[name].items():
            # every query of the run is screened, also those other runs lack (dropped below)
            bad = np.flatnonzero(counted & np.isinf(vals))
            if bad.size:
                run_ids = ids[name]
                where = run_ids[bad[0]] if run_ids is not None else int(bad[0])
                raise ValueError(
                    f"runs[{name!r}]: {labels[key]} is {vals[bad[0]]} at query {where!r} "
                    f"({bad.size} infinite value{'s' if bad.size > 1 else ''}); per-query values must be "
                    "finite (NaN marks a query not counted), also for queries other runs lack"
                )
            vals, counted = vals[positions[name]], counted[positions[name]]
            nan = counted & np.isnan(vals)
            not_counted[name][key] = int(nan.sum())
            values[name][key] = (vals, counted & ~nan)
    return PairedRuns(
        names=names, labels=labels, query_ids=common, dropped=dropped, not_counted=not_counted, values=values
    )
