"""The C implementation (``implementations/csrc/`` through ctypes) against two yardsticks.

1. The slow oracle (``support/oracle.py``) written from the per-query semantics (COMMON brief,
   CONVENTIONS §4-§7), independent of the reference code: concrete tie policies sort the kept
   items with an explicit key, ``expected`` averages over every arrangement of every tie group
   (brute force), ``grouped`` gives each item its group's end rank.  Exact ``Fraction`` arithmetic.
2. The reference implementation (exact ``Fraction`` values), on larger and tie-heavy inputs.

Agreement means: equal to the exact value rounded to float64 when that rounding is exact (bit
for bit), within 1e-12 otherwise.  The other tests of the C implementation:
``test_c_backend_numerics`` (large tie groups, closed forms), ``test_c_backend_threads``
(identical arrays for any thread count, CPU code path and query block size; fork) and
``test_c_backend_inputs`` (the grouped cut-off error, validation before the C call, the "not
built" reason, no (Q, N) allocation, the C source's warnings).

The tests are skipped when the library is not built, or fail with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_exact, compare_per_query, run_both
from retrieval_conformance.conformance.harness.inputs.golden import SEED000
from retrieval_conformance.conformance.support import oracle
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.conformance.support.fixtures import random_options, tie_heavy_problem


# ---------------------------------------------------------------------------------------------
# agreement
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIES)
def test_matches_slow_oracle(cimpl, ties):
    """Per-query semantics (COMMON brief): C equals the independent brute-force oracle."""
    rng = np.random.default_rng(100 + TIES.index(ties))
    for case in range(60):
        p = tie_heavy_problem(rng, max_gallery=7 if ties == "expected" else 12)
        for _ in range(3):
            o = random_options(rng, ties, p.n_gallery)
            ref, res = run_both(oracle.per_query, cimpl.compute, p, o)
            if ref is None:
                continue
            assert compare_exact(ref, res, label=f"case {case} {o}: ") == []


@pytest.mark.parametrize("ties", TIES)
def test_matches_reference(cimpl, ties):
    """Every option and input kind, against the reference (same error text when it raises)."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    ref_impl = ReferenceImplementation()
    rng = np.random.default_rng(200 + TIES.index(ties))
    for case in range(40):
        p = tie_heavy_problem(rng, max_gallery=25, max_queries=5, wide=case % 4 == 0)
        for _ in range(3):
            o = random_options(rng, ties, p.n_gallery)
            ref, res = run_both(ref_impl.compute, cimpl.compute, p, o)
            if ref is None:
                assert res[0] == res[1]
                continue
            assert compare_per_query(ref, res, label=f"case {case} {o}: ") == []


def test_seed000_golden_values_through_evaluate(c_backend):
    """spec §10 (seed 000): mAP@5 = 107/180, mAP = 1139/1890, P@5 = 0.6."""
    import retrieval_conformance as rc

    kw = dict(SEED000, protocol="hashing", implementation="c")
    at5 = rc.evaluate(k=5, **kw)
    np.testing.assert_array_equal(at5.per_query.ap, [11 / 30, 1.0, 5 / 12])
    assert abs(at5.map - 107 / 180) <= 1e-15
    assert at5.precision_at_k == pytest.approx(0.6, abs=1e-15)
    full = rc.evaluate(k=None, **kw)
    assert full.per_query.ap[0] == float(Fraction(122, 315))
    assert abs(full.map - 1139 / 1890) <= 1e-15
