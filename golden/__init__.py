"""Golden cases as JSON data files, each with its provenance.

Every file holds ``{"schema": 1, "source": ..., "cases": [...]}``; a case has an ``id``, the
``clauses`` it pins (sections of the specification), the ``input`` arrays and the ``call`` options of
``rc.evaluate``, the ``expected`` values as exact fractions (strings such as ``"107/180"``;
``null`` in a per-query list marks a query left out of the mean; ``"nan"`` a NaN), where a
source printed a rounded figure the ``printed`` one, and a ``provenance`` saying where the
number comes from independently of this project's code.  Besides the fields of ``Result``
(``map``, ``ap``, ``ndcg_at_k``, ``mrr``, ``map_at_r``, ...), ``expected`` may hold the per-query
values ``ndcg``, ``rr`` and ``ap_at_r`` of ``result.per_query``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from importlib import resources
from typing import Any, Dict, List, Optional

FLOAT_TOLERANCE = 1e-12


def case_files() -> List[str]:
    """Names of the golden JSON files shipped with the package."""
    root = resources.files(__name__)
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".json"))


def load_file(name: str) -> Dict[str, Any]:
    return json.loads(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"))


def load_cases(kind: str = "evaluate") -> List[Dict[str, Any]]:
    """Every golden case of ``kind`` ("evaluate": inputs for ``rc.evaluate``), with its file name."""
    out = []
    for name in case_files():
        data = load_file(name)
        for case in data.get("cases", []):
            # cases without an explicit kind are rc.evaluate cases when they carry an input
            case_kind = case.get("kind") or ("evaluate" if "input" in case and "call" in case else "other")
            if case_kind == kind:
                out.append(dict(case, file=name))
    return out


def parse_value(text: Optional[str]):
    """``"107/180"`` -> Fraction(107, 180); ``"nan"`` -> nan; None stays None."""
    if text is None:
        return None
    if text == "nan":
        return math.nan
    return Fraction(text)


def evaluate_kwargs(case: Dict[str, Any]) -> Dict[str, Any]:
    """Keyword arguments of ``rc.evaluate`` for a case (inputs and options)."""
    return dict(case["input"], **case.get("call", {}))


#: per-query values read from ``result.per_query`` (None where a query is not counted), and the
#: means whose exact value is the mean of ``result.per_query.exact`` over the counted queries
PER_QUERY_KEYS = ("ndcg", "rr", "ap_at_r")
MEANS_OF_PER_QUERY = {"ndcg_at_k": "ndcg", "mrr": "rr", "map_at_r": "ap_at_r"}


def _per_query_value(result, key: str, exact: bool):
    field = MEANS_OF_PER_QUERY.get(key, key)
    counted = [bool(c) for c in result.counted]
    if exact and result.per_query.exact is not None:
        values = list(result.per_query.exact[field])
    else:
        values = getattr(result.per_query, field).tolist()
    if key in PER_QUERY_KEYS:
        return [v if c else None for v, c in zip(values, counted)]
    if not (exact and result.per_query.exact is not None):
        return getattr(result, key)
    chosen = [v for v, c in zip(values, counted) if c]
    return sum(chosen, Fraction(0)) / len(chosen) if chosen else math.nan


def _result_value(result, key: str, exact: bool):
    if key in PER_QUERY_KEYS or key in MEANS_OF_PER_QUERY:
        return _per_query_value(result, key, exact)
    if exact and result.exact is not None:
        value = {
            "map": result.exact.map,
            "ap": result.exact.ap,
            "cmc": result.exact.cmc,
            "minp": result.exact.minp,
            "precision_at_k": result.exact.precision_at_k,
            "recall_at_k": result.exact.recall_at_k,
        }.get(key)
        if value is not None:
            return value
    value = getattr(result, key)
    if hasattr(value, "tolist"):
        value = value.tolist()
    return value


def _same(expected, got, exact: bool) -> bool:
    if expected is None:  # a query left out of the mean: NaN in the float result
        return got is None or (isinstance(got, float) and math.isnan(got))
    if isinstance(expected, float) and math.isnan(expected):
        return got is not None and math.isnan(float(got))
    if got is None:
        return False
    if exact and isinstance(got, Fraction):
        return got == expected
    return abs(float(got) - float(expected)) <= FLOAT_TOLERANCE


def mismatches(case: Dict[str, Any], result, exact: bool = True) -> List[str]:
    """Differences between a case's expected values and a result (empty when it conforms).

    With ``exact`` and a result carrying ``Fraction`` values, they must be equal; otherwise
    floats must agree within ``FLOAT_TOLERANCE``.
    """
    problems = []
    for key, expected_text in case["expected"].items():
        got = _result_value(result, key, exact)
        if isinstance(expected_text, list):
            expected = [parse_value(t) for t in expected_text]
            got_list = list(got) if got is not None else []
            if len(got_list) != len(expected) or not all(_same(e, g, exact) for e, g in zip(expected, got_list)):
                problems.append(f"{key}: expected {expected_text}, got {_show(got_list)}")
        else:
            expected = parse_value(expected_text)
            if not _same(expected, got, exact):
                problems.append(f"{key}: expected {expected_text}, got {_show(got)}")
    return problems


def _show(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, Fraction):
        return f"{value} ({float(value):.6g})"
    return repr(value)
