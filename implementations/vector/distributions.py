"""Distributions inside a shuffled tie group, for ``ties="expected"`` (spec §4 ties=expected).

A tie group of ``n`` items holding ``m`` relevant ones is in uniformly random order.  Two
distributions are needed, one row per group, one column per value:

* :func:`hypergeom_pmf`: X = relevant items among the group's first ``t`` positions (a
  cut-off inside the group),
  ``P(X = x) = C(m, x) C(n - m, t - x) / C(n, t)``;
* :func:`jth_position_pmf`: Q = position of the group's J-th relevant item,
  ``P(Q = q) = C(q - 1, J - 1) C(n - q, m - J) / C(n, m)``.

For ``n <= 56`` both are exact table quotients (double-doubles of exact integers); larger
groups walk the successive ratios ``P(v + 1) / P(v)`` (exact integers) out from the mode and
normalise, which never overflows and has no log-gamma cancellation (~1e-15 relative).
"""

from __future__ import annotations

import math

import numpy as np
from retrieval_conformance.implementations.vector.double_double import dd_const, dd_quot, dd_where, dd_zero_where

#: C(a, b) for a, b <= 56 as exact float64: C(56, 28) < 2**53, so products of two table
#: entries that stay below C(n, t) are exact too
BINOM_MAX = 56
BINOM = np.zeros((BINOM_MAX + 1, BINOM_MAX + 1), dtype=np.float64)
for _a in range(BINOM_MAX + 1):
    for _b in range(_a + 1):
        BINOM[_a, _b] = float(math.comb(_a, _b))


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


def _small_pmf(ops, valid, small, num_a, num_b, den):
    """Exact pmf C(.)C(.)/C(.) from the binomial table for rows with n <= BINOM_MAX.

    Each argument pair is (top, bottom) int64 arrays; out-of-table entries are masked."""
    table = ops.table("binom", BINOM)
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


def _pmf(ops, n, length, num, den, binomials):
    """The pmf (a double-double (S, W) array) on columns 0..length-1 of each row: exact
    table quotients where n <= BINOM_MAX, else from the successive ratios ``num / den``.

    ``binomials()`` gives the three (top, bottom) pairs of C(.)C(.)/C(.) (built only when
    some row is small)."""
    approx = _pmf_from_ratios(ops, num, den, length)
    small = n[:, None] <= BINOM_MAX
    if not ops.any(small):
        return dd_const(approx)
    valid = ops.arange(num.shape[1])[None, :] < length[:, None]
    exact = _small_pmf(ops, valid, small, *binomials())
    return dd_where(ops, small, exact, dd_const(approx))


def hypergeom_pmf(ops, n, m, t):
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
    pmf = _pmf(ops, n, length, num, den, lambda: ((m_, x), (n_ - m_, t_ - x), (n_ + 0 * x, t_ + 0 * x)))
    return x, pmf


def jth_position_pmf(ops, n, m, J):
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
    pmf = _pmf(
        ops, n, length, num, den, lambda: ((q - 1, J_ - 1 + 0 * q), (n_ - q, m_ - J_ + 0 * q), (n_ + 0 * q, m_ + 0 * q))
    )
    return q, pmf
