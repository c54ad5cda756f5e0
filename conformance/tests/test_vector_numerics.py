"""Numerics of the vectorised code shared by numpy and torch (``implementations/vector/``).

* block sizes, float32 against float64 inputs, -0.0 against 0.0: the same bits;
* large tie groups under ``ties="expected"`` (spec §4 ties=expected): within 1e-12
  of the reference's exact values (the pmf walks out from the mode, no log-gamma);
* the one sort-key packer (``vector_blocks.sorted_block``) orders every block as the
  definition does (spec §4 ties=stable, §4 ties=reverse), for numpy and torch alike;
* double-double quotients and row sums carry ~2**-104 relative error;
* the Hamming packing, the float32 order key, the binomial table.

The comparison rule is ``crosscheck``'s, the problem generator ``support/fixtures.py``'s, the
implementations at hand ``test_numpy_torch_backends``'s.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import TOLERANCE as TOL
from retrieval_conformance.conformance.crosscheck import compare_per_query, same_bits
from retrieval_conformance.conformance.support.fixtures import tie_heavy_problem
from retrieval_conformance.conformance.tests.test_numpy_torch_backends import (
    FIELDS,
    NUMPY,
    TIES,
    available_impls,
    reference_impl,
    torch_impl,
)
from retrieval_conformance.implementations.numpy_backend import (
    NumpyImplementation,
    NumpyOps,
    hamming_block,
    pack_bits,
)
from retrieval_conformance.implementations.vector.blocks import block_rows, float32_order_key, sorted_block
from retrieval_conformance.implementations.vector.distributions import BINOM, BINOM_MAX
from retrieval_conformance.implementations.vector.double_double import dd_quot, dd_rowsum
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.problem import Options, Problem


def test_blocks_change_nothing():
    """Tiny memory budgets (one query per block) give the same bits as one block."""
    rng = np.random.default_rng(11)
    for ties in TIES:
        problem = tie_heavy_problem(rng, max_queries=12, max_gallery=30)
        opts = Options(ties=ties, k=None if ties == "grouped" else 4, ap_at_k="hits", radius=0.5)
        assert block_rows(12, 30, budget=1) == 1
        one = NumpyImplementation(block_bytes=1).compute(problem, opts)
        assert same_bits(one, NUMPY.compute(problem, opts)) == []


def test_float32_and_float64_inputs_agree_and_negative_zero_ties():
    """float32 distances widened to float64 rank identically; -0.0 ties with 0.0."""
    rng = np.random.default_rng(3)
    d32 = rng.choice(np.array([-0.0, 0.0, 0.25, -3.5, 7.0, 1e-40], dtype=np.float32), size=(7, 40))
    rel = rng.random((7, 40)) < 0.3
    impls = available_impls()
    for ties in TIES:
        opts = Options(ties=ties, k=None, max_rank=5)
        p32 = Problem(n_queries=7, n_gallery=40, distances=np.ascontiguousarray(d32), relevance=rel)
        p64 = Problem(n_queries=7, n_gallery=40, distances=d32.astype(np.float64), relevance=rel)
        zeros = Problem(
            n_queries=7, n_gallery=40, distances=np.abs(d32.astype(np.float64)) * np.sign(d32) + 0.0, relevance=rel
        )
        base = NUMPY.compute(p64, opts)
        for impl in impls:
            assert same_bits(impl.compute(p32, opts), base, f"{impl.name} {ties}") == []
            assert same_bits(impl.compute(zeros, opts), base, f"{impl.name} {ties} zeros") == []


def test_expected_large_groups_are_accurate():
    """A group of 1900 items cut by k (hypergeometric), a dcmh cut and INP: within 1e-12 of
    the reference's exact values (the pmf walks out from the mode, no log-gamma)."""
    ref = reference_impl()
    rng = np.random.default_rng(1)
    N = 2100
    d = np.zeros((2, N))
    d[:, :150] = -1.0
    d[:, 2050:] = 1.0
    rel = rng.random((2, N)) < 0.02
    rel[0, :7] = True
    problem = Problem(n_queries=2, n_gallery=N, distances=d, relevance=rel)
    for opts in (
        Options(ties="expected", k=1234, ap_at_k="hits", max_rank=200),
        Options(ties="expected", k=15, ap_at_k="dcmh", max_rank=3),
        Options(ties="expected", ap_rule="trapezoid", k=1900, ap_at_k="hits", max_rank=3),
    ):
        want = ref.compute(problem, opts)
        assert compare_per_query(want, NUMPY.compute(problem, opts), str(opts)) == []


