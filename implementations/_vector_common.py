"""Vectorised per-query metrics for a block of queries, written once for numpy and torch.

The numpy and torch implementations differ only in how they build a block (distances,
sort key, relevance, junk) on their device; everything after the sort lives here and
talks to the array library through a small ``ops`` object (:class:`NumpyOps`, or the torch
twin in ``torch_backend``).  Python loops run over blocks only, never over queries.

Input of :func:`block_metrics`, for a block of ``B`` queries and a gallery of ``N`` items:

* ``key_s`` (B, N): each row sorted ascending; equal values <=> equal distances (one tie
  group).  Junk items carry a sentinel larger than any distance, so they sit at the end
  of the row as one pseudo-group with no relevant item (they take no rank).  Only the
  tie groups of ``optimistic``, ``pessimistic``, ``expected`` and ``grouped`` use it
  (None is fine for ``stable`` and ``reverse``).
* ``rel_s`` (B, N) bool: the relevance (junk already False) in the same order.  For
  ``stable`` ties are in gallery order, for ``reverse`` in reversed gallery order; the
  other policies use only per-group counts, so any order inside a group does.
* ``n_kept`` (B,) int64: non-junk items per query (N').

Notation (CONVENTIONS §4): a tie group has ``c`` items before it (``h`` of them relevant),
``n`` items and ``m`` relevant ones; 1-based rank ``r``; ``R`` relevant non-junk items.
The AP term of the i-th relevant item at rank r is linear in i,
``term = alpha(r) + (i - h - 1) * beta(r)``: precision-sum AP has ``alpha = (h + 1) / r``,
``beta = 1 / r``; trapezoid AP ``alpha = ((h + 1) / r + h / (r - 1)) / 2``,
``beta = (1 / r + 1 / (r - 1)) / 2`` (``alpha(1) = 1``).  Under ``ties="expected"``
position p of a group is relevant with probability m/n and then has on average
(p-1)(m-1)/(n-1) of the group's other relevant items before it, which gives every closed
form below (McSherry & Najork, ECIR 2008); sums of 1/r over runs of ranks come from one
harmonic prefix table, so the cost is per relevant group, not per gallery item.

Floating point (the contract: bit for bit where the exact value is a float64, 1e-12
otherwise): a ratio of two integers (P@k, R@k, INP and CMC of a concrete ranking, R@k and
P@k under ``expected``) is one float64 division of exact integers, hence correctly rounded.
Sums (AP) are carried in double-double arithmetic (~2**-104 relative) and rounded once at
the end, so they round to the exact value whenever it is a float64.  Hypergeometric and
negative-hypergeometric probabilities are exact table quotients for groups of <= 56 items,
and otherwise products of exact integer ratios walked out from the mode and normalised
(no log-gamma cancellation; ~1e-15 relative).
"""
from __future__ import annotations

import math
from typing import Dict

import numpy as np
from retrieval_conformance.reference.problem import Options, PerQuery

#: bytes one (block x N) int64 array may take; a block has a few such temporaries (16 MB:
#: as fast as larger blocks here, and the peak extra memory stays near 30-60 MB)
BLOCK_BYTES = 16 * 1024 * 1024



def block_rows(n_queries: int, n_gallery: int, bytes_per_item: int = 8, budget: int = BLOCK_BYTES) -> int:
    """Queries per block so that one (block, N) array of ``bytes_per_item`` stays under
    ``budget`` (and block * N < 2**31: flat positions are int32 in places)."""
    rows = min(n_queries, budget // max(1, n_gallery * bytes_per_item), (2 ** 31 - 1) // max(1, n_gallery))
    return int(max(1, rows))


def grouped_cutoff_error(k: int, query: int, before: int, end: int) -> ValueError:
    """The reference's error for ``ties="grouped"`` with ``k`` inside a tie group (same text)."""
    return ValueError(
        f"k: k={k} falls inside a tie group (ranks {before + 1}..{end}) of query "
        f"{query}; under ties='grouped' a cut-off inside a tie group has no meaning. Use "
        "ties='expected', or a k at a tie-group boundary"
    )


class NumpyOps:
    """The few array operations :func:`block_metrics` needs, for numpy (axis 1 = gallery)."""

    name = "numpy"

    def f64(self, x):
        return np.asarray(x, dtype=np.float64)

    def i64(self, x):
        return np.asarray(x, dtype=np.int64)

    def arange(self, n: int):
        return np.arange(n, dtype=np.int64)

    def zeros(self, shape, kind: str):
        return np.zeros(shape, dtype={"f64": np.float64, "i64": np.int64, "bool": bool}[kind])

    def full(self, shape, value, kind: str):
        return np.full(shape, value, dtype={"f64": np.float64, "i64": np.int64, "bool": bool}[kind])

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
        return _fast_two_sum(s[:, -1], tail + np.cumsum(lo, axis=1)[:, -1])

    def max_int(self, x) -> int:
        return int(x.max()) if x.size else 0

    def any(self, x) -> bool:
        return bool(x.any())

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)


# -- double-double arithmetic ----------------------------------------------------------------
# A value is a pair (hi, lo) of float64 arrays, hi = fl(hi + lo), relative error ~2**-104
# (Dekker; Hida, Li & Bailey's QD library).  Only + - * / on float64 arrays are used, so
# numpy and torch on any device give the same bits (element-wise kernels do not fuse a
# multiply and an add).  Rounding hi + lo at the end gives the correctly rounded float of
# the exact value whenever that value is a float64 (the reference's exact cases).
_SPLITTER = 134217729.0  # 2**27 + 1


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fast_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


