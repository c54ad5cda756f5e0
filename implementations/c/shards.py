"""Pass 2 of an evaluation over gallery shards in C (``csrc/rc_shard.c``): per query row of a
shard, its non-junk items counted against the row's points, the counts
:func:`~.dask.shards.shard_counts` returns (items ahead of each point under ``stable`` /
``reverse``, below and at each point's distance under the other policies).

The numpy loop of :mod:`.dask.shards` is the fallback where the library is not built (or was
built without this unit): both give the same integers (a test compares them).  The function is
bound here, apart from the library's load checks (:mod:`.library`), so that a library without
it leaves the rest of the ``c`` implementation usable.
"""

from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np
from retrieval_conformance.implementations.c.library import _load
from retrieval_conformance.implementations.c.threads import resolve_threads

#: the distances' type codes of rc_shard.c (Hamming distances travel as int64)
_F64, _F32, _I64 = 0, 1, 2
#: what is counted: below and at each point's key, or the items ahead under an index order
_COUNTS = {"stable": 1, "reverse": 2}
_BELOW_AT = 0
_OK, _NOMEM = 0, 2
_p, _i64 = ctypes.c_void_p, ctypes.c_int64


def shard_kernel():
    """The bound ``rc_shard_counts``, or None where the C library (or this unit of it) is absent."""
    lib = _load()
    function = getattr(lib, "rc_shard_counts", None) if lib is not None else None
    if function is not None and function.restype is not _i64:
        function.restype = _i64
        function.argtypes = [_i64, _p, _p] + [_i64] * 4 + [_p] * 5 + [_i64]
    return function


def unavailable_reason() -> Optional[str]:
    """Why the C counts cannot be used here, or None."""
    if shard_kernel() is not None:
        return None
    lib = _load()
    return (
        (
            "the C library has no rc_shard_counts (built before csrc/rc_shard.c); rebuild it: "
            "RC_BUILD_C=1 pip install ..."
        )
        if lib is not None
        else "the C library is not built"
    )


def count_block(
    dist: np.ndarray,
    junk: Optional[np.ndarray],
    offset: int,
    ties: Optional[str],
    point_start: np.ndarray,
    point_key: np.ndarray,
    point_index: Optional[np.ndarray],
    out_a: np.ndarray,
    out_b: Optional[np.ndarray],
) -> None:
    """Counts of the rows of ``dist`` (one shard's distances, items at global index ``offset``
    onwards; ``junk`` the same shape or None) against their points: row ``r``'s are
    ``point_start[r]:point_start[r + 1]`` of ``point_key`` (and ``point_index``, global gallery
    indices, for ``ties`` ``"stable"`` / ``"reverse"``).  Writes the items ahead of each point to
    ``out_a`` (``ties`` an index order), or the items below and at its key to ``out_a`` and
    ``out_b`` (``ties`` None).  Raises ``MemoryError`` when the per-thread arrays cannot grow."""
    function = shard_kernel()
    if function is None:
        raise RuntimeError(f"C shard counts unavailable: {unavailable_reason()}")
    if dist.dtype == np.float64:
        kind = _F64
    elif dist.dtype == np.float32:
        kind = _F32
    else:  # Hamming distances: small integers, compared as int64
        kind, dist = _I64, dist.astype(np.int64)
    # aligned as well as contiguous: an array unpickled from a buffer (dask's workers) may start at
    # any byte, and C reads its values as doubles
    dist = np.require(dist, requirements=["C_CONTIGUOUS", "ALIGNED"])
    n_rows, n_items = dist.shape
    junk = None if junk is None else np.ascontiguousarray(junk, dtype=bool).view(np.uint8)
    arrays = [
        np.require(a, dtype=np.int64, requirements=["C_CONTIGUOUS", "ALIGNED"]) if a is not None else None
        for a in (point_start, point_key, point_index)
    ]
    for out in (out_a, out_b):
        if out is not None and (out.dtype != np.int64 or not out.flags.c_contiguous):
            raise ValueError("out_a, out_b: expected contiguous int64 arrays, one entry per point")
    threads = resolve_threads(None, n_rows, n_items)  # the counts are the same for any
    status = function(
        kind,
        dist.ctypes.data,
        None if junk is None else junk.ctypes.data,
        n_rows,
        n_items,
        int(offset),
        _COUNTS[ties] if ties is not None else _BELOW_AT,
        *(None if a is None else a.ctypes.data for a in arrays),
        out_a.ctypes.data,
        None if out_b is None else out_b.ctypes.data,
        threads,
    )
    if status == _NOMEM:
        raise MemoryError(f"C shard counts: no memory for the per-thread arrays of {point_key.shape[0]} points")
    if status != _OK:
        raise RuntimeError(f"C shard counts: rc_shard_counts refused its arguments (status {status})")