@pytest.mark.slow
def test_expected_group_of_5000_hits_and_dcmh():
    """n = 5000 in one tie group (slow: the reference's Fractions take ~40 s)."""
    ref = reference_impl()
    rng = np.random.default_rng(2)
    N = 5000
    d = np.zeros((1, N))
    rel = rng.random((1, N)) < 0.01
    problem = Problem(n_queries=1, n_gallery=N, distances=d, relevance=rel)
    for opts in (
        Options(ties="expected", k=2500, max_rank=100),
        Options(ties="expected", k=30, ap_at_k="dcmh", ap_rule="trapezoid"),
    ):
        want = ref.compute(problem, opts)
        for impl in available_impls():
            assert compare_per_query(want, impl.compute(problem, opts), f"{impl.name} {opts}") == []


def test_medium_random_numpy_equals_torch_and_reference_sample():
    """N = 400 with ~20 distinct distances (groups of ~20): torch == numpy; a sample of
    queries against the reference."""
    impl = torch_impl()
    ref = reference_impl()
    rng = np.random.default_rng(9)
    Q, N = 24, 400
    d = rng.integers(0, 20, (Q, N)).astype(np.float32) / np.float32(4)
    labels = rng.integers(0, 5, Q), rng.integers(0, 5, N)
    problem = Problem(
        n_queries=Q,
        n_gallery=N,
        distances=np.ascontiguousarray(d),
        query_labels=labels[0].astype(np.int64),
        db_labels=labels[1].astype(np.int64),
    )
    sample = Problem(
        n_queries=3,
        n_gallery=N,
        distances=np.ascontiguousarray(d[:3]),
        query_labels=labels[0][:3].astype(np.int64),
        db_labels=labels[1].astype(np.int64),
    )
    for ties in TIES:
        for opts in (
            Options(ties=ties, k=None if ties == "grouped" else 37, ap_at_k="hits"),
            Options(ties=ties, ap_rule="trapezoid", k=None if ties == "grouped" else 50, ap_at_k="dcmh"),
        ):
            a, b = NUMPY.compute(problem, opts), impl.compute(problem, opts)
            for f in FIELDS + ("cmc",):
                np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=0, atol=TOL)
            want = ref.compute(sample, opts)
            got = NUMPY.compute(sample, opts)
            assert compare_per_query(want, got, str(opts)) == []


def test_hamming_packing_and_order_key():
    """Packed XOR + popcount equals the bit count for codes of 1..130 bits; the float32 order
    key is monotone and maps -0.0 onto 0.0."""
    rng = np.random.default_rng(4)
    for bits in (1, 7, 64, 65, 130):
        q = rng.integers(0, 2, (5, bits)).astype(np.uint8)
        d = rng.integers(0, 2, (9, bits)).astype(np.uint8)
        got = hamming_block(pack_bits(q), pack_bits(d))
        assert np.array_equal(got, (q[:, None, :] != d[None, :, :]).sum(-1))
    x = np.array([-np.inf, -3e38, -1.0, -1e-45, -0.0, 0.0, 1e-45, 1.0, 3e38, np.inf], dtype=np.float32)
    key = float32_order_key(NumpyOps(), x[None, :])[0]
    assert key[4] == key[5] == 0
    assert np.all(np.diff(key.astype(np.int64))[[i for i in range(9) if i != 4]] > 0)


def test_binomial_table_is_exact():
    """The exact-pmf table: every C(a, b), a <= 56, below 2**53 (products stay exact)."""
    assert BINOM.max() < 2**53
    assert all(BINOM[a, b] == math.comb(a, b) for a in range(BINOM_MAX + 1) for b in range(a + 1))


