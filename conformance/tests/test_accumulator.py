"""``rc.Accumulator``: queries fed block by block give exactly one ``evaluate`` call's result.

Every comparison is bit for bit (float64 bytes, NaN included), of the means, the per-query
values, the counted mask and, for the reference, the exact ``Fraction`` values; every test
that computes runs for every registered implementation (skipped where it cannot run).
"""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.identical import assert_identical
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract import query_blocks
from retrieval_conformance.reference.contract.aggregation import NoQueryCountedWarning
from retrieval_conformance.reference.contract.conventions import EMPTY_POLICIES_WITH_A_MEAN, TIE_POLICIES

IMPLS = implementation_params()
TIES = TIE_POLICIES
GALLERY_KEYS = ("db_labels", "db_embeddings", "db_codes", "db_cams")


def random_blocks(rng: np.random.Generator, n: int) -> list:
    """Consecutive (start, stop) bounds covering 0..n, each 1 .. ceil(n/2) rows (so at least two)."""
    bounds, start = [], 0
    while start < n:
        stop = min(n, start + int(rng.integers(1, (n + 1) // 2 + 1)))
        bounds.append((start, stop))
        start = stop
    return bounds


def accumulate(queries: dict, bounds: list, **construction) -> rc.Accumulator:
    acc = rc.Accumulator(**construction)
    for start, stop in bounds:
        assert acc.update(**{key: value[start:stop] for key, value in queries.items()}) is None
        assert len(acc) == stop
    return acc


def both(gallery: dict, queries: dict, options: dict, bounds: list, implementation: str):
    """(accumulated result, one evaluate call's result) on the same queries."""
    acc = accumulate(queries, bounds, **gallery, **options, implementation=implementation)
    return acc.compute(), rc.evaluate(**gallery, **queries, **options, implementation=implementation)


# -- problems: few distinct distances and labels, so ties and empty queries are common -----
def tie_heavy_distances(rng, n_q=14, n_g=11):
    gallery = dict(db_labels=rng.integers(0, 3, n_g))
    queries = dict(
        distances=rng.integers(0, 4, (n_q, n_g)).astype(np.float64), query_labels=rng.integers(0, 4, n_q)
    )  # label 3 has no gallery item: empty queries
    return gallery, queries, {}


def reid_cameras(rng, n_q=12, n_g=15, protocol="reid"):
    ids = rng.integers(-1 if protocol == "reid-matlab" else 0, 4, n_g)
    gallery = dict(db_labels=ids, db_cams=rng.integers(0, 3, n_g))
    queries = dict(
        distances=rng.integers(0, 5, (n_q, n_g)).astype(np.float32),
        query_labels=rng.integers(0, 4, n_q),
        query_cams=rng.integers(0, 3, n_q),
    )
    return gallery, queries, dict(protocol=protocol)


def codes_multi_hot(rng, n_q=13, n_g=16):
    gallery = dict(db_codes=rng.choice([-1, 1], (n_g, 5)), db_labels=rng.integers(0, 2, (n_g, 3)))
    queries = dict(query_codes=rng.choice([-1, 1], (n_q, 5)), query_labels=rng.integers(0, 2, (n_q, 3)))
    return gallery, queries, dict(protocol="dcmh", k=int(rng.choice([3, 10, 40])), radius=2)


def scores_relevance_junk(rng, n_q=12, n_g=10):
    queries = dict(
        scores=rng.integers(0, 3, (n_q, n_g)).astype(np.float32),
        relevance=rng.random((n_q, n_g)) < 0.25,
        junk=rng.random((n_q, n_g)) < 0.2,
    )
    return {}, queries, dict(empty="skip", k=4)


def gldv2_scores(rng, n_q=10, n_g=12):
    gallery = dict(db_labels=rng.integers(0, 3, n_g))
    queries = dict(scores=rng.integers(0, 3, (n_q, n_g)).astype(np.float64), query_labels=rng.integers(0, 4, n_q))
    return gallery, queries, dict(protocol="gldv2")  # the preset's k=100, beyond the gallery


def hashnet_codes(rng, n_q=12, n_g=14):
    gallery = dict(db_codes=rng.integers(0, 2, (n_g, 4)), db_labels=rng.integers(0, 3, n_g))
    queries = dict(query_codes=rng.integers(0, 2, (n_q, 4)), query_labels=rng.integers(0, 4, n_q))
    return gallery, queries, dict(protocol="hashnet", k=5)


def graded_rank_options(rng, n_q=10, n_g=15):
    """Graded relevance under every non-default nDCG/recall option (the accumulator once
    evaluated its blocks with the preset's gain, discount and recall)."""
    queries = dict(
        scores=rng.integers(0, 4, (n_q, n_g)).astype(np.float64),
        relevance=rng.integers(0, 4, (n_q, n_g)) * (rng.random((n_q, n_g)) < 0.4),
    )
    return {}, queries, dict(k=5, gain="exponential", discount="trec_eval_9.0a3", recall="hit")


CASES = {
    "graded-exponential-trec-hit": graded_rank_options,
    "reid-cameras": reid_cameras,
    "reid-matlab-minus-one": lambda rng: reid_cameras(rng, protocol="reid-matlab"),
    "dcmh-codes-multi-hot-radius": codes_multi_hot,
    "scores-relevance-junk": scores_relevance_junk,
    "gldv2-default-k": gldv2_scores,
    "hashnet-skip-no-hit": hashnet_codes,
}


# -- identical to one call ------------------------------------------------------------------
@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("empty", EMPTY_POLICIES_WITH_A_MEAN)
def test_random_blocks_of_tied_distances_match_one_call(name, ties, empty):
    require_implementation(name)
    rng = np.random.default_rng(TIES.index(ties) * 7 + len(empty))
    gallery, queries, _ = tie_heavy_distances(rng)
    k = None if ties == "grouped" else [None, 1, 3, 100][int(rng.integers(4))]
    options = dict(ties=ties, empty=empty, k=k, max_rank=int(rng.choice([1, 5, 30])))
    got, want = both(gallery, queries, options, random_blocks(rng, 14), name)
    assert_identical(got, want)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_protocols_and_inputs_match_one_call(name, case, seed):
    require_implementation(name)
    rng = np.random.default_rng(seed)
    gallery, queries, options = CASES[case](rng)
    options = dict(options, ties=TIES[(seed + len(case)) % len(TIES)])
    if options["ties"] == "grouped":
        options["k"] = None  # a cut-off inside a tie group is an error under "grouped"
    n_q = len(next(iter(queries.values())))
    got, want = both(gallery, queries, options, random_blocks(rng, n_q), name)
    assert_identical(got, want)


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_embeddings_against_a_fixed_gallery(name, metric):
    require_implementation(name)
    rng = np.random.default_rng(5)
    prototypes = rng.normal(size=(4, 6)).astype(np.float32)  # repeated rows: tied distances
    gallery = dict(db_embeddings=prototypes[rng.integers(0, 4, 20)], db_labels=rng.integers(0, 3, 20))
    queries = dict(query_embeddings=prototypes[rng.integers(0, 4, 15)], query_labels=rng.integers(0, 3, 15))
    options = dict(metric=metric, k=5, ties="expected")
    got, want = both(gallery, queries, options, random_blocks(rng, 15), name)
    assert_identical(got, want)


@pytest.mark.parametrize("name", IMPLS)
def test_one_query_per_block(name):
    require_implementation(name)
    gallery, queries, options = reid_cameras(np.random.default_rng(8))
    got, want = both(gallery, queries, options, [(q, q + 1) for q in range(12)], name)
    assert_identical(got, want)


def test_auto_resolves_once_to_what_evaluate_picks():
    gallery, queries, options = tie_heavy_distances(np.random.default_rng(9))
    acc = accumulate(queries, [(0, 6), (6, 14)], **gallery, **options)
    want = rc.evaluate(**gallery, **queries, **options)
    assert acc.implementation == want.implementation
    assert_identical(acc.compute(), want)


def test_reference_keeps_exact_fractions():
    gallery, queries, options = codes_multi_hot(np.random.default_rng(10))
    got, want = both(gallery, queries, options, [(0, 4), (4, 5), (5, 13)], "reference")
    assert got.exact is not None and got.exact.map == want.exact.map
    assert got.map == float(got.exact.map)
    assert len(got.per_query.exact["ap"]) == 13


@pytest.mark.parametrize("name", IMPLS)
def test_torch_tensors_as_gallery_and_blocks(name):
    torch = pytest.importorskip("torch")
    require_implementation(name)
    rng = np.random.default_rng(11)
    gallery, queries, options = reid_cameras(rng)
    bounds = random_blocks(rng, 12)
    acc = rc.Accumulator(
        **{key: torch.from_numpy(value) for key, value in gallery.items()}, **options, implementation=name
    )
    for start, stop in bounds:
        acc.update(**{key: torch.from_numpy(np.ascontiguousarray(value[start:stop])) for key, value in queries.items()})
    assert_identical(acc.compute(), rc.evaluate(**gallery, **queries, **options, implementation=name))


# -- the empty-query policy acts at compute(), on every query -------------------------------
@pytest.mark.parametrize("name", IMPLS)
def test_empty_error_raises_at_compute_naming_the_overall_index(name):
    require_implementation(name)
    gallery = dict(db_labels=[0, 1, 1, 2])
    queries = dict(distances=np.arange(24, dtype=float).reshape(6, 4) % 3, query_labels=[0, 1, 2, 0, 7, 7])
    acc = accumulate(queries, [(0, 3), (3, 6)], **gallery, empty="error", implementation=name)
    with pytest.raises(ValueError) as want:
        rc.evaluate(**gallery, **queries, empty="error", implementation=name)
    with pytest.raises(ValueError) as got:
        acc.compute()
    assert str(got.value) == str(want.value)
    assert "first at index 4" in str(got.value)


@pytest.mark.parametrize("name", IMPLS)
def test_no_query_counted_warns_at_compute_only(name):
    require_implementation(name)
    gallery = dict(db_labels=[0, 1, 1])
    queries = dict(distances=np.zeros((4, 3)), query_labels=[5, 6, 5, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no block warns on its own
        acc = accumulate(queries, [(0, 1), (1, 4)], **gallery, empty="skip", implementation=name)
    with pytest.warns(NoQueryCountedWarning) as got:
        res = acc.compute()
    assert got[0].filename == __file__  # points at the caller of compute(), as evaluate's does at its caller
    with pytest.warns(NoQueryCountedWarning):
        want = rc.evaluate(**gallery, **queries, empty="skip", implementation=name)
    assert_identical(res, want)


# -- state ------------------------------------------------------------------------------------
def test_reset_forgets_queries_and_a_learned_gallery_size():
    rng = np.random.default_rng(12)
    _, first, options = scores_relevance_junk(rng, n_g=10)
    _, second, _ = scores_relevance_junk(rng, n_q=7, n_g=6)
    acc = accumulate(first, [(0, 5), (5, 12)], **options, implementation="reference")
    assert (len(acc), acc.n_gallery) == (12, 10)
    acc.reset()
    assert (len(acc), acc.n_gallery) == (0, None)
    with pytest.raises(ValueError, match="no queries yet"):
        acc.compute()
    for start, stop in [(0, 2), (2, 7)]:
        acc.update(**{key: value[start:stop] for key, value in second.items()})
    assert_identical(acc.compute(), rc.evaluate(**second, **options, implementation="reference"))


def test_compute_twice_and_update_after_compute():
    gallery, queries, options = tie_heavy_distances(np.random.default_rng(13))
    acc = accumulate(queries, [(0, 6)], **gallery, **options, implementation="reference")
    assert_identical(acc.compute(), acc.compute())
    acc.update(**{key: value[6:] for key, value in queries.items()})
    assert_identical(acc.compute(), rc.evaluate(**gallery, **queries, **options, implementation="reference"))


@pytest.mark.parametrize("name", IMPLS)
def test_block_inputs_are_not_kept(name):
    """Only per-query values stay: a block's arrays are freed once update() returns."""
    require_implementation(name)
    acc = rc.Accumulator(db_embeddings=np.eye(4), db_labels=[0, 1, 2, 3], implementation=name)
    queries = np.eye(4)[[1, 2]]
    alive = weakref.ref(queries)
    acc.update(query_embeddings=queries, query_labels=[1, 0])
    del queries
    gc.collect()
    assert alive() is None
    assert len(acc) == 2 and acc.n_gallery == 4


def test_the_cmc_size_limit_counts_every_query_so_far(monkeypatch):
    """evaluate refuses max_rank x queries values beyond a small gallery; so does the sum of blocks."""
    monkeypatch.setattr(query_blocks, "CMC_TAIL_LIMIT", 100)
    gallery = dict(db_labels=[0, 1, 2])
    queries = dict(distances=np.zeros((12, 3)), query_labels=np.zeros(12, int))
    with pytest.raises(ValueError, match="max_rank: 10 CMC values for each of 12 queries"):
        rc.evaluate(**gallery, **queries, max_rank=10)
    acc = rc.Accumulator(**gallery, max_rank=10)
    acc.update(distances=queries["distances"][:5], query_labels=queries["query_labels"][:5])
    acc.update(distances=queries["distances"][5:10], query_labels=queries["query_labels"][5:10])
    with pytest.raises(ValueError, match=r"max_rank: 10 CMC values for each of 12 queries.*starting at query 10"):
        acc.update(distances=queries["distances"][10:], query_labels=queries["query_labels"][10:])
    assert len(acc) == 10


def test_repr_says_what_is_accumulated():
    acc = rc.Accumulator(db_labels=[0, 1], implementation="reference")
    acc.update(distances=[[0.0, 1.0]], query_labels=[1])
    assert repr(acc) == "Accumulator(protocol='hashing', implementation='reference', queries=1, gallery=2)"
