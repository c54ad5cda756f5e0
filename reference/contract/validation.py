"""Shared input validation: every check names the argument and says what was expected.

All implementations receive input only through these helpers (via ``evaluate``), so no
array reaches numpy, torch or C code before its shape, dtype and values were checked.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.arrays import (
    ID_ARGUMENTS,
    array_input,
    check_ndim,
    first_where,
    index_text,
    position_text,
    shown,
    to_numpy,
)
from retrieval_conformance.reference.contract.codes import scan_codes, unpack_words
from retrieval_conformance.reference.contract.conventions import RETIRED
from retrieval_conformance.reference.contract.ids import INT64_MAX, exact_ids, id_vector, joint_ids, labels_pair
from retrieval_conformance.reference.contract.precision import LowPrecisionWarning

__all__ = [  # the names callers use; arrays.py and ids.py hold the first two steps
    "ID_ARGUMENTS",
    "INT64_MAX",
    "MAX_GRADE",
    "MAX_RANK_LIMIT",
    "LowPrecisionWarning",
    "array_input",
    "bool_matrix",
    "NonFiniteError",
    "check_finite",
    "check_ndim",
    "choice",
    "exact_float64",
    "codes_pair",
    "exact_ids",
    "float_matrix",
    "id_vector",
    "joint_ids",
    "labels_pair",
    "max_rank_value",
    "non_negative_number",
    "nonfinite_message",
    "positive_int",
    "relevance_matrix",
    "shown",
]

#: the largest relevance grade: with ``gain="exponential"`` its gain 2**52 - 1 is still an exact
#: float64, so every implementation sums gains without rounding them
MAX_GRADE = 52


class NonFiniteError(ValueError):
    """NaN or inf in a ranking matrix: ``name`` (the argument), ``at`` (the index of the first
    one, row-major), or None where the raiser has no index."""

    def __init__(self, message: str, name: str = "", at: Optional[Tuple[int, ...]] = None):
        super().__init__(message)
        self.name = name
        self.at = at


def check_finite(name: str, arr: np.ndarray) -> None:
    """No NaN or inf in a float array; read in chunks, so no array-sized mask is built."""
    if arr.dtype.kind == "f":
        at = first_where(arr, _not_finite)
        if at is not None:
            raise NonFiniteError(_nonfinite_message(name, arr, at), name, at)


def _not_finite(chunk: np.ndarray) -> np.ndarray:
    return ~np.isfinite(chunk)


def _nonfinite_message(name: str, arr: np.ndarray, at: Tuple[int, ...]) -> str:
    """The error of :func:`check_finite`, for the first non-finite value of ``arr``, at ``at``."""
    return nonfinite_message(name, arr[at], at)


def nonfinite_message(name: str, value: Any, at: Tuple[int, ...]) -> str:
    """The error of :func:`check_finite` for ``value`` at index ``at`` of argument ``name``
    (also what ``evaluate`` shows when an implementation that checks finiteness itself,
    ``Implementation.checks_finite``, finds one)."""
    return (
        f"{name}: expected finite values, found {value} at {index_text(at)}; "
        "replace NaN/inf (e.g. by a large distance) before evaluating"
    )


def float_matrix(name: str, value: Any, what: str, finite: bool = True) -> np.ndarray:
    """A finite 2-D float32/float64 array (integers are converted to float64 exactly; float16
    exactly, long double rounded in order: ``evaluate`` warns about both, see :mod:`.precision`).
    ``finite=False``: NaN and inf are left to the caller to check (an implementation that
    checks them as it reads the array)."""
    arr = to_numpy(name, value)
    check_ndim(name, arr, 2, what)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "fiu":
        raise TypeError(f"{name}: expected a float or integer array, got dtype={arr.dtype}")
    if arr.dtype.kind in "iu":
        arr = exact_float64(name, arr)
    elif arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if finite:
        check_finite(name, arr)
    return np.ascontiguousarray(arr)


#: integers of a smaller magnitude convert to float64 exactly (53 significant bits)
EXACT_FLOAT64_BELOW = 2.0**53


def exact_float64(name: str, arr: np.ndarray, counted: Optional[np.ndarray] = None) -> np.ndarray:
    """The float or integer ``arr`` as float64, value for value: never negated or rounded in its
    own dtype (``-x`` of an unsigned ``x`` wraps).  An integer of magnitude ``2**53`` or more is
    refused, naming its element: beyond, distinct integers can become one float64 (a tie the
    data does not have).  ``counted``: a mask of the elements that count (the others may hold
    anything)."""
    out = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and out.size:
        beyond = np.abs(out) >= EXACT_FLOAT64_BELOW
        if counted is not None:
            beyond &= counted
        if beyond.any():
            where = np.argwhere(beyond)[0]
            raise ValueError(
                f"{name}{index_text(where)}: {arr[tuple(where)]} is beyond 2**53 in magnitude, where {arr.dtype} "
                "integers no longer convert to float64 exactly; integer values must stay below 2**53 (rescale "
                "them, or pass float64)"
            )
    return out


def bool_matrix(name: str, value: Any, shape: Tuple[int, int], what: str) -> np.ndarray:
    """A (Q, N) matrix of booleans, given as bool or as 0/1 numbers."""
    arr = to_numpy(name, value)
    check_ndim(name, arr, 2, what)
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} ({what}), got {arr.shape}")
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"{name}: expected bool or 0/1 values, got dtype={arr.dtype}")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise ValueError(
                f"{name}: expected bool or 0/1 values, found {arr[bad].flat[0]} at {position_text(arr, bad)}"
            )
        arr = arr != 0
    return np.ascontiguousarray(arr)


def relevance_matrix(
    name: str, value: Any, shape: Tuple[int, int], what: str
) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """A (Q, N) relevance matrix: booleans, 0/1 numbers, or graded relevance.

    Returns ``(relevant, grades)``: ``relevant`` is bool; ``grades`` is an int64 matrix of the
    grades 0 .. MAX_GRADE when any grade exceeds 1 (graded relevance, which nDCG reads: spec
    §2 relevance matrix), else None (binary relevance).
    """
    arr = to_numpy(name, value)
    check_ndim(name, arr, 2, what)
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} ({what}), got {arr.shape}")
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr), None
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name}: expected bool or non-negative integer grades, got dtype={arr.dtype}")
    bad = (
        ~((arr >= 0) & (arr <= MAX_GRADE) & (arr == np.floor(arr)))
        if arr.dtype.kind == "f"
        else ((arr < 0) | (arr > MAX_GRADE))
    )
    if bad.any():
        raise ValueError(
            f"{name}: expected bool or integer grades 0 .. {MAX_GRADE} (0 = not relevant), found "
            f"{arr[bad].flat[0]} at {position_text(arr, bad)}; map other judgements to grades first"
        )
    relevant = np.ascontiguousarray(arr != 0)
    if arr.size == 0 or arr.max() <= 1:
        return relevant, None
    return relevant, np.ascontiguousarray(arr.astype(np.int64))


def codes_pair(
    query_codes: Any, db_codes: Any, signed_elsewhere: bool = False, packed: bool = False
) -> Tuple[np.ndarray, np.ndarray]:
    """Binary codes in {-1, +1} or {0, 1} -> uint8 bits (+1 -> 1, -1 -> 0; Hamming is kept).

    ``sign(0) = 0`` leaves zeros in "±1" codes (thuml/DPH#3); such codes are rejected
    rather than guessed at (spec §1).  The codes are ±1 codes when a -1 is anywhere: in these
    arrays, or (``signed_elsewhere``) in query rows of another block of the same evaluation, so
    the verdict on a 0 never depends on how the queries are blocked.

    Returns the (Q, B) and (N, B) bits; with ``packed``, the gallery instead as (N, ceil(B/64))
    uint64 words (``codes.pack_words``' layout, what the C implementation reads).  Each array
    is read in chunks of rows (``codes.scan_codes``): no temporary grows with the gallery.
    """
    arrays = {"query_codes": to_numpy("query_codes", query_codes), "db_codes": to_numpy("db_codes", db_codes)}
    scans = {}
    for name, arr in arrays.items():
        check_ndim(name, arr, 2, "one binary code per row")
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected numeric codes in {{-1,+1}} or {{0,1}}, got dtype={arr.dtype}")
        scans[name] = scan = scan_codes(arr)
        if scan.nonfinite is not None:
            raise ValueError(_nonfinite_message(name, arr, scan.nonfinite))
    signed = signed_elsewhere or any(scan.minus_one for scan in scans.values())
    for name, scan in scans.items():
        at = scan.first_invalid(signed)
        if at is not None:
            raise ValueError(_invalid_code_message(name, arrays[name][at], at, signed))
    q, d = scans.values()
    if q.n_bits != d.n_bits:
        raise ValueError(f"db_codes: expected {q.n_bits} bits per code like query_codes, got {d.n_bits}")
    if q.n_bits == 0:
        raise ValueError("query_codes: expected at least one bit per code, got 0")
    return unpack_words(q.words, q.n_bits), d.words if packed else unpack_words(d.words, d.n_bits)


def _invalid_code_message(name: str, value: Any, at: Tuple[int, ...], signed: bool) -> str:
    """The error for a code ``value`` at index ``at`` outside {-1, +1} (``signed``) or {0, 1}."""
    hint = ""
    if signed and value == 0:
        hint = (
            "; a 0 in ±1 codes usually comes from sign(0) = 0 (np.sign/torch.sign): "
            "binarise with np.where(x >= 0, 1, -1)"
        )
    expected = "{-1, +1}" if signed else "{-1, +1} or {0, 1}"
    return f"{name}: expected codes in {expected}, found {value} at {index_text(at)}{hint}"


def cams_pair(query_cams: Any, db_cams: Any, n_queries: int, n_gallery: int) -> Tuple[np.ndarray, np.ndarray]:
    """Cameras as int64, one per query and one per gallery item (string cameras coded jointly)."""
    query_cams, db_cams = joint_ids(
        "query_cams", array_input("query_cams", query_cams), "db_cams", array_input("db_cams", db_cams)
    )
    return (
        id_vector("query_cams", query_cams, n_queries, "one camera per query"),
        id_vector("db_cams", db_cams, n_gallery, "one camera per gallery item"),
    )


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
    # numpy's stubs do not list numbers.Real, which np.isfinite takes like a float
    if not np.isfinite(value) or value < 0:  # type: ignore[call-overload]
        raise ValueError(f"{name}: expected a finite non-negative number, got {value}")
    return float(value)


def choice(name: str, value: Any, allowed: Tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {list(allowed)} (a str), got {type(value).__name__}")
    if (name, value) in RETIRED:
        raise ValueError(f"{name}: {RETIRED[name, value]}")
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {shown(value)}")
    return value