def test_edges_all_junk_long_codes_and_cutoffs_beyond_gallery():
    """A query whose gallery is all junk, one without relevant items, 130-bit codes (the
    16-bit key path), k and max_rank beyond N: as the reference."""
    ref = reference_impl()
    rng = np.random.default_rng(8)
    Q, N, bits = 4, 9, 130
    junk = np.zeros((Q, N), dtype=bool)
    junk[0] = True
    problem = Problem(
        n_queries=Q,
        n_gallery=N,
        query_bits=rng.integers(0, 2, (Q, bits)).astype(np.uint8),
        db_bits=np.repeat(rng.integers(0, 2, (3, bits)).astype(np.uint8), 3, axis=0),
        query_labels=np.array([0, 9, 1, 2]),
        db_labels=rng.integers(0, 3, N),
        junk=junk,
    )
    impls = available_impls()
    for ties in TIES:
        for opts in (
            Options(ties=ties, k=None, max_rank=20, radius=60.0),
            Options(ties=ties, k=50, ap_at_k="min_k_r", max_rank=3),
            Options(ties=ties, k=9, ap_at_k="dcmh", ap_rule="trapezoid"),
        ):
            want = ref.compute(problem, opts)
            for impl in impls:
                assert compare_per_query(want, impl.compute(problem, opts), f"{impl.name} {opts}") == []


# -- the sort-key packer --------------------------------------------------------------------------
def _random_block(rng, kind: str):
    """(dist, rel, junk, hamming_top) of a tie-heavy block; Hamming codes of 3 to 300 bits
    reach every key width of numpy (8, 16, 32 bits, int64)."""
    B, N = int(rng.integers(1, 7)), int(rng.integers(1, 300))
    top = None
    if kind == "hamming":
        bits = int(rng.choice([3, 20, 300]))
        top = bits + 1
        dist = rng.integers(0, min(bits, 6) + 1, (B, N)).astype(np.uint16)
    else:
        levels = np.array([-0.0, 0.0, 0.5, -1.5, 2.0, 1e-40])[: int(rng.integers(1, 7))]
        dist = rng.choice(levels, size=(B, N)).astype(np.float32 if kind == "float32" else np.float64)
    rel = rng.random((B, N)) < rng.random()
    junk = rng.random((B, N)) < 0.2 if rng.random() < 0.5 else None
    if junk is not None:
        rel &= ~junk
    return dist, rel, junk, top


def _definition_order(dist, rel, junk, ties: str):
    """Relevance in ranked order and the tie-group starts, straight from the definitions:
    sort by (distance, tie key) with junk last (gallery order inside groups for the other
    policies, which use only per-group counts)."""
    d = np.asarray(dist, dtype=np.float64) + 0.0
    if junk is not None:
        d = np.where(junk, np.inf, d)
    idx = np.arange(d.shape[1])
    out_rel, out_start = [], []
    for row in range(d.shape[0]):
        order = np.lexsort((-idx if ties == "reverse" else idx, d[row]))
        out_rel.append(rel[row][order])
        out_start.append(np.r_[True, d[row][order][1:] != d[row][order][:-1]])
    return np.array(out_rel), np.array(out_start)


def _group_counts(rel_s, start):
    """Relevant items per tie group, row by row."""
    return [np.add.reduceat(r.astype(int), np.flatnonzero(g)).tolist() for r, g in zip(rel_s, start)]


