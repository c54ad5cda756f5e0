"""float32 embedding distances from one float64 BLAS product, each one certified to be the
exact-slice bits (:mod:`.embedding_dots`).

The exact slices take three float64 products of the full size for float32 embeddings.  For
float32 embeddings whose plan has two slices of ``w`` bits (up to 4,096 dimensions), one
product does, and every value it gives is checked to round to the exact path's float32:

1. the rows the slices hold, ``k = s_0 2**-w + s_1 2**-2w`` (at most ``2w`` bits, exact in
   float64), widened by a column or two (:func:`prepared`), go through one float64 BLAS product
   that gives the squared euclidean distance ``|q|^2 + |r|^2 - 2 k_q·k_r`` (or the cosine
   distance ``1 - k_q·k_r / (|q| |r|)``) at once;
2. that differs from the exact path's float64 value by the product of the last slices,
   ``b_q · b_r`` (``b = s_1 2**-2w``: the level the exact slices drop), by the BLAS's rounding,
   at most ``γ`` times the sum of the absolute products (``γ = n u / (1 - n u)`` for a product
   of length ``n``, ``u = 2**-53``, in any summation order, with or without FMA: at most
   ``γ (|q| + |r|)**2`` for euclidean), and by a few roundings of float64 on either side: a bound
   ``E`` on each squared euclidean distance, taken doubled (``SAFETY``), with the largest
   ``|r|`` and ``|b_r|`` of the gallery chunk.  Through the square root, a distance ``s >= t``
   is within ``η = E / t`` (and a few roundings) of the exact path's (``t``: 1/16 of
   ``|q| + max |r|``; a smaller distance is not certified); a cosine distance within
   ``η = E`` itself;
3. where ``s - η`` and ``s + η`` round to the same float32, the exact path's float64 value,
   which lies between them, rounds to that float32 as well: it is the exact path's value.  The
   pairs where they differ (a float32 rounding boundary within ``η``, a distance below ``t``,
   duplicated rows) get their exact-slice value, pair by pair (:func:`.embedding_dots.pair_dots`),
   or their queries' rows whole from the exact slices when they are more than ``EXACT_SHARE``
   of those rows (tie-heavy data).

So the matrix is the exact path's, bit for bit, whatever the tiles, the BLAS, its thread count
or its order of summation; only which pairs are recomputed depends on them.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.embedding_dots import SlicedRows, cross_dots, pair_dots

#: float64's unit roundoff
UNIT = 2.0**-53
#: each error bound is taken this many times over
SAFETY = 2.0
#: float64 values per tile of queries x items (one product, its checks in cache)
TILE_VALUES = 2**16
#: items per tile at most
TILE_ITEMS = 512
#: when the uncertain pairs are more than this share of their queries' rows, those rows are
#: computed whole from the exact slices
EXACT_SHARE = 1 / 64
#: euclidean distances below this share of ``|q| + max |r|`` are not certified (the square root
#: magnifies the squared distance's error near zero)
FLOOR = 1 / 16
#: slack on the norms computed in float64 from the slices
NORM_SLACK = 1 + 2.0**-40


def applies(q_dtype: np.dtype, d_dtype: np.dtype, n_slices: int) -> bool:
    """The certified product serves float32 query and gallery embeddings cut into two slices."""
    return q_dtype == d_dtype == np.float32 and n_slices == 2


def combine(metric: str, dot: np.ndarray, q_exp, q_norms, r_exp, r_norms) -> np.ndarray:
    """The distances from the dot products ``dot`` (``q·r / 2**(e_q + e_r)``), in place.

    ``euclidean``: ``sqrt(max(|q|^2 - 2 q·r + |r|^2, 0))``; ``cosine``: ``1 - q·r / (|q| |r|)``.
    The rows' exponents and slice norms (:class:`.SlicedRows`) come shaped to broadcast against
    ``dot``: a column and a row for a matrix, or one value per pair.  One sequence of float64
    operations for every caller, so the same inputs give the same bits.
    """
    if metric == "euclidean":
        # scaling by powers of two, a row vector at a time (no matrix of exponents)
        dot *= np.ldexp(2.0, q_exp)
        dot *= np.ldexp(1.0, r_exp)
        np.subtract(np.ldexp(q_norms, 2 * q_exp), dot, out=dot)
        dot += np.ldexp(r_norms, 2 * r_exp)
        np.maximum(dot, 0, out=dot)
        return np.sqrt(dot, out=dot)
    # the powers of two cancel: cosine never overflows
    np.divide(dot, np.sqrt(q_norms) * np.sqrt(r_norms), out=dot)
    return np.subtract(1, dot, out=dot)


def prepared(rows: SlicedRows, metric: str, query: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows for the product, |k|, |b|)``: the rows the two slices hold, ``k = s_0 2**-w +
    s_1 2**-2w`` in float64 (exact: at most ``2w <= 53`` bits), widened so that one product gives
    the distance before its last steps, and per row the norms of ``k`` and of its last slice
    ``b = s_1 2**-2w`` (true units for euclidean, over the row's norm for cosine).

    euclidean: ``[-2 k 2**e, |row|^2, 1]`` for queries and ``[k 2**e, 1, |row|^2]`` for items
    (``|row|^2``: the exact slices' squared norm), whose product is ``|q|^2 + |r|^2 - 2 q·r``;
    cosine: ``[-k / |row|, 1]`` and ``[k / |row|, 1]``, whose product is ``1 - q·r / (|q| |r|)``.
    """
    if not query and rows.kept is not None and metric in rows.kept:
        return rows.kept[metric]  # type: ignore[return-value]
    first = np.asarray(rows.slices[0], dtype=np.float64)
    last = np.asarray(rows.slices[1], dtype=np.float64)
    n_rows, dim = first.shape
    # squares of integers below 2**(w-1) summed: exact below 2**53, then one rounding
    tails = np.sqrt(np.einsum("ij,ij->i", last, last)) * (2.0 ** (-2 * rows.width) * NORM_SLACK)
    norms = np.sqrt(rows.norms + tails * tails) * NORM_SLACK  # |k|^2 = the kept self-dot + |b|^2
    wide = np.empty((n_rows, dim + (2 if metric == "euclidean" else 1)))
    body = wide[:, :dim]
    np.multiply(last, 2.0**-rows.width, out=body)
    body += first
    if metric == "euclidean":
        scale = np.ldexp(1.0, rows.exponent)  # 2**e: every step exact
        body *= (scale * (-2.0 if query else 1.0) * 2.0**-rows.width)[:, None]
        squares = np.ldexp(rows.norms, 2 * rows.exponent)
        wide[:, dim], wide[:, dim + 1] = (squares, 1.0) if query else (1.0, squares)
        return wide, norms * scale, tails * scale
    root = np.sqrt(rows.norms)  # > 0: a zero row was refused
    body *= ((-1.0 if query else 1.0) * 2.0**-rows.width / root)[:, None]
    wide[:, dim] = 1.0
    return wide, norms / root * NORM_SLACK, tails / root * NORM_SLACK


