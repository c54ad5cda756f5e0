"""Score-matrix workloads with binary relevance, and the gallery-size scaling series.

``scores-map`` and ``scores-map100`` are one input: 1,000 queries x 50,000 float32 similarity
scores, as a dense retriever's cosine similarities written to a run file with ``%.3f`` (so
tied scores occur, many of them inside the top 100), and a (Q, N) boolean relevance matrix
with about 1% relevant items per query (log-normal per query, median 500 at full scale, at
least one).  Per query a level, a spread and a difficulty; a relevant item scores
``level + spread * (z + difficulty * shift)`` with ``z`` standard normal, a non-relevant one
``level + spread * z``.  Scores are clipped to ``[0.001, 1]``: positive, as cosine similarities
of a trained retriever are (torchmetrics counts an item with a score <= 0 as non-relevant,
see :mod:`.peers`).  ``scores-map`` is the full mAP (``hashing`` preset, ``k=None``: stable
ties, precision-sum AP), ``scores-map100`` mAP@100 (``k=100``, AP@k divided by the hits).

The scaling series times the same evaluation as the gallery grows, 100 queries x N for N in
10k, 100k, 1M and 4M (:data:`SCALING_SIZES`), for the exponent a of ``time ~ N**a`` and the
peak extra memory per size (``bench report`` fits a):

* ``scaling-floats-<size>``: float32 scores of the model above, not rounded (few ties), with
  a relevance matrix (1% relevant), full mAP;
* ``scaling-codes-<size>``: 64-bit ±1 codes (int8) of 100 classes (one query per class,
  database classes uniform, so 1% relevant), single class ids as labels, mAP@ALL.

Large galleries are generated block by block from one fixed-seed generator (a query row at a
time for scores, blocks of :data:`CODE_BLOCK` items for codes), so the memory is the outputs
plus one block, and the arrays depend on the seed only.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.bench.hashing import _class_codes
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload

#: decimals the scores of ``scores-map`` are rounded to (a ``%.3f`` run file: ties)
DECIMALS = 3
#: median share of relevant items per query
RELEVANT_SHARE = 0.01
#: score shift of a relevant item, in units of the query's spread (before its difficulty)
RELEVANT_SHIFT = 2.0
#: gallery sizes of the scaling series, by name suffix
SCALING_SIZES: Dict[str, int] = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000, "4m": 4_000_000}
#: smoke-scale gallery sizes of the scaling series (small enough for the exact reference)
SMOKE_SIZES: Dict[str, int] = {"10k": 60, "100k": 150, "1m": 400, "4m": 900}
#: rows of ±1 codes generated at a time
CODE_BLOCK = 1 << 18


def scores_with_relevance(
    n_q: int, n_g: int, seed: int, decimals: Optional[int] = DECIMALS, share: float = RELEVANT_SHARE
) -> Tuple[np.ndarray, np.ndarray]:
    """``(scores, relevance)``: (Q, N) float32 similarity scores and (Q, N) bool relevance.

    Generated one query row at a time from one generator in a fixed order.  ``decimals``
    None keeps the float32 values (few ties); otherwise they are rounded (ties).
    """
    rng = np.random.default_rng(seed)
    shares = np.clip(rng.lognormal(np.log(share), 0.6, n_q), share / 20, share * 5)
    level = rng.normal(0.55, 0.05, n_q).astype(np.float32)
    spread = rng.uniform(0.05, 0.08, n_q).astype(np.float32)
    difficulty = rng.uniform(0.5, 1.5, n_q).astype(np.float32)
    scores = np.empty((n_q, n_g), dtype=np.float32)
    relevance = np.empty((n_q, n_g), dtype=bool)
    for q in range(n_q):
        rel = rng.random(n_g, dtype=np.float32) < shares[q]
        if not rel.any():  # every query of a qrels file has a relevant item
            rel[rng.integers(n_g)] = True
        row = rng.standard_normal(n_g, dtype=np.float32)
        row[rel] += np.float32(difficulty[q] * RELEVANT_SHIFT)
        row *= spread[q]
        row += level[q]
        np.clip(row, 0.001, 1.0, out=row)
        scores[q] = row if decimals is None else np.round(row, decimals)
        relevance[q] = rel
    return scores, relevance


def scores_map(scale: str, k: Optional[int], name: str) -> Workload:
    """``scores-map`` (``k`` None) or ``scores-map100`` (``k`` 100): 1,000 x 50,000 or 30 x 800 (smoke)."""
    n_q, n_g = (1000, 50_000) if scale == "full" else (30, 800)
    seed = SEEDS["scores-map"]
    # smoke: a 2.5% share keeps ~20 relevant items per query in 800 (1% would leave most with 8)
    scores, relevance = scores_with_relevance(n_q, n_g, seed, share=RELEVANT_SHARE if scale == "full" else 0.025)
    if scale == "smoke" and k is not None:
        k = 40
    at = "" if k is None else f"@{k}"
    title = (
        f"scores mAP{at}: {n_q:,} x {n_g:,} float32 similarity scores rounded to {DECIMALS} decimals (ties), "
        f"binary relevance (~{RELEVANT_SHARE:.0%} relevant per query)"
    )
    return Workload(name, scale, title, "scores", {"scores": scores, "relevance": relevance}, "hashing", {"k": k}, seed)


def _size(scale: str, size: str) -> int:
    if size not in SCALING_SIZES:
        raise ValueError(f"size: expected one of {list(SCALING_SIZES)}, got {size!r}")
    return SCALING_SIZES[size] if scale == "full" else SMOKE_SIZES[size]


def scaling_floats(scale: str, size: str) -> Workload:
    """``scaling-floats-<size>``: 100 x N float32 scores (4 x a few hundred at smoke scale), full mAP."""
    n_q, n_g = (100 if scale == "full" else 4), _size(scale, size)
    seed = SEEDS["scaling-floats"]
    # smoke galleries are tiny: a 5% share keeps several relevant items per query
    scores, relevance = scores_with_relevance(
        n_q, n_g, seed, decimals=None, share=RELEVANT_SHARE if scale == "full" else 0.05
    )
    title = f"scaling, float32 scores: {n_q:,} x {n_g:,}, binary relevance, full mAP"
    return Workload(
        f"scaling-floats-{size}",
        scale,
        title,
        "scores",
        {"scores": scores, "relevance": relevance},
        "hashing",
        {"k": None},
        seed,
    )


def scaling_codes(scale: str, size: str) -> Workload:
    """``scaling-codes-<size>``: 100 x N 64-bit ±1 codes of 100 classes (class ids as labels), mAP@ALL."""
    classes, bits = (100, 64) if scale == "full" else (4, 64)
    n_q, n_g = classes, _size(scale, size)
    seed = SEEDS["scaling-codes"]
    rng = np.random.default_rng(seed)
    protos = rng.choice(np.array([-1, 1], dtype=np.int8), size=(classes, bits))
    q_cls = np.arange(classes)
    db_cls = rng.integers(0, classes, size=n_g)
    query_codes = _int8_codes(rng, protos, q_cls)
    db_codes = np.empty((n_g, bits), dtype=np.int8)
    for start in range(0, n_g, CODE_BLOCK):
        db_codes[start : start + CODE_BLOCK] = _int8_codes(rng, protos, db_cls[start : start + CODE_BLOCK])
    title = f"scaling, 64-bit ±1 codes: {n_q:,} x {n_g:,}, {classes} classes, mAP@ALL"
    return Workload(
        f"scaling-codes-{size}",
        scale,
        title,
        "codes",
        {
            "query_codes": query_codes,
            "db_codes": db_codes,
            "query_labels": q_cls.astype(np.int64),
            "db_labels": db_cls.astype(np.int64),
        },
        "hashing",
        {"k": None},
        seed,
    )


def _int8_codes(rng: np.random.Generator, protos: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """±1 int8 codes of the classes ``cls`` (the hashing generator's bit flips)."""
    owner = np.broadcast_to(cls[:, None], (cls.size, protos.shape[1]))
    return _class_codes(rng, protos, owner, p_easy=0.10, p_hard=0.40, hard_share=0.15).astype(np.int8)
