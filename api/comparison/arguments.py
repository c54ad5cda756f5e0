"""The arguments of :func:`retrieval_conformance.compare`: checks, metric names, per-query values.

* ``check_*``: one check per kind of argument, raising with the argument's name (the
  function's keyword or the command line's flag) and what was expected;
* :data:`METRICS` and :func:`canonical_metric`: the metrics a ``Result`` run offers, and the
  other spellings accepted for them;
* :func:`per_query_values`: every run's per-query values and counted mask, per metric.
"""
from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.problem import Result

__all__ = ["METRICS", "canonical_metric", "check_choice", "check_digits", "check_level", "check_names",
           "check_non_negative", "check_resamples", "check_seed", "per_query_values", "result_metric_labels"]

#: metric name -> (``PerQuery`` field, display label; ``{k}`` is the run's cut-off)
METRICS: Dict[str, Tuple[str, str]] = {
    "map": ("ap", "mAP"),
    "precision_at_k": ("precision_at_k", "P@{k}"),
    "recall_at_k": ("recall_at_k", "R@{k}"),
    "minp": ("inp", "mINP"),
    "r_precision": ("r_precision", "R-precision"),
}
#: other spellings of the metric names (lower case, "-" read as "_")
_ALIASES = {"inp": "minp", "p@k": "precision_at_k", "r@k": "recall_at_k", "map@k": "map",
            "rprec": "r_precision", "r_prec": "r_precision"}
#: the CMC at a rank: rank1, rank_5, cmc10, ... (canonical: rank1, rank5, rank10)
_RANK = re.compile(r"^(?:rank|cmc)_?(\d+)$")
#: the options that change a per-query number; every run must share them
_NUMBER_OPTIONS = ("ties", "ap_rule", "k", "ap_at_k", "empty")


# -- checks ------------------------------------------------------------------------------
def check_names(argument: str, value: Any) -> List[str]:
    """A name or a sequence of names, as a list without repeats (first occurrence kept)."""
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{argument}: expected a name or a sequence of names, got {type(value).__name__}") from None
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{argument}: expected names (str), got {type(bad[0]).__name__} {bad[0]!r}")
    return list(dict.fromkeys(names))


def check_choice(argument: str, value: Any, choices: Iterable) -> Any:
    """``value``, when it is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{argument}: expected one of {list(choices)}, got {value!r}")
    return value


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def _is_integer(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def check_level(argument: str, value: Any) -> float:
    """A significance or confidence level: a number strictly between 0 and 1."""
    if not _is_real(value) or not 0 < float(value) < 1:
        raise ValueError(f"{argument}: expected a number strictly between 0 and 1 (e.g. 0.05), got {value!r}")
    return float(value)


def check_non_negative(argument: str, value: Any) -> float:
    """A margin: a finite number >= 0."""
    if not _is_real(value) or not float(value) >= 0 or math.isinf(float(value)):
        raise ValueError(f"{argument}: expected a finite number >= 0 (e.g. 0.01), got {value!r}")
    return float(value)


def check_resamples(argument: str, value: Any) -> int:
    """A number of resamples: a positive integer."""
    if not _is_integer(value) or value < 1:
        raise ValueError(f"{argument}: expected a positive integer (e.g. 10000), got {value!r}")
    return int(value)


def check_seed(value: Any) -> Optional[int]:
    """A seed of ``numpy.random.default_rng``: a non-negative integer, or None."""
    if value is not None and (not _is_integer(value) or value < 0):
        raise ValueError(f"seed: expected a non-negative integer or None, got {value!r}")
    return None if value is None else int(value)


def check_digits(value: Any) -> int:
    """A number of decimals: an integer from 0 to 12."""
    if not _is_integer(value) or not 0 <= value <= 12:
        raise ValueError(f"digits: expected an integer from 0 to 12, got {value!r}")
    return int(value)


# -- metrics -----------------------------------------------------------------------------
def canonical_metric(name: str) -> str:
    """The name ``compare`` uses for a metric: ``"mAP"`` -> ``"map"``, ``"CMC-5"`` -> ``"rank5"``.

    A name that is no alias and no rank comes back lower-cased, ``-`` read as ``_``.
    """
    key = name.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    match = _RANK.match(key)
    if match:
        return f"rank{int(match.group(1))}"
    return key


def _metric_label(metric: str, k: Optional[int]) -> str:
    if metric.startswith("rank"):
        return f"Rank-{metric[4:]}"
    label = METRICS[metric][1]
    if metric == "map" and k is not None:
        return f"mAP@{k}"
    return label.format(k=k)


def result_metric_labels(runs: Mapping[str, Result], metrics: Any) -> Dict[str, str]:
    """Metric name -> label for runs given as ``Result`` objects, checking the runs agree on options.

    Parameters
    ----------
    runs : mapping of str to Result
        At least one run.
    metrics : str or sequence of str or None
        As given to ``compare``; None: the default metrics (mAP, P@k and R@k with a cut-off,
        Rank-1, mINP, R-precision).

    Raises
    ------
    ValueError
        A run evaluated with other options than the first, an unknown metric, P@k or R@k
        without a cut-off, no metric.
    """
    names = list(runs)
    first = runs[names[0]].options
    for name in names[1:]:
        other = runs[name].options
        for option in _NUMBER_OPTIONS:
            if getattr(other, option) != getattr(first, option):
                raise ValueError(
                    f"runs[{name!r}]: evaluated with {option}={getattr(other, option)!r}, but runs[{names[0]!r}] "
                    f"with {option}={getattr(first, option)!r}; evaluate every run with the same protocol and options")
    k = first.k
    if metrics is None:
        wanted = ["map"] + (["precision_at_k", "recall_at_k"] if k is not None else []) + \
            ["rank1", "minp", "r_precision"]
    else:
        wanted = check_names("metrics", metrics)
    out: Dict[str, str] = {}
    for given in wanted:
        metric = canonical_metric(given)
        if metric not in METRICS and not _RANK.match(metric):
            raise ValueError(f"metrics: unknown metric {given!r}; expected some of {list(METRICS)} or rankN "
                             "(rank1, rank5, ...)")
        if metric in ("precision_at_k", "recall_at_k") and k is None:
            raise ValueError(f"metrics: {given!r} needs a cut-off, but the runs were evaluated with k=None; "
                             "evaluate with k=... or drop it")
        out[metric] = _metric_label(metric, k)
    if not out:
        raise ValueError("metrics: expected at least one metric, got none")
    return out


# -- per-query values --------------------------------------------------------------------
def _result_values(res: Result, metric: str, run: str) -> Tuple[np.ndarray, np.ndarray]:
    """(per-query values, counted mask) of a ``Result`` for one metric."""
    pq = res.per_query
    if metric.startswith("rank"):
        rank = int(metric[4:])
        if not 1 <= rank <= pq.cmc.shape[1]:
            raise ValueError(f"metrics: {metric!r} is beyond run {run!r}'s CMC of {pq.cmc.shape[1]} ranks; "
                             f"evaluate with max_rank >= {rank}, or compare rank1..rank{pq.cmc.shape[1]}")
        values = pq.cmc[:, rank - 1]
    else:
        values = getattr(pq, METRICS[metric][0])
    values = np.asarray(values, dtype=np.float64)
    # counted under the empty-query policy; under empty="nan" the empty queries hold NaN in res.ap
    mask = np.asarray(res.counted, dtype=bool) & ~np.isnan(res.ap) & np.isfinite(values)
    return values, mask


def _array_values(name: str, value: Any) -> np.ndarray:
    """A run given as per-query values: a 1-D float64 array."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"runs[{name!r}]: expected an rc.Result or a 1-D array of per-query values, got "
                        f"{type(value).__name__}") from None
    if arr.ndim != 1:
        raise ValueError(f"runs[{name!r}]: expected a 1-D array of per-query values, got shape {arr.shape}")
    return arr


