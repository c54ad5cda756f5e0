"""The C float path against one read pass of its matrix, one thread, round by round.

The floor of any evaluation of a float distance (or score) matrix is one read of it; the anchor
here is numpy's ``max(axis=1)`` over the same matrix (a streaming read, memory bound).  Timed
against it, interleaved round by round (a busy machine slows both alike), on one C thread:

* ``full mAP``: ``rc.evaluate(scores=S, relevance=R, metrics=["map"], implementation="c")`` with S
  1,000 x 50,000 float32 scores rounded to 3 decimals (many ties), R a bool matrix ~0.5% relevant
  (every item placed: the relevant items reach the far end);
* ``Market ReID``: the Market-1501-sized workload (3,368 x 15,913 float32 distances, ids and
  cameras, the ``reid`` preset, every metric): the bounded pass places only the items up to the
  farthest relevant one;
* ``Market ids, random distances``: the same ids and cameras over uniform random distances, so the
  relevant items reach the far end and every item is placed.

And the distances from embeddings against the plainest way to rank them: Market-1501-sized float32
features (3,368 x 15,913, d = 256, L2-normalised), ``rc.evaluate(query_embeddings=...,
db_embeddings=..., metric="euclidean")`` (every metric, ``reid`` preset, C) timed against numpy's
float32 GEMM distances ``sqrt(max(|q|^2 + |r|^2 - 2 q·r, 0))`` given to the same ``evaluate``, the
BLAS held to one thread (``threadpoolctl``) as well as C, interleaved round by round; target 1.5x.

:func:`float_pass_ratios` returns the medians of the per-round ratios; :func:`figures` the section
``float-pass`` of the feature benchmarks (``retrieval-conformance bench features``).  Run:
``python -m retrieval_conformance.conformance.bench.float_pass [smoke|full] [rounds]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable, Dict, List

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench.reid import market1501, market1501_embeddings
from retrieval_conformance.conformance.bench.threads import thread_environment
from threadpoolctl import threadpool_limits

#: each ratio's target (times one read pass)
TARGET = 5.0
#: rounds of the section at each scale
FIGURE_ROUNDS = {"full": 7, "smoke": 2}
#: the embeddings' target (times numpy's float32 GEMM distances + evaluate)
EMBEDDING_TARGET = 1.5
#: the embeddings' figure
EMBEDDING_LABEL = "Market-sized embeddings d=256 euclidean every metric vs numpy float32 GEMM + evaluate"
#: the full-mAP matrix at each scale (queries, items)
SCORE_SHAPES = {"full": (1000, 50_000), "smoke": (20, 4000)}


def _median_ratio(run: Callable[[], Any], read: Callable[[], Any], rounds: int) -> float:
    """The median over rounds of run's seconds over read's, each round timing both (warmed once)."""
    run()
    read()
    ratios: List[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        read()
        anchor = time.perf_counter() - start
        start = time.perf_counter()
        run()
        ratios.append((time.perf_counter() - start) / anchor)
    return statistics.median(ratios)


def _score_problem(scale: str):
    rng = np.random.default_rng(0)
    scores = np.round(rng.random(SCORE_SHAPES[scale], dtype=np.float32), 3).astype(np.float32)
    return scores, rng.random(scores.shape) < 0.005


def _full_map_ratio(scale: str, rounds: int) -> float:
    scores, relevance = _score_problem(scale)
    return _median_ratio(
        lambda: rc.evaluate(scores=scores, relevance=relevance, metrics=["map"], implementation="c"),
        lambda: scores.max(axis=1),
        rounds,
    )


def float_pass_ratios(scale: str = "full", rounds: int = 5) -> Dict[str, float]:
    """Each workload's median time as a multiple of one read pass of its matrix, one C thread."""
    out: Dict[str, float] = {}
    with thread_environment(1):
        out["full mAP"] = _full_map_ratio(scale, rounds)
        reid = market1501(scale)
        arrays = reid.arrays
        dist = arrays["distances"]
        out["Market ReID"] = _median_ratio(
            lambda: rc.evaluate(**arrays, protocol=reid.protocol, implementation="c"), lambda: dist.max(axis=1), rounds
        )
        spread = dict(arrays, distances=np.random.default_rng(1).random(dist.shape, dtype=np.float32))
        out["Market ids, random distances"] = _median_ratio(
            lambda: rc.evaluate(**spread, protocol=reid.protocol, implementation="c"),
            lambda: spread["distances"].max(axis=1),
            rounds,
        )
    return out


