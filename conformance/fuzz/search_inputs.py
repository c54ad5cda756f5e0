"""The fuzz campaign for search results ``(D, I)`` (``run_from_search``, ``evaluate --search``).

A case (:func:`draw_case`) is a small ``D`` of any dtype (signed and unsigned integers of
every width, float16/32/64, bool, complex, strings) whose values come from a pool of edge values
(0, 1, each dtype's extremes, 2**53 and its neighbours, NaN, ±inf), an ``I`` with ``-1`` padding,
repeated rows or rows beyond the database, a metric (valid or not) and sometimes the database
ids.

What a correct reader does (:func:`classify_case`), decided from the inputs alone:

* the case is valid when ``D`` holds real numbers (no bool, complex or text), every neighbour
  found (``I >= 0``) is a database row, appears once in its query's row, and its distance is a
  finite number that float64 holds exactly (an integer below 2**53 in magnitude); then the run
  must hold, for each query with a neighbour, exactly its neighbours, scored ``-D`` under ``l2``
  and ``D`` under ``inner_product``, computed here in Python integers and floats (a wrapped
  unsigned negation is a ``wrong_number``);
* any other case must raise a ``ValueError`` naming ``distances``, ``indices``, ``metric``,
  ``query_ids`` or ``db_ids`` (``named_error``); a run returned is ``accepted_invalid``, any
  other exception an ``unnamed_error``.

Run with ``python -m retrieval_conformance.conformance.fuzz --target search --cases N``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.reference.readers.tables import run_from_search

from .classify import Outcome

__all__ = ["SearchCase", "classify_case", "draw_case"]

_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_DTYPES = _INTEGERS + ("float16", "float32", "float64", "bool", "complex128", "<U3")
_NAMED = re.compile(r"^(distances|indices|metric|query_ids|db_ids)\b")
#: the largest magnitude float64 holds every integer below
_EXACT = 2**53


@dataclass
class SearchCase:
    distances: np.ndarray
    indices: np.ndarray
    metric: Any
    n_db: Optional[int] = None
    db_ids: Optional[List[str]] = None
    change: str = ""
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.change}: D {self.distances.dtype} {self.distances.tolist()}, I {self.indices.tolist()}"


def _pool(dtype: str) -> List[Any]:
    """Edge values of ``dtype`` (as Python numbers that the dtype holds exactly)."""
    if dtype in _INTEGERS:
        info = np.iinfo(dtype)
        values = [0, 1, 2, 3, info.max, info.max - 1, info.min, info.min + 1, 2**53 - 1, 2**53, 2**53 + 1, -(2**53)]
        return [v for v in values if info.min <= v <= info.max]
    if dtype.startswith("float"):
        return [0.0, 1.0, 0.5, 2.0**-25, -1.0, float(np.finfo(dtype).max), math.nan, math.inf, -math.inf, 2.0**53]
    return [0, 1, 2]


def draw_case(d) -> SearchCase:
    dtype = d.choice(_DTYPES)
    n_q, k, n_db = d.integer(1, 3), d.integer(1, 4), d.integer(1, 6)
    pool = _pool(dtype)
    values = [[d.choice(pool) for _ in range(k)] for _ in range(n_q)]
    if dtype == "<U3":
        distances = np.array([[str(v) for v in row] for row in values], dtype=dtype)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            distances = np.array(values, dtype=np.float64 if dtype.startswith("float") else object).astype(dtype)
    rows = [[d.integer(-1, n_db - 1) for _ in range(k)] for _ in range(n_q)]
    change = "plain"
    if d.chance(0.1):
        rows[0][0], change = d.choice((-2, n_db, n_db + 5)), "bad-row"
    kinds = ("int64", "int32", "int16") + (("uint32",) if min(min(r) for r in rows) >= 0 else ())
    indices = np.array(rows, dtype=d.choice(kinds) if change == "plain" else "int64")
    metric = d.choice(("l2", "inner_product", "l2", "inner_product", "cosine"))
    db_ids = [f"d{j}" for j in range(n_db)] if d.boolean() else None
    return SearchCase(distances, indices, metric, None if db_ids else n_db, db_ids, f"{dtype}-{change}")


def _expected(case: SearchCase) -> Optional[Dict[str, Dict[str, float]]]:
    """The run a valid case gives, from Python numbers (None: the case must be refused)."""
    d, i = case.distances, case.indices
    if case.metric not in ("l2", "inner_product") or d.dtype.kind not in "iuf":
        return None
    n_db = len(case.db_ids) if case.db_ids is not None else case.n_db
    out: Dict[str, Dict[str, float]] = {}
    for q in range(d.shape[0]):
        found: Dict[str, float] = {}
        for c in range(d.shape[1]):
            row = int(i[q, c])
            if row == -1:
                continue
            if row < -1 or (n_db is not None and row >= n_db):
                return None
            key = case.db_ids[row] if case.db_ids is not None else str(row)
            if key in found:
                return None
            if d.dtype.kind in "iu":
                value = int(d[q, c])  # a Python int: no wrap, no rounding
                if abs(value) >= _EXACT:
                    return None
                score = float(-value if case.metric == "l2" else value)
            else:
                value = float(d[q, c])
                if not math.isfinite(value):
                    return None
                score = -value if case.metric == "l2" else value
            found[key] = score
        if found:
            out[str(q)] = found
    return out


def classify_case(case: SearchCase) -> Outcome:
    want = _expected(case)
    try:
        got = run_from_search(
            case.distances, case.indices, metric=case.metric, n_db=case.n_db, db_ids=case.db_ids, ties="trec_eval"
        )
        kept = run_from_search(case.distances, case.indices, metric=case.metric, n_db=case.n_db, db_ids=case.db_ids)
    except ValueError as exc:
        if not _NAMED.match(str(exc)):
            return Outcome("unnamed_error", f"{str(exc)[:300]}")
        if want is not None:
            return Outcome("rejected_valid", f"{case.describe()}: {str(exc)[:200]}")
        return Outcome("named_error")
    except Exception as exc:  # noqa: BLE001 (every other exception is a finding)
        return Outcome("unnamed_error", f"{type(exc).__name__}: {str(exc)[:300]}")
    if want is None:
        return Outcome("accepted_invalid", f"{case.describe()}: returned {got}")
    floats = all(type(v) is float for r in got.values() for v in r.values())
    if got != want or not floats:  # equal floats: the same ranking (0.0 and -0.0 are one score)
        return Outcome("wrong_number", f"{case.describe()}: got {got}, expected {want}")
    # ties="search": by score, ties in the order given (dicts keep it), as places k, k - 1, ..., 1
    for q, row in want.items():
        order = sorted(row, key=lambda key, keys=list(row): (-row[key], keys.index(key)))
        if sorted(kept[q], key=lambda key: -kept[q][key]) != order:
            return Outcome("wrong_number", f"{case.describe()}: ties='search' ranks {kept[q]}, expected {order}")
    return Outcome("value")
