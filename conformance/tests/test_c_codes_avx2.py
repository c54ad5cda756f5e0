"""The C library's AVX2 Hamming pass (``csrc/rc_codes_avx2.c``) against the default path, the
scalar pass and numpy: the same arrays, bit for bit, for every kind of relevance the pass reads
(multi-hot labels, single ids, a relevance matrix with and without grades), every tie policy,
tie-heavy and uniformly random codes, codes of one word and of more, with junk and without (the
inputs the vector passes do not take must reach the scalar pass on every path), and gallery
sizes around the pass's blocks of 32 and 64 items.  The AVX2 path runs with AVX-512 masked off,
the scalar pass with AVX2 masked off too.  Skipped where the CPU has no AVX2.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.implementations.numpy_backend import NumpyImplementation
from retrieval_conformance.reference.contract.problem import Options, Problem

#: bits of the C library's feature mask (RC_FEATURE_AVX2, RC_FEATURE_AVX512 in csrc/rc_core.h)
AVX2, AVX512 = 8, 16
#: gallery sizes around the pass's blocks (none, a partial half, a full half, a block, more)
SIZES = (1, 31, 32, 63, 64, 65, 200, 1031)
#: code lengths: one word (the vector passes) and more (the scalar pass on every path)
BITS = (1, 7, 63, 64, 65, 130)


@pytest.fixture()
def avx2(c_backend):
    """The C backend where the CPU has AVX2; every feature again afterwards."""
    if not c_backend.cpu_features() & AVX2:
        pytest.skip("this CPU has no AVX2: the scalar pass is the only one and the other tests cover it")
    yield c_backend
    c_backend.cpu_features(c_backend.ALL_FEATURES)


def _problem(kind: str, n: int, bits: int, seed: int, tie_heavy: bool, junk: bool) -> Problem:
    """Q = 5 queries of ``bits``-bit codes over n items, with the relevance of ``kind``: tie-heavy
    (few distinct codes, ties in every distance) or uniformly random codes; junk, where asked,
    on a fifth of the (query, item) pairs."""
    rng = np.random.default_rng(seed)
    Q = 5
    if tie_heavy:
        pool = rng.integers(0, 2, (4, bits)).astype(np.uint8)
        flip = (rng.random((n, bits)) < 0.1).astype(np.uint8)
        query_bits, db_bits = pool[rng.integers(0, 4, Q)], pool[rng.integers(0, 4, n)] ^ flip
    else:
        query_bits = rng.integers(0, 2, (Q, bits)).astype(np.uint8)
        db_bits = rng.integers(0, 2, (n, bits)).astype(np.uint8)
    base = dict(n_queries=Q, n_gallery=n, query_bits=query_bits, db_bits=db_bits)
    if junk:
        base["junk"] = rng.random((Q, n)) < 0.2
    if kind == "multi":
        return Problem(
            **base,
            query_labels=(rng.random((Q, 6)) < 0.4).astype(np.uint8),
            db_labels=(rng.random((n, 6)) < 0.3).astype(np.uint8),
        )
    if kind == "wide labels":  # two label words: the scalar pass on every path
        return Problem(
            **base,
            query_labels=(rng.random((Q, 70)) < 0.05).astype(np.uint8),
            db_labels=(rng.random((n, 70)) < 0.05).astype(np.uint8),
        )
    if kind == "ids":
        return Problem(**base, query_labels=rng.integers(0, 3, Q), db_labels=rng.integers(0, 3, n))
    grades = rng.integers(0, 4, (Q, n)) * (rng.random((Q, n)) < 0.5)
    return Problem(**base, relevance=grades > 0, grades=grades.astype(np.int64) if kind == "graded" else None)


def _paths(c_backend, problem: Problem, options: Options):
    """C's arrays with every feature (AVX-512 where the CPU has it), with AVX-512 masked off (the
    AVX2 pass) and with AVX2 masked off too (the scalar pass)."""
    impl = c_backend.CImplementation()
    out = []
    for mask in (c_backend.ALL_FEATURES, c_backend.ALL_FEATURES & ~AVX512, c_backend.ALL_FEATURES & ~(AVX2 | AVX512)):
        c_backend.cpu_features(mask)
        out.append(impl.compute(problem, options))
    c_backend.cpu_features(c_backend.ALL_FEATURES)
    return out


@pytest.mark.parametrize("kind", ["multi", "wide labels", "ids", "matrix", "graded"])
@pytest.mark.parametrize("ties", TIES)
def test_avx2_pass_gives_the_other_paths_bits(avx2, kind, ties):
    o = Options(ties=ties, radius=2.0)
    for n in SIZES:
        for bits in BITS:
            for tie_heavy in (True, False):
                for junk in (False, True):
                    p = _problem(kind, n, bits, n * 1000 + bits * 4 + 2 * tie_heavy + junk, tie_heavy, junk)
                    default, avx2_path, scalar = _paths(avx2, p, o)
                    what = f"{kind} n={n} bits={bits} tie_heavy={tie_heavy} junk={junk} {o}"
                    assert same_bits(avx2_path, scalar, what) == []
                    assert same_bits(default, scalar, what) == []


@pytest.mark.parametrize("kind", ["multi", "ids", "matrix", "graded"])
def test_avx2_pass_gives_numpys_bits(avx2, kind):
    """The independent implementation agrees too, under every tie policy."""
    for n in (65, 1031):
        for tie_heavy in (True, False):
            p = _problem(kind, n, 64, n + tie_heavy, tie_heavy, junk=False)
            for ties in TIES:
                o = Options(ties=ties)
                expected = NumpyImplementation().compute(p, o)
                for path in _paths(avx2, p, o):
                    assert same_bits(path, expected, f"{kind} n={n} tie_heavy={tie_heavy} {o}") == []


def test_avx2_pass_with_many_relevant_items(avx2):
    """Under stable and reverse ties the pass records every relevant item (its array grows
    block by block): 40,000 relevant items over 7 distances, against the scalar pass."""
    rng = np.random.default_rng(9)
    n = 40_000
    p = Problem(
        n_queries=2,
        n_gallery=n,
        query_bits=rng.integers(0, 2, (2, 6)).astype(np.uint8),
        db_bits=rng.integers(0, 2, (n, 6)).astype(np.uint8),
        query_labels=np.array([1, 1]),
        db_labels=np.where(rng.random(n) < 0.97, 1, 2),
    )
    for ties in ("stable", "reverse"):
        _, avx2_path, scalar = _paths(avx2, p, Options(ties=ties))
        assert same_bits(avx2_path, scalar, ties) == []


@pytest.mark.parametrize("kind", ["pr_interpolated", "pr_radius", "precision_at_n"])
def test_avx2_pass_gives_the_curves_the_scalar_values(avx2, kind):
    """rc.curves of codes with ids or labels run the same pass: the same values on each path."""
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
        ys = []
        for mask in (avx2.ALL_FEATURES & ~AVX512, avx2.ALL_FEATURES & ~(AVX2 | AVX512)):
            avx2.cpu_features(mask)
            ys.append(rc.curves(kind, **inputs, ties=ties, implementation="c").y.tobytes())
        avx2.cpu_features(avx2.ALL_FEATURES)
        assert ys[0] == ys[1], ties


def test_ap_sums_in_lanes_are_one_order(avx2):
    """AP over many relevant items (past the 8 lanes many times over, and a remainder): the AVX2
    terms (two vectors of 4 lanes), the AVX-512 terms and the scalar terms (with FMA and
    without) are summed in the one lane order, so the bits agree."""
    rng = np.random.default_rng(5)
    n = 4099
    p = Problem(
        n_queries=3,
        n_gallery=n,
        query_bits=rng.integers(0, 2, (3, 48)).astype(np.uint8),
        db_bits=rng.integers(0, 2, (n, 48)).astype(np.uint8),
        relevance=rng.random((3, n)) < 0.8,
    )
    FMA = 2
    for k in (None, 7, 3001):
        o = Options(k=k, ap_at_k="min_k_r")
        paths = _paths(avx2, p, o)
        avx2.cpu_features(avx2.ALL_FEATURES & ~(AVX2 | AVX512 | FMA))
        plain = avx2.CImplementation().compute(p, o)
        avx2.cpu_features(avx2.ALL_FEATURES)
        for path in paths:
            assert same_bits(path, plain, str(o)) == []


def test_avx2_pass_gives_the_same_bits_on_any_thread_count(avx2):
    """Each query is one pass on one thread: 1 and 3 threads give the same arrays on the AVX2
    path, and the scalar path's."""
    p = _problem("multi", 1031, 64, 21, tie_heavy=True, junk=False)
    for ties in ("stable", "expected"):
        o = Options(ties=ties)
        avx2.cpu_features(avx2.ALL_FEATURES & ~AVX512)
        one, three = (avx2.CImplementation(num_threads=t).compute(p, o) for t in (1, 3))
        avx2.cpu_features(avx2.ALL_FEATURES & ~(AVX2 | AVX512))
        scalar = avx2.CImplementation(num_threads=3).compute(p, o)
        avx2.cpu_features(avx2.ALL_FEATURES)
        assert same_bits(one, three, ties) == [] and same_bits(one, scalar, ties) == []
