"""Run one fuzz case through every implementation and classify what happened.

Outcome classes (:data:`CLEAN` are the only acceptable ones):

* ``value``: every implementation returned the reference's numbers (and the twin's, where
  the case names one);
* ``named_error``: every implementation raised the same ``ValueError``/``TypeError``, whose
  message names an argument of ``evaluate``;
* ``wrong_number``: a value differs from the reference's exact value (or from the twin's);
* ``unnamed_error``: another exception, or a message that names no argument;
* ``inconsistent``: implementations disagree on accepting the input, or raise differently;
* ``accepted_invalid`` / ``rejected_valid``: against what the change declares;
* ``mutated``: an input array was modified by the call;
* ``warning``: a value came with a warning (a silent overflow, a copy torch complained about);
* ``crash`` and ``hang`` are found by the campaign's worker processes (:mod:`.campaign`).
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.reference.contract.aggregation import NoQueryCountedWarning
from retrieval_conformance.reference.contract.problem import MEANS, VALUE_FIELDS
from retrieval_conformance.reference.contract.validation import LowPrecisionWarning

from .cases import Case

__all__ = ["CLEAN", "FAILURES", "Outcome", "classify", "names_an_argument"]

CLEAN = ("value", "named_error")
FAILURES = (
    "wrong_number",
    "unnamed_error",
    "inconsistent",
    "accepted_invalid",
    "rejected_valid",
    "mutated",
    "warning",
    "crash",
    "hang",
)

#: the words an error message may name: evaluate's own parameter names
ARGUMENTS = tuple(p for p in inspect.signature(rc.evaluate).parameters)
_NAMED = re.compile(r"\b(" + "|".join(map(re.escape, ARGUMENTS)) + r")\b")
#: warnings evaluate gives on purpose (documented); any other warning is a finding
DOCUMENTED_WARNINGS = (NoQueryCountedWarning, LowPrecisionWarning)
#: Python's own error for a misspelt keyword names it: that is a named error too
_UNKNOWN_KEYWORD = re.compile(r"unexpected keyword argument '\w+'")
#: a message longer than this hides what is wrong (and may be an input dumped whole)
MAX_MESSAGE = 1500
#: summary fields compared between a case and its twin, and with the reference
MEAN_FIELDS = tuple(MEANS) + ("queries_counted",)


@dataclass
class Outcome:
    kind: str
    detail: str = ""
    implementation: str = ""

    @property
    def clean(self) -> bool:
        return self.kind in CLEAN


def names_an_argument(message: str) -> bool:
    """Whether an error message names one of ``evaluate``'s arguments."""
    return bool(_NAMED.search(message) or _UNKNOWN_KEYWORD.search(message))


def _snapshot(kwargs: Dict[str, Any]) -> Dict[str, np.ndarray]:
    out = {}
    for key, value in kwargs.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            out[key] = value.copy()
        elif hasattr(value, "detach") and getattr(value, "layout", None) is not None:
            try:
                if str(value.device) != "meta" and not value.is_sparse:
                    out[key] = value.detach().clone()
            except Exception:  # an exotic tensor: nothing to compare
                pass
    return out


def _mutated(before: Dict[str, Any], kwargs: Dict[str, Any]) -> List[str]:
    changed = []
    for key, old in before.items():
        new = kwargs[key]
        if isinstance(old, np.ndarray):
            same = np.array_equal(old, new, equal_nan=old.dtype.kind in "fc")
        else:
            import torch

            same = bool(torch.equal(old, new.detach())) or bool(
                torch.isnan(old).all() and torch.isnan(new.detach()).all()
            )
        if not same:
            changed.append(key)
    return changed


