"""Silently wrong numbers found by fuzzing, one class per section, each with its minimal reproducer.

1. k beyond int64 wrapped (P@k of 0.18, -1.0 or 2.5e-19 where the reference has R/k).
2. Float ids from 2**53 and uint64 ids beyond int64 merged (AP 1.0, or id -1 read as junk).
3. Tie groups of more than ~1,000 items gave NaN in the CMC under ties="expected".
4. Finite embeddings whose distances overflow gave inf/NaN (or, for cosine, 1).
5. Per-query values changed with the block size, means with the order of the queries.
6. Inputs whose errors named no argument (ragged lists, generators, scalars, exotic dtypes and
   tensors, unhashable option values), found by the fuzz campaign (``conformance/fuzz``).

Every test runs for every registered implementation (skipped where it cannot run).
"""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from math import comb

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract import registry
from retrieval_conformance.reference.contract.aggregation import float_mean
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.embeddings import embedding_distances
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.precision import LowPrecisionWarning
from retrieval_conformance.reference.contract.problem import Options
from retrieval_conformance.reference.contract.validation import MAX_RANK_LIMIT

IMPLS = implementation_params()
TIES = TIE_POLICIES
TOL = 1e-12


# -- 1. cut-offs beyond int64 -------------------------------------------------------------
# two tie groups {0, 1} and {2, 3}, one relevant item in each
TIED = dict(distances=np.array([[0.1, 0.1, 0.3, 0.3]]), query_labels=[1], db_labels=[1, 0, 1, 0])
HUGE_KS = [2**63 - 1, 2**63, np.uint64(2**64 - 1), 10**30]


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("k", HUGE_KS, ids=["2**63-1", "2**63", "uint64(2**64-1)", "10**30"])
@pytest.mark.parametrize("ties", ["stable", "expected", "grouped"])
def test_k_beyond_int64_is_clipped_not_wrapped(name, k, ties):
    """§6 k at or beyond the gallery: full AP, R@k = 1 and P@k = R/k (it still divides by k)."""
    require_implementation(name)
    res = rc.evaluate(**TIED, k=k, ties=ties, implementation=name)
    full = rc.evaluate(**TIED, k=None, ties=ties, implementation="reference")
    assert res.options.k == int(k)  # the caller's k, as given
    assert res.map == full.map
    assert res.recall_at_k == 1.0
    assert res.precision_at_k == float(Fraction(2, int(k)))
    assert res.per_query.precision_at_k[0] > 0
    assert np.array_equal(res.cmc, full.cmc)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("k", HUGE_KS + [5], ids=["2**63-1", "2**63", "uint64(2**64-1)", "10**30", "5"])
def test_direct_compute_with_huge_k_matches_reference(name, k):
    """Implementations called directly (not through evaluate) clip too, and keep max_rank columns."""
    require_implementation(name)
    problem = build_problem(**TIED)
    options = Options(ties="expected", k=int(k), max_rank=60)
    ref = registry.get("reference").compute(problem, options)
    got = registry.get(name).compute(problem, options)
    assert got.cmc.shape == (1, 60)
    assert compare_per_query(ref, got, f"{name} k={k}: ") == []


@pytest.mark.parametrize("name", IMPLS)
def test_max_rank_beyond_gallery_is_flat_and_cheap(name):
    """§7 cmc_length=max_rank: max_rank values, flat beyond the gallery, without max_rank per query."""
    require_implementation(name)
    res = rc.evaluate(**TIED, max_rank=MAX_RANK_LIMIT, ties="expected", implementation=name)
    assert res.cmc.shape == (MAX_RANK_LIMIT,) and res.per_query.cmc.shape == (1, MAX_RANK_LIMIT)
    assert res.cmc[0] == 0.5 and np.all(res.cmc[1:] == 1.0)
    if res.exact is not None:
        assert len(res.exact.cmc) == MAX_RANK_LIMIT and res.exact.cmc[-1] == 1
    many = dict(TIED, distances=np.tile(TIED["distances"], (20, 1)), query_labels=[1] * 20)
    with pytest.raises(
        ValueError,
        match=r"max_rank: 10000000 CMC values for each of 20 queries would take 1\.5 GiB, "
        r"but the gallery has only 4 items.*pass max_rank <= 4",
    ):
        rc.evaluate(**many, max_rank=MAX_RANK_LIMIT, implementation=name)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("max_rank", [MAX_RANK_LIMIT + 1, 10**9, 2**63])