def _split(a):
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add(x, y):
    s, e = _two_sum(x[0], y[0])
    t, f = _two_sum(x[1], y[1])
    s, e = _fast_two_sum(s, e + t)
    return _fast_two_sum(s, e + f)


def dd_mul(x, y):
    p, e = _two_prod(x[0], y[0])
    return _fast_two_sum(p, e + (x[0] * y[1] + x[1] * y[0]))


def dd_div(x, y):
    """x / y for double-doubles (y must be nonzero)."""
    q1 = x[0] / y[0]
    p = dd_mul(y, (q1, q1 * 0.0))
    r = dd_add(x, (-p[0], -p[1]))
    q2 = r[0] / y[0]
    p = dd_mul(y, (q2, q2 * 0.0))
    r = dd_add(r, (-p[0], -p[1]))
    q3 = r[0] / y[0]
    return dd_add(_fast_two_sum(q1, q2), (q3, q3 * 0.0))


def dd_quot(x, y, small: bool = False):
    """x / y for exact float64 x, y (integers below 2**53), y nonzero: q + (x - q y) / y.

    ``small``: y < 2**26, so y needs no Dekker split (q's halves times y are exact)."""
    q = x / y
    if small:
        p = q * y
        qh, ql = _split(q)
        e = (qh * y - p) + ql * y
    else:
        p, e = _two_prod(q, y)
    return _fast_two_sum(q, ((x - p) - e) / y)


def dd_const(x):
    return (x, x * 0.0)


def dd_int(ops, x):
    """An int64 array as an exact double-double."""
    hi = ops.f64(x)
    return hi, ops.f64(x - ops.i64(hi))


def dd_where(ops, cond, x, y):
    return ops.where(cond, x[0], y[0]), ops.where(cond, x[1], y[1])


def dd_zero_where(ops, cond, x):
    """x with 0 where cond."""
    return ops.where(cond, 0.0, x[0]), ops.where(cond, 0.0, x[1])


def dd_take(x, idx):
    return x[0][idx], x[1][idx]


def dd_add_same_sign(x, y):
    """x + y for double-doubles of the same sign (no cancellation): the cheaper "sloppy"
    addition, accurate to ~2**-104 relative in that case."""
    s, e = _two_sum(x[0], y[0])
    return _fast_two_sum(s, e + (x[1] + y[1]))


def dd_rowsum_pairwise(ops, x):
    """Row sums (axis 1) of a non-negative double-double array, pairwise (any device)."""
    hi, lo = x
    if hi.shape[1] == 0:
        z = ops.zeros((hi.shape[0],), "f64")
        return z, z
    while hi.shape[1] > 1:
        if hi.shape[1] % 2:
            z = ops.zeros((hi.shape[0], 1), "f64")
            hi, lo = ops.hcat([hi, z]), ops.hcat([lo, z])
        hi, lo = dd_add_same_sign((hi[:, 0::2], lo[:, 0::2]), (hi[:, 1::2], lo[:, 1::2]))
    return hi[:, 0], lo[:, 0]


def dd_rowsum(ops, x):
    """Row sums (axis 1) of a non-negative double-double array."""
    return ops.dd_rowsum(x) if hasattr(ops, "dd_rowsum") else dd_rowsum_pairwise(ops, x)


def dd_cumsum(ops, x):
    """Inclusive prefix sums along axis 1 of a non-negative double-double array (log-depth)."""
    hi, lo = x
    s, W = 1, hi.shape[1]
    while s < W:
        nh, nl = dd_add_same_sign((hi[:, s:], lo[:, s:]), (hi[:, :-s], lo[:, :-s]))
        hi, lo = ops.hcat([hi[:, :s], nh]), ops.hcat([lo[:, :s], nl])
        s *= 2
    return hi, lo


def dd_cumprod(ops, x):
    """Inclusive prefix products along axis 1 (a log-depth scan)."""
    hi, lo = x
    s, W = 1, hi.shape[1]
    while s < W:
        nh, nl = dd_mul((hi[:, s:], lo[:, s:]), (hi[:, :-s], lo[:, :-s]))
        hi, lo = ops.hcat([hi[:, :s], nh]), ops.hcat([lo[:, :s], nl])
        s *= 2
    return hi, lo


def dd_round(x):
    return x[0] + x[1]


def _ratio(ops, num, den):
    """float(num / den) for a double-double num and an int64 den, 0 where den == 0."""
    zero = den == 0
    q = dd_div(num, dd_int(ops, ops.where(zero, 1, den)))
    return ops.where(zero, 0.0, dd_round(q))


def _safe_div(ops, num, den):
    """num / den for int64 arrays in one rounding (exact below 2**53), 0 where den == 0."""
    zero = den == 0
    return ops.where(zero, 0.0, ops.f64(num) / ops.f64(ops.where(zero, 1, den)))