def keep(rows: SlicedRows, metric: str) -> None:
    """Keep the gallery's rows for the product on it for the next query blocks (a gallery held as
    float64 slices: one more array of its size)."""
    if all(s.dtype == np.float64 for s in rows.slices):
        rows.kept = rows.kept or {}
        if metric not in rows.kept:
            rows.kept[metric] = prepared(rows, metric, query=False)


def _eta(metric: str, dim: int, q: Tuple[np.ndarray, np.ndarray], r: Tuple[float, float]):
    """(η per query, t per query or None): the bound on each float64 distance of a query with the
    chunk's items (``r``: the largest bounds among them), and the euclidean floor ``t``."""
    width = dim + (2 if metric == "euclidean" else 1)  # the product's length
    gamma = width * UNIT / (1 - width * UNIT)
    if metric == "cosine":
        # the rows over their norms round three times per entry: 6u per product, 4u more in the exact path
        return SAFETY * ((gamma + 12 * UNIT) * (q[0] * r[0] + 1) + 1.01 * q[1] * r[1] + 6 * UNIT), None
    reach = q[0] + r[0]  # at least |q| + |r|, so at least every distance
    squared = SAFETY * ((gamma + 4 * UNIT) * reach * reach + 2 * q[1] * r[1])
    floor = FLOOR * reach
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(floor > 0, 1.01 * squared / np.where(floor > 0, floor, 1.0), 0.0) + 8 * UNIT * reach
    return eta, floor


