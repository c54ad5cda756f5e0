"""The C library's AVX-512 Hamming pass (``csrc/rc_codes_avx512.c``) and AP-term sums
(``csrc/rc_metrics.c``) against its plain paths and against numpy: the same arrays, bit for bit,
for every kind of relevance the pass reads (multi-hot labels, single ids, a relevance matrix with
and without grades), every tie policy, code lengths up to one word and gallery sizes around the
pass's 64-item blocks.  Skipped where the CPU has no AVX-512 (F, DQ, BW, VL, VPOPCNTDQ): there the
plain paths are the only ones and the other tests cover them.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.c_test_support import RULES, TIES
from retrieval_conformance.implementations.numpy_backend import NumpyImplementation
from retrieval_conformance.reference.contract.problem import Options, Problem

#: bit 4 of the C library's feature mask (RC_FEATURE_AVX512 in csrc/rc_core.h)
AVX512 = 16
#: gallery sizes around the pass's blocks of 64 items (a full block, a partial one, none)
SIZES = (1, 63, 64, 65, 200, 1031)


@pytest.fixture()
def avx512(c_backend):
    """The C backend with AVX-512 in use; every feature again afterwards."""
    if not c_backend.cpu_features() & AVX512:
        pytest.skip("this CPU has no AVX-512 (F, DQ, BW, VL, VPOPCNTDQ): only the plain paths exist")
    yield c_backend
    c_backend.cpu_features(c_backend.ALL_FEATURES)


def _problem(kind: str, n: int, bits: int, seed: int) -> Problem:
    """Q = 7 queries of ``bits``-bit codes over n items, with the relevance of ``kind``; few
    distinct codes (ties in every distance) and a relevant share near one half."""
    rng = np.random.default_rng(seed)
    Q = 7
    pool = rng.integers(0, 2, (5, bits)).astype(np.uint8)
    flip = (rng.random((n, bits)) < 0.15).astype(np.uint8)
    base = dict(
        n_queries=Q,
        n_gallery=n,
        query_bits=pool[rng.integers(0, 5, Q)],
        db_bits=pool[rng.integers(0, 5, n)] ^ flip,
    )
    if kind == "multi":
        return Problem(
            **base,
            query_labels=(rng.random((Q, 6)) < 0.4).astype(np.uint8),
            db_labels=(rng.random((n, 6)) < 0.3).astype(np.uint8),
        )
    if kind == "ids":
        return Problem(**base, query_labels=rng.integers(0, 3, Q), db_labels=rng.integers(0, 3, n))
    grades = rng.integers(0, 4, (Q, n)) * (rng.random((Q, n)) < 0.5)
    return Problem(**base, relevance=grades > 0, grades=grades.astype(np.int64) if kind == "graded" else None)


def _random_codes(rng, n_queries: int, n: int, bits: int) -> dict:
    """Uniformly random ``bits``-bit codes of ``n_queries`` queries and ``n`` items."""
    return dict(
        n_queries=n_queries,
        n_gallery=n,
        query_bits=rng.integers(0, 2, (n_queries, bits)).astype(np.uint8),
        db_bits=rng.integers(0, 2, (n, bits)).astype(np.uint8),
    )


def _both(c_backend, problem: Problem, options: Options):
    """C's arrays with every feature, and without AVX-512."""
    impl = c_backend.CImplementation()
    c_backend.cpu_features(c_backend.ALL_FEATURES)
    fast = impl.compute(problem, options)
    c_backend.cpu_features(c_backend.ALL_FEATURES & ~AVX512)
    plain = impl.compute(problem, options)
    c_backend.cpu_features(c_backend.ALL_FEATURES)
    return fast, plain


@pytest.mark.parametrize("kind", ["multi", "ids", "matrix", "graded"])
@pytest.mark.parametrize("ties", TIES)
def test_avx512_pass_gives_the_plain_paths_bits(avx512, kind, ties):
    for n in SIZES:
        for bits in (1, 7, 63, 64):
            p = _problem(kind, n, bits, seed=n * 100 + bits)
            for rule in RULES:
                o = Options(ties=ties, ap_rule=rule, radius=2.0)
                fast, plain = _both(avx512, p, o)
                assert same_bits(fast, plain, f"{kind} n={n} bits={bits} {o}") == []


@pytest.mark.parametrize("kind", ["multi", "ids", "graded"])
def test_avx512_pass_gives_numpys_bits(avx512, kind):
    """The independent implementation agrees too (stable and reverse ties: the counting sort)."""
    for n in (65, 1031):
        p = _problem(kind, n, 64, seed=n)
        for ties in ("stable", "reverse"):
            o = Options(ties=ties)
            fast, _ = _both(avx512, p, o)
            assert same_bits(fast, NumpyImplementation().compute(p, o), f"{kind} n={n} {o}") == []


def test_ap_sums_in_lanes_are_one_order(avx512):
    """AP over many relevant items (past the 8 lanes many times over, and a remainder): the
    AVX-512 terms and the plain terms are summed in the one lane order, so the bits agree."""
    rng = np.random.default_rng(5)
    p = Problem(**_random_codes(rng, 3, 4099, 48), relevance=rng.random((3, 4099)) < 0.8)
    for k in (None, 7, 3001):
        o = Options(k=k, ap_at_k="min_k_r")
        fast, plain = _both(avx512, p, o)
        assert same_bits(fast, plain, str(o)) == []


def test_avx512_pass_with_many_relevant_items(avx512):
    """Under stable and reverse ties the pass records every relevant item (its array grows
    block by block): 40,000 relevant items over 7 distances, against the plain pass."""
    rng = np.random.default_rng(9)
    p = Problem(
        **_random_codes(rng, 2, 40_000, 6),
        query_labels=np.array([1, 1]),
        db_labels=np.where(rng.random(40_000) < 0.97, 1, 2),
    )
    for ties in ("stable", "reverse"):
        fast, plain = _both(avx512, p, Options(ties=ties))
        assert same_bits(fast, plain, ties) == []


@pytest.mark.parametrize("kind", ["pr_interpolated", "pr_radius", "precision_at_n"])
def test_avx512_pass_gives_the_curves_the_plain_paths_values(avx512, kind):
    """rc.curves of codes with ids or labels run the same pass: the same values with it and
    without it, and the reference's (exact) values."""
    import retrieval_conformance as rc

    rng = np.random.default_rng(11)
    n = 1031
    pool = rng.choice([-1, 1], (5, 48))
    inputs = dict(
        query_codes=pool[rng.integers(0, 5, 9)],
        db_codes=pool[rng.integers(0, 5, n)] * np.where(rng.random((n, 48)) < 0.1, -1, 1),
        query_labels=rng.integers(0, 4, 9),
        db_labels=rng.integers(0, 4, n),
    )
    for ties in ("stable", "reverse", "expected"):
        avx512.cpu_features(avx512.ALL_FEATURES)
        fast = rc.curves(kind, **inputs, ties=ties, implementation="c")
        avx512.cpu_features(avx512.ALL_FEATURES & ~AVX512)
        plain = rc.curves(kind, **inputs, ties=ties, implementation="c")
        avx512.cpu_features(avx512.ALL_FEATURES)
        exact = rc.curves(kind, **inputs, ties=ties, implementation="reference")
        assert fast.y.tobytes() == plain.y.tobytes(), ties
        assert np.abs(fast.y - np.array([float(x) for x in exact.exact["y"]])).max() <= 1e-12, ties
