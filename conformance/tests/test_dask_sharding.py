"""implementation="dask" with gallery shards: per-query arrays bit for bit those of implementation="c" on
the whole problem (every preset, tie policy, input kind and option; ties across shard boundaries,
uneven shards, a shard without relevant items, a shard of junk only), the one-machine error of a cut-off
inside a tie group, progress, memory-mapped input, and a worker killed mid-run.

On a LocalCluster of two worker processes; skipped where ``dask.distributed`` is not installed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.dask_support import (
    LOCAL,
    a_worker_killed,
    local_cluster,
    requires_distributed,
)
from retrieval_conformance.conformance.support.fixtures import random_options, tie_heavy_problem
from retrieval_conformance.implementations.dask import DaskEvaluationError, DaskImplementation
from retrieval_conformance.implementations.dask.shards import shard_bounds
from retrieval_conformance.reference.contract import registry
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.cutoffs import clip_to_gallery
from retrieval_conformance.reference.contract.presets import PRESETS
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS

pytestmark = requires_distributed

SHARDS = (1, 2, 3, 7)
REID = ("reid", "reid-matlab")


@pytest.fixture(scope="module")
def cluster():
    """(LocalCluster, Client): two worker processes of one thread each, closed at the end."""
    with local_cluster() as pair:
        yield pair


@pytest.fixture
def sharded(cluster):
    """``sharded(shards, chunk=None)``: the name of a dask implementation with those gallery shards."""
    added = []

    def name_for(shards, chunk=None):
        name = f"dask-shards-{shards}-{chunk}"
        if name not in added:
            registry.register(name, lambda: DaskImplementation(chunk_queries=chunk, gallery_shards=shards))
            added.append(name)
        return name

    yield name_for
    for name in added:
        registry.unregister(name)


def same_bits(a, b) -> bool:
    """Equal bit for bit (NaN where the other is NaN, -0.0 told from 0.0), or both None."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(np.all((np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def differences(got, want) -> list:
    return [name for name in ARRAY_FIELDS if not same_bits(getattr(got, name), getattr(want, name))]


def outcome(kwargs: dict, implementation: str):
    """The per-query values of ``rc.evaluate``, or its ValueError's text."""
    try:
        return rc.evaluate(**kwargs, implementation=implementation).per_query
    except ValueError as exc:
        return f"ValueError: {exc}"


def assert_same_outcome(kwargs: dict, implementation: str) -> None:
    want, got = outcome(kwargs, LOCAL), outcome(kwargs, implementation)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        assert not differences(got, want), f"{implementation} differs from {LOCAL}: {differences(got, want)}"


# -- problems ---------------------------------------------------------------------------------------
def ranking(rng, n_q: int, n_g: int, kind: str) -> dict:
    """Quantised distances (ties inside and across shards), scores, or codes."""
    if kind == "codes":
        return dict(query_codes=rng.choice([-1, 1], (n_q, 5)), db_codes=rng.choice([-1, 1], (n_g, 5)))
    levels = rng.integers(0, int(rng.integers(2, 7)), (n_q, n_g)) * 0.25
    if kind == "scores":
        return dict(scores=levels)
    return dict(distances=levels.astype(np.float32 if kind == "float32" else np.float64))


def relevance(rng, n_q: int, n_g: int, kind: str) -> dict:
    if kind == "ids":
        return dict(query_labels=rng.integers(0, 4, n_q), db_labels=rng.integers(-1, 4, n_g))
    if kind == "multi":
        return dict(query_labels=rng.integers(0, 2, (n_q, 3)), db_labels=rng.integers(0, 2, (n_g, 3)))
    if kind == "graded":
        return dict(relevance=np.where(rng.random((n_q, n_g)) < 0.6, 0, rng.integers(1, 5, (n_q, n_g))))
    return dict(relevance=rng.random((n_q, n_g)) < 0.3)


