"""Ids (labels and cameras): compared only for equality, so converted exactly or refused.

Integers as int64, floats only while they are exact integers, strings coded jointly on the
query and gallery sides (the same code for the same string).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
from retrieval_conformance.reference.contract.arrays import check_ndim, position_text, to_numpy


def is_text(arr: np.ndarray) -> bool:
    """Ids given as strings (numpy unicode or bytes)."""
    return arr.dtype.kind in "US"


def joint_ids(query_name: str, query: np.ndarray, db_name: str, db: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """String ids (``"0001_c1"``, category names) as int64 codes, the same code for the same string.

    Ids are only ever compared for equality, query side against gallery side, so coding both
    sides together (``np.unique`` over their union) keeps every equality and inequality.  A
    string id is never the integer -1 that ``reid-matlab`` treats as junk.  Integer ids pass
    unchanged; strings on one side and numbers on the other are an error.
    """
    if not (is_text(query) or is_text(db)):
        return query, db
    if not (is_text(query) and is_text(db)):
        text, other = (query_name, db_name) if is_text(query) else (db_name, query_name)
        raise TypeError(
            f"{other}: {text} holds strings but {other} holds dtype="
            f"{(db if is_text(query) else query).dtype}; pass ids of one kind on both sides (both strings "
            "or both integers)"
        )
    if query.ndim != 1 or db.ndim != 1:
        bad = query_name if query.ndim != 1 else db_name
        raise ValueError(
            f"{bad}: string ids must be 1-D (one id per item), got shape {(query if query.ndim != 1 else db).shape}"
        )
    joined = np.concatenate([query.astype(str), db.astype(str)])
    codes = np.unique(joined, return_inverse=True)[1].astype(np.int64).reshape(-1)
    return codes[: query.shape[0]], codes[query.shape[0] :]


def labels_pair(query_labels: Any, db_labels: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Single ids (1-D integers) or multi-hot label vectors (2-D, 0/1)."""
    q, d = joint_ids(
        "query_labels", to_numpy("query_labels", query_labels), "db_labels", to_numpy("db_labels", db_labels)
    )
    if q.ndim != d.ndim or q.ndim not in (1, 2):
        raise ValueError(
            "query_labels, db_labels: expected both 1-D (one id per item) or both 2-D "
            f"(multi-hot rows), got shapes {q.shape} and {d.shape}"
        )
    if q.ndim == 1:
        return exact_ids("query_labels", q), exact_ids("db_labels", d)
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"db_labels: expected {q.shape[1]} label columns like query_labels, got {d.shape[1]}")
    out = []
    for name, arr in (("query_labels", q), ("db_labels", d)):
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected 0/1 multi-hot labels, got dtype={arr.dtype}")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            hint = ""
            if arr.shape[1] == 1:  # a column of ids, not multi-hot rows
                hint = (
                    f"; a {arr.shape} column holds one id per row: pass {name}.ravel() (1-D ids), or "
                    "multi-hot rows of 0/1"
                )
            raise ValueError(
                f"{name}: expected multi-hot labels in {{0, 1}}, found {arr[bad].flat[0]} at "
                f"{position_text(arr, bad)}{hint}"
            )
        out.append(np.ascontiguousarray(arr != 0, dtype=np.uint8))
    return out[0], out[1]


def id_vector(name: str, value: Any, length: int, what: str) -> np.ndarray:
    arr = to_numpy(name, value)
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
        return np.ascontiguousarray(arr.astype(np.int64, copy=False))  # int64 ids are used as they are
    if kind == "u":
        too_big = arr > INT64_MAX
        if too_big.any():
            raise ValueError(
                f"{name}: id {arr[too_big].flat[0]} at {position_text(arr, too_big)} does not fit in int64 "
                f"(ids must be at most 2**63 - 1 = {INT64_MAX}); {_id_hint(name)}"
            )
        return np.ascontiguousarray(arr.astype(np.int64))
    if kind != "f":
        raise TypeError(f"{name}: expected integer ids, got dtype={arr.dtype}")
    bad = ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        raise ValueError(
            f"{name}: expected integer ids, found non-integer value {arr[bad].flat[0]} at {position_text(arr, bad)}"
        )
    # below 2**(nmant + 1) a float of this dtype can only come from the integer it shows;
    # from there on it may be a neighbouring integer rounded (2**53 + 1 -> 2**53 in float64)
    bits = min(np.finfo(arr.dtype).nmant + 1, 62)
    beyond = np.abs(arr) >= 2.0**bits
    if beyond.any():
        raise ValueError(
            f"{name}: float id {arr[beyond].flat[0]} at {position_text(arr, beyond)} is at or beyond 2**{bits}, where "
            f"{arr.dtype} no longer represents every integer exactly (different ids may have been "
            f"rounded to one); pass integer ids (int64), or {_id_hint(name)}"
        )
    return np.ascontiguousarray(arr.astype(np.int64))
