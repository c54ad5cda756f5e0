"""The C float path's shortcuts give the numbers of the whole computation.

* The prefix path (``csrc/rc_float.c``): with a cut-off k (AP@k by hits, R or min(k, R)), only
  the items up to the L-th smallest distance, L = max(k, R, max_rank), are placed among the
  relevant ones, and the last relevant item's rank comes from counts over the row.  It runs when
  the gallery has at least ``RC_PREFIX_MIN_N`` (1024) items and L is at most 1/8 of them: the
  problems below are built so (few relevant items, small k).  Compared bit for bit with the
  same library with the prefix path turned off (``cpu_features`` bit 2), and with the exact
  reference on a few queries.
* The bounded pass (the same file), with or without a cut-off: an item farther than the
  farthest relevant item changes no rank, so only the items up to it are placed when they are
  at most 1/8 of the gallery (ReID and landmark queries: well under 1%).  Compared bit for bit
  with the whole pass, and with the reference.
* The filter of both paths compares with AVX2 where the CPU has it (``cpu_features`` bit 3),
  else SSE2: the two give the same arrays.
* Similarity scores go to C as they are (``Problem.scores``, negated inside C): equal to the
  negated distances, bit for bit, and a NaN is named as ``scores``.
* The relevant items are sorted by a radix sort on the doubles' bits: -0.0 and +0.0 are one
  distance, so their items keep index order (reverse index order under ``reverse``).

Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_per_query, same_bits
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.reference.contract.problem import Options, Problem

#: the prefix path (and the bounded pass) off: popcnt and fma only
WITHOUT_PREFIX = 3
#: every feature but AVX2: the filter compares with SSE2
WITHOUT_AVX2 = 7


def _prefix_problem(rng, n_gallery: int, levels: int, junk: bool, graded: bool, dtype) -> Problem:
    """A few queries over ``n_gallery`` items on ``levels`` distance values (ties across the
    cut), about 1% relevant, junk and grades on request."""
    Q = 3
    D = rng.integers(0, levels, size=(Q, n_gallery)).astype(dtype) / levels
    rel = rng.random((Q, n_gallery)) < 0.01
    rel[:, rng.integers(0, n_gallery)] = True  # at least one relevant item per query
    grades = np.where(rel, rng.integers(1, 5, size=(Q, n_gallery)), 0).astype(np.int64) if graded else None
    mask = rng.random((Q, n_gallery)) < 0.03 if junk else None
    return Problem(n_queries=Q, n_gallery=n_gallery, distances=D, relevance=rel, grades=grades, junk=mask)


def _both_paths(c_backend, p: Problem, o: Options, fast: int = 0):
    """The result with every feature (``fast``: with these instead) and with the whole pass."""
    impl = c_backend.CImplementation(num_threads=1)
    try:
        c_backend.cpu_features(fast or c_backend.ALL_FEATURES)
        prefix = impl.compute(p, o)
        c_backend.cpu_features(WITHOUT_PREFIX)
        whole = impl.compute(p, o)
    finally:
        c_backend.cpu_features(c_backend.ALL_FEATURES)
    return prefix, whole


def _paths_agree(c_backend, p: Problem, o: Options, fast: int, label: str) -> int:
    """1 when the path taken with ``fast`` gives the whole pass's arrays, bit for bit; 0 when
    the options are refused (grouped with k inside a tie group)."""
    try:
        taken, whole = _both_paths(c_backend, p, o, fast)
    except ValueError:
        assert o.ties == "grouped"
        return 0
    assert same_bits(taken, whole, label) == []
    return 1


def _near_problem(rng, n_gallery: int, levels: int, junk: bool, graded: bool, dtype, scores: bool) -> Problem:
    """Queries whose relevant items are among the nearest ~4% (the bounded pass places only the
    items up to the farthest of them), ties across the farthest relevant distance, and one query
    whose relevant items reach the far end (the filter gives up: the whole pass)."""
    Q = 4
    D = rng.integers(0, levels, size=(Q, n_gallery)).astype(dtype) / levels
    rel = np.zeros((Q, n_gallery), bool)
    for q in range(Q - 1):
        near = np.flatnonzero(D[q] <= np.quantile(D[q], 0.04))
        rel[q, rng.choice(near, size=min(near.size, int(rng.integers(1, 40))), replace=False)] = True
    rel[Q - 1] = rng.random(n_gallery) < 0.01
    rel[Q - 1, int(np.argmax(D[Q - 1]))] = True
    grades = np.where(rel, rng.integers(1, 5, size=(Q, n_gallery)), 0).astype(np.int64) if graded else None
    mask = (rng.random((Q, n_gallery)) < 0.03) & ~rel if junk else None
    ranking = {"scores": -D} if scores else {"distances": D}
    return Problem(n_queries=Q, n_gallery=n_gallery, relevance=rel, grades=grades, junk=mask, **ranking)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("fast", ["all", "sse2"])
def test_bounded_pass_equals_the_whole_pass(c_backend, ties, fast):
    """Every field and tie policy, without a cut-off and with the cut-offs the prefix path does
    not take (k beyond 1/8 of the gallery, AP@k by dcmh), ties at the farthest relevant distance,
    junk, grades, scores; with the AVX2 filter and with the SSE2 one."""
    rng = np.random.default_rng(700 + TIES.index(ties))
    mask = c_backend.ALL_FEATURES if fast == "all" else WITHOUT_AVX2
    compared = 0
    for case in range(8):
        n = int(rng.integers(1024, 6000))
        p = _near_problem(
            rng,
            n,
            int(rng.choice([9, 80, 5000, 10**6])),
            junk=case % 3 == 0,
            graded=case % 4 == 1,
            dtype=(np.float32, np.float64)[case % 2],
            scores=case % 5 == 2,
        )
        for k, den in ((None, "hits"), (n // 2, "r"), (int(rng.integers(1, 50)), "dcmh")):
            o = Options(
                ties=ties,
                k=k,
                ap_at_k=den,
                max_rank=int(rng.choice([0, 5, 50])),
                ap_rule=("precision_sum", "trapezoid")[case % 2],
            )
            compared += _paths_agree(c_backend, p, o, mask, f"case {case} {o}")
    assert compared >= (8 if ties == "grouped" else 20)  # grouped: some k fall inside a tie group


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("fast", ["all", "sse2"])
def test_prefix_path_equals_the_whole_pass(c_backend, ties, fast):
    """Every field, every tie policy and AP@k denominator, ties across the cut, junk, grades;
    with the AVX2 filter and with the SSE2 one."""
    rng = np.random.default_rng(500 + TIES.index(ties))
    mask = c_backend.ALL_FEATURES if fast == "all" else WITHOUT_AVX2
    compared = 0
    for case in range(12):
        p = _prefix_problem(
            rng,
            int(rng.integers(4096, 9000)),
            int(rng.choice([7, 60, 1000, 10**6])),
            junk=case % 3 == 0,
            graded=case % 4 == 1,
            dtype=(np.float32, np.float64)[case % 2],
        )
        for k in (1, 10, int(rng.integers(2, 300))):
            for den in ("hits", "r", "min_k_r"):
                o = Options(
                    ties=ties,
                    k=k,
                    ap_at_k=den,
                    max_rank=int(rng.choice([0, 5, 50])),
                    ap_rule=("precision_sum", "trapezoid")[k % 2],
                )
                compared += _paths_agree(c_backend, p, o, mask, f"case {case} {o}")
    assert compared >= (20 if ties == "grouped" else 50)  # grouped: many k fall inside a tie group


@pytest.mark.parametrize("ties", ["stable", "expected"])
def test_prefix_path_with_a_large_cut_off(c_backend, ties):
    """k = 5,000 of 60,000 items: ~10,000 candidates below the pivot, past the selection's
    small-input bucket count (RC_SELECT_FEW = 8,192), and a sample of 1,024 below it."""
    rng = np.random.default_rng(41)
    for dtype in (np.float32, np.float64):
        p = _prefix_problem(rng, 60_000, 30_000, junk=True, graded=False, dtype=dtype)
        assert _paths_agree(c_backend, p, Options(ties=ties, k=5000, max_rank=10), 0, dtype.__name__) == 1


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected", "optimistic"])
def test_bounded_pass_matches_the_reference(cimpl, ties):
    """The exact yardstick on ReID-like queries: a few relevant items near the top, items tied
    with the farthest of them, junk."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(800 + TIES.index(ties))
    p = _near_problem(rng, 2100, 50, junk=True, graded=False, dtype=np.float32, scores=False)
    for o in (Options(ties=ties, max_rank=10), Options(ties=ties, k=1500, ap_at_k="r")):
        ref = ReferenceImplementation().compute(p, o)
        assert compare_per_query(ref, cimpl.compute(p, o), label=f"{o}: ") == []


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_a_bucket_table_beyond_64k_buckets(cimpl, ties):
    """20,000 relevant items among 120,000 (a table of 2^17 buckets, as a 4M gallery's), some
    buckets holding several relevant distances, ties: bit for bit the numpy implementation's."""
    from retrieval_conformance.implementations.numpy_backend import NumpyImplementation

    rng = np.random.default_rng(21)
    N = 120_000
    D = np.concatenate([rng.integers(0, 4000, (1, N)) / 4000, rng.standard_normal((1, N))]).astype(np.float32)
    rel = rng.random((2, N)) < 1 / 6
    p = Problem(n_queries=2, n_gallery=N, distances=D, relevance=rel)
    o = Options(ties=ties)
    assert same_bits(NumpyImplementation().compute(p, o), cimpl.compute(p, o), f"{o}") == []


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected", "pessimistic"])
def test_prefix_path_matches_the_reference(cimpl, ties):
    """The exact yardstick on one query of a gallery large enough for the prefix path, with
    the last relevant item far beyond the cut (its rank comes from the counts)."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(600 + TIES.index(ties))
    N = 4500
    D = (rng.integers(0, 40, size=(1, N)) / 40).astype(np.float64)
    rel = np.zeros((1, N), bool)
    rel[0, rng.choice(N, 12, replace=False)] = True
    rel[0, int(np.argmax(D[0]))] = True  # a relevant item among the farthest
    p = Problem(n_queries=1, n_gallery=N, distances=D, relevance=rel)
    for k in (5, 100):
        o = Options(ties=ties, k=k, max_rank=20)
        ref = ReferenceImplementation().compute(p, o)
        assert compare_per_query(ref, cimpl.compute(p, o), label=f"k={k}: ") == []


def test_scores_read_in_c_equal_negated_distances(c_backend):
    rng = np.random.default_rng(7)
    S = np.round(rng.standard_normal((4, 5000)), 2).astype(np.float32)
    S[0, :50] = 0.0  # -0.0 as distances
    rel = rng.random((4, 5000)) < 0.02
    impl = c_backend.CImplementation(num_threads=1)
    for o in (Options(), Options(k=10), Options(ties="reverse", k=100), Options(ties="expected")):
        a = impl.compute(Problem(n_queries=4, n_gallery=5000, scores=S, relevance=rel), o)
        b = impl.compute(Problem(n_queries=4, n_gallery=5000, distances=-S, relevance=rel), o)
        assert same_bits(a, b, f"{o}") == []


def test_evaluate_hands_scores_to_c_without_a_copy(c_backend):
    """``evaluate(scores=...)`` with C: the same result as numpy, and the Problem C sees holds
    the caller's scores (no negated copy)."""
    import retrieval_conformance as rc
    from retrieval_conformance.reference.contract.evaluate import build_problem

    rng = np.random.default_rng(8)
    S = rng.random((5, 300)).astype(np.float32)
    rel = rng.random((5, 300)) < 0.1
    c = rc.evaluate(scores=S, relevance=rel, protocol="hashing", k=20, implementation="c")
    n = rc.evaluate(scores=S, relevance=rel, protocol="hashing", k=20, implementation="numpy")
    assert same_bits(c.per_query, n.per_query, "c vs numpy") == []
    p = build_problem(scores=S, relevance=rel, keep_scores=True)
    assert p.distances is None and np.shares_memory(p.scores, S)


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_a_checked_row_is_not_read_twice_and_gives_the_same_numbers(cimpl, ties):
    """``Problem.finite`` (set by ``build_problem``): without a cut-off and with few relevant
    items C skips its own read of the row (ids with cameras, a relevance row), or reads it
    later (many relevant items, or the bounded pass gives up); the arrays are those of the
    unchecked Problem, which C checks first."""
    import dataclasses

    rng = np.random.default_rng(31)
    N = 6000
    D = rng.integers(0, 500, size=(6, N)).astype(np.float32)
    ids, cams = rng.integers(0, 400, N), rng.integers(0, 6, N)
    qid = ids[rng.choice(N, 6)]
    D[:, :] = np.where(ids[None, :] == qid[:, None], D * 0.01, D)  # ReID-like: the matches are near
    rel = rng.random((6, N)) < np.array([0.001, 0.001, 0.05, 0.05, 0.3, 0.0005])[:, None]
    rel[:, 0] = True
    problems = [
        Problem(
            n_queries=6,
            n_gallery=N,
            distances=D,
            query_labels=qid.astype(np.int64),
            db_labels=ids.astype(np.int64),
            query_cams=rng.integers(0, 6, 6).astype(np.int64),
            db_cams=cams.astype(np.int64),
        ),
        Problem(n_queries=6, n_gallery=N, scores=-D, relevance=rel),
    ]
    for p in problems:
        for o in (Options(ties=ties), Options(ties=ties, k=N // 2, ap_at_k="r")):
            checked = cimpl.compute(dataclasses.replace(p, finite=True), o)
            assert same_bits(checked, cimpl.compute(p, o), f"{o}") == []


def test_nonfinite_scores_are_named_scores(c_backend):
    S = np.ones((2, 10), np.float32)
    S[1, 3] = np.nan
    p = Problem(n_queries=2, n_gallery=10, scores=S, relevance=np.ones((2, 10), bool))
    with pytest.raises(ValueError, match=r"scores: expected finite values, found a non-finite value at \[1, 3\]"):
        c_backend.CImplementation().compute(p, Options())


@pytest.mark.parametrize("ties", ["stable", "reverse", "optimistic", "expected"])
def test_signed_zero_distances_are_one_tie_group(cimpl, ties):
    """More relevant items than the insertion-sort limit (32), on -0.0, +0.0 and 1.0, graded:
    which relevant item takes which rank of a tie run shows in nDCG."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(9)
    D = rng.choice(np.array([-0.0, 0.0, 1.0]), size=(2, 120))
    rel = rng.random((2, 120)) < 0.6
    grades = np.where(rel, rng.integers(1, 6, size=(2, 120)), 0).astype(np.int64)
    p = Problem(n_queries=2, n_gallery=120, distances=D, relevance=rel, grades=grades)
    o = Options(ties=ties)
    ref = ReferenceImplementation().compute(p, o)
    assert compare_per_query(ref, cimpl.compute(p, o)) == []
