"""The fuzz campaign for ``rc.compare``'s inputs: runs that pair the wrong queries or mix definitions.

A case (:func:`draw_compare_case`) is one to three runs given one way, and a few settings:

* ``arrays``: per-query 1-D arrays (paired by position), of equal or different lengths;
* ``dicts``: mappings ``{query id: value}`` over overlapping query sets (missing and extra
  ids), sometimes with int ids, a value that is not a number, or an empty mapping;
* ``mixed``: an array next to a mapping;
* ``trec``: ``evaluate_run`` results of small random runs and qrels over overlapping topics,
  sometimes evaluated with a different option (``relevance_level``, ``depth``,
  ``judged_only``, ``score_dtype``, ``gains``, ``float_grades``) or at another cut-off;

with values drawn among ordinary numbers, NaN, ±inf and large ones, and settings (tests,
``n_resamples``, ``confidence``, ``pairs``, ``correction``, ``baseline``, ``metrics``) valid
or not.

What a correct ``compare`` does (:func:`classify_compare_case`):

* it raises ``ValueError`` or ``TypeError`` with a message, or returns a ``Comparison``;
  any other exception is an ``unnamed_error``;
* runs evaluated under different definitions, and ±inf values, are refused (a result is a
  ``wrong_number``);
* in a result, each row's ``n_queries`` is the number of query ids common to every run
  whose values both runs count (not NaN), its means and difference are the exact means over
  those queries (``Fraction``, to 1e-12 relative), and each p-value is None or in [0, 1].

Run with ``python -m retrieval_conformance.conformance.fuzz --target compare --cases N``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .classify import Outcome

__all__ = ["CompareCase", "classify_compare_case", "draw_compare_case"]

_IDS = ("q1", "q2", "q3", "q4", "q5", "q6")
_METRICS = ("map", "P_5", "ndcg_cut_5", "recip_rank", "Rprec", "bpref", "P_3", "nope")
#: evaluate_run options a run may be evaluated with, beside the common definition
_TREC_OPTIONS = {
    "relevance_level": (2,),
    "depth": (2, 3),
    "judged_only": (True,),
    "score_dtype": ("float32",),
    "gains": ({1: 3},),
    "float_grades": ("truncate",),
    "complete": (True,),
}


@dataclass
class CompareCase:
    kind: str
    runs: Dict[str, Any]  # arrays and dicts as given; for "trec": (run, qrels, options) per run
    settings: Dict[str, Any] = field(default_factory=dict)
    change: str = ""

    def describe(self) -> str:
        return f"{self.kind}: runs {list(self.runs)}, settings {self.settings}"


def _value(d) -> float:
    pick = d.integer(0, 59)
    if pick < 54:
        return d.integer(0, 1000) / 1000
    return (float("nan"), float("inf"), -float("inf"), 1e300, -1e-300, 7.0)[pick - 54]


def _settings(d, names: List[str], kind: str) -> Dict[str, Any]:
    settings: Dict[str, Any] = {"n_resamples": d.choice((64, 200, 1000)), "seed": 0}
    for _ in range(d.integer(0, 2)):
        option = d.choice(("tests", "n_resamples", "confidence", "pairs", "correction", "baseline", "metrics", "seed"))
        settings[option] = d.choice(
            {
                "tests": (("t",), ("permutation",), ("permutation", "t"), ("x",), "t", ()),
                "n_resamples": (1, 0, -5, 2.5, 10_000),
                "confidence": (0.9, 0.5, 1.0, 0.0, float("nan"), "high"),
                "pairs": ("all", "baseline", "x"),
                "correction": (None, "holm", "bh", "x"),
                "baseline": tuple(names) + ("nobody",),
                "metrics": ("value", "x", ["map", "recip_rank"], "map,P_5", 3)
                if kind != "trec"
                else (["map"], ["map", "P_5"], "ndcg_cut_5", ["nope"], ["recip_rank", "bpref"]),
                "seed": (None, 1, -1, 2**70, "s"),
            }[option]
        )
    return settings


def _trec_run(d, topics: List[str]) -> Tuple[dict, dict]:
    run: Dict[str, Dict[str, float]] = {}
    qrels: Dict[str, Dict[str, Any]] = {}
    for qid in topics:
        docs = [f"d{i}" for i in range(d.integer(1, 6))]
        run[qid] = {doc: d.integer(0, 4) / 4 for doc in docs}  # ties on purpose
    for qid in _IDS[: d.integer(2, len(_IDS))]:
        qrels[qid] = {f"d{i}": d.choice((0, 1, 2, 2.5, -1)) for i in range(d.integer(1, 6))}
    return run, qrels


def draw_compare_case(d) -> CompareCase:
    """One to three runs of one kind (module doc), and a few settings."""
    kind = d.choice(("arrays", "dicts", "mixed", "trec"))
    names = ["A", "B", "C"][: d.integer(1, 3)]
    runs: Dict[str, Any] = {}
    change = kind
    if kind == "arrays":
        n = d.integer(1, 8)
        for name in names:
            length = n if d.chance(0.85) else d.integer(0, 8)
            runs[name] = np.array([_value(d) for _ in range(length)], dtype=np.float64)
    elif kind in ("dicts", "mixed"):
        for name in names:
            ids = [q for q in _IDS if d.chance(0.7)]
            runs[name] = {q: _value(d) for q in ids}
            if d.chance(0.05):
                runs[name][d.choice((7, "q9"))] = d.choice((0.5, "0.5", None))
        if kind == "mixed":
            runs[names[-1]] = np.array([_value(d) for _ in range(d.integer(1, 6))])
    else:
        common: Dict[str, Any] = {"k": d.choice((None, 5)), "implementation": "reference"}
        for name in names:
            topics = [q for q in _IDS if d.chance(0.75)] or ["q1"]
            options = dict(common)
            if d.chance(0.15):
                option = d.choice(sorted(_TREC_OPTIONS))
                options[option] = d.choice(_TREC_OPTIONS[option])
                change = f"trec-{option}"
            if d.chance(0.05):
                options["k"] = 3 if options["k"] != 3 else 5
                change = "trec-k"
            run, qrels = _trec_run(d, topics)
            runs[name] = (run, qrels if name == names[0] or d.chance(0.2) else None, options)
    return CompareCase(kind, runs, _settings(d, names, kind), change)


def _evaluated(case: CompareCase) -> Dict[str, Any]:
    """The runs as ``compare`` takes them (TREC runs evaluated, each with the first run's qrels
    unless it has its own)."""
    if case.kind != "trec":
        return dict(case.runs)
    from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

    first_qrels = next(iter(case.runs.values()))[1]
    return {
        name: evaluate_run(run, first_qrels if qrels is None else qrels, **options)
        for name, (run, qrels, options) in case.runs.items()
    }


def _per_query(value: Any, metric: str) -> Tuple[List[Any], List[float]]:
    """(query ids or positions, values) of one run, as the oracle reads them."""
    if isinstance(value, np.ndarray):
        return list(range(value.shape[0])), value.tolist()
    if isinstance(value, dict):
        return list(value), list(value.values())
    return list(value.extras["query_ids"]), value.extras["trec_eval_per_query"][metric].tolist()


def _exact_mean(values: List[float]) -> Fraction:
    return sum(map(Fraction, values), Fraction(0)) / len(values)


def _close(got: float, want: Fraction, scale: float) -> bool:
    return abs(got - float(want)) <= 1e-12 * max(scale, 1.0)


def _check_row(row, runs: Dict[str, Any], metric: str) -> Optional[str]:
    """What is wrong with one row of a result, or None."""
    ids_run, values_run = _per_query(runs[row.run], metric)
    ids_base, values_base = _per_query(runs[row.baseline], metric)
    every = [dict(zip(*_per_query(runs[name], metric))) for name in runs]
    common = [q for q in ids_run if all(q in each for each in every)]
    run_at, base_at = dict(zip(ids_run, values_run)), dict(zip(ids_base, values_base))
    pairs = [(run_at[q], base_at[q]) for q in common if not (math.isnan(run_at[q]) or math.isnan(base_at[q]))]
    where = f"row {row.run} vs {row.baseline} on {metric}"
    if row.n_queries != len(pairs):
        return f"{where}: n = {row.n_queries}, but {len(pairs)} queries are common to every run and counted by both"
    for p in (row.p_permutation, row.p_t, row.p_permutation_adjusted, row.p_t_adjusted):
        # NaN: no test, allowed only below 2 pairs and said in a note
        if p is not None and not 0.0 <= p <= 1.0 and not (math.isnan(p) and len(pairs) < 2 and row.notes):
            return f"{where}: p-value {p!r} outside [0, 1] with {len(pairs)} paired queries"
    if not pairs:
        return None
    scale = max(abs(x) for pair in pairs for x in pair)
    mean_run, mean_base = _exact_mean([b for b, _ in pairs]), _exact_mean([a for _, a in pairs])
    for label, got, want in (
        ("difference", row.difference, mean_run - mean_base),
        ("mean of the run", row.mean_run, mean_run),
        ("mean of the baseline", row.mean_baseline, mean_base),
    ):
        if not _close(got, want, scale):
            return (
                f"{where}: {label} {got!r}, but the exact mean over the {len(pairs)} paired queries is {float(want)!r}"
            )
    return None


def _refusal_expected(case: CompareCase, runs: Dict[str, Any]) -> Optional[str]:
    """Why ``compare`` must refuse these runs (definitions that differ, an infinite value), or None."""
    if case.kind == "trec":
        options = [opts for _, _, opts in case.runs.values()]
        if any(o != options[0] for o in options[1:]):
            return "runs evaluated with different options"
    else:
        for name, value in runs.items():
            values = value.tolist() if isinstance(value, np.ndarray) else list(value.values())
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
                return f"a value that is not a number in run {name!r}"
            if any(math.isinf(x) for x in values):
                return f"an infinite value in run {name!r}"
    return None


def classify_compare_case(case: CompareCase) -> Outcome:
    """Run ``compare`` on the case and classify what it did (module doc)."""
    import retrieval_conformance as rc

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dropped queries and float grades: documented warnings
            runs = _evaluated(case)
    except (ValueError, TypeError) as exc:
        return Outcome("named_error" if str(exc) else "unnamed_error", str(exc)[:300])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cmp = rc.compare(runs, **case.settings)
    except (ValueError, TypeError) as exc:
        if not str(exc):
            return Outcome("unnamed_error", f"{type(exc).__name__} without a message")
        return Outcome("named_error")
    except Exception as exc:  # anything else is a finding
        return Outcome("unnamed_error", f"{type(exc).__name__}: {str(exc)[:300]} for {case.describe()}")
    refusal = _refusal_expected(case, runs)
    if refusal:
        return Outcome("wrong_number", f"compared although {refusal}: {case.describe()}")
    for row in cmp.rows:
        problem = _check_row(row, runs, row.metric)
        if problem:
            return Outcome("wrong_number", f"{problem} ({case.describe()})")
    return Outcome("value")
