"""Embedding distances do not depend on how the queries are cut (blocks, batches, BLAS order).

With BLAS products a block of one query row took another kernel (GEMV) than a block of many
(GEMM), which rounds otherwise: near-tied items swapped, and per-query AP changed with
``block_size`` and with the ``Accumulator``'s batch sizes.  The dot products are now sums of
exact slice products (``reference/contract/embedding_dots.py``): the same bits for any block,
any batch, any order of the dimensions and any BLAS.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.fuzz.case import Case
from retrieval_conformance.conformance.fuzz.changes import _embedding_block_sizes
from retrieval_conformance.conformance.fuzz.classify import classify
from retrieval_conformance.conformance.problems.choices import RandomChoices, case_rng
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract import embedding_dots
from retrieval_conformance.reference.contract.embeddings import embedding_distances

IMPLS = implementation_params()
PER_QUERY = ("ap", "inp", "cmc", "r_precision", "precision_at_k", "recall_at_k", "hits_at_k")


def near_tied(seed: int, n_q: int = 8, n_g: int = 300, dim: int = 32, dtype=np.float32):
    """Embeddings over few values, none exact in binary: many distances equal in exact
    arithmetic, which a rounding that depends on the block tells apart."""
    rng = np.random.default_rng(seed)
    levels = np.array([-0.3, -0.1, 0.1, 0.3], dtype=dtype)
    return (
        levels[rng.integers(0, 4, (n_q, dim))],
        levels[rng.integers(0, 4, (n_g, dim))],
        rng.integers(0, 5, n_q),
        rng.integers(0, 5, n_g),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_distances_are_the_same_bits_for_any_rows(dtype, metric):
    """A row's distances alone, in a block, in any block: BLAS gave ~1,000 of 16,000 otherwise."""
    rng = np.random.default_rng(0)
    q, d = rng.standard_normal((8, 64)).astype(dtype), rng.standard_normal((2000, 64)).astype(dtype)
    whole = embedding_distances(q, d, metric)
    assert whole.dtype == dtype
    single = np.vstack([embedding_distances(q[i : i + 1], d, metric) for i in range(8)])
    uneven = np.vstack([embedding_distances(q[lo:hi], d, metric) for lo, hi in ((0, 3), (3, 4), (4, 8))])
    assert np.array_equal(whole, single) and np.array_equal(whole, uneven)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_distances_do_not_depend_on_the_order_of_the_sums(dtype):
    """The same dimensions in another order: a BLAS sum rounds otherwise, exact sums do not."""
    rng = np.random.default_rng(1)
    q, d = rng.standard_normal((4, 96)).astype(dtype), rng.standard_normal((500, 96)).astype(dtype)
    order = rng.permutation(96)
    for metric in ("euclidean", "cosine"):
        assert np.array_equal(embedding_distances(q, d, metric), embedding_distances(q[:, order], d[:, order], metric))


def _exact_euclidean(q, r) -> float:
    return math.sqrt(sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(q, r)))