def _call(kwargs: Dict[str, Any], implementation: str):
    """("value", Result) or ("raise", exception), with the warnings the call emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: Tuple[str, Any] = ("value", rc.evaluate(**kwargs, implementation=implementation))
        except Exception as exc:  # classified below: the point is to see every exception
            result = ("raise", exc)
    return result, [
        f"{w.category.__name__}: {str(w.message)[:200]}"
        for w in caught
        if not issubclass(w.category, DOCUMENTED_WARNINGS)
    ]


def _stable(exc: BaseException) -> str:
    """An error message without object addresses (a generator's repr differs per object)."""
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", str(exc))


def _error_kind(exc: BaseException) -> Optional[str]:
    """None for a clean named error, else why it is not one."""
    message = str(exc)
    # a ValueError or TypeError, or a subclass of one a caller catches as such (NonFiniteError)
    if not isinstance(exc, (ValueError, TypeError)):
        return f"{type(exc).__name__}: {message[:300]}"
    if len(message) > MAX_MESSAGE:
        return f"{type(exc).__name__} with a {len(message)}-character message: {message[:200]}..."
    if not names_an_argument(message):
        return f"{type(exc).__name__} naming no argument: {message[:300]}"
    return None


def _equal(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of two summary values (NaN equals NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def _close(a: Any, b: Any, tol: float = 1e-12) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol
    return a == b


def _summary_differences(got, want, fields, same: Callable[[Any, Any], bool]) -> List[str]:
    g, w = got.summary(), want.summary()
    out = [f"{f}: {g.get(f)!r} vs {w.get(f)!r}" for f in fields if not same(g.get(f), w.get(f))]
    if not all(same(x, y) for x, y in zip(g["cmc"], w["cmc"])) or len(g["cmc"]) != len(w["cmc"]):
        out.append("cmc differs")
    return out


def _per_query_differences(got, want, fields: Sequence[str]) -> List[str]:
    out = []
    for name in fields:
        a, b = getattr(got.per_query, name), getattr(want.per_query, name)
        if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b, equal_nan=True)):
            out.append(f"per-query {name} differs")
    return out


#: per-query fields equal for any two cut-offs beyond the gallery (P@k = H/k divides by k itself)
UNCUT_FIELDS = ("n_relevant", "cmc") + tuple(f for f in VALUE_FIELDS if f != "precision_at_k")


def _twin_differences(case: Case, result, twin_result) -> List[str]:
    if case.relation == "same":
        return _per_query_differences(result, twin_result, UNCUT_FIELDS + ("precision_at_k",)) + _summary_differences(
            result, twin_result, MEAN_FIELDS, _equal
        )
    if case.relation == "same_means":
        return _summary_differences(result, twin_result, MEAN_FIELDS, _equal)
    if case.relation == "same_uncut":
        return _per_query_differences(result, twin_result, UNCUT_FIELDS)
    raise ValueError(f"unknown relation {case.relation!r}")


def classify(build: Callable[[], Case], implementations: Sequence[str]) -> Outcome:
    """Run a case (rebuilt by ``build()`` for every call) through ``implementations``.

    The first implementation is the oracle (normally ``"reference"``).
    """
    calls = []
    cases = []
    for name in implementations:
        case = build()  # fresh objects for every implementation
        cases.append(case)
        before = _snapshot(case.kwargs)
        (kind, value), caught = _call(case.kwargs, name)
        changed = _mutated(before, case.kwargs)
        if changed:
            return Outcome("mutated", f"{', '.join(changed)} modified by the call", name)
        if kind == "raise":
            why = _error_kind(value)
            if why is not None:
                return Outcome("unnamed_error", why, name)
        elif caught:
            return Outcome("warning", "; ".join(caught[:3]), name)
        calls.append((name, kind, value))
    oracle_name, oracle_kind, oracle = calls[0]
    for name, kind, value in calls[1:]:
        if kind != oracle_kind:
            what = (
                f"{name} raised {type(value).__name__}: {str(value)[:200]}"
                if kind == "raise"
                else f"{oracle_name} raised {type(oracle).__name__}: {str(oracle)[:200]}"
            )
            return Outcome("inconsistent", what, name)
        if kind == "raise" and (type(value), _stable(value)) != (type(oracle), _stable(oracle)):
            return Outcome(
                "inconsistent",
                f"{name}: {type(value).__name__}: {str(value)[:200]} / "
                f"{oracle_name}: {type(oracle).__name__}: {str(oracle)[:200]}",
                name,
            )
    case = cases[0]
    if oracle_kind == "raise":
        if case.expect == "value":
            return Outcome("rejected_valid", f"{type(oracle).__name__}: {str(oracle)[:300]}", oracle_name)
        return Outcome("named_error", f"{type(oracle).__name__}: {str(oracle)[:200]}")
    if case.expect == "error":
        return Outcome("accepted_invalid", "every implementation returned a value", oracle_name)
    for name, _, result in calls[1:]:
        problems = []
        if oracle.per_query.exact is not None:
            problems = compare_per_query(oracle.per_query, result.per_query, "")
        problems += _summary_differences(result, oracle, MEAN_FIELDS, _close)
        if problems:
            return Outcome("wrong_number", "; ".join(problems[:3]), name)
    if case.twin is not None:
        for (name, _, result), own in zip(calls, cases):
            # the twin is the plain input, left unmodified by the call (checked above)
            (kind, twin_result), _ = _call(own.twin, name)
            if kind == "raise":
                return Outcome(
                    "rejected_valid", f"the twin raised {type(twin_result).__name__}: {str(twin_result)[:200]}", name
                )
            problems = _twin_differences(case, result, twin_result)
            if problems:
                return Outcome("wrong_number", f"not {case.relation} as its twin: " + "; ".join(problems[:3]), name)
    return Outcome("value")
