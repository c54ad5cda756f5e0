"""float32 embedding distances from one float64 product are the exact path's bits.

``reference/contract/embedding_rounding.py`` makes each float32 distance from one float64 BLAS
product and a bound on its error, and redoes from the exact slices every pair whose interval
does not round to one float32.  The matrix must be the exact path's (the slices alone) bit for
bit, so every implementation, tie policy, cut-off and batch gives the same result as from it:
random, near-tied, duplicated, integer, last-bit and badly scaled embeddings, both metrics.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.identical import assert_identical
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.reference.contract import embedding_dots
from retrieval_conformance.reference.contract import embedding_rounding as rounding
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.embeddings import embedding_distances

METRICS = ("euclidean", "cosine")


@contextlib.contextmanager
def exact_path_only():
    """The distances from the exact slices alone, as before the certified product."""
    saved = rounding.applies
    rounding.applies = lambda *args: False
    try:
        yield
    finally:
        rounding.applies = saved


def exact_distances(q, d, metric):
    with exact_path_only():
        return embedding_distances(q, d, metric)


def inputs(kind: str, seed: int = 0, n_q: int = 40, n_g: int = 700, dim: int = 48):
    """float32 (queries, gallery) of one kind."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_q, dim)).astype(np.float32)
    d = rng.standard_normal((n_g, dim)).astype(np.float32)
    if kind == "normalised":
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
    elif kind == "duplicates":  # copies of queries and of each other: distances 0 and exact ties
        d[: n_g // 2] = q[rng.integers(0, n_q, n_g // 2)]
        d[n_g // 2 :] = d[rng.integers(0, n_g // 2, n_g - n_g // 2)]
    elif kind == "last_bit":  # the queries with one entry moved by one float32 step
        d = q[rng.integers(0, n_q, n_g)].copy()
        column = rng.integers(0, dim, n_g)
        d[np.arange(n_g), column] = np.nextafter(d[np.arange(n_g), column], np.float32(np.inf))
    elif kind == "integers":  # few small integers: many distances equal exactly
        q = rng.integers(-2, 3, (n_q, dim)).astype(np.float32)
        d = rng.integers(-2, 3, (n_g, dim)).astype(np.float32)
        q[:, 0] = d[:n_q, 0] = 3  # no zero row (cosine refuses one)
    elif kind == "scales":  # rows from 2**-40 to 2**40, entries spread over 2**-30 below their row's largest
        q *= np.exp2(rng.integers(-40, 41, (n_q, 1))).astype(np.float32)
        d *= np.exp2(rng.integers(-40, 41, (n_g, 1))).astype(np.float32)
        d *= np.exp2(-rng.integers(0, 30, d.shape)).astype(np.float32)
    elif kind == "near":  # a few gallery items equal to a query, the rest random: pairs redone alone
        d[rng.integers(0, n_g, 5)] = q[rng.integers(0, n_q, 5)]
    return q, d


class Counted:
    """Counts the calls of a module function while the block lasts."""

    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        real = getattr(module, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


KINDS = ("gaussian", "normalised", "duplicates", "last_bit", "integers", "scales", "near")


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", KINDS)
def test_the_matrix_is_the_exact_paths_bits(kind, metric, monkeypatch):
    q, d = inputs(kind)
    certified = Counted(monkeypatch, rounding, "certified_block")
    got = embedding_distances(q, d, metric)
    assert certified.calls > 0  # the product was taken
    want = exact_distances(q, d, metric)
    assert got.dtype == want.dtype == np.float32
    assert got.tobytes() == want.tobytes(), f"{int((got != want).sum())} distances differ"


@pytest.mark.parametrize("metric", METRICS)
def test_the_same_bits_for_any_rows_tiles_and_chunks(metric, monkeypatch):
    """Other tiles (a product of another shape, other uncertain pairs), other chunks of items,
    query rows alone: the same bits."""
    q, d = inputs("normalised", seed=3, n_q=30, n_g=900)
    whole = embedding_distances(q, d, metric)
    monkeypatch.setattr(rounding, "TILE_VALUES", 700)
    monkeypatch.setattr(rounding, "TILE_ITEMS", 37)
    monkeypatch.setattr(embedding_dots, "CHUNK_VALUES", 5000)
    rows = np.vstack([embedding_distances(q[i : i + 1], d, metric) for i in range(q.shape[0])])
    assert rows.tobytes() == whole.tobytes()


def test_uncertain_pairs_are_redone_alone_and_tie_heavy_rows_whole(monkeypatch):
    """A few items equal to a query: those pairs alone; a gallery of duplicates: the whole rows
    from the exact slices (the fallback)."""
    pairs = Counted(monkeypatch, rounding, "pair_dots")
    rows = Counted(monkeypatch, rounding, "exact_block")
    q, d = inputs("near", seed=4)
    embedding_distances(q, d)
    assert (pairs.calls, rows.calls) == (1, 0)
    q, d = inputs("duplicates", seed=4)
    embedding_distances(q, d)
    assert rows.calls >= 1


def test_float64_and_mixed_inputs_keep_the_exact_path(monkeypatch):
    certified = Counted(monkeypatch, rounding, "certified_block")
    q, d = inputs("gaussian")
    assert embedding_distances(q.astype(np.float64), d).dtype == np.float64
    assert embedding_distances(q, d.astype(np.float64), "cosine").dtype == np.float64
    assert certified.calls == 0


def test_the_bound_holds_with_room_to_spare():
    """Each certified value is the exact one; the bound of a normalised pair is far below a float32
    step (so few pairs are redone) yet far above the product's real error."""
    q, d = inputs("normalised", seed=5, n_q=20, n_g=400, dim=256)
    queries = embedding_dots.slice_rows(q, 2, 22)
    items = embedding_dots.slice_rows(d, 2, 22)
    side = rounding.prepared(queries, "euclidean", query=True)
    wide, norms, tails = rounding.prepared(items, "euclidean", query=False)
    eta, floor = rounding._eta("euclidean", 256, side[1:], (norms.max(), tails.max()))
    approx = np.sqrt(np.maximum(side[0] @ wide.T, 0))
    exact = rounding.combine(
        "euclidean",
        embedding_dots.cross_dots(queries, items),
        queries.exponent[:, None],
        queries.norms[:, None],
        items.exponent,
        items.norms,
    )
    above = approx >= floor[:, None]
    assert (np.abs(approx - exact)[above] <= eta[:, None].repeat(400, 1)[above]).all()
    assert eta.max() < 1e-9  # a float32 step near 1 is 6e-8


def _problem(seed: int = 6):
    q, d = inputs("last_bit", seed=seed, n_q=24, n_g=300, dim=16)
    rng = np.random.default_rng(seed)
    return q, d, rng.integers(0, 4, 24), rng.integers(0, 4, 300), rng.integers(0, 3, 24), rng.integers(0, 3, 300)


@pytest.mark.parametrize("name", ["numpy", "c"])
@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_results_are_identical_for_every_tie_policy(name, ties):
    require_implementation(name)
    q, d, ql, dl, qc, dc = _problem()
    for metric in METRICS:
        dist = exact_distances(q, d, metric)
        for k in (None, 3):
            common = dict(query_labels=ql, db_labels=dl, query_cams=qc, db_cams=dc, protocol="reid", ties=ties, k=k)
            try:
                want = rc.evaluate(distances=dist, implementation=name, **common)
            except ValueError as exc:  # a cut-off inside a tie group under 'grouped': the same error
                with pytest.raises(ValueError, match="inside a tie group") as raised:
                    rc.evaluate(query_embeddings=q, db_embeddings=d, metric=metric, implementation=name, **common)
                assert str(raised.value) == str(exc)
                continue
            got = rc.evaluate(query_embeddings=q, db_embeddings=d, metric=metric, implementation=name, **common)
            assert_identical(got, want)


@pytest.mark.parametrize("name", ["numpy", "c"])
def test_results_are_identical_with_labels_relevance_grades_and_blocks(name):
    require_implementation(name)
    q, d, ql, dl, _, _ = _problem(7)
    rng = np.random.default_rng(7)
    grades = rng.integers(0, 4, (24, 300)) * (rng.random((24, 300)) < 0.2)
    multi = rng.random((300, 5)) < 0.3
    dist = exact_distances(q, d, "euclidean")
    for relevance in (
        dict(query_labels=ql, db_labels=dl),
        dict(query_labels=rng.random((24, 5)) < 0.3, db_labels=multi),
        dict(relevance=grades),
        dict(relevance=grades > 0, junk=rng.random((24, 300)) < 0.05),
    ):
        want = rc.evaluate(distances=dist, implementation=name, protocol="hashing", **relevance)
        for block_size in (None, 5):
            got = rc.evaluate(
                query_embeddings=q,
                db_embeddings=d,
                implementation=name,
                protocol="hashing",
                block_size=block_size,
                **relevance,
            )
            assert_identical(got, want)


@pytest.mark.parametrize("name", ["numpy", "c"])
def test_accumulator_batches_give_the_same_result(name):
    require_implementation(name)
    q, d, ql, dl, qc, dc = _problem(8)
    want = rc.evaluate(
        distances=exact_distances(q, d, "cosine"),
        query_labels=ql,
        db_labels=dl,
        query_cams=qc,
        db_cams=dc,
        protocol="reid",
        implementation=name,
    )
    for cuts in ((24,), (1, 7, 16), (10, 14)):
        acc = rc.Accumulator(
            db_embeddings=d, db_labels=dl, db_cams=dc, metric="cosine", protocol="reid", implementation=name
        )
        start = 0
        for size in cuts:
            stop = start + size
            acc.update(query_embeddings=q[start:stop], query_labels=ql[start:stop], query_cams=qc[start:stop])
            start = stop
        assert_identical(acc.compute(), want)