def test_absurd_max_rank_is_a_clear_error(name, max_rank):
    require_implementation(name)
    with pytest.raises(
        ValueError,
        match=rf"max_rank: expected at most {MAX_RANK_LIMIT}, got {max_rank}.*"
        r"flat beyond the gallery.*pass max_rank <= the gallery size",
    ):
        rc.evaluate(**TIED, max_rank=max_rank, implementation=name)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("arg", ["k", "max_rank"])
@pytest.mark.parametrize(
    "value, shown",
    [(2.5, "2.5 (float)"), (2.0, "2.0 (float)"), (1e20, "1e+20 (float)"), (True, "True (bool)"), ("5", "'5' (str)")],
)
def test_non_integer_cutoffs_are_rejected(name, arg, value, shown):
    require_implementation(name)
    pattern = rf"{arg}: expected a positive integer, got {re.escape(shown)}; pass .*a Python int"
    with pytest.raises(TypeError, match=pattern):
        rc.evaluate(**TIED, implementation=name, **{arg: value})


# -- 2. ids compared exactly, or rejected --------------------------------------------------
TWO = dict(distances=np.array([[0.1, 0.2], [0.2, 0.1]]))


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize(
    "ids, shown",
    [([1e20, 2e20], "1e+20"), ([2.0**53, 5.0], "9007199254740992.0"), (np.array([1, 3e7], np.float32), "30000000.0")],
)
def test_float_ids_beyond_exact_integers_are_rejected(name, ids, shown):
    """1e20 and 2e20 used to become one int64 (AP 1.0 for both queries)."""
    require_implementation(name)
    pattern = (
        rf"query_labels: float id {re.escape(shown)} at \[\d\] is at or beyond 2\*\*(53|24).*"
        r"np\.unique\(np\.concatenate\(\[query_labels, db_labels\]\)"
    )
    with pytest.raises(ValueError, match=pattern):
        rc.evaluate(**TWO, query_labels=ids, db_labels=[1, 2], implementation=name)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("protocol", ["hashing", "reid-matlab"])
def test_uint64_ids_beyond_int64_are_rejected(name, protocol):
    """2**64 - 1 used to become -1, which reid-matlab removes as junk."""
    require_implementation(name)
    ids = np.array([2**64 - 1, 5], dtype=np.uint64)
    cams = dict(query_cams=[0, 0], db_cams=[1, 1]) if protocol == "reid-matlab" else {}
    with pytest.raises(ValueError, match=r"query_labels: id 18446744073709551615 at \[0\] does not fit in int64"):
        rc.evaluate(**TWO, query_labels=ids, db_labels=ids, protocol=protocol, implementation=name, **cams)
    with pytest.raises(ValueError, match=r"query_cams: id 18446744073709551615 at \[0\] does not fit in int64"):
        rc.evaluate(
            **TWO,
            query_labels=[1, 5],
            db_labels=[1, 5],
            query_cams=ids,
            db_cams=[1, 1],
            protocol="reid",
            implementation=name,
        )


@pytest.mark.parametrize("name", IMPLS)
def test_large_ids_that_fit_are_compared_exactly(name):
    """Neighbouring ids stay different: uint64 up to 2**63 - 1, floats below 2**53."""
    require_implementation(name)
    reid = dict(**TWO, protocol="reid-matlab", query_cams=[0, 0], db_cams=[1, 1], implementation=name)
    want = rc.evaluate(query_labels=[1, 2], db_labels=[2, 1], **reid).ap
    for top, dtype in ((2**63 - 1, np.uint64), (2**63 - 1, np.int64), (2**53 - 1, np.float64)):
        ids = np.array([top, top - 1], dtype=dtype)
        got = rc.evaluate(query_labels=ids, db_labels=ids[::-1].copy(), **reid)
        assert np.array_equal(got.ap, want), dtype


