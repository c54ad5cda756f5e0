"""Double-double arithmetic on float64 arrays, for the numpy and torch implementations.

A value is a pair ``(hi, lo)`` of float64 arrays with ``hi = fl(hi + lo)``; the pair carries
about 2**-104 relative precision (Dekker 1971; Hida, Li & Bailey's QD library).  Only
``+ - * /`` of float64 arrays are used, so numpy and torch on any device give the same bits
(element-wise kernels do not fuse a multiply and an add).

Why (spec §0 conformance; the implementations are held to the exact values): sums of
AP terms are carried in double-double and rounded once, ``fl(hi + lo)``, which is the
correctly rounded float of the exact value whenever that value is a float64.  A ratio of two
integers below 2**53 needs no double-double: one float64 division of exact integers is
already correctly rounded (:func:`safe_div`).

Functions that take ``ops`` talk to the array library through it (``ops.where``, ...);
the others use only arithmetic operators and indexing, which numpy and torch share.
"""

from __future__ import annotations

from retrieval_conformance.reference.contract.double_double import (  # noqa: F401  (re-exported)
    dd_add,
    dd_add_same_sign,
    dd_div,
    dd_mul,
    fast_two_sum,
    split,
    two_prod,
    two_sum,
)


def dd_quot(x, y, small: bool = False):
    """``x / y`` for exact float64 ``x``, ``y`` (integers below 2**53), ``y`` nonzero:
    ``q + (x - q y) / y`` with ``q = fl(x / y)`` and ``x - q y`` exact.

    ``small``: ``y < 2**26``, so ``y`` needs no Dekker split (``q``'s halves times ``y``
    are exact products).
    """
    q = x / y
    if small:
        p = q * y
        qh, ql = split(q)
        e = (qh * y - p) + ql * y
    else:
        p, e = two_prod(q, y)
    return fast_two_sum(q, ((x - p) - e) / y)


def dd_const(x):
    """A float64 array as a double-double (``lo = 0`` with ``x``'s shape and device)."""
    return (x, x * 0.0)


def dd_int(ops, x):
    """An int64 array as an exact double-double (``hi`` rounds, ``lo`` is the exact rest)."""
    hi = ops.f64(x)
    return hi, ops.f64(x - ops.i64(hi))


def dd_where(ops, cond, x, y):
    """``x`` where ``cond``, else ``y``."""
    return ops.where(cond, x[0], y[0]), ops.where(cond, x[1], y[1])


def dd_zero_where(ops, cond, x):
    """``x`` with 0 where ``cond``."""
    return ops.where(cond, 0.0, x[0]), ops.where(cond, 0.0, x[1])


def dd_take(x, idx):
    """``x[idx]``."""
    return x[0][idx], x[1][idx]


def dd_round(x):
    """The float64 nearest ``hi + lo``."""
    return x[0] + x[1]


# -- row reductions and scans (axis 1) --------------------------------------------------------
def dd_rowsum(ops, x):
    """Row sums of a non-negative double-double (B, W) array.

    ``ops.dd_rowsum`` when the array library has a faster exact one (numpy: Sum2 over
    ``cumsum``), else a pairwise tree of same-sign additions (any device).
    """
    if hasattr(ops, "dd_rowsum"):
        return ops.dd_rowsum(x)
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


def _dd_scan(ops, x, combine):
    """Inclusive prefix scan along axis 1 with an associative ``combine`` (log depth:
    ``x[j] <- combine(x[j], x[j - s])`` for s = 1, 2, 4, ...)."""
    hi, lo = x
    s, W = 1, hi.shape[1]
    while s < W:
        nh, nl = combine((hi[:, s:], lo[:, s:]), (hi[:, :-s], lo[:, :-s]))
        hi, lo = ops.hcat([hi[:, :s], nh]), ops.hcat([lo[:, :s], nl])
        s *= 2
    return hi, lo


def dd_cumsum(ops, x):
    """Inclusive prefix sums along axis 1 of a non-negative double-double array."""
    return _dd_scan(ops, x, dd_add_same_sign)


def dd_cumprod(ops, x):
    """Inclusive prefix products along axis 1."""
    return _dd_scan(ops, x, dd_mul)


# -- quotients rounded once ----------------------------------------------------------------------
def ratio(ops, num, den):
    """``fl(num / den)`` for a double-double ``num`` and an int64 ``den``; 0 where ``den == 0``."""
    zero = den == 0
    q = dd_div(num, dd_int(ops, ops.where(zero, 1, den)))
    return ops.where(zero, 0.0, dd_round(q))


def safe_div(ops, num, den):
    """``num / den`` for int64 arrays in one rounding (exact below 2**53); 0 where ``den == 0``."""
    zero = den == 0
    return ops.where(zero, 0.0, ops.f64(num) / ops.f64(ops.where(zero, 1, den)))
