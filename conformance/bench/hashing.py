"""Hashing workloads (CIFAR-10, NUS-WIDE): class-structured ±1 codes with class labels.

Every class (label) has a random ±1 prototype; an item's code copies, bit by bit, the
prototype of one of its labels and flips each bit with a small probability; a minority of
"hard" items flip far more.  64-bit Hamming distances take 65 values, so ties are everywhere,
as in real hashing evaluations.  The database is shuffled.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload


def _class_codes(
    rng: np.random.Generator, prototypes: np.ndarray, owner: np.ndarray, p_easy: float, p_hard: float, hard_share: float
) -> np.ndarray:
    """±1 float32 codes: bit b copies ``prototypes[owner[:, b], b]``, flipped with p_easy (or p_hard)."""
    n, bits = owner.shape
    codes = prototypes[owner, np.arange(bits)[None, :]]
    p = np.where(rng.random(n) < hard_share, p_hard, p_easy).astype(np.float32)
    flips = rng.random((n, bits), dtype=np.float32) < p[:, None]
    codes[flips] *= -1
    return codes.astype(np.float32)


def cifar10(scale: str, k: Optional[int], name: str) -> Workload:
    """``cifar10-all`` (``k`` None) or ``cifar10-1000`` (``k`` 1000) at ``scale``."""
    n_q, n_db, classes, bits = (1000, 54_000, 10, 64) if scale == "full" else (20, 600, 10, 64)
    rng = np.random.default_rng(SEEDS["cifar10"])
    protos = rng.choice(np.array([-1, 1], dtype=np.int8), size=(classes, bits))
    # balanced classes (100 queries and 5,400 database images per class), shuffled database
    q_cls = np.repeat(np.arange(classes), n_q // classes)
    db_cls = rng.permutation(np.repeat(np.arange(classes), n_db // classes))
    codes = []
    for cls in (q_cls, db_cls):
        owner = np.broadcast_to(cls[:, None], (cls.size, bits))
        codes.append(_class_codes(rng, protos, owner, p_easy=0.10, p_hard=0.40, hard_share=0.15))
    labels = [np.eye(classes, dtype=np.float32)[cls] for cls in (q_cls, db_cls)]
    if scale == "smoke" and k is not None:
        k = 50
    at = "ALL" if k is None else str(k)
    title = f"CIFAR-10 hashing mAP@{at}: {n_q:,} x {n_db:,}, {bits}-bit ±1 codes, {classes} classes"
    return Workload(
        name,
        scale,
        title,
        "codes",
        {"query_codes": codes[0], "db_codes": codes[1], "query_labels": labels[0], "db_labels": labels[1]},
        "hashing",
        {"k": k},
        SEEDS["cifar10"],
    )


def _multi_hot(rng: np.random.Generator, n: int, n_labels: int, weights: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(n, L) float32 multi-hot rows with 1-3 labels each (never empty), and (n, 3) label slots."""
    count = rng.choice([1, 2, 3], size=n, p=[0.55, 0.30, 0.15])
    # three labels drawn by weight without replacement (Gumbel top-k); keep the first `count`
    keys = np.log(weights)[None, :] - np.log(-np.log(rng.random((n, n_labels))))
    top3 = np.argsort(-keys, axis=1, kind="stable")[:, :3]
    hot = np.zeros((n, n_labels), dtype=np.float32)
    for j in range(3):
        use = count > j
        hot[np.flatnonzero(use), top3[use, j]] = 1.0
    slots = np.where(np.arange(3)[None, :] < count[:, None], top3, top3[:, :1])
    return hot, slots


def nuswide(scale: str) -> Workload:
    """``nuswide-5000`` at ``scale``."""
    n_q, n_db, n_labels, bits, k = (2100, 193_734, 21, 64, 5000) if scale == "full" else (21, 1500, 21, 64, 100)
    rng = np.random.default_rng(SEEDS["nuswide"])
    protos = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_labels, bits))
    # skewed concept frequencies, as in NUS-WIDE's 21 most frequent concepts
    weights = 1.0 / (np.arange(n_labels) + 2.0) ** 0.7
    arrays = {}
    for side, n in (("query", n_q), ("db", n_db)):
        hot, slots = _multi_hot(rng, n, n_labels, weights)
        # each bit follows the prototype of one of the item's labels, chosen at random
        pick = rng.integers(0, 3, size=(n, bits), dtype=np.int8)
        owner = np.take_along_axis(slots, pick.astype(np.intp), axis=1)
        arrays[f"{side}_codes"] = _class_codes(rng, protos, owner, p_easy=0.12, p_hard=0.35, hard_share=0.15)
        arrays[f"{side}_labels"] = hot
    arrays = {key: arrays[key] for key in ("query_codes", "db_codes", "query_labels", "db_labels")}
    title = f"NUS-WIDE hashing mAP@{k}: {n_q:,} x {n_db:,}, {bits}-bit ±1 codes, {n_labels} multi-hot labels"
    return Workload("nuswide-5000", scale, title, "codes", arrays, "hashing", {"k": k}, SEEDS["nuswide"])
