"""Double-double arithmetic with arithmetic operators only: error-free transforms and the
basic operations on pairs ``(hi, lo)`` with ``hi = fl(hi + lo)`` (Dekker 1971; Hida, Li &
Bailey's QD library), about 2**-104 relative precision.

Only ``+ - * /`` are used, so the same code runs on Python floats, numpy arrays and torch
tensors, and gives the same bits on every platform (each operation is correctly rounded IEEE;
nothing here may fuse a multiply and an add).  The contract's discount table
(:mod:`.discounts`) and the vector implementations (``implementations/vector/double_double.py``,
which adds the operations that need an array library) share it.
"""

from __future__ import annotations

_SPLITTER = 134217729.0  # 2**27 + 1: Dekker's split into two 26-bit halves


# -- error-free transforms -------------------------------------------------------------------
def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a, b):
    """``(s, e)`` with ``s + e = a + b`` exactly, when ``|a| >= |b|`` (Dekker)."""
    s = a + b
    return s, b - (s - a)


def split(a):
    """``(hi, lo)`` with ``hi + lo = a`` and each half of at most 26 significant bits."""
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker, no FMA)."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


# -- double-double arithmetic ----------------------------------------------------------------
def dd_add(x, y):
    """``x + y`` (the accurate addition: any signs)."""
    s, e = two_sum(x[0], y[0])
    t, f = two_sum(x[1], y[1])
    s, e = fast_two_sum(s, e + t)
    return fast_two_sum(s, e + f)


def dd_add_same_sign(x, y):
    """``x + y`` for double-doubles of the same sign (no cancellation): the cheaper "sloppy"
    addition, accurate to ~2**-104 relative in that case."""
    s, e = two_sum(x[0], y[0])
    return fast_two_sum(s, e + (x[1] + y[1]))


def dd_mul(x, y):
    """``x y``."""
    p, e = two_prod(x[0], y[0])
    return fast_two_sum(p, e + (x[0] * y[1] + x[1] * y[0]))


def dd_div(x, y):
    """``x / y`` for double-doubles (``y`` nonzero): three quotient digits
    ``q1 + q2 + q3``, each from the remainder of the previous ones."""
    q1 = x[0] / y[0]
    p = dd_mul(y, (q1, q1 * 0.0))
    r = dd_add(x, (-p[0], -p[1]))
    q2 = r[0] / y[0]
    p = dd_mul(y, (q2, q2 * 0.0))
    r = dd_add(r, (-p[0], -p[1]))
    q3 = r[0] / y[0]
    return dd_add(fast_two_sum(q1, q2), (q3, q3 * 0.0))