# -- AP terms --------------------------------------------------------------------------------
def _concrete_term(ops, i, r, rule: str, small: bool = False):
    """AP term of the i-th relevant item at rank r (int64 arrays, r >= 1), double-double.

    ``small``: every rank is below 2**26 (a cheaper exact quotient)."""
    if rule == "precision_sum":
        return dd_quot(ops.f64(i), ops.f64(r), small=small)
    # (i/r + (i-1)/(r-1)) / 2 = (i(r-1) + (i-1)r) / (2r(r-1)); 1 at r = 1
    first = r == 1
    rr = ops.where(first, 2, r)
    t = dd_quot(ops.f64(i * (rr - 1) + (i - 1) * rr), ops.f64(2 * rr * (rr - 1)))
    return dd_where(ops, first, dd_const(ops.f64(first)), t)


def _grouped_term(ops, hm, h, e, rule: str):
    """Term of every relevant item of a group under ``grouped``: the precision (h+m)/e at
    the group's end rank e; trapezoid averages it with h/(e-1) (1 at e = 1), as the reference."""
    if rule == "precision_sum":
        return dd_quot(ops.f64(hm), ops.f64(e))
    first = e == 1
    ee = ops.where(first, 2, e)
    t = dd_quot(ops.f64(hm * (ee - 1) + h * ee), ops.f64(2 * ee * (ee - 1)))
    return dd_where(ops, first, dd_const(ops.f64(first)), t)


def _alpha_beta(ops, h, r, rule: str):
    """alpha(r), beta(r) of the module docstring (double-doubles) for h relevant before."""
    if rule == "precision_sum":
        fr = ops.f64(r)
        return dd_quot(ops.f64(h + 1 + 0 * r), fr), dd_quot(fr * 0.0 + 1.0, fr)
    first = r == 1
    rr = ops.where(first, 2, r)
    den = ops.f64(2 * rr * (rr - 1))
    alpha = dd_quot(ops.f64((h + 1) * (rr - 1) + h * rr), den)
    beta = dd_quot(ops.f64(2 * rr - 1), den)
    one = ops.f64(first)
    return dd_where(ops, first, dd_const(one), alpha), dd_zero_where(ops, first, beta)


# -- distributions inside a shuffled tie group -----------------------------------------------------
#: C(a, b) for a, b <= 56 as exact float64: C(56, 28) < 2**53, so products of two table
#: entries that stay below C(n, t) are exact too
BINOM_MAX = 56
_BINOM = np.zeros((BINOM_MAX + 1, BINOM_MAX + 1), dtype=np.float64)
for _a in range(BINOM_MAX + 1):
    for _b in range(_a + 1):
        _BINOM[_a, _b] = float(math.comb(_a, _b))


def _pmf_from_ratios(ops, num, den, length):
    """A log-concave pmf on columns 0..length-1 of each row from its successive ratios.

    ``num[:, j] / den[:, j]`` = P(j + 1) / P(j) (exact integers in float64).  The walk
    starts at the mode (the ratios are >= 1 exactly up to it) and multiplies outwards, so
    nothing overflows, the tails underflow harmlessly and each probability carries a
    relative error of about (distance from the mode) * 1e-16; rows are then normalised.
    """
    S, W = num.shape
    col = ops.arange(W)[None, :]
    length = length[:, None]
    valid = col < length
    step = col < length - 1  # a ratio from column j to j + 1 exists
    num = ops.where(step, num, 1.0)
    den = ops.where(step, den, 1.0)
    mode = ops.sum(step & (num >= den), 1)[:, None]
    up = ops.full((S, W), 1.0, "f64")
    if W > 1:
        up[:, 1:] = ops.where(col[:, 1:] > mode, num[:, :-1] / den[:, :-1], 1.0)
    down = ops.where(col < mode, den / num, 1.0)
    p = ops.cumprod(up, 1) * ops.flip(ops.cumprod(ops.flip(down, 1), 1), 1)
    p = ops.where(valid, p, 0.0)
    return p / fixed_rowsum(ops, p)[:, None]


def fixed_rowsum(ops, x):
    """Row sums (axis 1) of float64 values added along a fixed tree over the column indices
    (column 2j with 2j+1, then pairs of pairs, ...).

    Zero columns appended to a row change no bit of its sum, so a row's value does not depend
    on the width of the block it was padded to (numpy's pairwise sum splits a row by its
    length, so per-query results changed with the block size), and numpy and torch add in the
    same order.
    """
    if x.shape[1] == 0:
        return ops.zeros((x.shape[0],), "f64")
    while x.shape[1] > 1:
        if x.shape[1] % 2:
            x = ops.hcat([x, ops.zeros((x.shape[0], 1), "f64")])
        x = x[:, 0::2] + x[:, 1::2]
    return x[:, 0]


def _small_pmf(ops, valid, small, num_a, num_b, den):
    """Exact pmf C(.)C(.)/C(.) from the binomial table for rows with n <= BINOM_MAX.

    Each argument pair is (top, bottom) int64 arrays; out-of-table entries are masked."""
    table = ops.table("binom", _BINOM)
    ok = valid & small

    def C(pair):
        a, b = pair
        inside = (b >= 0) & (b <= a) & (a <= BINOM_MAX)
        a = ops.clip(a, 0, BINOM_MAX)
        b = ops.clip(b, 0, BINOM_MAX)
        return ops.where(inside, table[a, b], 0.0)

    numer = C(num_a) * C(num_b)
    d = ops.where(ok, C(den), 1.0)
    q = dd_quot(ops.where(ok, numer, 0.0), d)
    return dd_zero_where(ops, ~ok, q)


