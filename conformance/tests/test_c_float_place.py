"""The C float path's AVX2 pass (``csrc/rc_float_place.c``) gives the scalar pass's numbers.

A whole float32 row whose skipped items (junk, relevant) are at most 1/32 of it is placed eight
items a step: each item's bucket by the scalar arithmetic, its side of the bucket's relevant
distance by a gather, counted per (bucket, side); a bucket holding several relevant distances
sends its items to the scalar search, and a step holding a skipped item goes to the scalar code.
Compared bit for bit with the same library without AVX2 (``cpu_features`` bit 3 off: the scalar
pass), with the numpy implementation, and with the exact reference on a few queries: tie-heavy
rows, few and many relevant items, junk, grades, scores, every tie policy, cut-offs the prefix
path does not take, close relevant distances sharing a bucket, and NaN / inf.

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


def _problem(rng, n: int, levels: int, share: float, junk: bool, graded: bool, scores: bool) -> Problem:
    """Three float32 queries over ``levels`` values (ties), a ``share`` of them relevant and
    spread over the whole row (so the bounded pass gives up), junk and grades on request."""
    Q = 3
    D = (rng.integers(0, levels, size=(Q, n)) / levels).astype(np.float32)
    rel = rng.random((Q, n)) < share
    rel[:, int(rng.integers(0, n))] = True
    rel[np.arange(Q), np.argmax(D, axis=1)] = True  # the farthest item relevant: the whole pass
    grades = np.where(rel, rng.integers(1, 5, size=(Q, n)), 0).astype(np.int64) if graded else None
    mask = (rng.random((Q, n)) < 0.005) & ~rel if junk else None
    ranking = {"scores": -D} if scores else {"distances": D}
    return Problem(n_queries=Q, n_gallery=n, relevance=rel, grades=grades, junk=mask, **ranking)


def _clustered_problem(rng, n: int) -> Problem:
    """Relevant distances a few float32 steps apart (several in one bucket: the scalar search)
    among items on the same steps, and a spread of others."""
    near = np.float32(0.5) + np.arange(40, dtype=np.float32) * np.finfo(np.float32).eps
    D = rng.random((2, n)).astype(np.float32)
    pick = rng.random((2, n)) < 0.3
    D[pick] = rng.choice(near, size=int(pick.sum()))
    rel = np.zeros((2, n), bool)
    for q in range(2):
        rel[q, rng.choice(np.flatnonzero(pick[q]), size=20, replace=False)] = True
        rel[q, rng.choice(np.flatnonzero(~pick[q]), size=20, replace=False)] = True
    return Problem(n_queries=2, n_gallery=n, distances=D, relevance=rel)


def _with_and_without_avx2(c_backend, p: Problem, o: Options):
    impl = c_backend.CImplementation(num_threads=1)
    try:
        c_backend.cpu_features(c_backend.ALL_FEATURES)
        fast = impl.compute(p, o)
        c_backend.cpu_features(c_backend.ALL_FEATURES & ~AVX2)
        scalar = impl.compute(p, o)
    finally:
        c_backend.cpu_features(c_backend.ALL_FEATURES)
    return fast, scalar


@pytest.mark.parametrize("ties", TIES)
def test_avx2_pass_equals_the_scalar_pass(c_backend, ties):
    """Every field and tie policy, bit for bit the scalar pass's and the numpy implementation's."""
    from retrieval_conformance.implementations.numpy_backend import NumpyImplementation

    rng = np.random.default_rng(900 + TIES.index(ties))
    compared = 0
    for case in range(8):
        n = int(rng.integers(2000, 9000))
        p = _problem(
            rng,
            n,
            int(rng.choice([5, 60, 1000, 10**6])),
            share=(0.0005, 0.01, 0.02)[case % 3],
            junk=case % 2 == 0,
            graded=case % 4 == 1,
            scores=case % 3 == 2,
        )
        for o in float_pass_options(rng, ties, n):
            try:
                fast, scalar = _with_and_without_avx2(c_backend, p, o)
            except ValueError:  # grouped with k inside a tie group: refused by both
                assert ties == "grouped"
                continue
            assert same_bits(fast, scalar, f"case {case} {o}") == []
            # numpy on distances (it reads scores through the front end), concrete policies (its
            # expected / grouped sums may round differently in the last bit, as before this pass)
            if case < 2 and ties not in ("expected", "grouped"):
                assert same_bits(NumpyImplementation().compute(p, o), fast, f"numpy case {case} {o}") == []
            compared += 1
    assert compared >= (8 if ties == "grouped" else 24)


@pytest.mark.parametrize("ties", TIES)
def test_close_relevant_distances_share_a_bucket(c_backend, ties):
    """Items in a bucket of several relevant distances take the scalar search: the same bits."""
    rng = np.random.default_rng(950 + TIES.index(ties))
    p = _clustered_problem(rng, 6000)
    fast, scalar = _with_and_without_avx2(c_backend, p, Options(ties=ties))
    assert same_bits(fast, scalar, ties) == []


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected", "pessimistic"])
def test_avx2_pass_matches_the_reference(cimpl, ties):
    """The exact yardstick on tie-heavy rows with junk, many relevant items spread out."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(970 + TIES.index(ties))
    p = _problem(rng, 3000, 40, share=0.02, junk=True, graded=False, scores=False)
    o = Options(ties=ties, max_rank=10)
    assert compare_per_query(ReferenceImplementation().compute(p, o), cimpl.compute(p, o), f"{o}: ") == []


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["plain", "beside a relevant item", "last"])
def test_avx2_pass_names_a_nonfinite_value(c_backend, value, where):
    """A NaN / inf read by the AVX2 pass (in a step of eight, in a step left to the scalar code,
    in the short tail) is refused as the scalar pass refuses it."""
    rng = np.random.default_rng(990)
    p = _problem(rng, 4000, 1000, share=0.005, junk=False, graded=False, scores=False)
    rel = p.relevance
    j = {"plain": None, "beside a relevant item": None, "last": 3999}[where]
    if where == "plain":
        j = int(np.flatnonzero(~rel[1] & ~np.roll(rel[1], 8) & ~np.roll(rel[1], -8))[100])
    elif where == "beside a relevant item":
        j = min(int(np.flatnonzero(rel[1])[0]) + 1, 3998)
    p.distances[1, j] = value
    messages = []
    for mask in (c_backend.ALL_FEATURES, c_backend.ALL_FEATURES & ~AVX2):
        impl = c_backend.CImplementation(num_threads=1)
        try:
            c_backend.cpu_features(mask)
            with pytest.raises(ValueError) as err:
                impl.compute(p, Options(ties="stable"))
            messages.append(str(err.value))
        finally:
            c_backend.cpu_features(c_backend.ALL_FEATURES)
    assert messages[0] == messages[1]
    assert str(j) in messages[0]


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_avx2_pass_gives_the_same_bits_on_any_thread_count(c_backend, ties):
    """Per-thread sides[] tables: one thread and three give the same arrays."""
    rng = np.random.default_rng(1000 + TIES.index(ties))
    p = _problem(rng, 5000, 300, share=0.01, junk=True, graded=False, scores=True)
    p = Problem(
        n_queries=p.n_queries * 4,
        n_gallery=p.n_gallery,
        scores=np.tile(p.scores, (4, 1)),
        relevance=np.tile(p.relevance, (4, 1)),
        junk=np.tile(p.junk, (4, 1)),
    )
    o = Options(ties=ties)
    one = c_backend.CImplementation(num_threads=1).compute(p, o)
    three = c_backend.CImplementation(num_threads=3).compute(p, o)
    assert same_bits(one, three, ties) == []
