"""Query blocks: bounded memory, identical results for any block size, progress reports."""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation


@pytest.mark.parametrize("name", implementation_params())
@pytest.mark.parametrize("block_size", [1, 3, 7])
def test_any_block_size_gives_the_same_result(name, block_size):
    require_implementation(name)
    rng = np.random.default_rng(3)
    kwargs = dict(
        query_codes=rng.choice([-1, 1], (7, 6)),
        db_codes=rng.choice([-1, 1], (30, 6)),
        query_labels=rng.integers(0, 3, 7),
        db_labels=rng.integers(0, 3, 30),
        k=10,
        ties="expected",
        implementation=name,
    )
    whole = rc.evaluate(**kwargs)
    blocked = rc.evaluate(**kwargs, block_size=block_size)
    for field in ("ap", "inp", "precision_at_k"):
        np.testing.assert_array_equal(getattr(blocked.per_query, field), getattr(whole.per_query, field))
    assert blocked.map == whole.map and np.array_equal(blocked.cmc, whole.cmc)


def test_memory_mapped_distances_and_embeddings_stream(tmp_path):
    rng = np.random.default_rng(4)
    q, g = rng.normal(size=(9, 5)).astype(np.float32), rng.normal(size=(40, 5)).astype(np.float32)
    ids_q, ids_g = rng.integers(0, 4, 9), rng.integers(0, 4, 40)
    cams = dict(query_cams=rng.integers(0, 2, 9), db_cams=rng.integers(0, 2, 40))
    from_embeddings = rc.evaluate(
        query_embeddings=q,
        db_embeddings=g,
        query_labels=ids_q,
        db_labels=ids_g,
        **cams,
        protocol="reid",
        block_size=2,
        implementation="reference",
    )
    dist = rc.build_problem(query_embeddings=q, db_embeddings=g, relevance=np.ones((9, 40), bool)).distances
    assert dist.dtype == np.float32
    path = tmp_path / "d.npy"
    np.save(path, dist)
    mapped = np.load(path, mmap_mode="r")
    calls = []
    from_file = rc.evaluate(
        distances=mapped,
        query_labels=ids_q,
        db_labels=ids_g,
        **cams,
        protocol="reid",
        block_size=4,
        progress=lambda done, total: calls.append((done, total)),
        implementation="reference",
    )
    assert from_file.exact.map == from_embeddings.exact.map
    # every block's end is reported, and the reference also reports each query inside a block
    assert {(4, 9), (8, 9)} <= set(calls) and calls[-1] == (9, 9)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


@pytest.mark.parametrize("ranking", ["scores", "embeddings"])
def test_a_block_is_released_before_the_next_is_made(monkeypatch, ranking):
    # a block's distances (negated scores, computed embedding distances) are as large as the
    # block budget: two alive at once would double the peak
    import weakref

    from retrieval_conformance.reference.contract import evaluate as ev

    made, alive = [], []
    original = ev.build_problem

    def watched(**kwargs):
        alive.extend(ref() is not None for ref in made)
        problem = original(**kwargs)
        made.append(weakref.ref(problem.distances))
        return problem

    monkeypatch.setattr(ev, "build_problem", watched)
    rng = np.random.default_rng(5)
    ranking_input = (
        dict(scores=rng.random((7, 30)))
        if ranking == "scores"
        else dict(query_embeddings=rng.normal(size=(7, 4)), db_embeddings=rng.normal(size=(30, 4)))
    )
    rc.evaluate(**ranking_input, relevance=rng.random((7, 30)) < 0.3, block_size=3, implementation="numpy")
    assert len(made) == 3 and not any(alive)


def test_block_errors_say_where(capsys):
    dist = np.zeros((5, 3))
    dist[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"distances: expected finite values.* block starting at row 2"):
        rc.evaluate(distances=dist, relevance=np.ones((5, 3), bool), block_size=2)


def test_progress_bar_prints_to_stderr(capsys):
    rc.evaluate(distances=np.zeros((3, 2)), relevance=np.ones((3, 2), bool), progress=True, block_size=1)
    assert "queries 3/3 (100%)" in capsys.readouterr().err