def _hypergeom_pmf(ops, n, m, t):
    """X = relevant items among the first t of n shuffled positions holding m relevant ones.

    Returns (x, pmf) as (S, W) arrays (pmf a double-double), x = lo + column,
    lo = max(0, t - (n - m)); P(x) = C(m, x) C(n-m, t-x) / C(n, t), computed exactly from a
    table for n <= 56, else from P(x+1)/P(x) = (m - x)(t - x) / ((x + 1)(n - m - t + x + 1)).
    """
    lo = ops.clip(t - (n - m), 0, None)
    hi = ops.where(m < t, m, t)
    length = hi - lo + 1
    W = ops.max_int(length)
    x = lo[:, None] + ops.arange(W)[None, :]
    n_, m_, t_ = n[:, None], m[:, None], t[:, None]
    num = ops.f64((m_ - x) * (t_ - x))
    den = ops.f64((x + 1) * (n_ - m_ - t_ + x + 1))
    approx = _pmf_from_ratios(ops, num, den, length)
    small = n_ <= BINOM_MAX
    if not ops.any(small):
        return x, dd_const(approx)
    valid = ops.arange(W)[None, :] < length[:, None]
    exact = _small_pmf(ops, valid, small, (m_, x), (n_ - m_, t_ - x), (n_ + 0 * x, t_ + 0 * x))
    return x, dd_where(ops, small, exact, dd_const(approx))


def _jth_position_pmf(ops, n, m, J):
    """Q = position (1-based) of the J-th relevant item of a shuffled group (n items, m relevant).

    P(Q = q) = C(q-1, J-1) C(n-q, m-J) / C(n, m) for q = J..n-m+J; returns (q, pmf) (S, W),
    exact from a table for n <= 56, else from P(q+1)/P(q) = q (n-q-m+J) / ((q-J+1)(n-q)).
    """
    length = n - m + 1
    W = ops.max_int(length)
    q = J[:, None] + ops.arange(W)[None, :]
    n_, m_, J_ = n[:, None], m[:, None], J[:, None]
    num = ops.f64(q * (n_ - q - m_ + J_))
    den = ops.f64((q - J_ + 1) * (n_ - q))
    approx = _pmf_from_ratios(ops, num, den, length)
    small = n_ <= BINOM_MAX
    if not ops.any(small):
        return q, dd_const(approx)
    valid = ops.arange(W)[None, :] < length[:, None]
    exact = _small_pmf(ops, valid, small, (q - 1, J_ - 1 + 0 * q), (n_ - q, m_ - J_ + 0 * q),
                       (n_ + 0 * q, m_ + 0 * q))
    return q, dd_where(ops, small, exact, dd_const(approx))