# -- 3. huge tie groups under ties="expected" ------------------------------------------------
def _closed_form_cmc(n: int, m: int, j: int) -> Fraction:
    """All n items tied, m relevant: CMC@j = 1 - C(n-m, j) / C(n, j)."""
    return 1 - Fraction(comb(n - m, j), comb(n, j))


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("n", [10**4, 10**5])
@pytest.mark.parametrize("share", ["one", "half", "all_but_one"])
def test_huge_tie_group_cmc_is_finite_and_exact(name, n, share):
    """A group of 1,200 items with 1,199 relevant gave NaN from CMC@1173 on (numpy, torch)."""
    require_implementation(name)
    m = {"one": 1, "half": n // 2, "all_but_one": n - 1}[share]
    if name == "reference" and (n > 10**4 or share == "half"):
        # binomials of thousands of digits per position: exact, but minutes
        pytest.skip("the exact reference is too slow for this group (it is exact by construction)")
    max_rank = 64 if name == "reference" else n  # the reference's exact CMC costs a binomial per rank
    rel = np.zeros((1, n), dtype=bool)
    rel[0, :m] = True
    kwargs = dict(distances=np.zeros((1, n), np.float32), relevance=rel, ties="expected", max_rank=max_rank)
    res = rc.evaluate(**kwargs, implementation=name)
    pq = res.per_query
    for values in (pq.cmc.ravel(), pq.ap, pq.inp, pq.r_precision):
        assert np.isfinite(values).all()
    assert np.all(np.diff(pq.cmc[0]) >= 0) and 0 <= pq.cmc[0, 0] and pq.cmc[0, -1] <= 1
    for j in sorted({1, 2, n - m, n - m + 1, n // 2, n - 1, n}):
        if 1 <= j <= max_rank:
            want = _closed_form_cmc(n, m, j)
            got = pq.cmc[0, j - 1]
            assert abs(got - float(want)) <= TOL, (j, got, float(want))
            if Fraction(float(want)) == want:
                assert got == float(want), (j, got)
    if name != "c" and registry.unavailable_reason("c") is None:
        c = rc.evaluate(**kwargs, implementation="c").per_query
        for field in ("cmc", "ap", "inp", "r_precision"):
            assert np.max(np.abs(getattr(pq, field) - getattr(c, field))) <= TOL, field


# -- 4. distances that overflow -----------------------------------------------------------------
@pytest.mark.parametrize("name", IMPLS)
def test_overflowing_embedding_distances_raise(name):
    """A distance beyond float32's range gave inf; the squares of entries of 1e20 (inf in
    float32) gave inf/NaN, and cosine a silent 1.0: now exact slices, a float32 distance fits."""
    require_implementation(name)
    q = np.array([[1, 0], [3e38, 3e38], [0, 1]], dtype=np.float32)  # |(3e38, 3e38 - 1)| > 3.4e38
    d = np.array([[1, 0], [0, 1], [1e-5, 1]], dtype=np.float32)
    ids = dict(query_labels=[1, 2, 3], db_labels=[1, 2, 3])
    with pytest.raises(
        ValueError,
        match=r"query_embeddings, db_embeddings: the euclidean distances overflow "
        r"float32 for 1 query \(query row 1; .*normalise the embeddings.*float64",
    ):
        rc.evaluate(query_embeddings=q, db_embeddings=d, implementation=name, **ids)
    with pytest.raises(ValueError, match=r"\(query row 1; .*\(in the query block starting at row 1\)"):
        rc.evaluate(query_embeddings=q, db_embeddings=d, block_size=1, implementation=name, **ids)
    res = rc.evaluate(
        query_embeddings=q.astype(np.float64), db_embeddings=d, implementation=name, **ids
    )  # float64, as the message suggests
    assert np.isfinite(res.map)
    with pytest.raises(ValueError, match=r"the euclidean distances overflow float64 for 1 query \(query row 1;"):
        rc.evaluate(
            query_embeddings=np.array([[1, 0], [1e200, 1e200], [0, 1]]), db_embeddings=d, implementation=name, **ids
        )


@pytest.mark.parametrize("name", IMPLS)
def test_large_float32_embeddings_give_their_distances(name):
    """Entries of 1e20 square beyond float32: the distances (~1e20) and cosines are still right."""
    require_implementation(name)
    q = np.array([[1, 0], [1e20, 0], [0, 1]], dtype=np.float32)
    d = np.array([[1, 0], [0, 1], [1e-5, 1]], dtype=np.float32)
    for metric in ("euclidean", "cosine"):
        got = embedding_distances(q, d, metric)
        want = embedding_distances(q.astype(np.float64), d.astype(np.float64), metric)
        assert np.allclose(got, want, rtol=1e-5, atol=0), metric  # 1 - cos of ~5e-11 cancels most bits
        res = rc.evaluate(
            query_embeddings=q,
            db_embeddings=d,
            metric=metric,
            query_labels=[1, 2, 3],
            db_labels=[1, 2, 3],
            implementation=name,
        )
        assert np.isfinite(res.map) and np.isfinite(res.per_query.ap).all()


# -- 5. determinism: block size and query order ------------------------------------------------
@pytest.mark.parametrize("name", IMPLS)
def test_per_query_values_do_not_depend_on_block_size(name):
    """Two all-tied queries: INP differed in the last bit between one block and block_size=1."""
    require_implementation(name)
    rel = np.zeros((2, 355), dtype=bool)
    rel[0, :226] = True
    rel[1, :176] = True
    kwargs = dict(distances=np.zeros((2, 355)), relevance=rel, ties="expected", implementation=name)
    whole = rc.evaluate(**kwargs).per_query
    single = rc.evaluate(**kwargs, block_size=1).per_query
    for field in ("ap", "inp", "cmc", "r_precision", "precision_at_k", "recall_at_k", "hits_at_k"):
        assert np.array_equal(getattr(whole, field), getattr(single, field)), field


@pytest.mark.parametrize("name", IMPLS)
def test_mean_does_not_depend_on_query_order(name):
    """One relevant item at ranks 1, 2 and 6: np.mean gave 0.5555555555555555 or ...556."""
    require_implementation(name)
    rel = np.zeros((3, 6), dtype=bool)
    rel[[0, 1, 2], [0, 1, 5]] = True
    dist = np.tile(np.arange(6.0), (3, 1))
    want = float(Fraction(5, 9))  # (1 + 1/2 + 1/6) / 3, correctly rounded
    for perm in itertools.permutations(range(3)):
        res = rc.evaluate(distances=dist, relevance=rel[list(perm)], implementation=name)
        assert res.map == want and res.minp == want, perm


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("ties", TIES)
def test_every_mean_is_bit_identical_under_permutation_and_blocks(name, ties):
    require_implementation(name)
    rng = np.random.default_rng(TIES.index(ties))
    dist = rng.integers(0, 4, (23, 31)).astype(np.float64)
    rel = rng.random((23, 31)) < 0.3
    kwargs = dict(
        ties=ties,
        k=None if ties == "grouped" else 9,
        max_rank=40,
        radius=1.0,
        empty="zero",
        ap_rule="trapezoid",
        implementation=name,
    )
    base = rc.evaluate(distances=dist, relevance=rel, **kwargs)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(23)
        for other in (
            rc.evaluate(distances=dist[perm], relevance=rel[perm], **kwargs),
            rc.evaluate(distances=dist[perm], relevance=rel[perm], block_size=seed + 1, **kwargs),
        ):
            for field in (
                "map",
                "minp",
                "r_precision",
                "precision_at_k",
                "recall_at_k",
                "precision_at_radius",
                "recall_at_radius",
            ):
                assert getattr(other, field) == getattr(base, field), (field, seed)
            assert np.array_equal(other.cmc, base.cmc), seed


def test_float_mean_is_the_correctly_rounded_exact_mean():
    values = np.array([0.1, 0.2, 0.3, 1 / 3, 1e-20, 0.7])
    want = float(sum(map(Fraction, values.tolist()), Fraction(0)) / values.size)
    for perm in itertools.permutations(range(values.size)):
        assert float_mean(values[list(perm)]) == want
    assert float_mean(np.array([1.0, 0.0, 1.0])) == float(Fraction(2, 3))
    assert np.isnan(float_mean(np.array([1.0, np.nan])))


# -- 6. every bad input named, before any implementation runs ------------------------------
PLAIN = dict(distances=[[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], query_labels=[1, 2], db_labels=[1, 2, 1])


def _torch():
    return pytest.importorskip("torch")


BAD_INPUTS = [
    ("distances", lambda: [[0.0, 1.0, 2.0], [2.0, 1.0]], "every row must have the same length"),
    ("distances", lambda: (row for row in [[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), "got a generator"),
    ("distances", lambda: np.float64(1.0), "got the scalar 1.0"),
    ("db_labels", lambda: "abc", "got a str"),
    ("db_labels", lambda: {1, 2, 3}, "got a set"),
    ("distances", lambda: np.zeros((2, 3), dtype=complex), "dtype=complex128"),
    ("distances", lambda: np.zeros((2, 3), dtype=[("a", "f8")]), "expected real numbers"),
    ("db_labels", lambda: np.array([Fraction(1), Fraction(2), Fraction(1)], dtype=object), "dtype=object"),
    ("distances", lambda: _torch().zeros(2, 3).to_sparse(), "to_dense()"),
    ("distances", lambda: _torch().zeros(2, 3, device="meta"), "'meta' device"),
    ("distances", lambda: _torch().zeros(2, 3, dtype=_torch().complex64), "expected real numbers"),
]


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("arg, make, says", BAD_INPUTS, ids=[f"{a}-{s[:20]}" for a, _, s in BAD_INPUTS])
def test_bad_array_inputs_are_named(name, arg, make, says):
    require_implementation(name)
    with pytest.raises(TypeError) as info:
        rc.evaluate(**dict(PLAIN, **{arg: make()}), implementation=name)
    message = str(info.value)
    assert message.startswith(f"{arg}:") and says in message, message


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize(
    "option, value",
    [("protocol", ["reid"]), ("ties", ["stable"]), ("metric", "manhattan"), ("metric", {1}), ("empty", 5)],
)
def test_bad_option_values_are_named(name, option, value):
    require_implementation(name)
    with pytest.raises((TypeError, ValueError), match=f"^{option}: "):
        rc.evaluate(**PLAIN, **{option: value}, implementation=name)


def test_error_messages_stay_short_whatever_was_passed():
    with pytest.raises(TypeError) as info:
        rc.evaluate(**PLAIN, radius=list(range(10**6)))
    assert len(str(info.value)) < 300


def test_a_million_cutoffs_are_refused_at_once():
    with pytest.raises(ValueError, match=r"^k: at most 100 cut-offs in one call, got 1000000"):
        rc.evaluate(**PLAIN, k=list(range(1, 10**6 + 1)))


@pytest.mark.parametrize("name", IMPLS)
def test_bfloat16_tensors_are_read_exactly(name):
    """bfloat16 values are float32 values: the result equals the float32 tensor's (and the
    low precision is said: 8 significant bits tie what float32 tells apart)."""
    require_implementation(name)
    torch = _torch()
    values = torch.tensor([[0.5, 1.0, 1.0, 3.0], [2.0, 0.25, 2.0, 0.5]])
    kw = dict(query_labels=[1, 2], db_labels=[1, 2, 1, 2], ties="expected")
    want = rc.evaluate(distances=values, **kw, implementation=name)
    with pytest.warns(LowPrecisionWarning, match=r"distances: bfloat16 .*\(4 values tied with another of their row"):
        got = rc.evaluate(distances=values.to(torch.bfloat16), **kw, implementation=name)
    assert got.map == want.map and np.array_equal(got.cmc, want.cmc)


@pytest.mark.parametrize("name", IMPLS)
def test_one_row_with_a_negative_stride(name):
    """numpy calls a one-row view with a negative row stride contiguous; torch refuses such memory."""
    require_implementation(name)
    rows = np.ascontiguousarray(np.array([[0.0, 1.0, 2.0]])[::-1])
    view = np.flip(np.ascontiguousarray(np.flip(rows, 0)), 0)
    assert view.strides[0] < 0 or view.shape[0] == 1
    got = rc.evaluate(distances=view, relevance=[[0, 1, 1]], implementation=name)
    assert got.map == rc.evaluate(distances=rows, relevance=[[0, 1, 1]]).map
