"""Inputs in a precision other than float32/float64: said, never silently changed.

The implementations rank float32 or float64 values.  float16 and bfloat16 values are read
exactly (every one is a float32) but keep 11 and 8 significant bits: items whose distances
differ in float32 are often tied in them, which changes AP and CMC.  Long double values (64
significant bits on x86) are rounded to float64, where distinct values can become tied.  Each
warns with :class:`LowPrecisionWarning`, counting the tied values it is about.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any, Callable, Dict, Optional

import numpy as np

#: rows whose ties a warning counts (a bound on the work a warning may cost)
COUNTED_ROWS = 64
#: long double values sorted at a time (a chunk of rows)
CHUNK_VALUES = 2**22
#: significant bits of the narrow floats
NARROW_BITS = {"float16": 11, "bfloat16": 8}


class LowPrecisionWarning(UserWarning):
    """Values given in a precision so low that items which differ may be tied."""


#: the float inputs whose precision is checked: ranked as they are, or turned into distances
RANKED = ("distances", "scores")
EMBEDDINGS = ("query_embeddings", "db_embeddings")


def precisions(inputs: Dict[str, Any]) -> Dict[str, str]:
    """The low-precision float inputs among ``inputs`` (read before any conversion)."""
    kinds = {name: precision_of(inputs.get(name)) for name in RANKED + EMBEDDINGS}
    return {name: kind for name, kind in kinds.items() if kind is not None}


def warn_low_precision(
    kinds: Dict[str, str], arrays: Dict[str, Any], distances_of: Callable[[Any, Any], np.ndarray]
) -> None:
    """One warning per low-precision input of ``kinds`` (from :func:`precisions`), counting the
    ties it is about in ``arrays`` (the inputs as numpy arrays): a matrix's own values, or the
    distances ``distances_of(query rows, db_embeddings)`` of the first query rows."""
    for name, kind in kinds.items():
        arr = arrays.get(name)
        if arr is None or getattr(arr, "ndim", 0) != 2:
            continue  # the input's own check names what is wrong
        if name in RANKED and kind in NARROW_BITS:
            warn_narrow(name, kind, np.asarray(arr[:COUNTED_ROWS], dtype=np.float64))
        elif name in RANKED:
            warn_longdouble(name, merged_by_rounding(arr), 0, len(arr))
        elif kind in NARROW_BITS:
            try:
                dist = distances_of(arrays["query_embeddings"][:COUNTED_ROWS], arrays["db_embeddings"])
            except (ValueError, TypeError, KeyError):
                continue  # invalid embeddings: their error comes, in order, from the evaluation
            warn_narrow(name, kind, dist, of="distances computed from them")
        else:
            step = max(1, CHUNK_VALUES // max(arr.shape[1], 1))
            changed = sum(
                int((arr[lo : lo + step] != arr[lo : lo + step].astype(np.float64)).sum())
                for lo in range(0, len(arr), step)
            )
            warn_longdouble(name, 0, changed, len(arr))


def precision_of(value: Any) -> Optional[str]:
    """``"float16"``, ``"bfloat16"`` or ``"longdouble"`` when ``value`` (an array or a tensor, before
    any conversion: a bfloat16 tensor is read as float32) holds such floats, else None."""
    dtype = str(getattr(value, "dtype", ""))
    if dtype in ("torch.bfloat16", "bfloat16"):
        return "bfloat16"
    if dtype in ("torch.float16", "torch.half", "float16"):
        return "float16"
    if isinstance(value, np.ndarray) and value.dtype == np.longdouble and np.finfo(np.longdouble).nmant > 52:
        return "longdouble"
    return None


def tied_values(rows: np.ndarray) -> int:
    """Values equal to another value of their row (every member of a tie group of two or more)."""
    if rows.ndim != 2 or rows.shape[1] < 2:
        return 0
    ordered = np.sort(rows, axis=1)
    equal = ordered[:, 1:] == ordered[:, :-1]
    tied = np.zeros(ordered.shape, dtype=bool)
    tied[:, 1:] |= equal
    tied[:, :-1] |= equal
    return int(tied.sum())


def merged_by_rounding(wide: np.ndarray) -> int:
    """Values of a 2-D long double array that rounding to float64 makes equal to a distinct
    neighbour of their row (rounding is monotone, so the sorted order is kept); read a chunk of
    rows at a time, so a memory-mapped matrix is never sorted whole."""
    if wide.ndim != 2 or wide.shape[1] < 2:
        return 0
    merged, step = 0, max(1, CHUNK_VALUES // wide.shape[1])
    for lo in range(0, wide.shape[0], step):
        ordered = np.sort(np.asarray(wide[lo : lo + step]), axis=1)
        rounded = ordered.astype(np.float64)
        merged += int(((rounded[:, 1:] == rounded[:, :-1]) & (ordered[:, 1:] != ordered[:, :-1])).sum())
    return merged


def warn_narrow(name: str, kind: str, values: np.ndarray, of: str = "values") -> None:
    """float16 / bfloat16 ``name``: ``values`` are the ranked values (the matrix itself, or the
    distances computed from embeddings, ``of="distances computed from them"``)."""
    rows = min(len(values), COUNTED_ROWS)
    warnings.warn(
        f"{name}: {kind} values keep {NARROW_BITS[kind]} significant bits, so items whose distances differ "
        f"in float32 may be tied here ({tied_values(values[:rows])} {of} tied with another of their row in "
        f"the first {rows} row{'' if rows == 1 else 's'}), which changes AP and CMC; compute {name} in "
        "float32 or float64",
        LowPrecisionWarning,
        stacklevel=outside_package(),
    )


def warn_longdouble(name: str, merged: int, changed: int, rows: int) -> None:
    """Long double ``name`` rounded to float64: ``merged`` distinct values of a row became tied
    (ranked values), or ``changed`` values were rounded (embeddings); silent when neither."""
    if merged:
        what = f"{merged} distinct value{'' if merged == 1 else 's'} of the same row became tied"
    elif changed:
        what = f"{changed} value{'' if changed == 1 else 's'} changed, and so may the distances"
    else:
        return
    warnings.warn(
        f"{name}: long double values are compared in float64, and rounding {rows} row{'' if rows == 1 else 's'} "
        f"to float64 changed the input ({what}), which can change AP and CMC; pass float64 values "
        f"({name}.astype(np.float64)) to accept the rounding, or subtract a common offset first so that "
        "float64 tells the values apart",
        LowPrecisionWarning,
        stacklevel=outside_package(),
    )


def outside_package() -> int:
    """The ``stacklevel`` of the first caller outside this package (where the warning belongs)."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame: Optional[FrameType] = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level
