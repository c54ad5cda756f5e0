"""The rank discounts of DCG: ``d(r) = 1 / log2(r + 1)`` as one float64 table (spec §7 nDCG).

A logarithm is irrational, so no implementation can hold ``d(r)`` exactly.  The specification
therefore defines the discount of rank ``r`` as one float64 number, the nearest to
``1 / log2(r + 1)``, and every implementation (the exact reference included) reads it from this
table: the reference sums ``Fraction(d(r))`` exactly, the fast implementations sum the same
floats in double-double and round once.

The table is computed with IEEE-754 additions, multiplications and divisions only (each is
correctly rounded on every platform), never with a libm ``log2`` (whose last bit may differ
between platforms and between numpy's SIMD loops and C's libm): ``x = 2**e * m`` with
``m`` in ``[sqrt(1/2), sqrt(2))``, ``ln(m) = 2 atanh(t)`` with ``t = (m - 1) / (m + 1)``
summed as a series in double-double (|t| < 0.1716, 24 terms: the first omitted term is below
1e-38), then ``log2(x) = e + ln(m) / ln 2`` and ``d = 1 / log2(x)``, each in double-double,
rounded once.  About 100 bits of accuracy: the rounding to float64 is the correct one unless
``1 / log2(r + 1)`` lies within 1e-30 (relative) of a midpoint between two floats
(``conformance/tests/test_discounts.py`` checks every rank up to 5,000 against 50 decimal digits).
"""

from __future__ import annotations

import threading
from typing import Tuple

import numpy as np
from retrieval_conformance.reference.contract.conventions import DISCOUNTS
from retrieval_conformance.reference.contract.double_double import dd_add, dd_div, dd_mul, two_sum

# ln 2 as a double-double (hi + lo)
_LN2 = (0.6931471805599453, 2.3190468138462996e-17)
_SERIES_TERMS = 24
#: 1 / (2j + 1) as double-doubles of Python floats, j = 0 .. _SERIES_TERMS
_INVERSE_ODD = [dd_div((1.0, 0.0), (2.0 * j + 1.0, 0.0)) for j in range(_SERIES_TERMS + 1)]


def _log2_dd(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """log2 of integers x >= 2 (float64 array, exact) as a double-double."""
    mant, exp = np.frexp(x)  # x = mant * 2**exp, mant in [0.5, 1): exact
    big = mant >= np.sqrt(0.5)
    m = np.where(big, mant, 2.0 * mant)  # in [sqrt(1/2), sqrt(2)): exact scaling
    e = np.where(big, exp, exp - 1).astype(np.float64)
    zero = m * 0.0
    # t = (m - 1) / (m + 1): m - 1 is exact (Sterbenz), m + 1 as a double-double
    t = dd_div((m - 1.0, zero), two_sum(m, 1.0 + zero))
    t2 = dd_mul(t, t)
    # atanh(t) / t = sum t^(2j) / (2j + 1), by Horner from the last term
    acc = (zero + _INVERSE_ODD[_SERIES_TERMS][0], zero + _INVERSE_ODD[_SERIES_TERMS][1])
    for j in range(_SERIES_TERMS - 1, -1, -1):
        acc = dd_add(dd_mul(acc, t2), _INVERSE_ODD[j])
    ln_m = dd_mul(dd_mul(acc, t), (zero + 2.0, zero))
    return dd_add((e, zero), dd_div(ln_m, (zero + _LN2[0], zero + _LN2[1])))


def _compute(stop: int, start: int = 0) -> np.ndarray:
    """``d(r)`` for the ranks ``start + 1 .. stop``."""
    ranks = np.arange(start + 1, stop + 1, dtype=np.float64)
    log2 = _log2_dd(ranks + 1.0)
    one = (ranks * 0.0 + 1.0, ranks * 0.0)
    hi, lo = dd_div(one, log2)
    return hi + lo  # the double-double rounded once to float64


#: ranks computed at a time: the double-double temporaries take ~260 bytes per rank, so a whole
#: gallery at once would cost ~1 GB at 4,000,000 items
_CHUNK = 1 << 14


def _grown(table: np.ndarray, n: int) -> np.ndarray:
    """``table`` extended to ``n`` entries, the new ranks computed ``_CHUNK`` at a time (each
    entry depends on its rank alone, so the chunks give the same bits as one pass)."""
    grown = np.empty(n, dtype=np.float64)
    grown[: table.shape[0]] = table
    for start in range(table.shape[0], n, _CHUNK):
        stop = min(n, start + _CHUNK)
        grown[start:stop] = _compute(stop, start)
    grown.flags.writeable = False
    return grown


_lock = threading.Lock()
_table = np.ones(0, dtype=np.float64)


def discount_table(n: int) -> np.ndarray:
    """``d(1) .. d(n)`` (float64, read-only): ``d(r)`` is the float64 nearest to 1 / log2(r + 1).

    Grown on demand and kept (a gallery of N items needs N discounts); the values never change,
    so every caller, thread and implementation reads the same bits.
    """
    global _table
    n = int(n)
    if n <= _table.shape[0]:
        return _table[:n]
    with _lock:
        if n > _table.shape[0]:
            _table = _grown(_table, max(n, 2 * _table.shape[0], 1024))
    return _table[:n]


def _check_rule(rule: str) -> None:
    if rule not in DISCOUNTS:
        raise ValueError(f"discount: expected one of {list(DISCOUNTS)}, got {rule!r}")


def discount(rank: int, rule: str = "log2") -> float:
    """The discount of one 1-based rank under ``rule`` (the entry of :func:`rank_discounts`),
    read from the table without building a shifted copy."""
    _check_rule(rule)
    if rule == "trec_eval_9.0a3":
        return 1.0 if rank == 1 else float(discount_table(rank - 1)[rank - 2])
    return float(discount_table(rank)[rank - 1])


def rank_discounts(n: int, rule: str = "log2") -> np.ndarray:
    """The discounts of ranks 1 .. n under ``Options.discount`` (read-only float64):

    * ``"log2"``: ``d(r) = 1 / log2(r + 1)`` (:func:`discount_table`), also trec_eval's
      rule since 9.0.4 (9.0.8, 10.0, pytrec_eval);
    * ``"trec_eval_9.0a3"``: trec_eval 9.0a3's ``1`` at rank 1 and ``1 / log2(r)`` from rank 2
      on, which is ``d(r - 1)``: the same table shifted by one rank (ranks 1 and 2 both weigh 1).

    Every implementation reads its discounts here, so the two rules cost one table.
    """
    _check_rule(rule)
    if rule == "log2":
        return discount_table(n)
    n = int(n)
    if n < 1:
        return discount_table(0)
    out = np.concatenate([[1.0], discount_table(n - 1)])
    out.flags.writeable = False
    return out
