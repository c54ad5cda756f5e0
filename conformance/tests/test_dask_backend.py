"""implementation="dask": bit for bit the local implementation, on a two-process LocalCluster, for
any chunking; the first failing query's error as the reference raises it; a worker killed mid-run.

Skipped where ``dask.distributed`` is not installed (tox's minimal environment).
"""

from __future__ import annotations

import ast
import logging
import subprocess
import sys

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.dask_support import (
    LOCAL,
    a_worker_killed,
    local_cluster,
    requires_distributed,
)
from retrieval_conformance.implementations.dask import DaskEvaluationError, DaskImplementation
from retrieval_conformance.reference.contract import registry
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS

pytestmark = requires_distributed

#: Result fields compared (means and per-query arrays)
RESULT_FIELDS = (
    "map",
    "ap",
    "precision_at_k",
    "recall_at_k",
    "cmc",
    "minp",
    "inp",
    "r_precision",
    "ndcg_at_k",
    "mrr",
    "map_at_r",
    "counted",
    "precision_at_radius",
    "recall_at_radius",
)


def test_unavailable_without_a_client_and_dask_imported_lazily():
    """A fresh interpreter: neither the package nor the module imports dask; without a client
    the reason says to start one, without the package how to install it."""
    code = (
        "import sys\n"
        "import retrieval_conformance as rc\n"
        "from retrieval_conformance.reference.contract import registry\n"
        "import retrieval_conformance.implementations.dask\n"
        "first = registry.unavailable_reason('dask')\n"
        "auto = registry.get('auto').name\n"
        "lazy = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
        "sys.modules['distributed'] = None\n"
        "missing = registry.unavailable_reason('dask')\n"
        "del sys.modules['distributed']\n"
        "import distributed\n"
        "no_client = registry.unavailable_reason('dask')\n"
        "try:\n"
        "    rc.evaluate(distances=[[0.0, 1.0]], relevance=[[1, 0]], implementation='dask')\n"
        "except rc.ImplementationUnavailable as exc:\n"
        "    error = str(exc)\n"
        "print(repr((first, lazy, missing, no_client, error, auto)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    first, lazy, missing, no_client, error, auto = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert first == no_client and lazy == []
    assert "pip install 'retrieval-conformance[dask]'" in missing
    assert "Client" in no_client and "never starts a cluster" in no_client
    assert "implementation 'dask' is unavailable" in error and "Client" in error
    assert auto != "dask"


@pytest.fixture(scope="module")
def cluster():
    """(LocalCluster, Client): two worker processes of one thread each, closed at the end."""
    with local_cluster() as pair:
        yield pair


@pytest.fixture
def chunked(cluster):
    """``chunked(n)``: the name of a dask implementation with ``n`` queries per task (None: "dask")."""
    added = []

    def name_for(chunk):
        if chunk is None:
            return "dask"
        name = f"dask-chunks-of-{chunk}"
        registry.register(name, lambda: DaskImplementation(chunk_queries=chunk))
        added.append(name)
        return name

    yield name_for
    for name in added:
        registry.unregister(name)


def problem(kind: str, seed: int = 0, n_q: int = 29, n_g: int = 61) -> dict:
    """Random ``evaluate`` arguments of one preset, with many ties."""
    rng = np.random.default_rng(seed)
    if kind == "hashing-codes":
        return dict(
            query_codes=rng.choice([-1, 1], (n_q, 6)),
            db_codes=rng.choice([-1, 1], (n_g, 6)),
            query_labels=rng.integers(0, 2, (n_q, 4)),
            db_labels=rng.integers(0, 2, (n_g, 4)),
            protocol="hashing",
            k=10,
            radius=2,
        )
    if kind == "reid-cameras":
        return dict(
            distances=rng.integers(0, 6, (n_q, n_g)).astype(np.float32),
            query_labels=rng.integers(0, 8, n_q),
            db_labels=rng.integers(-1, 8, n_g),
            query_cams=rng.integers(0, 3, n_q),
            db_cams=rng.integers(0, 3, n_g),
            protocol="reid",
            max_rank=20,
        )
    if kind == "graded-sklearn-ndcg":
        return dict(
            scores=np.round(rng.random((n_q, n_g)), 1),
            relevance=rng.integers(0, 4, (n_q, n_g)),
            protocol="sklearn-ndcg",
            k=7,
        )
    if kind == "ties-expected":
        return dict(
            distances=rng.integers(0, 4, (n_q, n_g)).astype(float),
            relevance=rng.random((n_q, n_g)) < 0.2,
            junk=rng.random((n_q, n_g)) < 0.1,
            ties="expected",
            k=5,
            ap_at_k="min_k_r",
            empty="skip",
        )
    if kind == "ties-grouped":
        return dict(
            distances=rng.integers(0, 4, (n_q, n_g)).astype(float),
            relevance=rng.random((n_q, n_g)) < 0.2,
            ties="grouped",
            empty="nan",
        )
    raise ValueError(kind)


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


def assert_identical(got, want) -> None:
    bad = [
        f"per_query.{name}"
        for name in ARRAY_FIELDS
        if not same_bits(getattr(got.per_query, name), getattr(want.per_query, name))
    ]
    bad += [name for name in RESULT_FIELDS if not same_bits(getattr(got, name), getattr(want, name))]
    assert not bad, f"differ from {want.implementation}: {bad}"


KINDS = ["hashing-codes", "reid-cameras", "graded-sklearn-ndcg", "ties-expected", "ties-grouped"]


@pytest.mark.parametrize("chunk", [None, 1, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_identical_to_the_local_implementation(chunked, kind, chunk):
    kwargs = problem(kind, seed=KINDS.index(kind))
    want = rc.evaluate(**kwargs, implementation=LOCAL)
    got = rc.evaluate(**kwargs, implementation=chunked(chunk))
    assert got.implementation == "dask"
    assert_identical(got, want)


@pytest.mark.parametrize("chunk", [None, 4])
def test_the_first_failing_query_raises_the_references_error(chunked, chunk):
    """A k inside a tie group under ties='grouped', in queries 6, 13 and 22 (chunks 1, 3 and 5 of
    four queries): the error names query 6, as the reference's does."""
    rng = np.random.default_rng(5)
    dist = rng.random((29, 40))
    dist[[6, 13, 22]] = 1.0  # one tie group of the whole gallery
    kwargs = dict(distances=dist, relevance=rng.random((29, 40)) < 0.3, ties="grouped", k=5)
    errors = {}
    for name in ("reference", LOCAL, chunked(chunk)):
        with pytest.raises(ValueError) as info:
            rc.evaluate(**kwargs, implementation=name)
        errors[name] = (type(info.value), str(info.value))
    assert "of query 6;" in errors["reference"][1]
    assert len(set(errors.values())) == 1, errors


def test_several_blocks_scatter_the_gallery_once_and_report_progress(cluster, chunked, monkeypatch):
    _, client = cluster
    scatters = []
    scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda *a, **kw: scatters.append(kw) or scatter(*a, **kw))
    kwargs = problem("hashing-codes", seed=11, n_q=40)
    want = rc.evaluate(**kwargs, implementation=LOCAL)
    seen = []
    got = rc.evaluate(
        **kwargs, implementation=chunked(3), block_size=9, progress=lambda done, total: seen.append((done, total))
    )
    assert_identical(got, want)
    assert len(scatters) == 1 and scatters[0].get("broadcast") is True  # 5 blocks, one gallery
    assert seen == sorted(seen) and seen[-1] == (40, 40) and len(seen) >= 14  # every chunk, every block


def test_a_direct_call_without_evaluate(cluster):
    """``compute`` on a Problem (no ``prepare``): the same PerQuery as the local implementation's."""
    from retrieval_conformance.reference.contract.evaluate import build_problem
    from retrieval_conformance.reference.contract.protocol_options import resolve_options

    kwargs = problem("reid-cameras", seed=3)
    options = resolve_options("reid", max_rank=20)
    prob = build_problem(
        distances=kwargs["distances"],
        query_labels=kwargs["query_labels"],
        db_labels=kwargs["db_labels"],
        query_cams=kwargs["query_cams"],
        db_cams=kwargs["db_cams"],
    )
    got = DaskImplementation(chunk_queries=5).compute(prob, options)
    want = registry.get(LOCAL).compute(prob, options)
    assert all(same_bits(getattr(got, name), getattr(want, name)) for name in ARRAY_FIELDS)
    with pytest.raises(ValueError, match="chunk_queries"):
        DaskImplementation(chunk_queries=0)


@pytest.mark.parametrize("allowed_failures", [3, 0], ids=["rerun", "killed-worker"])
def test_a_worker_killed_mid_run(cluster, chunked, tmp_path, allowed_failures):
    """The scheduler reruns the lost chunk elsewhere (the identical result), or, allowed no
    failure, the evaluation raises a clear error: never a partial result."""
    local, client = cluster
    kwargs = problem("ties-expected", seed=8, n_q=60)
    want = rc.evaluate(**kwargs, implementation=LOCAL)
    with a_worker_killed(local, client, "rc-dask-chunk-", tmp_path, allowed_failures):
        if allowed_failures:
            assert_identical(rc.evaluate(**kwargs, implementation=chunked(3)), want)
        else:
            with pytest.raises(DaskEvaluationError, match=r"could not be computed on the cluster \(KilledWorker"):
                rc.evaluate(**kwargs, implementation=chunked(3))
    assert_identical(rc.evaluate(**kwargs, implementation="dask"), want)  # the cluster still works


@pytest.mark.parametrize(
    "shards, block_size",
    [(None, None), (None, 6), (2, None), (2, 6)],
    ids=["whole", "whole-blocks", "shards", "shards-blocks"],
)
def test_a_client_closed_mid_run_raises_our_error(shards, block_size):
    """The client closed while chunks are out: distributed's ClosedClientError (from cancelling
    the rest) or "IOLoop is closed" reached the caller; now DaskEvaluationError, naming it."""
    import distributed

    rng = np.random.default_rng(0)
    kw = dict(distances=rng.random((20, 50)), query_labels=rng.integers(0, 3, 20), db_labels=rng.integers(0, 3, 50))
    registry.register("dask-closing", lambda: DaskImplementation(chunk_queries=2, gallery_shards=shards))
    try:
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0", silence_logs=logging.CRITICAL
        ) as local:
            client = distributed.Client(local)

            def close_at_first(done, total):
                client.close()

            with (
                client.as_current(),
                pytest.raises(
                    DaskEvaluationError,
                    match=r"^implementation 'dask': the dask.distributed client was closed "
                    r"during the evaluation \(.*no partial result",
                ),
            ):
                rc.evaluate(**kw, implementation="dask-closing", progress=close_at_first, block_size=block_size)
    finally:
        registry.unregister("dask-closing")


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_embeddings_in_any_blocks_are_the_local_bits(chunked, chunk):
    """Near-tied float32 embeddings (distances that BLAS rounded per block): every query block
    size and chunk size gives the local implementation's per-query values, bit for bit."""
    rng = np.random.default_rng(3)
    levels = np.array([-0.3, -0.1, 0.1, 0.3], dtype=np.float32)
    kw = dict(
        query_embeddings=levels[rng.integers(0, 4, (9, 24))],
        db_embeddings=levels[rng.integers(0, 4, (80, 24))],
        query_labels=rng.integers(0, 5, 9),
        db_labels=rng.integers(0, 5, 80),
    )
    want = rc.evaluate(**kw, implementation=LOCAL)
    for block_size in (None, 1, 4):
        got = rc.evaluate(**kw, implementation=chunked(chunk), block_size=block_size)
        for field in ("ap", "cmc", "inp", "precision_at_k", "r_precision"):
            assert np.array_equal(getattr(got.per_query, field), getattr(want.per_query, field)), (block_size, field)