def preset_problem(preset: str, seed: int, n_q: int = 11, n_g: int = 47) -> dict:
    """Arguments of ``rc.evaluate`` for ``preset``: cameras for the ReID presets, grades for the
    nDCG one, a k and a radius elsewhere, junk on some."""
    rng = np.random.default_rng(seed)
    kind = ("float32", "float64", "scores", "codes")[seed % 4]
    out = dict(ranking(rng, n_q, n_g, kind), protocol=preset, max_rank=int(rng.integers(1, 9)))
    if preset in REID:
        out.update(relevance(rng, n_q, n_g, "ids"), query_cams=rng.integers(0, 2, n_q), db_cams=rng.integers(0, 2, n_g))
    else:
        out.update(relevance(rng, n_q, n_g, "graded" if preset == "sklearn-ndcg" else ("multi", "matrix")[seed % 2]))
        out.update(k=int(rng.integers(1, n_g + 3)), radius=float(rng.integers(0, 4)) * 0.5)
    if seed % 3 == 0:
        out["junk"] = rng.random((n_q, n_g)) < 0.15
    return out


# -- identical to the one-machine result ------------------------------------------------------------------
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_and_shard_count(sharded, preset):
    for seed, shards in enumerate(SHARDS):
        assert_same_outcome(preset_problem(preset, seed + 10 * sorted(PRESETS).index(preset)), sharded(shards, 4))


INPUTS = [("float32", "ids"), ("float64", "graded"), ("codes", "multi"), ("scores", "matrix")]


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_every_tie_policy_input_kind_and_option(sharded, ties):
    """Random options (ap_rule, ap_at_k, k, max_rank, radius, gain, discount, recall, empty) on
    every input kind, with junk and cameras, over 2, 3 and 7 shards."""
    rng = np.random.default_rng(TIE_POLICIES.index(ties))
    for n, (rank_kind, rel_kind) in enumerate(INPUTS):
        n_q, n_g = 9, int(rng.integers(20, 60))
        kwargs = dict(ranking(rng, n_q, n_g, rank_kind), **relevance(rng, n_q, n_g, rel_kind), ties=ties)
        if rel_kind == "ids":
            kwargs.update(protocol="reid", query_cams=rng.integers(0, 2, n_q), db_cams=rng.integers(0, 2, n_g))
        if rng.random() < 0.5:
            kwargs["junk"] = rng.random((n_q, n_g)) < 0.2
        kwargs.update(
            ap_rule=str(rng.choice(["precision_sum", "trapezoid"])),
            ap_at_k=str(rng.choice(["hits", "r", "min_k_r", "dcmh"])),
            k=None if n % 2 else int(rng.integers(1, n_g + 2)),
            max_rank=int(rng.integers(1, 10)),
            radius=None if n % 3 else 0.5,
            gain=str(rng.choice(["linear", "exponential"])),
            discount=str(rng.choice(["log2", "trec_eval_9.0a3"])),
            recall=str(rng.choice(["fraction", "hit"])),
            empty=str(rng.choice(["zero", "nan", "skip"])),
        )
        if ties == "grouped" and kwargs["k"] is not None:
            kwargs["k"] = None  # a cut-off inside a tie group is an error (its own test)
        assert_same_outcome(kwargs, sharded(SHARDS[1 + n % 3], 3))


def test_small_problems_of_the_shared_generator(cluster):
    """The implementation tests' tie-heavy problems (``support/fixtures.py``: -0.0 and 0.0,
    continuous float32/64, codes, every relevance input and kind of junk, empty queries),
    called directly on a Problem with random options, under every tie policy."""
    rng = np.random.default_rng(7)
    local = registry.get(LOCAL)
    for _ in range(10):
        problem = tie_heavy_problem(rng, max_queries=5, max_gallery=14)
        if problem.relevance is not None and rng.random() < 0.5:
            grades = rng.integers(0, 4, problem.relevance.shape)
            problem = replace(problem, relevance=grades > 0, grades=grades.astype(np.int64))
        for ties in TIE_POLICIES:
            options = clip_to_gallery(random_options(rng, ties, problem.n_gallery), problem.n_gallery)
            impl = DaskImplementation(gallery_shards=int(rng.integers(1, 6)))
            try:
                want = local.compute(problem, options)
            except ValueError as exc:
                with pytest.raises(ValueError) as info:
                    impl.compute(problem, options)
                assert str(info.value) == str(exc)
                continue
            got = impl.compute(problem, options)
            assert not differences(got, want), (ties, options, differences(got, want))


