"""The discount table of DCG (spec §7 nDCG): d(r) is the float64 nearest to 1 / log2(r + 1),
the same bits however the table was grown, and exact where the logarithm is an integer."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from retrieval_conformance.reference.contract import discounts


def _nearest_float(r: int) -> float:
    with localcontext() as ctx:
        ctx.prec = 50
        value = Decimal(2).ln() / Decimal(r + 1).ln()
    exact = Fraction(value)
    f = float(value)
    return min((f, float(np.nextafter(f, 0.0)), float(np.nextafter(f, 2.0))), key=lambda c: abs(Fraction(c) - exact))


def test_every_discount_up_to_5000_is_the_nearest_float():
    table = discounts.discount_table(5000)
    wrong = [r for r in range(1, 5001) if table[r - 1] != _nearest_float(r)]
    assert wrong == []


def test_large_ranks_are_the_nearest_float():
    table = discounts.discount_table(2**20 + 2)
    for r in (2**16 - 1, 2**16, 10**5 + 7, 2**20 - 1, 2**20 + 1):
        assert table[r - 1] == _nearest_float(r), r


def test_integer_logarithms_are_exact():
    for j in range(1, 20):
        assert discounts.discount(2**j - 1) == float(Fraction(1, j))  # log2(2**j) = j
    assert discounts.discount(1) == 1.0 and discounts.discount(3) == 0.5
    assert discounts.discount(7) == float(Fraction(1, 3))


def test_growing_the_table_keeps_its_bits_and_it_is_read_only():
    small = discounts._compute(100)
    big = discounts.discount_table(50_000)
    assert np.array_equal(small, big[:100])
    assert not big.flags.writeable
    assert np.all(np.diff(big) < 0)  # strictly decreasing