@pytest.mark.parametrize("kind", ["float32", "float64", "hamming"])
def test_sort_key_packer_orders_blocks_as_defined(kind):
    """numpy and torch through the one packer: relevance in the defined order, tie groups
    where the distances tie (junk one group at the end), for every tie policy."""
    rng = np.random.default_rng({"float32": 21, "float64": 22, "hamming": 23}[kind])
    backends = [(NumpyOps(), np.asarray)]
    try:
        torch_impl()
        import torch
        from retrieval_conformance.implementations.torch_backend import TorchOps

        backends.append((TorchOps(torch.device("cpu")), lambda a: torch.from_numpy(np.array(a))))
    except pytest.skip.Exception:
        pass
    for _ in range(25):
        dist, rel, junk, top = _random_block(rng, kind)
        for ties in TIES:
            want_rel, want_start = _definition_order(dist, rel, junk, ties)
            for ops, to_device in backends:
                if kind == "hamming" and not isinstance(ops, NumpyOps):
                    d = to_device(dist.astype(np.int64))
                else:
                    d = to_device(dist)
                j = None if junk is None else to_device(junk)
                key_s, rel_s = sorted_block(ops, d, to_device(rel), j, ties, top)
                rel_s, where = ops.to_numpy(rel_s), (kind, ties, type(ops).__name__)
                if ties in INDEX_ORDERS:
                    assert np.array_equal(rel_s, want_rel), where
                    if kind != "float64":
                        assert key_s is None
                        continue
                key_s = ops.to_numpy(key_s)
                start = np.ones(key_s.shape, dtype=bool)
                start[:, 1:] = key_s[:, 1:] != key_s[:, :-1]
                assert np.array_equal(start, want_start), where
                assert _group_counts(rel_s, start) == _group_counts(want_rel, want_start), where


# -- double-double --------------------------------------------------------------------------------------
def test_double_double_quotients_and_row_sums():
    """dd_quot of integers and the row sums (numpy's Sum2 and the pairwise tree of other
    devices) stay within 2**-100 relative of the exact rationals."""
    rng = np.random.default_rng(6)
    x = rng.integers(1, 2**40, 200).astype(np.float64)
    y = rng.integers(1, 2**25, 200).astype(np.float64)
    for small in (False, True):
        hi, lo = dd_quot(x, y, small=small)
        for a, b, h, lo_ in zip(x, y, hi, lo):
            exact = Fraction(int(a), int(b))
            assert abs(Fraction(h) + Fraction(lo_) - exact) <= exact / 2**100
    values = dd_quot(x.reshape(8, 25), y.reshape(8, 25))

    class Pairwise:  # the ops of a device without its own dd_rowsum
        zeros, hcat = NumpyOps.zeros, NumpyOps.hcat

    for ops in (NumpyOps(), Pairwise()):
        hi, lo = dd_rowsum(ops, values)
        for row in range(8):
            exact = sum(Fraction(int(a), int(b)) for a, b in zip(x.reshape(8, 25)[row], y.reshape(8, 25)[row]))
            assert abs(Fraction(hi[row]) + Fraction(lo[row]) - exact) <= exact / 2**100


def test_dcmh_expected_with_groups_of_different_lengths_in_one_block():
    """Fuzz finding (seed 0, cases 835145 and 959084): under ties="expected" and
    ap_at_k="dcmh", the position distributions of groups of different lengths are padded to one
    width, and a padded column looked up the harmonic table beyond the gallery (IndexError in
    numpy and torch).  The padded columns weigh 0; the values equal the reference's."""
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.crosscheck import compare_per_query

    scores = np.array(
        [
            [0.5, 3.0, 0.5, 3.0, 0.5, 0.5, 3.0, 0.5, 0.5, 3.0, 3.0, 3.0],
            [0.5, 3.0, 0.5, 3.0, 0.5, 0.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
            [0.5, 0.5, 0.5, 3.0, 0.5, 3.0, 0.5, 0.5, 0.5, 0.5, 0.5, 3.0],
            [0.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 0.5, 3.0],
        ]
    )
    kwargs = dict(
        scores=scores,
        query_labels=[[0, 1], [1, 0], [0, 1], [0, 1]],
        db_labels=[[1, 1], [0, 1], [1, 1], [0, 0], [1, 1], [0, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 0], [0, 0]],
        ties="expected",
        ap_at_k="dcmh",
        k=3,
        max_rank=3,
        empty="zero",
    )
    ref = rc.evaluate(**kwargs, implementation="reference").per_query
    for name in ("numpy", "torch"):
        if name in rc.available_implementations():
            assert compare_per_query(ref, rc.evaluate(**kwargs, implementation=name).per_query) == []