def edge_problem(ties: str) -> dict:
    """Shards of sizes 1, 13, 2, 30, 15 (ties across their boundaries): shard 1 holds no relevant
    item, shard 3 only junk, query 4 no relevant item at all."""
    rng = np.random.default_rng(3)
    n_q, n_g = 7, 61
    dist = (rng.integers(0, 4, (n_q, n_g)) * 0.5).astype(np.float32)
    grades = np.where(rng.random((n_q, n_g)) < 0.5, 0, rng.integers(1, 4, (n_q, n_g)))
    grades[:, 1:14] = 0
    grades[4] = 0
    junk = rng.random((n_q, n_g)) < 0.1
    junk[:, 16:46] = True
    return dict(
        distances=dist,
        relevance=grades,
        junk=junk,
        ties=ties,
        k=None if ties == "grouped" else 9,
        radius=0.5,
        max_rank=12,
        ap_at_k="min_k_r",
        discount="trec_eval_9.0a3",
        empty="nan",
    )


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_uneven_shards_a_shard_without_relevant_items_and_one_of_junk(sharded, ties):
    assert shard_bounds(61, (1, 13, 2, 30, 15)) == [(0, 1), (1, 14), (14, 16), (16, 46), (46, 61)]
    assert_same_outcome(edge_problem(ties), sharded((1, 13, 2, 30, 15), 2))


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_many_relevant_distances_per_query(sharded, ties):
    """More than ``SCAN_KEYS`` distinct relevant distances per query (pass 2 searches instead of
    scanning), continuous distances with a few ties, graded relevance."""
    rng = np.random.default_rng(TIE_POLICIES.index(ties) + 40)
    dist = np.round(rng.random((5, 400)), 3)
    kwargs = dict(
        distances=dist.astype(np.float32 if ties in ("stable", "expected") else np.float64),
        relevance=np.where(rng.random((5, 400)) < 0.5, rng.integers(1, 4, (5, 400)), 0),
        junk=rng.random((5, 400)) < 0.05,
        ties=ties,
        k=None if ties == "grouped" else 150,
        radius=0.3,
    )
    assert_same_outcome(kwargs, sharded(3))


# -- errors, blocks, progress, inputs -----------------------------------------------------------------------
def test_the_first_failing_query_raises_the_one_machine_error(sharded):
    """A k inside a tie group under ties='grouped' in queries 6, 13 and 22, the group spread over
    every shard: the error names query 6, word for word the reference's."""
    rng = np.random.default_rng(5)
    dist = rng.random((29, 40))
    dist[[6, 13, 22]] = 1.0
    kwargs = dict(distances=dist, relevance=rng.random((29, 40)) < 0.3, ties="grouped", k=5)
    errors = {name: outcome(kwargs, name) for name in ("reference", LOCAL, sharded(3, 4), sharded(7, 2))}
    assert "of query 6;" in errors["reference"]
    assert len(set(errors.values())) == 1, errors


