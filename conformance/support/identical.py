"""Two results compared bit for bit: float64 bytes (NaN equals NaN, 0.0 differs from -0.0) of every
mean, every per-query array and the counted mask, and the exact ``Fraction`` values."""

from __future__ import annotations

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS, MEANS

#: the arrays of a result beside the means
RESULT_ARRAYS = ("ap", "inp", "cmc", "counted")


def same_bits(a, b) -> bool:
    """Equal as float64 bytes (so NaN equals NaN and 0.0 differs from -0.0), or both None."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_identical(got: rc.Result, want: rc.Result) -> None:
    """``got`` and ``want`` hold the same bits, options, implementation and exact values."""
    for name in (*MEANS, *RESULT_ARRAYS):
        mine, theirs = getattr(got, name), getattr(want, name)
        assert same_bits(mine, theirs), f"{name}: {mine} != {theirs}"
    for name in ARRAY_FIELDS:
        assert same_bits(getattr(got.per_query, name), getattr(want.per_query, name)), f"per_query.{name}"
    assert (got.protocol, got.implementation, got.options) == (want.protocol, want.implementation, want.options)
    assert got.per_query.exact == want.per_query.exact
    assert got.exact == want.exact
    if want.implementation == "reference":
        assert got.per_query.exact is not None
