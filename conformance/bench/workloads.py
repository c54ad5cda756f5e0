"""Synthetic but realistic benchmark workloads at the standard sizes of spec §12.

Every workload is generated from a fixed seed, so two runs (and two machines) time exactly the
same input.  Each exists at two scales: ``full`` (the real dataset's shape) and ``smoke`` (a
few dozen queries, small enough for the exact pure-Python reference; run in the normal suite).

=============== ======================================= =========================================
name            shape (full)                            input
=============== ======================================= =========================================
cifar10-all     1,000 x 54,000, mAP@ALL                 64-bit ±1 codes (float32), one-hot labels
cifar10-1000    1,000 x 54,000, mAP@1000                the same codes and labels
nuswide-5000    2,100 x 193,734, mAP@5000               64-bit ±1 codes, 21 multi-hot labels
market1501      3,368 x 15,913, ``reid``                float32 squared-Euclidean distances,
                                                        751 ids, 6 cameras, ids 0 and -1
msmt17          11,659 x 82,161, ``reid``               float32 distances in a memory-mapped .npy
                                                        written block by block (never whole in
                                                        memory), 3,060 ids, 15 cameras
oxford5k        55 x 5,063, trapezoid AP with junk      float32 distances, relevance and junk
graded-ndcg10   1,000 x 50,000, nDCG@10,                float32 similarity scores rounded to 3
                ``sklearn-ndcg`` (ties averaged)        decimals (ties), grades 0..3 (TREC-DL-like)
scores-map      1,000 x 50,000, full mAP (``hashing``)  float32 similarity scores rounded to 3
                                                        decimals (ties), ~1% relevant per query
scores-map100   1,000 x 50,000, mAP@100                 the same scores and relevance
scaling-        100 x N, N = 10k, 100k, 1M, 4M,         float32 scores (few ties), 1% relevant
floats-<size>   full mAP
scaling-        100 x N, N = 10k, 100k, 1M, 4M,         64-bit ±1 codes (int8), 100 classes
codes-<size>    mAP@ALL
=============== ======================================= =========================================

How the data is structured (so that rankings, ties and the share of relevant items look like
the real thing, not like uniform noise) is told by the generators, one module per family:
:mod:`.hashing` (CIFAR-10, NUS-WIDE), :mod:`.reid` (Market-1501, MSMT17),
:mod:`.landmarks` (Oxford5k), :mod:`.graded` (graded relevance) and :mod:`.scores` (score
matrices with binary relevance, the scaling series).  This module names the
workloads and builds one (:func:`build`); the type is :class:`.workload.Workload`.

Example
-------
>>> w = build("cifar10-1000", scale="smoke")
>>> res = rc.evaluate(**w.evaluate_kwargs(), implementation="numpy")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Optional

from retrieval_conformance.conformance.bench import graded, hashing, landmarks, reid, scores
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload  # noqa: F401  (re-exported)

#: the gallery-size series (``time ~ N**a``): one workload per size, named ``<family>-<size>``
SCALING_FAMILIES = ("scaling-floats", "scaling-codes")
SCALING_NAMES = tuple(f"{family}-{size}" for family in SCALING_FAMILIES for size in scores.SCALING_SIZES)
WORKLOAD_NAMES = (
    "cifar10-all",
    "cifar10-1000",
    "nuswide-5000",
    "market1501",
    "msmt17",
    "oxford5k",
    "graded-ndcg10",
    "scores-map",
    "scores-map100",
) + SCALING_NAMES
SCALES = ("full", "smoke")


def build(name: str, scale: str = "full", directory: Optional[str] = None) -> Workload:
    """Generate workload ``name`` at ``scale`` (deterministic).

    Parameters
    ----------
    name : str
        One of :data:`WORKLOAD_NAMES`.
    scale : {"full", "smoke"}
    directory : str, optional
        Where a memory-mapped workload (``msmt17``) writes its ``.npy``; default a new
        temporary folder, removed by :meth:`Workload.cleanup`.
    """
    if name not in WORKLOAD_NAMES:
        raise ValueError(f"name: expected one of {list(WORKLOAD_NAMES)}, got {name!r}")
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {list(SCALES)}, got {scale!r}")
    if name == "cifar10-all":
        return hashing.cifar10(scale, None, name)
    if name == "cifar10-1000":
        return hashing.cifar10(scale, 1000, name)
    if name == "nuswide-5000":
        return hashing.nuswide(scale)
    if name == "market1501":
        return reid.market1501(scale)
    if name == "msmt17":
        return reid.msmt17(scale, directory)
    if name == "graded-ndcg10":
        return graded.graded_ndcg10(scale)
    if name in ("scores-map", "scores-map100"):
        return scores.scores_map(scale, None if name == "scores-map" else 100, name)
    if name in SCALING_NAMES:
        family, _, size = name.rpartition("-")
        return (scores.scaling_floats if family == "scaling-floats" else scores.scaling_codes)(scale, size)
    return landmarks.oxford5k(scale)
