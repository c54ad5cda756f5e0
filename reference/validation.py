"""Shared input validation: every check names the argument and says what was expected.

All implementations receive input only through these helpers (via ``evaluate``), so no
array reaches numpy, torch or C code before its shape, dtype and values were checked.
"""
from __future__ import annotations

import numbers
import operator
from typing import Any, Optional, Tuple

import numpy as np


def _to_numpy(name: str, value: Any) -> np.ndarray:
    """Accept numpy arrays, array-likes and torch tensors (moved to the CPU).

    Everything else is refused here, by name, before numpy can turn it into something else:
    a generator or a set would become a 0-d object array, a string an array of one string.
    """
    if value is None:
        raise TypeError(f"{name}: expected an array, got None")
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = _tensor_to_numpy(name, value)
    elif isinstance(value, (str, bytes, bytearray, dict, set, frozenset)) or hasattr(value, "__next__"):
        raise TypeError(
            f"{name}: expected an array (numpy array, torch tensor or nested list of numbers), "
            f"got a {type(value).__name__}; pass np.asarray(list(...)) of the values instead"
        )
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(
            f"{name}: expected a rectangular array of numbers, got a {type(value).__name__} numpy cannot "
            f"read as one ({str(exc)[:200]}); every row must have the same length"
        ) from None
    if arr.dtype == object:
        raise TypeError(
            f"{name}: expected an array of numbers, got dtype=object (ragged rows, or Python objects such "
            "as Fraction or Decimal?); pass a float or integer array, e.g. np.asarray(x, dtype=np.float64)"
        )
    if arr.dtype.fields is not None or arr.dtype.kind == "V":  # strings, complex, ...: the callers name them
        raise TypeError(
            f"{name}: expected real numbers, got dtype={arr.dtype}; pass a float, integer or bool array"
        )
    return arr


