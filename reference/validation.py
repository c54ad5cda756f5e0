"""Shared input validation: every check names the argument and says what was expected.

All implementations receive input only through these helpers (via ``evaluate``), so no
array reaches numpy, torch or C code before its shape, dtype and values were checked.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import numpy as np


def _to_numpy(name: str, value: Any) -> np.ndarray:
    """Accept numpy arrays, array-likes and torch tensors (moved to the CPU)."""
    if value is None:
        raise TypeError(f"{name}: expected an array, got None")
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name}: expected an array-like of numbers ({exc})") from None
    if arr.dtype == object:
        raise TypeError(f"{name}: expected an array of numbers, got dtype=object (ragged or mixed input?)")
    return arr


def _where(arr: np.ndarray, mask: np.ndarray) -> str:
    idx = np.argwhere(mask)[0]
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def check_ndim(name: str, arr: np.ndarray, ndim: int, what: str) -> None:
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array ({what}), got shape {arr.shape}")


def check_finite(name: str, arr: np.ndarray) -> None:
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        raise ValueError(
            f"{name}: expected finite values, found {arr[bad].flat[0]} at {_where(arr, bad)}; "
            "replace NaN/inf (e.g. by a large distance) before evaluating"
        )


def float_matrix(name: str, value: Any, what: str) -> np.ndarray:
    """A finite 2-D float32/float64 array (integers are converted to float64 exactly)."""
    arr = _to_numpy(name, value)
    check_ndim(name, arr, 2, what)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "fiu":
        raise TypeError(f"{name}: expected a float or integer array, got dtype={arr.dtype}")
    if arr.dtype.kind in "iu":
        if arr.size and np.abs(arr.astype(np.float64)).max() >= 2.0**53:
            raise ValueError(f"{name}: integer values must stay below 2**53 to convert exactly")
        arr = arr.astype(np.float64)
    elif arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)  # float16 and longdouble: float64 keeps the order
    check_finite(name, arr)
    return np.ascontiguousarray(arr)


def bool_matrix(name: str, value: Any, shape: Tuple[int, int], what: str) -> np.ndarray:
    """A (Q, N) matrix of booleans, given as bool or as 0/1 numbers."""
    arr = _to_numpy(name, value)
    check_ndim(name, arr, 2, what)
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} ({what}), got {arr.shape}")
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"{name}: expected bool or 0/1 values, got dtype={arr.dtype}")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise ValueError(
                f"{name}: expected bool or 0/1 values, found {arr[bad].flat[0]} at {_where(arr, bad)}"
            )
        arr = arr != 0
    return np.ascontiguousarray(arr)


def codes_pair(query_codes: Any, db_codes: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Binary codes in {-1, +1} or {0, 1} -> uint8 bits (+1 -> 1, -1 -> 0; Hamming is kept).

    ``sign(0) = 0`` leaves zeros in "±1" codes (thuml/DPH#3); such codes are rejected
    rather than guessed at (CONVENTIONS §1).
    """
    out = []
    arrays = {"query_codes": _to_numpy("query_codes", query_codes), "db_codes": _to_numpy("db_codes", db_codes)}
    for name, arr in arrays.items():
        check_ndim(name, arr, 2, "one binary code per row")
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected numeric codes in {{-1,+1}} or {{0,1}}, got dtype={arr.dtype}")
        check_finite(name, arr)
    signed = any((a == -1).any() for a in arrays.values())
    for name, arr in arrays.items():
        allowed = (arr == -1) | (arr == 1) if signed else (arr == 0) | (arr == 1)
        if not allowed.all():
            bad = ~allowed
            value = arr[bad].flat[0]
            hint = ""
            if signed and value == 0:
                hint = (
                    "; a 0 in ±1 codes usually comes from sign(0) = 0 (np.sign/torch.sign): "
                    "binarise with np.where(x >= 0, 1, -1)"
                )
            expected = "{-1, +1}" if signed else "{-1, +1} or {0, 1}"
            raise ValueError(
                f"{name}: expected codes in {expected}, found {value} at {_where(arr, bad)}{hint}"
            )
        out.append(np.ascontiguousarray(arr > 0, dtype=np.uint8))
    q, d = out
    if q.shape[1] != d.shape[1]:
        raise ValueError(
            f"db_codes: expected {q.shape[1]} bits per code like query_codes, got {d.shape[1]}"
        )
    if q.shape[1] == 0:
        raise ValueError("query_codes: expected at least one bit per code, got 0")
    return q, d


def labels_pair(query_labels: Any, db_labels: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Single ids (1-D integers) or multi-hot label vectors (2-D, 0/1)."""
    q = _to_numpy("query_labels", query_labels)
    d = _to_numpy("db_labels", db_labels)
    if q.ndim != d.ndim or q.ndim not in (1, 2):
        raise ValueError(
            "query_labels, db_labels: expected both 1-D (one id per item) or both 2-D "
            f"(multi-hot rows), got shapes {q.shape} and {d.shape}"
        )
    if q.ndim == 1:
        out = []
        for name, arr in (("query_labels", q), ("db_labels", d)):
            if arr.dtype.kind == "f":
                if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
                    raise ValueError(f"{name}: expected integer ids, found non-integer values")
            elif arr.dtype.kind not in "iub":
                raise TypeError(f"{name}: expected integer ids, got dtype={arr.dtype}")
            out.append(np.ascontiguousarray(arr.astype(np.int64)))
        return out[0], out[1]
    if q.shape[1] != d.shape[1]:
        raise ValueError(
            f"db_labels: expected {q.shape[1]} label columns like query_labels, got {d.shape[1]}"
        )
    out = []
    for name, arr in (("query_labels", q), ("db_labels", d)):
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected 0/1 multi-hot labels, got dtype={arr.dtype}")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise ValueError(
                f"{name}: expected multi-hot labels in {{0, 1}}, found {arr[bad].flat[0]} at {_where(arr, bad)}"
            )
        out.append(np.ascontiguousarray(arr != 0, dtype=np.uint8))
    return out[0], out[1]


def id_vector(name: str, value: Any, length: int, what: str) -> np.ndarray:
    arr = _to_numpy(name, value)
    check_ndim(name, arr, 1, what)
    if arr.shape[0] != length:
        raise ValueError(f"{name}: expected length {length} ({what}), got {arr.shape[0]}")
    if arr.dtype.kind not in "iub":
        if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
            return np.ascontiguousarray(arr.astype(np.int64))
        raise TypeError(f"{name}: expected integer ids, got dtype={arr.dtype}")
    return np.ascontiguousarray(arr.astype(np.int64))


def positive_int(name: str, value: Any, allow_none: bool = False) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a positive integer, got {value!r}")
    if value < 1:
        hint = " (use k=None for the whole gallery)" if name == "k" else ""
        raise ValueError(f"{name}: expected a positive integer (>= 1), got {value}{hint}")
    return int(value)


def non_negative_number(name: str, value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a non-negative number, got {value!r}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite non-negative number, got {value}")
    return float(value)


def choice(name: str, value: Any, allowed: Tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {value!r}")
    return value
