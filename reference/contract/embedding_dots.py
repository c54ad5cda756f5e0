"""Dot products of embeddings that do not depend on how the work is cut.

A BLAS matrix product rounds each partial sum, in an order that depends on the shape of the
call (one query row takes another kernel than many), the thread count and the library: the
same (query, item) pair then gets distances that differ in the last bits, and near-tied items
swap.  Here every partial sum is exact, so any order gives the same bits:

* each row ``x`` is scaled by a power of two, ``y = x / 2**e`` with ``|y| < 1`` (``e`` from
  the row's largest entry), and cut into ``S`` slices of ``w`` bits,
  ``y ≈ s_0 2**-w + s_1 2**-2w + ...`` with integer ``|s_i| <= 2**w`` (exact steps: each slice
  is ``y`` rounded to a multiple of ``2**-(i+1)w``, and the rest is exact);
* the products of slices are integers below ``2**(2w)``, and ``w`` is chosen so that a sum of
  ``S * dim`` of them stays below ``2**53``: float64 holds every partial sum exactly, so the
  BLAS product of slice matrices is exact, in any order, with or without FMA;
* the levels ``c = i + j < S`` are joined in one fixed elementwise order (Horner in ``2**-w``).

What is dropped (the levels ``c >= S`` and an entry's bits more than ``S w`` below its row's
largest) is below ``2**-40`` of ``|q| |r|`` for float32 and ``2**-60`` for float64 inputs: far
below float32's rounding, so these dot products are more accurate than a float32 BLAS call,
and they are the same bits for every block of queries, batch, thread count and BLAS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
from numpy.typing import DTypeLike

#: bits below a row's largest entry kept exactly, by the embeddings' dtype
KEPT_BITS = {np.dtype(np.float32): 40, np.dtype(np.float64): 60}
#: float64 values per temporary of one chunk of gallery items (64 MiB)
CHUNK_VALUES = 2**23
#: slices of rows up to this many bytes in float64 are held as float64 (ready for BLAS); larger
#: ones as float32 (exact as well), half the memory, converted a chunk of items at a time
FLOAT64_SLICE_BYTES = 2**28


def slice_plan(dim: int, dtype: DTypeLike) -> Tuple[int, int]:
    """(slices ``S``, bits per slice ``w``) for embeddings of ``dim`` entries: the fewest slices
    that keep ``KEPT_BITS`` bits with every sum of ``S * dim`` slice products exact in float64."""
    wanted = KEPT_BITS[np.dtype(dtype)]
    n_slices = 2
    while True:
        width = (53 - math.ceil(math.log2(max(dim * n_slices, 1)))) // 2
        if width < 1:
            raise ValueError(f"query_embeddings: {dim} dimensions are more than exact dot products can sum")
        if n_slices * width >= wanted:
            return n_slices, width
        n_slices += 1


@dataclass
class SlicedRows:
    """Rows cut into exact slices: ``row = 2**e (s_0 2**-w + s_1 2**-2w + ...)``, truncated.

    ``slices[i]``: (rows, dim) integers of at most ``w`` bits and a sign, held as float64 up to
    ``FLOAT64_SLICE_BYTES`` (ready for BLAS), else as float32 (exact below ``2**24``; half the
    memory, converted a chunk at a time); ``exponent``: each row's ``e``; ``norms``:
    each row's ``|row|^2 / 4**e`` from the slices, as :func:`cross_dots` would give it.
    ``kept``: where a caller keeps them, the rows :mod:`.embedding_rounding` makes from the slices
    for one metric (by its name), made once for every block of queries.
    """

    slices: List[np.ndarray]
    exponent: np.ndarray
    norms: np.ndarray
    width: int
    kept: Optional[Dict[str, Tuple[np.ndarray, ...]]] = None

    def rows(self, lo: int, hi: int) -> "SlicedRows":
        kept = None if self.kept is None else {m: tuple(a[lo:hi] for a in v) for m, v in self.kept.items()}
        return SlicedRows([s[lo:hi] for s in self.slices], self.exponent[lo:hi], self.norms[lo:hi], self.width, kept)


def slice_rows(x: np.ndarray, n_slices: int, width: int) -> SlicedRows:
    """Cut each row of ``x`` into ``n_slices`` slices of ``width`` bits (see :class:`SlicedRows`).

    ``x / 2**e`` has every entry below 1 in magnitude; slice ``i`` holds its bits from
    ``2**-(i w)`` down to ``2**-((i + 1) w)``, rounded (ties to even), and what is left of the
    row after each slice is exact.  Scaling by powers of two is exact (or, for entries so far
    below their row's largest that they fall below the smallest normal float, a deterministic
    loss of bits that the slices drop anyway).  float32 rows are cut in float32 (every step is
    exact there as well, and gives the same slices at half the memory traffic), others in float64.
    """
    n_rows, dim = x.shape
    work = np.float32 if x.dtype == np.float32 else np.float64
    store = np.float64 if n_rows * dim * n_slices * 8 <= FLOAT64_SLICE_BYTES else np.float32
    slices = [np.empty((n_rows, dim), dtype=store) for _ in range(n_slices)]
    exponent = np.zeros(n_rows, dtype=np.int64)
    norms = np.empty(n_rows)
    step = max(1, CHUNK_VALUES // max(dim, 1))
    for lo in range(0, n_rows, step):  # a copy of a chunk of rows at a time
        rest: np.ndarray = np.array(x[lo : lo + step], dtype=work)
        _, exponent[lo : lo + step] = np.frexp(np.abs(rest).max(axis=1) if dim else np.zeros(rest.shape[0], work))
        rest *= np.ldexp(work(1.0), -exponent[lo : lo + step])[:, None].astype(work)
        parts = []
        for i in range(1, n_slices + 1):
            part: np.ndarray = rest * work(2.0 ** (i * width))
            np.rint(part, out=part)
            slices[i - 1][lo : lo + step] = part
            # integers, exact in either dtype; their sums need float64
            parts.append(slices[i - 1][lo : lo + step] if store is np.float64 else part.astype(np.float64))
            part *= work(2.0 ** (-i * width))
            rest -= part
        norms[lo : lo + step] = _join_levels([_self_level(parts, c) for c in range(n_slices)], width)
    return SlicedRows(slices, exponent, norms, width)


def _self_level(slices: List[np.ndarray], c: int) -> np.ndarray:
    """Level ``c`` of each row's dot product with itself (float64 slices): sums of integers
    below 2**53, exact in any order."""
    total = np.zeros(slices[0].shape[0])
    for i in range(c + 1):
        total += np.einsum("ij,ij->i", slices[i], slices[c - i])
    return total


def _join_levels(levels: List[np.ndarray], width: int) -> np.ndarray:
    """``sum_c levels[c] 2**-(c + 2) w``, in one fixed order (from the smallest level up)."""
    total = levels[-1]
    for level in reversed(levels[:-1]):
        total = level + total * 2.0**-width
    return total * 2.0 ** (-2 * width)


def cross_dots(a: SlicedRows, b: SlicedRows) -> np.ndarray:
    """``(a_row · b_row) / 2**(e_a + e_b)`` for every pair of rows, (rows of a, rows of b).

    Level ``c`` sums the BLAS products of the slice pairs ``(i, c - i)``: each product and their
    sum are integers below ``2**53``, exact whatever order BLAS adds in.
    """
    left = [np.asarray(s, dtype=np.float64) for s in a.slices]  # no copy of float64 slices
    right = [np.asarray(s, dtype=np.float64) for s in b.slices]
    levels = []
    for c in range(len(left)):
        level = left[0] @ right[c].T
        for i in range(1, c + 1):
            level += left[i] @ right[c - i].T
        levels.append(level)
    return _join_levels(levels, a.width)


def item_chunks(n_items: int, n_queries: int, dim: int, n_slices: int):
    """Ranges of gallery items whose temporaries stay near ``CHUNK_VALUES`` float64 values."""
    step = max(1, CHUNK_VALUES // max(n_queries, dim * n_slices, 1))
    return [(lo, min(lo + step, n_items)) for lo in range(0, n_items, step)]


def pair_dots(a: SlicedRows, b: SlicedRows, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``cross_dots(a, b)[rows, cols]`` for the pairs given only, the same bits: each level is the
    same sum of integers below ``2**53`` (exact in any order), joined in the same order."""
    left = [np.asarray(s[rows], dtype=np.float64) for s in a.slices]
    right = [np.asarray(s[cols], dtype=np.float64) for s in b.slices]
    levels = []
    for c in range(len(left)):
        level = np.einsum("ij,ij->i", left[0], right[c])
        for i in range(1, c + 1):
            level += np.einsum("ij,ij->i", left[i], right[c - i])
        levels.append(level)
    return _join_levels(levels, a.width)