@pytest.mark.parametrize("dtype, ulps", [(np.float32, 1), (np.float64, 2)])
def test_distances_are_within_an_ulp_of_the_exact_ones(dtype, ulps):
    """More accurate than a float32 BLAS call: at most one float32 ulp from the exact distance
    (rows whose entries span 2**30 as well, where slices drop bits)."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((3, 48)) * np.exp2(rng.integers(-15, 15, (3, 48)))
    d = rng.standard_normal((40, 48))
    q, d = q.astype(dtype), d.astype(dtype)
    got = embedding_distances(q, d)
    for i in range(3):
        for j in range(40):
            exact = _exact_euclidean(q[i], d[j])
            assert abs(float(got[i, j]) - exact) <= ulps * np.spacing(dtype(exact)), (i, j)


def test_integer_embeddings_give_exact_distances():
    """Integer entries: every slice sum is the exact dot product (sqrt of an exact integer)."""
    rng = np.random.default_rng(3)
    q, d = rng.integers(-1000, 1000, (5, 300)), rng.integers(-1000, 1000, (60, 300))
    got = embedding_distances(q.astype(np.float64), d.astype(np.float64))
    want = np.sqrt(((q[:, None, :] - d[None, :, :]) ** 2).sum(axis=2).astype(np.float64))
    assert np.array_equal(got, want)


def test_every_slice_sum_stays_exact_in_float64():
    """The plan keeps S * dim slice products of w bits below 2**53, and the slices keep the bits
    asked for (more slices as the dimension grows)."""
    for dim in (1, 7, 128, 4096, 2**20):
        for dtype in (np.float32, np.float64):
            n_slices, width = embedding_dots.slice_plan(dim, np.dtype(dtype))
            assert 2 * width + math.ceil(math.log2(dim * n_slices)) <= 53
            assert n_slices * width >= embedding_dots.KEPT_BITS[np.dtype(dtype)]


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_query_values_do_not_depend_on_embedding_block_size(name, dtype):
    """Near-tied embeddings: every AP of 8 queries changed between one block and blocks of one."""
    require_implementation(name)
    q, d, ql, dl = near_tied(0, dtype=dtype)
    kwargs = dict(query_embeddings=q, db_embeddings=d, query_labels=ql, db_labels=dl, implementation=name)
    whole = rc.evaluate(**kwargs)
    for block_size in (1, 3, 7):
        part = rc.evaluate(**kwargs, block_size=block_size)
        for field in PER_QUERY:
            assert np.array_equal(getattr(whole.per_query, field), getattr(part.per_query, field)), (block_size, field)
        assert whole.map == part.map


@pytest.mark.parametrize("name", IMPLS)
def test_accumulator_batches_of_embeddings_are_one_evaluate(name):
    """Batches of one query and uneven batches: bit for bit one ``evaluate`` call."""
    require_implementation(name)
    q, d, ql, dl = near_tied(1, n_q=9)
    whole = rc.evaluate(query_embeddings=q, db_embeddings=d, query_labels=ql, db_labels=dl, implementation=name)
    for cuts in ([1] * 9, [4, 1, 4], [2, 7]):
        acc = rc.Accumulator(db_embeddings=d, db_labels=dl, implementation=name)
        lo = 0
        for size in cuts:
            acc.update(query_embeddings=q[lo : lo + size], query_labels=ql[lo : lo + size])
            lo += size
        res = acc.compute()
        for field in PER_QUERY:
            assert np.array_equal(getattr(whole.per_query, field), getattr(res.per_query, field)), (cuts, field)
        assert res.map == whole.map


def test_the_fuzz_change_finds_block_dependent_distances():
    """The campaign's embedding block-size change: valid cases with a plain twin, which every
    implementation matches (with BLAS products, 4 of these 8 cases were wrong numbers)."""
    base = dict(distances=np.zeros((6, 300)), query_labels=np.arange(6) % 3, db_labels=np.arange(300) % 3)
    seen = set()
    for index in range(8):
        case = _embedding_block_sizes(RandomChoices(case_rng(7, index)), dict(base))
        assert case.twin is not None and "distances" not in case.kwargs and case.expect == "value"
        seen.add(case.kwargs["block_size"])
        outcome = classify(
            lambda case=case: Case(dict(case.kwargs), case.change, twin=dict(case.twin)), ["reference", "numpy"]
        )
        assert outcome.kind == "value", outcome
    assert seen == {1, 2, 3, 7}


def test_accumulator_slices_the_gallery_once(monkeypatch):
    """Batches of one query against 100,000 items: slicing the gallery at every update was 10x
    the distances themselves; the accumulator keeps the slices (its gallery is not to change)."""
    from retrieval_conformance.reference.contract import embeddings

    sliced_rows = []
    real = embeddings.slice_rows
    monkeypatch.setattr(embeddings, "slice_rows", lambda x, *a: sliced_rows.append(len(x)) or real(x, *a))
    q, d, ql, dl = near_tied(2, n_q=5, n_g=50)
    acc = rc.Accumulator(db_embeddings=d, db_labels=dl, implementation="numpy")
    for i in range(5):
        acc.update(query_embeddings=q[i : i + 1], query_labels=ql[i : i + 1])
    assert sliced_rows.count(50) == 1 and sliced_rows.count(1) == 5
    acc.reset()  # the gallery stays, and so do its slices
    acc.update(query_embeddings=q, query_labels=ql)
    assert sliced_rows.count(50) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_query_in_the_gallery_is_at_distance_zero(dtype):
    """The same slices on both sides: |q|^2 + |q|^2 - 2 q·q is exactly 0, for any magnitudes."""
    rng = np.random.default_rng(4)
    q = (rng.standard_normal((6, 50)) * np.exp2(rng.integers(-20, 20, (6, 1)))).astype(dtype)
    d = np.vstack([rng.standard_normal((10, 50)).astype(dtype), q[::-1]])
    dist = embedding_distances(q, d)
    assert np.all(dist[np.arange(6), 15 - np.arange(6)] == 0)
    assert np.all(dist[:, :10] > 0)


def test_float32_rows_are_cut_as_their_float64_copies():
    """float32 rows are cut in float32: the same slices, exponents and norms as through float64,
    for rows spanning 2**120, a zero row, subnormals and float32's largest value."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((300, 40)) * np.exp2(rng.integers(-60, 60, (300, 40)))).astype(np.float32)
    x[0], x[1, :5], x[2, 0] = 0, np.float32(1e-45), np.float32(3e38)
    for plan in ((2, 22), (3, 22), (4, 16)):
        narrow, wide = embedding_dots.slice_rows(x, *plan), embedding_dots.slice_rows(x.astype(np.float64), *plan)
        assert all(np.array_equal(a, b) for a, b in zip(narrow.slices, wide.slices)), plan
        assert np.array_equal(narrow.exponent, wide.exponent) and np.array_equal(narrow.norms, wide.norms), plan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slices_held_as_float32_give_the_same_bits(monkeypatch, dtype):
    """A large gallery's slices are held as float32 (half the memory): the same distances."""
    rng = np.random.default_rng(6)
    q, d = rng.standard_normal((5, 64)).astype(dtype), rng.standard_normal((700, 64)).astype(dtype)
    held64 = embedding_distances(q, d)
    monkeypatch.setattr(embedding_dots, "FLOAT64_SLICE_BYTES", 0)
    assert embedding_dots.slice_rows(d, 2, 22).slices[0].dtype == np.float32
    assert np.array_equal(embedding_distances(q, d), held64)


def test_one_evaluate_block_cuts_the_gallery_a_chunk_at_a_time(monkeypatch):
    """Without query blocks to share them, the gallery's slices are made a chunk of items at a
    time (never a whole-gallery copy), with the same bits; a zero row is named by its row."""
    from retrieval_conformance.reference.contract import embeddings

    rng = np.random.default_rng(7)
    q, d = rng.standard_normal((3, 16)), rng.standard_normal((200, 16))
    whole = embedding_distances(q, d)
    sliced_rows = []
    real = embeddings.slice_rows
    monkeypatch.setattr(embeddings, "slice_rows", lambda x, *a: sliced_rows.append(len(x)) or real(x, *a))
    monkeypatch.setattr(embedding_dots, "CHUNK_VALUES", 48 * 16)  # 16 items of 3 slices
    assert np.array_equal(embedding_distances(q, d), whole)
    assert sliced_rows == [3] + [16] * 12 + [8]
    d[150] = 0
    with pytest.raises(ValueError, match=r"^db_embeddings: row 150 is all zeros; cosine distance is undefined"):
        embedding_distances(q, d, "cosine")
