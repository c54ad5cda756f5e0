"""Pass 2 of the gallery shards: the C counts (``csrc/rc_shard.c``, bound by
``implementations/c/shards.py``) are the numpy loop's integers, on the points a real merge asks
for and on points made to reach every edge (keys no item has, points of other shards before and
after this one, several points on one key, rows without points), with ties, -0.0, junk, camera
junk, an empty shard and any thread count."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from retrieval_conformance.implementations.c import shards as c_shards
from retrieval_conformance.implementations.dask.merge import merge_statistics, points_for
from retrieval_conformance.implementations.dask.shards import (
    gallery_part,
    order_keys,
    query_part,
    shard_counts,
    shard_statistics,
)
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS, TIE_POLICIES
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.problem import Options

pytestmark = pytest.mark.skipif(
    c_shards.unavailable_reason() is not None, reason=f"C shard counts: {c_shards.unavailable_reason()}"
)
KINDS = ("float32", "float64", "codes")


def _problem(rng, kind, junk):
    """A tie-heavy problem: few distinct distances (-0.0 among them), few ids, junk as asked."""
    n_q, n_g = 7, 45
    inputs = {"query_labels": rng.integers(0, 3, n_q), "db_labels": rng.integers(-1, 3, n_g)}
    if kind == "codes":
        inputs.update(query_codes=rng.integers(0, 2, (n_q, 4)), db_codes=rng.integers(0, 2, (n_g, 4)))
    else:
        values = np.array([-0.0, 0.0, 0.5, 1.0, 2.5])
        inputs["distances"] = rng.choice(values, (n_q, n_g)).astype(kind)
    if junk == "cameras":
        inputs.update(query_cams=rng.integers(0, 2, n_q), db_cams=rng.integers(0, 2, n_g), junk_ids=(-1,))
    elif junk == "matrix":
        inputs["junk"] = rng.random((n_q, n_g)) < 0.3
    return build_problem(**inputs)


def _shards(problem, bounds):
    return [(query_part(problem, 0, problem.n_queries, lo, hi), gallery_part(problem, lo, hi), lo) for lo, hi in bounds]


def _made_points(rng, problem, ties, offset, n_items):
    """Points sorted by row: keys of the problem's distances and keys no item has, global indices
    before, inside and after the shard, some rows without points."""
    dist = problem.distances if problem.distances is not None else np.arange(6)  # Hamming: 0..4 bits
    keys = np.unique(order_keys(np.asarray(dist).ravel()))
    keys = np.concatenate([keys, keys[:1] - 1, keys[-1:] + 1, (keys[:-1] + 1)[keys[1:] - keys[:-1] > 1]])
    n = 60
    row = np.sort(rng.choice(np.arange(problem.n_queries)[::2], n))  # odd rows: no points
    points = {"row": row.astype(np.int64), "key": rng.choice(keys, n).astype(np.int64)}
    if ties in INDEX_ORDERS:
        points["index"] = rng.integers(-3, offset + n_items + 3, n).astype(np.int64)
    return points


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("junk", [None, "cameras", "matrix"])
@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_c_counts_are_the_numpy_counts(kind, junk, ties):
    rng = np.random.default_rng([KINDS.index(kind), [None, "cameras", "matrix"].index(junk), TIE_POLICIES.index(ties)])
    problem = _problem(rng, kind, junk)
    k = 4 if ties == "grouped" else None  # grouped with k adds the cut-off points
    options = Options(ties=ties, k=k)
    bounds = [(0, 11), (11, 12), (12, 45)]  # a one-item shard among them
    shards = _shards(problem, bounds)
    stats = [shard_statistics(part, gallery, lo, options) for part, gallery, lo in shards]
    merged = merge_statistics(stats, options, problem.n_gallery, 0, False, kind == "float64")
    compared = 0
    for (part, gallery, lo), (_, hi) in zip(shards, bounds):
        for points in (points_for(merged), _made_points(rng, problem, ties, lo, hi - lo)):
            got = shard_counts(part, gallery, lo, ties, points, use_c=True)
            want = shard_counts(part, gallery, lo, ties, points, use_c=False)
            assert got.tolist() == want.tolist(), (lo, hi, points)
            compared += int(np.count_nonzero(want))
    assert compared > 0  # counts that are not all zero were compared


def test_c_counts_with_tied_points_and_bounds_by_hand():
    """One row of distances 1 1 0 1 (items 10..13 of the gallery) against points at 1 with global
    indices 9, 11, 13 and 20: under stable the tied items before each index, under reverse after."""
    dist = np.array([[1.0, 1.0, 0.0, 1.0]])
    start, key = np.array([0, 4]), order_keys(np.array([1.0] * 4))
    index = np.array([9, 11, 13, 20])
    for ties, want in (("stable", [1, 2, 3, 4]), ("reverse", [4, 2, 1, 1])):
        out = np.zeros(4, np.int64)
        c_shards.count_block(dist, None, 10, ties, start, key, index, out, None)
        assert out.tolist() == want, ties
    below, at = np.zeros(4, np.int64), np.zeros(4, np.int64)
    junk = np.array([[False, True, False, False]])
    c_shards.count_block(dist, junk, 10, None, start, key, None, below, at)
    assert (below.tolist(), at.tolist()) == ([1] * 4, [3] * 4)


def _misaligned(a: np.ndarray) -> np.ndarray:
    """``a`` copied into a buffer that starts one byte off (as an array unpickled by dask's workers may)."""
    raw = np.zeros(a.nbytes + 1, np.uint8)
    out = raw[1:].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def test_misaligned_inputs_are_counted_as_aligned_ones(monkeypatch):
    """C reads distances as doubles and keys as int64: a misaligned array is copied first (the
    sanitizer run reports a misaligned load otherwise); every pointer C gets is 8-byte aligned."""
    kernel = c_shards.shard_kernel()
    pointers = []

    def recording(*args):
        pointers.extend(a for a in args if isinstance(a, int) and a > 1 << 20)  # addresses, not sizes
        return kernel(*args)

    monkeypatch.setattr(c_shards, "shard_kernel", lambda: recording)
    dist = np.array([[1.0, 1.0, 0.0, 1.0], [0.5, 2.0, 0.5, 0.0]])
    start, key = np.array([0, 2, 4]), order_keys(np.array([1.0, 0.0, 0.5, 2.0]))
    index = np.array([9, 12, 11, 13])
    want, got = np.zeros(4, np.int64), np.zeros(4, np.int64)
    c_shards.count_block(dist, None, 10, "stable", start, key, index, want, None)
    c_shards.count_block(
        _misaligned(dist), None, 10, "stable", _misaligned(start), _misaligned(key), _misaligned(index), got, None
    )
    assert got.tolist() == want.tolist()
    assert pointers and all(p % 8 == 0 for p in pointers)


def test_an_empty_shard_counts_nothing():
    start, key, index = np.array([0, 2, 3]), np.array([0, 5, 7]), np.array([0, 1, 2])
    for ties in ("stable", "reverse", None):
        out_a = np.full(3, -1, np.int64)
        out_b = None if ties else np.full(3, -1, np.int64)
        c_shards.count_block(
            np.zeros((2, 0), np.float32), None, 4, ties, start, key, index if ties else None, out_a, out_b
        )
        assert out_a.tolist() == [0, 0, 0] and (out_b is None or out_b.tolist() == [0, 0, 0])


def test_c_counts_do_not_depend_on_the_thread_count(monkeypatch):
    rng = np.random.default_rng(5)
    dist = rng.integers(0, 6, (300, 900)).astype(np.float32)  # over SMALL_PROBLEM: threads by default
    start = np.arange(0, 3 * 300 + 1, 3)
    key = order_keys(dist[np.repeat(np.arange(300), 3), rng.integers(0, 900, 900)])
    index = rng.integers(0, 900, 900)
    runs = []
    for threads in ("1", "2", "3", ""):
        monkeypatch.setenv("RC_NUM_THREADS", threads)
        out = np.zeros(900, np.int64)
        c_shards.count_block(dist, None, 0, "stable", start, key, index, out, None)
        runs.append(out.tolist())
    assert runs[0] == runs[1] == runs[2] == runs[3]
    assert sum(runs[0]) > 0


@pytest.mark.parametrize("junk", [None, "cameras", "junk ids"])
@pytest.mark.parametrize("seed", range(4))
def test_pass_one_by_id_is_the_scan(junk, seed):
    """Pass 1 through the gallery sorted by id (no queries x items array) gives the scan's
    relevant items and kept counts, camera junk and junk ids included."""
    from retrieval_conformance.implementations.dask import shards

    rng = np.random.default_rng(seed)
    problem = _problem(rng, "float32", "cameras" if junk == "cameras" else None)
    if junk is not None:  # with cameras too: an item of a query's id both junk id and same camera counts once
        problem = replace(problem, junk_ids=(-1, 2))
    if seed == 3:  # a query whose id no gallery item has
        problem = replace(problem, query_labels=np.where(problem.query_labels == 1, 7, problem.query_labels))
    assert shards._by_id(problem)
    found = 0
    for lo, hi in ((0, 45), (5, 6), (20, 45)):
        part, gallery = query_part(problem, 0, problem.n_queries, lo, hi), gallery_part(problem, lo, hi)
        got = shard_statistics(part, gallery, lo, Options(ties="stable"))
        want = {
            "n_kept": np.zeros(problem.n_queries, np.int64),
            "n_within": np.zeros(problem.n_queries, np.int64),
            "rel_within": np.zeros(problem.n_queries, np.int64),
        }
        items = []
        shards._scan_statistics(part, gallery, lo, Options(ties="stable"), want, items, 0)
        for j, name in enumerate(("row", "key", "index", "grade")):
            assert got[name].tolist() == np.concatenate([i[j] for i in items]).tolist(), (lo, hi, name)
        assert got["n_kept"].tolist() == want["n_kept"].tolist(), (lo, hi)
        found += got["row"].size
    assert found > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_counts_at_point_keys_of_no_finite_distance(dtype):
    """Point keys at the ends of the key range and beyond (infinities, NaN bit patterns, beyond
    int32 for float32): C's test of a distance against the largest point skips no item that
    counts."""
    from retrieval_conformance.implementations.dask.shards import counts_at

    rng = np.random.default_rng(9)
    row = rng.choice(np.array([-3.5, -0.0, 0.0, 1.25, 7.0, 1e30], dtype=dtype), (1, 200))
    keys = order_keys(row[0])
    extremes = [order_keys(np.array([x], dtype=dtype))[0] for x in (np.inf, -np.inf, 1.25, -0.0)]
    nan_bits = order_keys(np.array([np.nan], dtype=dtype))[0]
    for top in [*extremes, nan_bits, nan_bits + 5, -nan_bits - 5, 2**40, -(2**40), 2**62, -(2**62)]:
        for x in ([top], [order_keys(np.array([1.25], dtype=dtype))[0], top]):
            x = np.array(x, np.int64)
            below, at = np.zeros(len(x), np.int64), np.zeros(len(x), np.int64)
            c_shards.count_block(row, None, 0, None, np.array([0, len(x)]), x, None, below, at)
            assert np.stack([below, at]).tolist() == counts_at(keys, x).tolist(), (top, x)


def test_without_the_c_unit_the_numpy_loop_counts(monkeypatch):
    """A library without rc_shard_counts (or none): shard_counts falls back to numpy, and asking
    for C by name says why it cannot."""
    rng = np.random.default_rng(1)
    problem = _problem(rng, "float32", "cameras")
    ((part, gallery, lo),) = _shards(problem, [(0, 45)])
    points = _made_points(rng, problem, "stable", lo, 45)
    with_c = shard_counts(part, gallery, lo, "stable", points)
    monkeypatch.setattr(c_shards, "shard_kernel", lambda: None)
    assert shard_counts(part, gallery, lo, "stable", points).tolist() == with_c.tolist()
    with pytest.raises(RuntimeError, match="C shard counts unavailable: .*rc_shard_counts"):
        shard_counts(part, gallery, lo, "stable", points, use_c=True)