def test_several_blocks_shard_the_gallery_once_and_report_progress(cluster, sharded, monkeypatch):
    _, client = cluster
    scatters = []
    scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda *a, **kw: scatters.append(kw) or scatter(*a, **kw))
    rng = np.random.default_rng(11)
    kwargs = dict(
        query_codes=rng.choice([-1, 1], (40, 6)),
        db_codes=rng.choice([-1, 1], (53, 6)),
        query_labels=rng.integers(0, 2, (40, 4)),
        db_labels=rng.integers(0, 2, (53, 4)),
        k=10,
        radius=2,
    )
    want = rc.evaluate(**kwargs, implementation=LOCAL)
    seen = []
    got = rc.evaluate(
        **kwargs, implementation=sharded(3, 3), block_size=9, progress=lambda done, total: seen.append((done, total))
    )
    assert not differences(got.per_query, want.per_query)
    assert len(scatters) == 3 and all(not kw.get("broadcast") for kw in scatters)  # 5 blocks, 3 shards once
    assert seen == sorted(seen) and seen[-1] == (40, 40) and len(seen) >= 14


def test_memory_mapped_distances_and_embeddings(sharded, tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "distances.npy"
    np.save(path, (rng.integers(0, 5, (23, 301)) * 0.125).astype(np.float32))
    kwargs = dict(distances=np.load(path, mmap_mode="r"), relevance=rng.random((23, 301)) < 0.1, k=20)
    assert_same_outcome(dict(kwargs, block_size=5), sharded(4))
    emb = dict(
        query_embeddings=rng.integers(0, 3, (13, 4)).astype(np.float32),
        db_embeddings=rng.integers(0, 3, (77, 4)).astype(np.float32),
        metric="euclidean",
        query_labels=rng.integers(0, 3, 13),
        db_labels=rng.integers(0, 3, 77),
        ties="expected",
    )
    assert_same_outcome(emb, sharded(3))


def test_the_automatic_rule_and_bad_arguments(cluster):
    from retrieval_conformance.reference.contract.evaluate import build_problem
    from retrieval_conformance.reference.contract.protocol_options import resolve_options

    rng = np.random.default_rng(4)
    problem = build_problem(
        distances=rng.random((6, 1000)), query_labels=rng.integers(0, 9, 6), db_labels=rng.integers(0, 9, 1000)
    )
    assert DaskImplementation().shards(problem) is None  # 24 kB: whole on every worker
    bounds = DaskImplementation(shard_bytes=7000).shards(problem)  # 8,000 + 16,000 bytes: 4 shards
    assert bounds == [(0, 250), (250, 500), (500, 750), (750, 1000)]
    assert DaskImplementation(gallery_shards=5000).shards(problem)[-1] == (999, 1000)  # one item per shard at most
    for bad in (0, -1, True, 2.5, (), (3, 0), "two"):
        with pytest.raises(ValueError, match="gallery_shards"):
            DaskImplementation(gallery_shards=bad)
    with pytest.raises(ValueError, match="sum to the gallery"):
        DaskImplementation(gallery_shards=(10, 20)).shards(problem)
    options = resolve_options("hashing", k=7)  # the automatic shards compute the same values
    got = DaskImplementation(shard_bytes=7000).compute(problem, options)
    assert not differences(got, registry.get(LOCAL).compute(problem, options))


# -- a worker killed mid-run -----------------------------------------------------------------------------
@pytest.mark.parametrize("allowed_failures", [3, 0], ids=["rerun", "killed-worker"])
def test_a_worker_killed_mid_run(cluster, sharded, tmp_path, allowed_failures):
    """The scheduler reruns the lost tasks (their parts are remade from their tasks, every gallery
    shard has a second copy): the identical result; allowed no failure, a clear error."""
    local, client = cluster
    kwargs = edge_problem("expected")
    want = outcome(kwargs, LOCAL)
    with a_worker_killed(local, client, "rc-dask-shard-", tmp_path, allowed_failures):
        if allowed_failures:
            got = outcome(kwargs, sharded(3, 2))
            assert not differences(got, want)
        else:
            with pytest.raises(DaskEvaluationError, match=r"could not be computed on the cluster \(KilledWorker"):
                rc.evaluate(**kwargs, implementation=sharded(3, 2))
    assert not differences(outcome(kwargs, sharded(3, 2)), want)  # the cluster still works