def certified_block(
    out: np.ndarray,
    metric: str,
    queries: SlicedRows,
    q_side: Tuple[np.ndarray, np.ndarray, np.ndarray],
    items: SlicedRows,
) -> int:
    """Fill ``out`` (queries x items, float32) with the exact path's distances; returns how many
    pairs were not certified by the product and were computed from the exact slices.

    ``q_side``: :func:`prepared` for ``queries`` (made once for every chunk of items).
    """
    n_q, n_i = out.shape
    if n_q == 0 or n_i == 0:
        return 0
    wide, r_norms, r_tails = prepared(items, metric, query=False)
    eta, floor = _eta(metric, queries.slices[0].shape[1], (q_side[1], q_side[2]), (r_norms.max(), r_tails.max()))
    cols = min(n_i, TILE_ITEMS)
    rows = max(1, TILE_VALUES // cols)
    doubts: List[np.ndarray] = []
    for a in range(0, n_q, rows):
        b = min(a + rows, n_q)
        left = q_side[0][a:b]
        margin = float(eta[a:b].max())  # one bound for the tile's queries: a scalar is faster
        low_floor = None if floor is None else float(floor[a:b].max())
        for c in range(0, n_i, cols):
            d = min(c + cols, n_i)
            s = left @ wide[c:d].T
            if low_floor is not None:
                np.maximum(s, 0, out=s)
                np.sqrt(s, out=s)
            low = (s - margin).astype(np.float32)
            high = (s + margin).astype(np.float32)
            out[a:b, c:d] = low  # where high is the same float32: the exact path's value, which lies between
            doubt = low != high
            if low_floor is not None and s.min() < low_floor:
                doubt |= s < low_floor
            if doubt.any():
                at = np.flatnonzero(doubt)
                doubts.append(np.stack(np.divmod(at, d - c)) + np.array([[a], [c]]))
    return _redo(out, metric, queries, items, np.concatenate(doubts, axis=1) if doubts else None)


def _redo(out: np.ndarray, metric: str, queries: SlicedRows, items: SlicedRows, pairs: Optional[np.ndarray]) -> int:
    """The exact-slice values of the uncertain ``pairs`` (query rows, item columns): pair by pair,
    or the queries' rows whole when they are many; returns how many values were recomputed."""
    if pairs is None:
        return 0
    n_items = out.shape[1]
    if pairs.shape[1] > EXACT_SHARE * n_items * np.unique(pairs[0]).size:
        rows = np.unique(pairs[0])
        part = SlicedRows([s[rows] for s in queries.slices], queries.exponent[rows], queries.norms[rows], queries.width)
        block = np.empty((rows.size, n_items), dtype=out.dtype)
        exact_block(block, metric, part, items)
        out[rows] = block
        return int(block.size)
    rows, cols = pairs
    dot = pair_dots(queries, items, rows, cols)
    out[rows, cols] = combine(
        metric, dot, queries.exponent[rows], queries.norms[rows], items.exponent[cols], items.norms[cols]
    )
    return int(rows.size)


def exact_block(out: np.ndarray, metric: str, queries: SlicedRows, items: SlicedRows) -> None:
    """``out`` (queries x items) from the exact slices alone (any dtype, any plan)."""
    dot = cross_dots(queries, items)
    out[...] = combine(metric, dot, queries.exponent[:, None], queries.norms[:, None], items.exponent, items.norms)
