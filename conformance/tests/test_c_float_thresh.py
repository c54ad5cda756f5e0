"""The C float path's threshold pass (``csrc/rc_float_thresh.c``) gives the other passes' numbers.

A whole float32 row whose relevant distances take at most ``RC_THRESH_MAX_RUNS`` (32) distinct
values, and whose skipped items (junk, relevant) are few, is counted by comparing every item
with each distinct relevant distance, eight items a step (sixteen with AVX-512 where the CPU has
it), in per-lane counters; the ties only in blocks where one occurs (AVX-512: a hash table of
the relevant distances says where).  Compared bit for bit with the same library without it
(``cpu_features`` bit 5 off: the AVX2 bucket pass of ``rc_float_place.c``), without AVX2 (bit 3
off: the scalar pass), without AVX-512 (bit 4 off: the threshold pass in AVX2), with the numpy
implementation, and with the exact reference on a few queries: few distinct relevant distances
and just more than the pass takes, tie-heavy rows (items tied with relevant items, relevant
items tied with each other), signed zeros, lone ties, ids with cameras (junk) as in ReID, junk
masks, grades, scores, every tie policy, NaN / inf, and 1, 2 and 7 threads.

Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_per_query, same_bits
from retrieval_conformance.conformance.support.c_test_support import TIES, float_pass_options
from retrieval_conformance.reference.contract.problem import Options, Problem

#: the AVX2 feature bit of ``cpu_features``
AVX2 = 8
#: the AVX-512 feature bit of ``cpu_features``
AVX512 = 16
#: the threshold pass's bit of ``cpu_features``
THRESH = 32
#: the most distinct relevant distances the pass takes (``RC_THRESH_MAX_RUNS``)
MAX_RUNS = 32


def _problem(rng, n: int, runs: int, levels: int, junk: bool, graded: bool, scores: bool) -> Problem:
    """Three float32 queries over ``levels`` values (0: continuous), each with relevant items at
    ``runs`` distinct distances (some tied with each other), the farthest item among them (so
    every item is placed), junk and grades on request."""
    Q = 3
    if levels:
        D = (rng.integers(0, levels, size=(Q, n)) / levels).astype(np.float32)
    else:
        D = rng.random((Q, n), dtype=np.float32)
    rel = np.zeros((Q, n), bool)
    for q in range(Q):
        far = int(np.argmax(D[q]))
        values = np.unique(D[q])
        chosen = set(rng.choice(values[values < D[q, far]], size=min(runs - 1, len(values) - 1), replace=False))
        chosen.add(D[q, far])
        for v in chosen:
            at = np.flatnonzero(D[q] == v)
            rel[q, rng.choice(at, size=min(len(at), int(rng.integers(1, 4))), replace=False)] = True
        rel[q, far] = True
    grades = np.where(rel, rng.integers(1, 5, size=(Q, n)), 0).astype(np.int64) if graded else None
    mask = (rng.random((Q, n)) < 0.004) & ~rel if junk else None
    ranking = {"scores": -D} if scores else {"distances": D}
    return Problem(n_queries=Q, n_gallery=n, relevance=rel, grades=grades, junk=mask, **ranking)


def _reid_problem(rng, n: int, q: int = 6) -> Problem:
    """ReID-like: ids with ~12 gallery items each, cameras (same id and camera: junk), uniform
    float32 distances; a few queries' items tied on purpose with a relevant distance."""
    db_ids = rng.integers(0, n // 12, size=n).astype(np.int64)
    db_cams = rng.integers(0, 6, size=n).astype(np.int64)
    query_ids = db_ids[rng.choice(n, size=q, replace=False)]
    query_cams = rng.integers(0, 6, size=q).astype(np.int64)
    D = rng.random((q, n), dtype=np.float32)
    for i in range(q):
        mine = np.flatnonzero(db_ids == query_ids[i])
        D[i, mine[0]] = np.float32(1.5)  # the farthest item relevant (or junk): every item placed
        if i % 2:
            D[i, rng.choice(n, size=40, replace=False)] = D[i, mine[-1]]  # ties with a relevant item
    return Problem(
        n_queries=q,
        n_gallery=n,
        distances=D,
        query_labels=query_ids,
        db_labels=db_ids,
        query_cams=query_cams,
        db_cams=db_cams,
    )


def _masks(c_backend):
    """The threshold pass (AVX-512 where the CPU has it), the same in AVX2, the AVX2 bucket
    pass, the scalar pass."""
    every = c_backend.ALL_FEATURES
    return (every, every & ~AVX512, every & ~THRESH, every & ~AVX2)


def _three_passes(c_backend, p: Problem, o: Options, threads: int = 1):
    """The threshold pass's, the AVX2 bucket pass's and the scalar pass's results (the first
    twice: AVX-512 and AVX2, checked to agree here)."""
    impl = c_backend.CImplementation(num_threads=threads)
    out = []
    try:
        for mask in _masks(c_backend):
            c_backend.cpu_features(mask)
            out.append(impl.compute(p, o))
    finally:
        c_backend.cpu_features(c_backend.ALL_FEATURES)
    assert same_bits(out[0], out[1], f"AVX-512 / AVX2 {o}") == []
    return out[1:]


@pytest.mark.parametrize("ties", TIES)
def test_threshold_pass_equals_the_other_passes(c_backend, ties):
    """Every field and tie policy, bit for bit the bucket pass's, the scalar pass's and numpy's."""
    from retrieval_conformance.implementations.numpy_backend import NumpyImplementation

    rng = np.random.default_rng(1100 + TIES.index(ties))
    compared = 0
    for case in range(8):
        n = int(rng.integers(2000, 7000))
        runs = (1, 3, 12, MAX_RUNS, MAX_RUNS + 1, 7, 20, 2)[case]
        levels = (5, 60, 0, 1000, 0, 0, 40, 0)[case]
        p = _problem(rng, n, runs, levels, junk=case % 2 == 0, graded=case % 4 == 1, scores=case % 3 == 2)
        for o in float_pass_options(rng, ties, n):
            try:
                fast, bucket, scalar = _three_passes(c_backend, p, o)
            except ValueError:  # grouped with k inside a tie group: refused by all
                assert ties == "grouped"
                continue
            assert same_bits(fast, bucket, f"case {case} {o}") == []
            assert same_bits(fast, scalar, f"scalar case {case} {o}") == []
            if case < 4 and ties not in ("expected", "grouped") and p.distances is not None:
                assert same_bits(NumpyImplementation().compute(p, o), fast, f"numpy case {case} {o}") == []
            compared += 1
    assert compared >= (8 if ties == "grouped" else 24)


@pytest.mark.parametrize("ties", TIES)
def test_reid_rows_with_cameras(c_backend, ties):
    """Ids and cameras (junk from the same camera), few relevant items, some rows tie-heavy."""
    rng = np.random.default_rng(1150 + TIES.index(ties))
    p = _reid_problem(rng, 5000)
    for o in (Options(ties=ties, max_rank=20), Options(ties=ties, k=10, ap_at_k="r")):
        try:
            fast, bucket, scalar = _three_passes(c_backend, p, o)
        except ValueError:
            assert ties == "grouped"
            continue
        assert same_bits(fast, bucket, f"{o}") == []
        assert same_bits(fast, scalar, f"scalar {o}") == []


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected", "optimistic"])
def test_threshold_pass_matches_the_reference(cimpl, ties):
    """The exact yardstick on tie-heavy rows with junk and few relevant distances."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(1170 + TIES.index(ties))
    p = _problem(rng, 3000, 6, 30, junk=True, graded=False, scores=False)
    o = Options(ties=ties, max_rank=10)
    assert compare_per_query(ReferenceImplementation().compute(p, o), cimpl.compute(p, o), f"{o}: ") == []


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["plain", "beside a relevant item", "last", "relevant"])
def test_threshold_pass_names_a_nonfinite_value(c_backend, value, where):
    """A NaN / inf read by the threshold pass (in a block, in a step cut by a skipped item, in the
    short tail, as a relevant distance) is refused as the other passes refuse it."""
    rng = np.random.default_rng(1190)
    p = _problem(rng, 4000, 8, 0, junk=False, graded=False, scores=False)
    rel = p.relevance[1]
    if where == "plain":
        j = int(np.flatnonzero(~rel & ~np.roll(rel, 8) & ~np.roll(rel, -8))[100])
    elif where == "beside a relevant item":
        j = min(int(np.flatnonzero(rel)[0]) + 1, 3998)
    elif where == "last":
        j = 3999
    else:
        j = int(np.flatnonzero(rel)[0])
    p.distances[1, j] = value
    messages = []
    for mask in _masks(c_backend):
        impl = c_backend.CImplementation(num_threads=1)
        try:
            c_backend.cpu_features(mask)
            with pytest.raises(ValueError) as err:
                impl.compute(p, Options(ties="stable"))
            messages.append(str(err.value))
        finally:
            c_backend.cpu_features(c_backend.ALL_FEATURES)
    assert len(set(messages)) == 1
    assert str(j) in messages[0]


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_threshold_pass_gives_the_same_bits_on_any_thread_count(c_backend, ties):
    """Per-thread counters: 1, 2 and 7 threads give the same arrays, with and without the pass."""
    rng = np.random.default_rng(1200 + TIES.index(ties))
    p = _reid_problem(rng, 4000, q=14)
    o = Options(ties=ties)
    one = _three_passes(c_backend, p, o, threads=1)
    for threads in (2, 7):
        many = _three_passes(c_backend, p, o, threads=threads)
        for a, b in zip(one, many):
            assert same_bits(a, b, f"{ties} {threads} threads") == []
    assert same_bits(one[0], one[1], ties) == []


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("scores", [False, True])
def test_signed_zeros_and_a_single_tie(c_backend, ties, scores):
    """-0 and +0 are one distance (hashed alike); a row whose only tie with a relevant distance
    sits in one block (the others counted without ties), and a row where it is the last item."""
    rng = np.random.default_rng(1250 + TIES.index(ties))
    n, Q = 9000, 4
    D = rng.random((Q, n), dtype=np.float32) + np.float32(0.25)
    rel = np.zeros((Q, n), bool)
    for q in range(Q):
        rel[q, rng.choice(n, size=10, replace=False)] = True
        rel[q, np.argmax(D[q])] = True
    # relevant at +0 near the start, items at -0 only far from it (their blocks hold no +0),
    # and one relevant at -0 beside them
    D[0, 100:103], D[0, 6000:6020:2] = np.float32(0.0), np.float32(-0.0)
    rel[0, 100:102], rel[0, 6000] = True, True
    for q, j in ((1, 5000), (2, n - 1)):
        D[q, j] = D[q, np.flatnonzero(rel[q])[2]]
        rel[q, j] = False
    D[3] = np.float32(0.5)  # every item tied
    rel[3, :] = False
    rel[3, rng.choice(n, size=5, replace=False)] = True
    p = Problem(n_queries=Q, n_gallery=n, relevance=rel, **({"scores": -D} if scores else {"distances": D}))
    fast, bucket, scalar = _three_passes(c_backend, p, Options(ties=ties, max_rank=20))
    assert same_bits(fast, bucket, ties) == []
    assert same_bits(fast, scalar, f"scalar {ties}") == []
