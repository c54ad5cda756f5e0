"""The C implementation's numerics at scale: ``ties='expected'`` on tie groups of hundreds to
thousands of items, against the reference and against closed forms evaluated here to 50-60
digits (spec §4).  Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.conformance.support.c_test_support import DENOMINATORS, RULES, TOL
from retrieval_conformance.reference.contract.problem import Options, Problem


def _one_big_group_problem(rng, before, n, m, rel_before):
    """One query: ``before`` items at distance 0 (``rel_before`` relevant), then one tie group
    of ``n`` items at distance 1 with ``m`` relevant, in random gallery positions."""
    N = before + n
    d = np.zeros((1, N))
    d[0, before:] = 1.0
    rel = np.zeros((1, N), dtype=bool)
    rel[0, rng.choice(before, rel_before, replace=False)] = True
    rel[0, before + rng.choice(n, m, replace=False)] = True
    perm = rng.permutation(N)
    return Problem(
        n_queries=1,
        n_gallery=N,
        distances=np.ascontiguousarray(d[:, perm]),
        relevance=np.ascontiguousarray(rel[:, perm]),
    )


@pytest.mark.parametrize("rule", RULES)
def test_expected_on_large_groups_matches_reference(cimpl, rule):
    """spec §4 closed forms in double-double: hypergeometric cut-offs (hits), the j-th
    relevant item's position (dcmh, INP) and CMC on groups of a few hundred items."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    ref_impl = ReferenceImplementation()
    rng = np.random.default_rng(7)
    for before, n, m, rel_before, k in [
        (3, 240, 90, 1, 100),
        (0, 300, 7, 0, 150),
        (40, 200, 150, 5, 120),
        (10, 260, 30, 0, 5),
    ]:
        p = _one_big_group_problem(rng, before, n, m, rel_before)
        for apk in DENOMINATORS:
            o = Options(ties="expected", ap_rule=rule, k=k, ap_at_k=apk, max_rank=before + n)
            assert compare_per_query(ref_impl.compute(p, o), cimpl.compute(p, o), label=f"{apk} {k}: ") == []


def _dcmh_one_group_exact(n, m, jp, rule):
    """E[sum of the AP terms of the first jp relevant items] / jp for one tie group holding the
    whole gallery (n items, m relevant), to 60 digits.  Position p is relevant with
    probability m/n; the number Y of relevant items before it is then Hypergeometric(n-1, m-1,
    p-1) (exact big integers), and the item counts iff Y < jp."""
    from decimal import Decimal, localcontext

    N, K = n - 1, m - 1
    ck = [comb(K, y) for y in range(jp)]
    cnk = [comb(N - K, t) for t in range(N - K + 1)]
    with localcontext() as ctx:
        ctx.prec = 60
        total = Decimal(0)
        for p in range(1, n + 1):
            d = p - 1
            ys = range(max(0, d - (N - K)), min(jp - 1, d) + 1)
            w0 = sum(ck[y] * cnk[d - y] for y in ys)  # weight of Y <= jp - 1
            w1 = sum(y * ck[y] * cnk[d - y] for y in ys)  # E[Y 1{Y <= jp-1}] * C(N, d)
            scale = Decimal(m) / n / Decimal(comb(N, d))
            ps = (w0 + w1) * scale / p  # (h + 1 + Y)/(c + p), h = c = 0
            if rule == "precision_sum":
                total += ps
            else:  # previous rank; rank 1 counts 1
                prev = w0 * scale if p == 1 else w1 * scale / (p - 1)
                total += (ps + prev) / 2
        return total / jp


@pytest.mark.parametrize("rule", RULES)
def test_expected_dcmh_with_underflowing_probabilities(cimpl, rule):
    """dcmh cut 345 relevant items deep into a group of 1,500 with 350 relevant: P(Y = a) for
    the first draws is about 1e-346 (below the double range) and is carried scaled; the
    result matches a 60-digit evaluation of the definition."""
    n, m, jp = 1500, 350, 345
    rel = np.zeros((1, n), dtype=bool)
    rel[0, np.random.default_rng(4).choice(n, m, replace=False)] = True
    p = Problem(n_queries=1, n_gallery=n, distances=np.ones((1, n)), relevance=rel)
    pq = cimpl.compute(p, Options(ties="expected", ap_rule=rule, k=jp, ap_at_k="dcmh", max_rank=1))
    assert abs(pq.ap[0] - float(_dcmh_one_group_exact(n, m, jp, rule))) <= TOL


def test_closed_forms_on_a_huge_group(cimpl):
    """Numerics at scale (one group of 20,000 items, 5,000 relevant) against values computed
    here: CMC@K = 1 - C(n-m, K)/C(n, K) and E[P@k] = km/n exactly; full AP =
    (1/n) sum_p (1 + (p-1)(m-1)/(n-1))/p and INP = sum_p P(P_m = p) m/p with 50 digits."""
    from decimal import Decimal, localcontext

    n, m = 20000, 5000
    rng = np.random.default_rng(9)
    rel = np.zeros((1, n), dtype=bool)
    rel[0, rng.choice(n, m, replace=False)] = True
    p = Problem(n_queries=1, n_gallery=n, distances=np.zeros((1, n), np.float32), relevance=rel)
    pq = cimpl.compute(p, Options(ties="expected", k=3000, ap_at_k="r", max_rank=4))
    for K in range(1, 5):
        want = 1 - Fraction(comb(n - m, K), comb(n, K))
        assert abs(pq.cmc[0, K - 1] - float(want)) <= TOL
    assert pq.precision_at_k[0] == float(Fraction(m, n))
    full = cimpl.compute(p, Options(ties="expected"))
    with localcontext() as ctx:
        ctx.prec = 50
        ap = sum(Decimal(1) / q + Decimal((q - 1) * (m - 1)) / ((n - 1) * q) for q in range(1, n + 1)) / n
        # P(P_m = q) = C(q-1, m-1)/C(n, m): m/n at q = n, ratio (q-m)/(q-1) going down
        prob, inp = Decimal(m) / n, Decimal(0)
        for q in range(n, m - 1, -1):
            inp += prob * m / q
            prob = prob * (q - m) / (q - 1) if q > m else prob
    assert abs(full.ap[0] - float(ap)) <= TOL
    assert abs(full.inp[0] - float(inp)) <= TOL
