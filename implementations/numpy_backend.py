"""The numpy implementation: vectorised over queries, in blocks of bounded memory.

This module supplies only what is numpy's own: :class:`NumpyOps` (the array operations the
shared code in ``vector_*`` calls) and the blocks' inputs (Hamming distances from codes
packed into uint64 words, XOR + ``np.bitwise_count``; relevance and junk from
``relevance_blocks``).  The block loop, the sort key and the metrics are shared with torch
(:func:`~.vector.blocks.compute_in_blocks`).

numpy specifics of the sort: Hamming keys take the narrowest unsigned type that holds them
(8/16-bit keys get numpy's radix sort), and the relevance bit is read from the lowest byte
of the sorted keys without a shift.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Optional, cast

import numpy as np
from retrieval_conformance.implementations.vector.blocks import compute_in_blocks
from retrieval_conformance.implementations.vector.double_double import fast_two_sum
from retrieval_conformance.implementations.vector.relevance_blocks import junk_block, relevance_block
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem
from retrieval_conformance.reference.contract.registry import Implementation, PreparedGallery

_DTYPES = {"f64": np.float64, "i64": np.int64, "bool": bool, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32}


class NumpyOps:
    """The array operations of the shared ``vector_*`` code, for numpy (axis 1 = gallery)."""

    def f64(self, x):
        return np.asarray(x, dtype=np.float64)

    def i64(self, x):
        return np.asarray(x, dtype=np.int64)

    def astype(self, x, kind: str):
        """A copy of ``x`` as ``kind`` (the sort key is built in place)."""
        return x.astype(_DTYPES[kind])

    def dtype_name(self, x) -> str:
        return x.dtype.name

    def bits_i32(self, x):
        return np.ascontiguousarray(x).view(np.int32)

    def arange(self, n: int):
        return np.arange(n, dtype=np.int64)

    def zeros(self, shape, kind: str):
        return np.zeros(shape, dtype=_DTYPES[kind])

    def full(self, shape, value, kind: str):
        return np.full(shape, value, dtype=_DTYPES[kind])

    def cumsum(self, x, axis: int):
        return np.cumsum(x, axis=axis, dtype=np.float64 if x.dtype.kind == "f" else np.int64)

    def cumprod(self, x, axis: int):
        return np.cumprod(x, axis=axis)

    def flip(self, x, axis: int):
        return np.flip(x, axis=axis)

    def sum(self, x, axis: int):
        return x.sum(axis=axis, dtype=np.float64 if x.dtype.kind == "f" else np.int64)

    def nonzero(self, x):
        if x.ndim == 2:  # flatnonzero + divmod is several times faster than np.nonzero
            flat = np.flatnonzero(x)
            rows = flat // x.shape[1]
            return rows, flat - rows * x.shape[1]
        return tuple(np.asarray(i, dtype=np.int64) for i in np.nonzero(x))

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def clip(self, x, lo=None, hi=None):
        return np.clip(x, lo, hi)

    def concat(self, parts):
        return np.concatenate(parts)

    def hcat(self, parts):
        return np.concatenate(parts, axis=1)

    def table(self, name: str, array: np.ndarray):
        return array

    def repeat(self, x, counts):
        return np.repeat(x, counts)

    def bincount(self, x, length: int):
        return np.bincount(x, minlength=length).astype(np.int64)

    def cumsum_i32(self, x):
        return np.cumsum(x, dtype=np.int32)

    def searchsorted(self, sorted_1d, values, right: bool = False):
        return np.searchsorted(sorted_1d, values, side="right" if right else "left").astype(np.int64)

    def cached(self, key, make):
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def key_kind(self, bits: int) -> str:
        """The narrowest integer type of a sort key of ``bits`` bits."""
        return next((kind for kind, width in (("u8", 8), ("u16", 16), ("u32", 32)) if bits <= width), "i64")

    def sort_values(self, key):
        # radix sort for 8/16-bit keys, the vectorised quicksort otherwise (values: either is exact)
        key.sort(axis=1, kind="stable" if key.itemsize <= 2 else None)
        return key

    def low_bit(self, key):
        if sys.byteorder == "little":  # the lowest bit sits in the first byte: no shift, no mask pass
            return (key.view(np.uint8)[:, :: key.itemsize] & np.uint8(1)).view(bool)
        return (key & 1).astype(bool)  # pragma: no cover

    def stable_sort(self, x):
        idx = np.argsort(x, axis=1, kind="stable")
        return np.take_along_axis(x, idx, axis=1), idx

    def take_rows(self, x, idx):
        return np.take_along_axis(x, idx, axis=1)

    def dd_rowsum(self, x):
        """Row sums of a non-negative double-double array by Ogita, Rump & Oishi's Sum2:
        ``np.cumsum`` adds sequentially, so the rounding error of every step is recovered
        exactly with TwoSum from the partial sums (as accurate as the pairwise sum in
        double-double, and three times cheaper)."""
        hi, lo = x
        if hi.shape[1] == 0:
            z = np.zeros(hi.shape[0])
            return z, z
        s = np.cumsum(hi, axis=1)
        prev, xk, sk = s[:, :-1], hi[:, 1:], s[:, 1:]
        bb = sk - prev
        err = (prev - (sk - bb)) + (xk - bb)
        # the corrections are added in sequence too (not by np.sum, whose pairwise split
        # depends on the row length): a block's zero padding then changes no bit of a row
        tail = np.cumsum(err, axis=1)[:, -1] if err.shape[1] else 0.0
        return fast_two_sum(s[:, -1], tail + np.cumsum(lo, axis=1)[:, -1])

    def max_int(self, x) -> int:
        return int(x.max()) if x.size else 0

    def any(self, x) -> bool:
        return bool(x.any())

    def no_grad(self):
        return contextlib.nullcontext()

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """(n, B) {0,1} uint8 -> (n, ceil(B/64)) uint64 words (zero padding keeps Hamming)."""
    packed = np.packbits(bits.astype(np.uint8, copy=False), axis=1)
    words = -(-packed.shape[1] // 8)
    out = np.zeros((packed.shape[0], words * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view(np.uint64)


def hamming_block(q_words: np.ndarray, db_words: np.ndarray) -> np.ndarray:
    """popcount(q XOR r) summed over words (spec §1 hamming {0,1}): (b, N), uint8 for
    one word, else uint16/int32."""
    W = q_words.shape[1]
    if W == 1:
        return np.bitwise_count(q_words[:, 0, None] ^ db_words[None, :, 0])
    out = np.zeros((q_words.shape[0], db_words.shape[0]), dtype=np.uint16 if W < 1024 else np.int32)
    for w in range(W):
        out += np.bitwise_count(q_words[:, w, None] ^ db_words[None, :, w])
    return out


class NumpySource:
    """Distances, relevance and junk of query blocks, as numpy arrays."""

    def __init__(self, problem: Problem, gallery: PreparedGallery):
        self.p = problem
        self.q_words: Optional[np.ndarray] = None
        self.db_words: Optional[np.ndarray] = None
        if problem.distances is None:  # codes: both sides hold bits
            self.q_words = pack_bits(cast(np.ndarray, problem.query_bits))
            self.db_words = gallery.get("db_words", lambda: pack_bits(cast(np.ndarray, problem.db_bits)))

    def distances(self, s: int, e: int) -> np.ndarray:
        if self.q_words is not None and self.db_words is not None:
            return hamming_block(self.q_words[s:e], self.db_words)
        d = cast(np.ndarray, self.p.distances)[s:e]  # without codes, the distances are set
        # validated input is float32/float64; anything else is widened (order kept)
        return d if d.dtype in (np.float32, np.float64) else d.astype(np.float64)

    def relevance(self, s: int, e: int) -> np.ndarray:
        return relevance_block(self.p, s, e)

    def grades(self, s: int, e: int) -> Optional[np.ndarray]:
        return None if self.p.grades is None else self.p.grades[s:e].astype(np.int64)

    def junk(self, s: int, e: int) -> Optional[np.ndarray]:
        return junk_block(self.p, s, e) if self.p.has_junk else None


class NumpyImplementation(Implementation):
    """Vectorised numpy: blocks of queries, one sort per row, explicit tie keys."""

    name = "numpy"
    speed_rank = 10

    def __init__(self, block_bytes: Optional[int] = None):
        self.block_bytes = block_bytes

    def prepare(self, problem: Problem) -> PreparedGallery:
        """A store for the gallery's packed codes, made by the first query block."""
        return PreparedGallery(problem)

    @within_gallery
    def compute(
        self,
        problem: Problem,
        options: Options,
        progress: Optional[Callable[[int, int], None]] = None,
        state: object = None,
    ) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (see ``vector.blocks``);
        ``progress(done, total)`` after every block of queries; ``state`` from :meth:`prepare`."""
        return compute_in_blocks(NumpyOps(), problem, options, NumpySource, self.block_bytes, progress, state)