def _tensor_to_numpy(name: str, tensor: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array, or a named error for tensors without plain values."""
    layout = str(getattr(tensor, "layout", "torch.strided"))
    if layout != "torch.strided":
        raise TypeError(f"{name}: got a torch tensor with layout={layout}; pass a dense one: {name}.to_dense()")
    device = str(getattr(tensor, "device", "cpu"))
    if device == "meta":
        raise TypeError(
            f"{name}: got a torch tensor on the 'meta' device, which has a shape but no values; "
            "pass a tensor that holds the values (on any real device)"
        )
    dtype = str(getattr(tensor, "dtype", ""))
    if dtype == "torch.bfloat16":
        tensor = tensor.float()  # exact: every bfloat16 is a float32 (numpy has no bfloat16)
    elif dtype.startswith("torch.complex"):
        raise TypeError(f"{name}: expected real numbers, got a tensor of dtype={dtype}; pass a real tensor")
    try:
        return tensor.detach().cpu().numpy()
    except Exception as exc:  # quantized, nested or other tensors numpy cannot view
        raise TypeError(
            f"{name}: cannot read this torch tensor (dtype={dtype}, device={device}: {str(exc)[:200]}); "
            f"pass a plain dense tensor, e.g. {name}.to_dense().float()"
        ) from None


def array_input(name: str, value: Any) -> np.ndarray:
    """An array argument as a numpy array (no copy for numpy arrays and CPU tensors), at least 1-D."""
    arr = _to_numpy(name, value)
    if arr.ndim == 0:
        raise TypeError(
            f"{name}: expected an array, got the scalar {str(arr.item())[:40]!s} ({type(value).__name__}); "
            "pass one value per query or gallery item"
        )
    return arr


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message must stay readable whatever was passed."""
    text = object.__repr__(value) if isinstance(value, (list, tuple, dict, set)) and len(value) > 20 else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        if arr.dtype == np.float16:
            _warn_float16(name, arr)
        arr = arr.astype(np.float64)  # float16 and longdouble: float64 keeps the order
    check_finite(name, arr)
    return np.ascontiguousarray(arr)


class LowPrecisionWarning(UserWarning):
    """Values given in a precision so low that items which differ may be tied."""


def _warn_float16(name: str, arr: np.ndarray) -> None:
    """float16 keeps 11 significant bits: distances computed in float32 often collapse into ties."""
    import warnings

    tied = sum(int(row.size - np.unique(row).size) for row in arr[:64])
    warnings.warn(
        f"{name}: float16 values keep 11 significant bits, so items whose distances differ in float32 "
        f"may be tied here ({tied} tied values in the first {min(len(arr), 64)} rows), which changes "
        f"AP and CMC; compute {name} in float32 or float64",
        LowPrecisionWarning, stacklevel=_outside_package())


def _outside_package() -> int:
    """The ``stacklevel`` of the first caller outside this package (where the warning belongs)."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


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
        return exact_ids("query_labels", q), exact_ids("db_labels", d)
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
            hint = ""
            if arr.shape[1] == 1:  # a column of ids, not multi-hot rows
                hint = (f"; a {arr.shape} column holds one id per row: pass {name}.ravel() (1-D ids), or "
                        "multi-hot rows of 0/1")
            raise ValueError(
                f"{name}: expected multi-hot labels in {{0, 1}}, found {arr[bad].flat[0]} at {_where(arr, bad)}{hint}"
            )
        out.append(np.ascontiguousarray(arr != 0, dtype=np.uint8))
    return out[0], out[1]


def id_vector(name: str, value: Any, length: int, what: str) -> np.ndarray:
    arr = _to_numpy(name, value)
    check_ndim(name, arr, 1, what)
    if arr.shape[0] != length:
        raise ValueError(f"{name}: expected length {length} ({what}), got {arr.shape[0]}")
    if arr.dtype.kind == "f" and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
        raise TypeError(f"{name}: expected integer ids, got dtype={arr.dtype} with non-integer values")
    return exact_ids(name, arr)


#: the largest id magnitude accepted: ids are compared as int64
INT64_MAX = 2**63 - 1


def _id_hint(name: str) -> str:
    """How to map ids that cannot be compared as int64 to ones that can (same equalities)."""
    kind = name.split("_", 1)[1]  # "labels" or "cams"
    return (
        f"map the ids to small integers first: codes = np.unique(np.concatenate([query_{kind}, "
        f"db_{kind}]), return_inverse=True)[1], then query_{kind} = codes[:Q], db_{kind} = codes[Q:]"
    )


def exact_ids(name: str, arr: np.ndarray) -> np.ndarray:
    """1-D ids (labels or cameras) as int64, converted exactly or rejected.

    Ids are compared for equality, so two different ids must never become one int64.
    Signed integers and bools always fit.  Unsigned integers above ``2**63 - 1`` would wrap
    to negative numbers (``2**64 - 1`` to -1, which ``reid-matlab`` reads as junk).  Floats
    are accepted only as integers below ``2**53`` (float64; ``2**24`` for float32): from
    there on a float no longer tells neighbouring integers apart, so such ids may already
    have been merged by rounding, and from ``2**63`` on the int64 conversion overflows
    (``1e20`` and ``2e20`` would become the same number).

    Raises
    ------
    TypeError
        Ids that are not numbers (strings, complex numbers, ...).
    ValueError
        Non-integer floats, floats beyond the exact-integer range of their dtype, unsigned
        ids beyond ``2**63 - 1``.
    """
    kind = arr.dtype.kind
    if kind in "bi":  # every signed integer type is at most 64 bits wide
        return np.ascontiguousarray(arr.astype(np.int64))
    if kind == "u":
        too_big = arr > INT64_MAX
        if too_big.any():
            raise ValueError(
                f"{name}: id {arr[too_big].flat[0]} at {_where(arr, too_big)} does not fit in int64 "
                f"(ids must be at most 2**63 - 1 = {INT64_MAX}); {_id_hint(name)}"
            )
        return np.ascontiguousarray(arr.astype(np.int64))
    if kind != "f":
        raise TypeError(f"{name}: expected integer ids, got dtype={arr.dtype}")
    bad = ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        raise ValueError(
            f"{name}: expected integer ids, found non-integer value {arr[bad].flat[0]} at {_where(arr, bad)}"
        )
    # below 2**(nmant + 1) a float of this dtype can only come from the integer it shows;
    # from there on it may be a neighbouring integer rounded (2**53 + 1 -> 2**53 in float64)
    bits = min(np.finfo(arr.dtype).nmant + 1, 62)
    beyond = np.abs(arr) >= 2.0**bits
    if beyond.any():
        raise ValueError(
            f"{name}: float id {arr[beyond].flat[0]} at {_where(arr, beyond)} is at or beyond 2**{bits}, where "
            f"{arr.dtype} no longer represents every integer exactly (different ids may have been "
            f"rounded to one); pass integer ids (int64), or {_id_hint(name)}"
        )
    return np.ascontiguousarray(arr.astype(np.int64))


def positive_int(name: str, value: Any, allow_none: bool = False) -> Optional[int]:
    """``value`` as a Python int >= 1 (of any size: nothing is converted to a fixed width here).

    Python and numpy integers are accepted (``np.uint64(2**64 - 1)`` stays 2**64 - 1); bools,
    floats (even integral ones: ``1e20`` is not the integer the caller had in mind) and
    strings are rejected.
    """
    if value is None and allow_none:
        return None
    what = "k=None for the whole gallery, or " if name == "k" and allow_none else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name}: expected a positive integer, got {shown(value)} ({type(value).__name__}); "
            f"pass {what}a Python int, e.g. {name}={_example(value)}"
        )
    value = operator.index(value)  # exact, whatever the integer type
    if value < 1:
        hint = " (use k=None for the whole gallery)" if name == "k" else ""
        raise ValueError(f"{name}: expected a positive integer (>= 1), got {value}{hint}")
    return value


def _example(value: Any) -> int:
    """A sensible integer to suggest in place of a rejected ``value``."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 10
    if not np.isfinite(number) or number < 1 or number > 2**53:
        return 10
    return int(number)


#: the longest CMC ``evaluate`` returns.  The CMC is flat beyond the gallery, so a longer
#: curve holds no information, while it costs max_rank values per query.
MAX_RANK_LIMIT = 10**7


def max_rank_value(value: Any) -> int:
    """``max_rank`` as a Python int in 1 .. MAX_RANK_LIMIT (the CMC has exactly that many values)."""
    value = positive_int("max_rank", value)
    if value > MAX_RANK_LIMIT:
        raise ValueError(
            f"max_rank: expected at most {MAX_RANK_LIMIT}, got {value}: the CMC has max_rank values and "
            "is flat beyond the gallery (CMC@K = CMC@N for every K >= N gallery items), so a longer "
            "curve holds no information; pass max_rank <= the gallery size, e.g. max_rank=min(max_rank, N)"
        )
    return value


def non_negative_number(name: str, value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a non-negative number, got {shown(value)} ({type(value).__name__})")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite non-negative number, got {value}")
    return float(value)


def choice(name: str, value: Any, allowed: Tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {list(allowed)} (a str), got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {shown(value)}")
    return value