def gemm_distances(qf: np.ndarray, gf: np.ndarray) -> np.ndarray:
    """numpy's float32 euclidean distances: ``sqrt(max(|q|^2 + |r|^2 - 2 q·r, 0))``, one GEMM."""
    dist = np.einsum("ij,ij->i", qf, qf)[:, None] + np.einsum("ij,ij->i", gf, gf)[None, :]
    dist -= np.float32(2) * (qf @ gf.T)
    np.maximum(dist, 0, out=dist)
    return np.sqrt(dist, out=dist)


def embedding_ratio(scale: str = "full", rounds: int = 5) -> float:
    """``evaluate`` from Market-sized embeddings over numpy's float32 GEMM distances + the same
    ``evaluate``: the median of the per-round ratios, one C thread and one BLAS thread."""
    qf, gf, ids = market1501_embeddings(scale)

    def evaluate(**ranking: Any) -> Any:
        return rc.evaluate(**ranking, **ids, protocol="reid", implementation="c")

    with thread_environment(1), threadpool_limits(limits=1):
        return _median_ratio(
            lambda: evaluate(query_embeddings=qf, db_embeddings=gf, metric="euclidean"),
            lambda: evaluate(distances=gemm_distances(qf, gf)),
            rounds,
        )


NOTES = {
    "full mAP": "1,000 x 50,000 float32 scores, 3 decimals, ~0.5% relevant, metrics=['map']",
    "Market ReID": "3,368 x 15,913 float32 distances, reid preset, every metric",
    "Market ids, random distances": "the same ids and cameras, uniform distances: every item placed",
}


def figures(scale: str = "full") -> Dict[str, Dict[str, Any]]:
    """The section ``float-pass``: each workload's median ratio to one read pass, target 5x."""
    if scale not in FIGURE_ROUNDS:
        raise ValueError(f"scale: expected one of {sorted(FIGURE_ROUNDS)}, got {scale!r}")
    ratios = float_pass_ratios(scale, FIGURE_ROUNDS[scale])
    out = {
        f"{label} vs one read pass": {
            "value": value,
            "unit": "x one read pass",
            "target": f"<= {TARGET:g}x",
            "baseline": "numpy max(axis=1) over the same matrix",
            "note": f"one C thread; {NOTES[label]}" if scale == "full" else "one C thread; smoke-sized inputs",
        }
        for label, value in ratios.items()
    }
    out[EMBEDDING_LABEL] = {
        "value": embedding_ratio(scale, FIGURE_ROUNDS[scale]),
        "unit": "x numpy float32 GEMM + evaluate",
        "target": f"<= {EMBEDDING_TARGET:g}x",
        "baseline": "numpy float32 GEMM distances given to the same evaluate",
        "note": "one C thread, one BLAS thread; 3,368 x 15,913 float32, L2-normalised, reid preset, every metric"
        if scale == "full"
        else "one C thread, one BLAS thread; smoke-sized inputs",
    }
    return out


def main(argv: List[str]) -> int:
    scale = argv[0] if argv else "full"
    rounds = int(argv[1]) if len(argv) > 1 else 5
    for label, value in float_pass_ratios(scale, rounds).items():
        print(f"{label:32s} {value:6.2f}x one read pass")
    print(f"{EMBEDDING_LABEL}: {embedding_ratio(scale, rounds):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
