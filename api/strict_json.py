"""JSON that strict parsers accept: NaN and infinities become ``null``, and the output says which.

Python's ``json.dumps`` writes ``NaN`` and ``Infinity``, which are not JSON (RFC 8259): ``jq``,
JavaScript's ``JSON.parse`` and Go's ``encoding/json`` reject the whole document.  A metric
can be NaN (``empty="nan"`` with no counted query), so every ``--json`` output goes through
:func:`dumps`: each non-finite number is written as ``null`` and listed, under its path, in a
top-level ``"non_finite"`` object with the value it had (``"NaN"``, ``"Infinity"`` or
``"-Infinity"``).
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict

__all__ = ["dumps"]


def _replace(value: Any, path: str, found: Dict[str, str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        found[path] = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return None
    if isinstance(value, dict):
        return {key: _replace(item, f"{path}.{key}" if path else str(key), found) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replace(item, f"{path}[{i}]", found) for i, item in enumerate(value)]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # a numpy scalar
        return _replace(value.item(), path, found)
    return value


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj)`` with every non-finite float written as ``null`` and listed in ``"non_finite"``.

    Parameters
    ----------
    obj : dict
        The document (a top-level ``dict``, so that the ``"non_finite"`` field has a place).
    **kwargs
        Passed to ``json.dumps`` (``indent``, ``default``); ``allow_nan`` is always False.

    Returns
    -------
    str
        Strict JSON.  ``"non_finite"`` is present only when a value was replaced, e.g.
        ``{"map": null, ..., "non_finite": {"map": "NaN"}}``.
    """
    found: Dict[str, str] = {}
    clean = _replace(obj, "", found)
    if found and isinstance(clean, dict):
        clean["non_finite"] = found
    kwargs["allow_nan"] = False
    return json.dumps(clean, **kwargs)