# -- tie groups of a sorted block ----------------------------------------------------------
class _Groups:
    """Tie groups of a sorted block, without materialising one record per group.

    ``gid`` numbers the groups of the whole block in row-major order (a non-decreasing
    flat array), so a group's extent is two ``searchsorted`` calls and the relevant items
    before any position another two.  Only the groups that hold relevant items (few) are
    listed explicitly: ``rows, c, n, m, h`` (row-major, closest first), ``ordinal`` = index
    of the group among its row's relevant groups.
    """

    def __init__(self, ops, key_s, rel_s):
        B, N = rel_s.shape
        self.ops, self.B, self.N = ops, B, N
        start = ops.full((B, N), True, "bool")
        start[:, 1:] = key_s[:, 1:] != key_s[:, :-1]
        self.gid = ops.cumsum_i32(start.reshape(-1))  # flat, non-decreasing (B*N < 2**31)
        self.rel_flat = ops.nonzero(rel_s.reshape(-1))[0]  # sorted flat positions
        g_items = self.gid[self.rel_flat]
        n_items = g_items.shape[0]
        new = ops.full((n_items,), True, "bool")
        if n_items > 1:
            new[1:] = g_items[1:] != g_items[:-1]
        first = ops.nonzero(new)[0]  # first relevant item of each relevant group
        gids = g_items[first]
        self.rows = self.rel_flat[first] // N
        lo = ops.searchsorted(self.gid, gids, right=False)
        hi = ops.searchsorted(self.gid, gids, right=True)
        self.c = lo - self.rows * N
        self.n = hi - lo
        self.m = ops.concat([first[1:], ops.full((1,), n_items, "i64")]) - first
        counts = ops.bincount(self.rel_flat // N, B)  # R per row
        item_start = ops.cumsum(counts, 0) - counts
        self.h = first - item_start[self.rows]
        gcounts = ops.bincount(self.rows, B)
        self.ordinal = ops.arange(first.shape[0]) - (ops.cumsum(gcounts, 0) - gcounts)[self.rows]

    @property
    def end(self):
        return self.c + self.n

    def group_at(self, rows, cols):
        """(c, n, m, h) of the groups holding positions (rows, cols), one per entry."""
        ops, N = self.ops, self.N
        base = rows * N
        g = self.gid[base + cols]
        lo = ops.searchsorted(self.gid, g, right=False)
        hi = ops.searchsorted(self.gid, g, right=True)
        row0 = ops.searchsorted(self.rel_flat, base, right=False)
        h = ops.searchsorted(self.rel_flat, lo, right=False) - row0
        m = ops.searchsorted(self.rel_flat, hi, right=False) - row0 - h
        return lo - base, hi - lo, m, h

    def rel_sum(self, values, mask):
        """Per-row sums of non-negative double-doubles given per relevant group, where mask."""
        ops = self.ops
        width = ops.max_int(self.ordinal) + 1
        hi = ops.zeros((self.B, width), "f64")
        lo = ops.zeros((self.B, width), "f64")
        hi[self.rows, self.ordinal] = ops.where(mask, values[0], 0.0)
        lo[self.rows, self.ordinal] = ops.where(mask, values[1], 0.0)
        return dd_rowsum(ops, (hi, lo))

    def relevant_items(self, where: str):
        """(rows, ranks, group index) of every relevant item in ranked order, from the group
        counts: ``first`` puts a group's m relevant items on its first m positions
        (optimistic), ``last`` on its last m (pessimistic), ``end`` gives them all the
        group's end rank (grouped)."""
        ops = self.ops
        idx = ops.repeat(ops.arange(self.m.shape[0]), self.m)
        first_item = ops.cumsum(self.m, 0) - self.m
        offset = ops.arange(idx.shape[0]) - first_item[idx]
        if where == "first":
            ranks = self.c[idx] + 1 + offset
        elif where == "last":
            ranks = self.end[idx] - self.m[idx] + 1 + offset
        else:
            ranks = self.end[idx]
        return self.rows[idx], ranks, idx


# -- the per-block computation ---------------------------------------------------------------
def block_metrics(ops, key_s, rel_s, n_kept, options: Options, row0: int = 0) -> Dict[str, object]:
    """Per-query metrics of one sorted block (see the module docstring for the inputs).

    Returns a dict of device arrays: ap, n_relevant, hits_at_k, precision_at_k,
    recall_at_k, cmc (B, max_rank), inp, r_precision.  ``row0`` is the index of the block's
    first query (for the error message of ``grouped``).
    """
    B, N = rel_s.shape
    R = ops.sum(rel_s, 1)
    ties = options.ties
    if ties in ("stable", "reverse"):
        rows, cols = ops.nonzero(rel_s)
        out = _item_metrics(ops, rows, cols + 1, None, R, n_kept, options, N)
        out["n_relevant"] = R
        return out
    groups = _Groups(ops, key_s, rel_s)
    if ties == "grouped" and options.k is not None:
        _check_grouped_cutoff(ops, groups, n_kept, options.k, row0)
    if ties in ("optimistic", "pessimistic"):
        rows, ranks, _ = groups.relevant_items("first" if ties == "optimistic" else "last")
        out = _item_metrics(ops, rows, ranks, None, R, n_kept, options, N)
    elif ties == "grouped":
        rows, ranks, g = groups.relevant_items("end")
        out = _item_metrics(ops, rows, ranks, (groups.h[g] + groups.m[g], groups.h[g]),
                            R, n_kept, options, N)
    elif ties == "expected":
        out = _expected_metrics(ops, groups, R, n_kept, options)
    else:
        raise ValueError(f"ties: unknown tie policy {ties!r}")
    out["n_relevant"] = R
    return out


def _check_grouped_cutoff(ops, groups: _Groups, n_kept, k: int, row0: int) -> None:
    """Raise the reference's ValueError at the first query where c < k < c + n for a group."""
    inside = n_kept > k  # k < N': position k-1 is a non-junk item; else no group straddles k
    if not ops.any(inside):
        return
    rows = ops.nonzero(inside)[0]
    c, n, _, _ = groups.group_at(rows, ops.full(rows.shape, k - 1, "i64"))
    bad = c + n > k
    if ops.any(bad):
        first = ops.nonzero(bad)[0][0]
        raise grouped_cutoff_error(k, row0 + int(rows[first]), int(c[first]), int(c[first] + n[first]))


def _item_metrics(ops, rows, ranks, grouped, R, n_kept, options: Options, big_n: int) -> Dict[str, object]:
    """Metrics from the relevant items of each row in ranked order (row-major lists).

    ``ranks`` is each item's 1-based rank (under ``grouped`` the group's end rank, and then
    ``grouped`` = (h + m, h) of the item's group, for its term).
    """
    B = R.shape[0]
    k, rule = options.k, options.ap_rule
    maxR = ops.max_int(R)
    offset = ops.cumsum(R, 0) - R
    i0 = ops.arange(rows.shape[0]) - offset[rows]
    valid = ops.arange(maxR)[None, :] < R[:, None]
    r_pad = ops.full((B, maxR), 1, "i64")
    r_pad[rows, i0] = ranks
    i_pad = ops.arange(maxR)[None, :] + 1
    if grouped is None:
        term = _concrete_term(ops, i_pad, r_pad, rule, small=big_n < 2 ** 26)
    else:
        hm_pad = ops.zeros((B, maxR), "i64")
        h_pad = ops.zeros((B, maxR), "i64")
        hm_pad[rows, i0] = grouped[0]
        h_pad[rows, i0] = grouped[1]
        term = _grouped_term(ops, hm_pad, h_pad, r_pad, rule)

    def term_sum(mask):
        return dd_rowsum(ops, dd_zero_where(ops, ~mask, term))

    if k is None:
        ap = _ratio(ops, term_sum(valid), R)
        hk = R
    else:
        in_k = valid & (r_pad <= k)
        hk = ops.sum(in_k, 1)
        if options.ap_at_k == "dcmh":
            L = ops.clip(R, None, k)
            ap = _ratio(ops, term_sum(valid & (i_pad <= L[:, None])), L)
        else:
            den = {"hits": hk, "r": R, "min_k_r": ops.clip(R, None, k)}[options.ap_at_k]
            ap = _ratio(ops, term_sum(in_k), den)
    cut = n_kept if k is None else ops.full((B,), k, "i64")
    has = R > 0
    out = {
        "ap": ap,
        "hits_at_k": ops.f64(ops.where(has, hk, 0)),
        "precision_at_k": _safe_div(ops, ops.where(has, hk, 0), cut),
        "recall_at_k": _safe_div(ops, hk, R),
    }
    if maxR > 0:
        first = r_pad[:, 0]
        last = r_pad[ops.arange(B), ops.clip(R - 1, 0, None)]
        hits_R = ops.sum(valid & (r_pad <= R[:, None]), 1)
    else:
        first = last = hits_R = ops.zeros((B,), "i64")
    K = ops.arange(options.max_rank)[None, :] + 1
    out["cmc"] = ops.f64(has[:, None] & (K >= first[:, None]))
    out["inp"] = _safe_div(ops, R, ops.where(has, last, 0))
    out["r_precision"] = _safe_div(ops, hits_R, R)
    return out


# -- ties="expected" ----------------------------------------------------------------------------
def _harmonic_table(ops, N: int):
    """T[x] = Σ_{r=1..x} 1/r for x = 0..N as a double-double (1-D), so that every sum of
    1/r over a run of ranks is a difference T[b] - T[a] with ~1e-30 absolute error."""
    r = ops.f64(ops.arange(N) + 1)[None, :]
    hi, lo = dd_cumsum(ops, dd_quot(r * 0.0 + 1.0, r, small=N < 2 ** 26))
    z = ops.zeros((1, 1), "f64")
    return ops.hcat([z, hi])[0], ops.hcat([z, lo])[0]


def _run_sums(ops, T, c, h, t, rule: str):
    """A = Σ_{p=1..t} alpha(c+p) and Bs = Σ_{p=1..t} (p-1) beta(c+p) (double-doubles) for
    groups with c items (h relevant) before them, from the harmonic table:
    with S = Σ 1/(c+p) and S' = Σ 1/(c+p-1) (the p = 1 term left out when c = 0),
    precision-sum A = (h+1) S, Bs = t - (c+1) S; trapezoid
    A = ((h+1) S + h S')/2 (+1/2 for alpha(1) = 1 when c = 0), Bs = (t - (c+1) S + t - c S')/2
    (-1/2 when c = 0)."""
    def diff(a, b):
        x, y = dd_take(T, a), dd_take(T, b)
        return dd_add(x, (-y[0], -y[1]))

    def times(x, integer):
        return dd_mul(x, dd_const(ops.f64(integer)))

    def minus(integer, x):
        return dd_add(dd_const(ops.f64(integer)), (-x[0], -x[1]))

    S = diff(c + t, c)
    if rule == "precision_sum":
        return times(S, h + 1), minus(t, times(S, c + 1))
    S1 = diff(ops.clip(c + t - 1, 0, None), ops.clip(c - 1, 0, None))
    first = ops.where((c == 0) & (t >= 1), 1, 0)
    A = dd_add(times(S, h + 1), times(S1, h))
    A = dd_add(A, dd_const(ops.f64(first)))
    cS1 = times(S1, c)
    Bs = dd_add(minus(2 * t - first, times(S, c + 1)), (-cS1[0], -cS1[1]))
    # halving is exact
    return (A[0] * 0.5, A[1] * 0.5), (Bs[0] * 0.5, Bs[1] * 0.5)


def _group_expected_sum(ops, T, c, n, m, h, t, rule: str):
    """E[Σ term] over the first t positions of groups (c, n, m, h), double-double:
    (m/n) A(t) + m(m-1)/(n(n-1)) Bs(t) (position p relevant with probability m/n, with on
    average (p-1)(m-1)/(n-1) of the group's relevant items before it)."""
    A, Bs = _run_sums(ops, T, c, h, t, rule)
    nn1 = ops.where(n > 1, n * (n - 1), 1)
    first = dd_quot(ops.f64(m), ops.f64(n))
    second = dd_zero_where(ops, n <= 1, dd_quot(ops.f64(m * (m - 1)), ops.f64(nn1)))
    out = dd_add(dd_mul(first, A), dd_mul(second, Bs))
    return dd_zero_where(ops, m == 0, out)


def _cut_group(ops, groups: _Groups, K):
    """For a cut-off K per row (>= 1): (c, n, m, h) of the group holding position
    min(K, N) - 1, and t = the number of its positions inside the top K."""
    Kc = ops.clip(K, 1, groups.N)
    c, n, m, h = groups.group_at(ops.arange(groups.B), Kc - 1)
    return c, n, m, h, Kc - c


def _expected_hits_num(ops, groups: _Groups, K):
    """n E[H(K)] = h n + t m (an exact integer) and n, for the group cut by K."""
    c, n, m, h, t = _cut_group(ops, groups, K)
    return h * n + t * m, n


def _expected_metrics(ops, groups: _Groups, R, n_kept, options: Options) -> Dict[str, object]:
    B, N = groups.B, groups.N
    k, rule = options.k, options.ap_rule
    has = R > 0
    T = ops.cached(("harmonic", N), lambda: _harmonic_table(ops, N))
    # groups without a relevant item contribute nothing to AP: work on the others only
    c, n, m, h = groups.c, groups.n, groups.m, groups.h
    full = _group_expected_sum(ops, T, c, n, m, h, n, rule)
    everything = ops.full(c.shape, True, "bool")
    if k is None:
        ap = _ratio(ops, groups.rel_sum(full, everything), R)
    elif options.ap_at_k in ("r", "min_k_r"):
        # a fixed denominator: E is linear, each position inside the top k counts
        t = ops.clip(k - c, 0, None)
        t = ops.where(t < n, t, n)
        s = groups.rel_sum(_group_expected_sum(ops, T, c, n, m, h, t, rule), everything)
        ap = _ratio(ops, s, R if options.ap_at_k == "r" else ops.clip(R, None, k))
    elif options.ap_at_k == "hits":
        ap = _expected_ap_hits(ops, groups, T, full, R, k, rule)
    else:
        ap = _expected_ap_dcmh(ops, groups, T, full, R, k, rule)

    if k is None:
        hk = ops.f64(R)
        p_at_k = _safe_div(ops, R, n_kept)
        r_at_k = ops.f64(has)
    else:
        num, n = _expected_hits_num(ops, groups, ops.full((B,), k, "i64"))
        num = ops.where(has, num, 0)
        hk = _safe_div(ops, num, n)
        p_at_k = _safe_div(ops, num, n * k)
        r_at_k = _safe_div(ops, num, n * R)
    num_R, n_R = _expected_hits_num(ops, groups, R)
    return {
        "ap": ap,
        "hits_at_k": hk,
        "precision_at_k": p_at_k,
        "recall_at_k": r_at_k,
        "r_precision": _safe_div(ops, ops.where(has, num_R, 0), n_R * R),
        "cmc": _expected_cmc(ops, groups, R, options.max_rank),
        "inp": _expected_inp(ops, groups, R),
    }


def _expected_ap_hits(ops, groups: _Groups, T, full, R, k: int, rule: str):
    """E[S_k / H_k]: whole groups are fixed; a cut group (t of its n positions inside, X of
    its m relevant items inside, hypergeometric) contributes, given X = x, the uniform sum
    (x/t) A(t) + x(x-1)/(t(t-1)) Bs(t) over its first t positions."""
    B = groups.B
    c, n, m, h, t = _cut_group(ops, groups, ops.full((B,), k, "i64"))
    straddle = (t < n) & (m > 0) & (R > 0)
    stop = c + ops.where(straddle, 0, t)
    s_in = groups.rel_sum(full, groups.end <= stop[groups.rows])
    ap = _ratio(ops, s_in, h + ops.where(t == n, m, 0))
    if not ops.any(straddle):
        return ap
    rows = ops.nonzero(straddle)[0]
    c, n, m, h, t = c[rows], n[rows], m[rows], h[rows], t[rows]
    A, Bs = _run_sums(ops, T, c, h, t, rule)
    x, pmf = _hypergeom_pmf(ops, n, m, t)
    t_ = t[:, None] + 0 * x
    xt = dd_quot(ops.f64(x), ops.f64(t_))
    xx = dd_quot(ops.f64(x * (x - 1)), ops.f64(ops.where(t_ > 1, t_ * (t_ - 1), 1)))
    col = lambda v: (v[0][:, None] + 0.0 * xt[0], v[1][:, None] + 0.0 * xt[0])  # noqa: E731
    s = dd_add(col(dd_take(s_in, rows)), dd_add(dd_mul(xt, col(A)), dd_mul(xx, col(Bs))))
    hx = h[:, None] + x
    value = dd_zero_where(ops, hx == 0, dd_div(s, dd_int(ops, ops.where(hx == 0, 1, hx))))
    ap[rows] = dd_round(dd_rowsum(ops, dd_mul(pmf, value)))
    return ap


def _expected_ap_dcmh(ops, groups: _Groups, T, full, R, k: int, rule: str):
    """E[(1/L) Σ_{i<=L} term_i], L = min(k, R): groups whose relevant items all come before
    the L-th count wholly; in the group holding the L-th relevant item (the J = L - h-th of
    its m), condition on the position q of that item (negative hypergeometric): the other
    J-1 sit uniformly among the group's first q-1 positions, which gives
    alpha(c+q) + (J-1) beta(c+q) + (J-1)/(q-1) A(q-1) + (J-1)(J-2)/((q-1)(q-2)) Bs(q-1)."""
    B = groups.B
    L = ops.clip(R, None, k)
    Lg = L[groups.rows]
    sel = (groups.h < Lg) & (groups.h + groups.m >= Lg)  # the group holding the L-th item
    gsel = ops.nonzero(sel)[0]
    rows = groups.rows[gsel]
    c, n, m, h = groups.c[gsel], groups.n[gsel], groups.m[gsel], groups.h[gsel]
    J = L[rows] - h
    whole = J == m
    stop = ops.zeros((B,), "i64")
    stop[rows] = c + ops.where(whole, n, 0)
    total = groups.rel_sum(full, groups.end <= stop[groups.rows])
    part = ~whole
    if ops.any(part):
        pr = ops.nonzero(part)[0]
        c, n, m, h, J, rows_p = c[pr], n[pr], m[pr], h[pr], J[pr], rows[pr]
        q, pmf = _jth_position_pmf(ops, n, m, J)
        c_, h_, J_ = c[:, None] + 0 * q, h[:, None] + 0 * q, J[:, None] + 0 * q
        alpha, beta = _alpha_beta(ops, h_, c_ + q, rule)
        A, Bs = _run_sums(ops, T, c_, h_, ops.clip(q - 1, 0, None), rule)
        value = dd_add(alpha, dd_mul(beta, dd_const(ops.f64(J_ - 1))))
        c1 = dd_zero_where(ops, q <= 1, dd_quot(ops.f64(J_ - 1), ops.f64(ops.where(q > 1, q - 1, 1))))
        value = dd_add(value, dd_mul(c1, A))
        q2 = ops.where(q > 2, (q - 1) * (q - 2), 1)
        c2 = dd_zero_where(ops, (q <= 2) | (J_ <= 2), dd_quot(ops.f64((J_ - 1) * (J_ - 2)), ops.f64(q2)))
        value = dd_add(value, dd_mul(c2, Bs))
        extra = dd_rowsum(ops, dd_mul(pmf, value))
        th, tl = dd_add(dd_take(total, rows_p), extra)
        total[0][rows_p] = th
        total[1][rows_p] = tl
    return _ratio(ops, total, L)


def _expected_inp(ops, groups: _Groups, R):
    """E[R / r_R]: the last relevant item is the m-th of the last relevant group."""
    B = groups.B
    out = ops.zeros((B,), "f64")
    gsel = ops.nonzero(groups.h + groups.m == R[groups.rows])[0]
    if gsel.shape[0] == 0:
        return out
    rows = groups.rows[gsel]
    c, n, m = groups.c[gsel], groups.n[gsel], groups.m[gsel]
    q, pmf = _jth_position_pmf(ops, n, m, m)
    value = dd_quot(ops.f64(R[rows][:, None] + 0 * q), ops.f64(c[:, None] + q))
    out[rows] = dd_round(dd_rowsum(ops, dd_mul(pmf, value)))
    return out


def _expected_cmc(ops, groups: _Groups, R, max_rank: int):
    """CMC@K = P(first relevant item within the top K) = 1 - C(n-m, t)/C(n, t) for the first
    relevant group, t = K - c of its positions inside the top K."""
    B = groups.B
    out = ops.zeros((B, max_rank), "f64")
    gsel = ops.nonzero(groups.h == 0)[0]
    if gsel.shape[0] == 0:
        return out
    rows = groups.rows[gsel]
    c, n, m = groups.c[gsel][:, None], groups.n[gsel][:, None], groups.m[gsel][:, None]
    t = ops.arange(max_rank)[None, :] + 1 - c
    active = (t >= 1) & (t < n)
    # C(n-m, t)/C(n, t) = prod_{i<t} (n-m-i)/(n-i): a double-double prefix product of exact
    # quotients, so that 1 - it rounds correctly (e.g. to exactly 1/4 when it is 1/4).
    # Factors past i = n-m are clamped to 0: the product is 0 from there on anyway, but the
    # log-depth scan also multiplies runs of those factors without the zero, and (i-(n-m))/(n-i)
    # grows towards m - 1: with more than ~1,000 relevant items such a run overflowed to inf
    # and 0 * inf gave NaN.  With every factor in [0, 1] no partial product can overflow.
    fnum = ops.where(active, ops.f64(ops.clip(n - m - (t - 1), 0, None)), 1.0)
    fden = ops.where(active, ops.f64(n - (t - 1)), 1.0)
    none_yet = dd_cumprod(ops, dd_quot(fnum, fden))
    one_minus = dd_round(dd_add(dd_const(none_yet[0] * 0.0 + 1.0), (-none_yet[0], -none_yet[1])))
    out[rows] = ops.where(t <= 0, 0.0, ops.where(t >= n, 1.0, one_minus))
    return out


# -- assembling a PerQuery from blocks ---------------------------------------------------------
FIELDS = ("ap", "n_relevant", "hits_at_k", "precision_at_k", "recall_at_k", "cmc", "inp", "r_precision")


def empty_per_query(n_queries: int, options: Options) -> Dict[str, np.ndarray]:
    out = {name: np.zeros(n_queries, dtype=np.float64) for name in FIELDS}
    out["n_relevant"] = np.zeros(n_queries, dtype=np.int64)
    out["cmc"] = np.zeros((n_queries, options.max_rank), dtype=np.float64)
    if options.radius is not None:
        out["precision_at_radius"] = np.zeros(n_queries, dtype=np.float64)
        out["recall_at_radius"] = np.zeros(n_queries, dtype=np.float64)
    return out


def to_per_query(arrays: Dict[str, np.ndarray], options: Options) -> PerQuery:
    return PerQuery(
        ap=arrays["ap"],
        n_relevant=arrays["n_relevant"],
        hits_at_k=arrays["hits_at_k"],
        precision_at_k=arrays["precision_at_k"],
        recall_at_k=arrays["recall_at_k"],
        cmc=arrays["cmc"],
        inp=arrays["inp"],
        r_precision=arrays["r_precision"],
        precision_at_radius=arrays.get("precision_at_radius"),
        recall_at_radius=arrays.get("recall_at_radius"),
    )


def radius_values(ops, within, rel, R):
    """precision/recall within a radius: ``within`` = non-junk with d <= radius (B, N),
    ``rel`` = relevant non-junk; 0 when R = 0."""
    keep = within
    n_within = ops.sum(keep, 1)
    rel_within = ops.sum(keep & rel, 1)
    has = R > 0
    precision = ops.where(has, _safe_div(ops, rel_within, n_within), 0.0)
    recall = _safe_div(ops, rel_within, R)
    return precision, recall