def per_query_values(runs: Mapping[str, Any],
                     metrics: Any) -> Tuple[Dict[str, str], Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]], int]:
    """Every run's per-query values of every metric, with the mask of the queries it counts.

    Parameters
    ----------
    runs, metrics
        As given to :func:`retrieval_conformance.compare`.

    Returns
    -------
    labels : dict
        Metric name -> display label, in the order asked.
    values : dict
        Run -> metric -> (float64 values, bool mask of the counted queries).
    n_queries : int
        The number of queries of every run.

    Raises
    ------
    TypeError
        ``runs`` not a mapping of str names, runs of both kinds, a run that is no array.
    ValueError
        Fewer than 2 runs, a run with another number of queries (named), an unusable metric.
    """
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs: expected a mapping name -> rc.Result (or per-query array), got {type(runs).__name__};"
                        " e.g. compare({'A': res_a, 'B': res_b})")
    if len(runs) < 2:
        raise ValueError(f"runs: expected at least 2 runs to compare, got {len(runs)}")
    bad = [n for n in runs if not isinstance(n, str)]
    if bad:
        raise TypeError(f"runs: expected str names, got {type(bad[0]).__name__} {bad[0]!r}")
    first = next(iter(runs))
    is_result = {name: isinstance(value, Result) for name, value in runs.items()}
    if len(set(is_result.values())) > 1:
        odd = next(n for n, kind in is_result.items() if kind != is_result[first])
        raise TypeError(f"runs[{odd!r}]: mixes rc.Result runs with per-query arrays; give every run the same way")
    values: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]] = {}
    if is_result[first]:
        labels = result_metric_labels(runs, metrics)
        for name, res in runs.items():
            values[name] = {m: _result_values(res, m, name) for m in labels}
    else:
        names = ["value"] if metrics is None else check_names("metrics", metrics)
        if len(names) != 1:
            raise ValueError(f"metrics: per-query arrays hold one metric, but {len(names)} names were given "
                             f"({names}); pass one name, e.g. metrics='ndcg'")
        labels = {names[0]: names[0]}
        for name, value in runs.items():
            arr = _array_values(name, value)
            values[name] = {names[0]: (arr, np.isfinite(arr))}
    some_metric = next(iter(labels))
    n_queries = values[first][some_metric][0].shape[0]
    for name in runs:
        n = values[name][some_metric][0].shape[0]
        if n != n_queries:
            raise ValueError(f"runs[{name!r}]: {n} queries, but runs[{first!r}] has {n_queries}; every run must be "
                             "evaluated on the same queries, in the same order")
    return labels, values, n_queries
