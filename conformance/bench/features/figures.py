"""What a section's ``figures(scale)`` returns, checked, and its targets read and judged.

A section returns a dict of figure name -> figure; a figure is a dict of

* ``value``: a finite real number (``None``: not measured this time, say why in ``note``);
* ``unit``: a short string (``"ms"``, ``"MB"``, ``"x the loop"``; a unit that starts with ``x``
  is a ratio and is written right after the number: ``62x the loop``);
* ``target`` (optional): a bound on ``value``, a string of an operator and a number, ``">= 60"``,
  ``"<= 1.5"`` (also ``≥``, ``≤``, ``>``, ``<``), optionally followed by the unit (or ``x`` for a ratio);
* ``baseline`` (optional): what the value is set against, a string, a number (in ``unit``) or a
  dict ``{"name": ..., "value": ..., "unit": ...}``;
* ``note`` (optional): a short string shown next to the figure.

Any other key, a missing ``value`` or ``unit``, or a target without an operator is refused with
an error that names the figure and the key, so a figure is never shown half-read.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Dict, Optional, Tuple

#: the keys a figure may hold
FIGURE_KEYS = ("value", "unit", "target", "baseline", "note")
#: the operators of a target and what they mean
OPERATORS = {">=": ">=", "≥": ">=", "<=": "<=", "≤": "<=", ">": ">", "<": "<"}
_TARGET = re.compile(r"^\s*(>=|<=|≥|≤|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def parse_target(target: str, unit: str) -> Tuple[str, float]:
    """``(operator, bound)`` of a target string (``">= 60"``, ``"≤ 1.5x"``); ``ValueError`` naming
    what is wrong with it."""
    if not isinstance(target, str):
        raise ValueError(f"target {target!r}: expected a string of an operator and a number, e.g. '>= 60' or '<= 1.5'")
    match = _TARGET.match(target)
    if match is None:
        raise ValueError(f"target {target!r}: expected an operator (>=, <=, >, <) and a number, e.g. '>= 60'")
    operator, number, suffix = match.groups()
    if suffix and suffix != unit and not (unit.startswith("x") and suffix in ("x", "×")):
        raise ValueError(f"target {target!r}: its unit {suffix!r} is not the figure's unit {unit!r}")
    return OPERATORS[operator], float(number)


def judge(figure: Dict[str, Any]) -> Optional[bool]:
    """Whether a checked figure meets its target; None without a target or a value."""
    if figure.get("target") is None or figure.get("value") is None:
        return None
    operator, bound = parse_target(figure["target"], figure["unit"])
    value = float(figure["value"])
    return {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[operator]


def check_figures(figures: Any, source: str) -> Dict[str, Dict[str, Any]]:
    """The figures as JSON values (numbers as floats), or ``ValueError`` naming ``source`` (the
    function that returned them), the figure and what is wrong."""
    if not isinstance(figures, dict) or not figures:
        raise ValueError(
            f"{source} returned {type(figures).__name__} {str(figures)[:60]!r}: expected a non-empty "
            "dict of figure name -> {value, unit, target, baseline, note}"
        )
    out: Dict[str, Dict[str, Any]] = {}
    for name, figure in figures.items():
        where = f"{source}: figure {name!r}"
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where}: a figure's name must be a non-empty string")
        if not isinstance(figure, dict):
            raise ValueError(f"{where}: expected a dict with value and unit, got {type(figure).__name__}")
        unknown = sorted(set(figure) - set(FIGURE_KEYS))
        if unknown:
            raise ValueError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a figure holds {', '.join(FIGURE_KEYS)}"
            )
        if "value" not in figure or "unit" not in figure:
            raise ValueError(f"{where}: 'value' and 'unit' are required (value None for a figure not measured)")
        value, unit = figure["value"], figure["unit"]
        if value is not None and not _real(value):
            raise ValueError(f"{where}: value must be a finite real number or None, got {value!r}")
        if not isinstance(unit, str):
            raise ValueError(f"{where}: unit must be a string, got {unit!r}")
        checked: Dict[str, Any] = {"value": None if value is None else float(value), "unit": unit}
        if figure.get("target") is not None:
            try:
                parse_target(figure["target"], unit)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            checked["target"] = figure["target"]
        if figure.get("baseline") is not None:
            checked["baseline"] = _baseline(figure["baseline"], where)
        if figure.get("note") is not None:
            if not isinstance(figure["note"], str):
                raise ValueError(f"{where}: note must be a string, got {figure['note']!r}")
            checked["note"] = figure["note"]
        out[name] = checked
    return out


def _baseline(baseline: Any, where: str) -> Any:
    if isinstance(baseline, str):
        return baseline
    if _real(baseline):
        return float(baseline)
    if (
        isinstance(baseline, dict)
        and set(baseline) <= {"name", "value", "unit"}
        and isinstance(baseline.get("name"), str)
        and _real(baseline.get("value"))
        and isinstance(baseline.get("unit", ""), str)
    ):
        return {"name": baseline["name"], "value": float(baseline["value"]), "unit": baseline.get("unit", "")}
    raise ValueError(
        f"{where}: baseline must be a string, a number or a dict of name, value (a number) and unit; got {baseline!r}"
    )


def format_number(value: float) -> str:
    """Three significant digits, thousands separated from 1,000 on (``0.0421``, ``62.3``, ``12,345``)."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value else "0"


def format_amount(value: Optional[float], unit: str) -> str:
    """A value and its unit: ``62.3x the loop`` (a ratio), ``121 ms``, ``–`` for None."""
    if value is None:
        return "–"
    number = format_number(value)
    if not unit:
        return number
    return f"{number}{unit}" if unit.startswith("x") else f"{number} {unit}"
