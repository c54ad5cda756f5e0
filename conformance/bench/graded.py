"""Graded-relevance workload (TREC-DL / web search): similarity scores, grades 0..3, nDCG@10.

Every query has a few to a hundred-odd judged relevant candidates (log-normal count, median
30 at full scale), graded 1 (related, half of them), 2 (highly relevant, 30%) and 3
(perfectly relevant, 20%), as in TREC Deep Learning qrels; everything else is grade 0, and
about 3% of the queries have no relevant candidate at all (nDCG 0 under ``sklearn-ndcg``).
Scores look like a dense retriever's cosine similarities: per query a level, a spread and a
difficulty; a candidate of grade g scores ``level + spread * (z + difficulty * shift[g])``
with ``z`` standard normal, so higher grades score higher on average and hard queries mix
them with the clutter.  Scores are float32 rounded to 3 decimals, as run files written with
``%.3f`` are, so ties occur as in real score files: at full scale two queries in three have
tied scores within their top 11, and the tie-averaged nDCG@10 (``sklearn-ndcg``, about 0.59,
a TREC-DL-like value) differs from the stable-order one on about 30% of the queries (2 of the
36 smoke queries).
"""

from __future__ import annotations

import numpy as np
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload

#: score shift of grades 0..3, in units of the query's spread (scaled by its difficulty)
_GRADE_SHIFT = np.array([0.0, 2.2, 3.2, 4.2], dtype=np.float32)
#: shares of grades 1, 2, 3 among the relevant candidates
_GRADE_SHARES = (0.5, 0.3, 0.2)
#: share of the queries without any relevant candidate
_EMPTY_SHARE = 0.03
#: decimals the scores are rounded to (as in a ``%.3f`` run file)
DECIMALS = 3


def _relevant_counts(rng: np.random.Generator, n_q: int, median: float, low: int, high: int) -> np.ndarray:
    """Relevant candidates per query: log-normal around ``median``, clipped; ~3% zero."""
    counts = np.clip(np.round(rng.lognormal(np.log(median), 0.6, n_q)), low, high).astype(np.int64)
    counts[rng.random(n_q) < _EMPTY_SHARE] = 0
    return counts


def graded_scores(n_q: int, n_g: int, median_relevant: float, low: int, high: int, seed: int):
    """``(scores, grades)``: (Q, N) float32 scores rounded to :data:`DECIMALS`, (Q, N) int8 grades.

    Generated one query row at a time (the memory is the two outputs plus one row), from one
    generator in a fixed order, so the arrays depend on the seed only.
    """
    rng = np.random.default_rng(seed)
    counts = _relevant_counts(rng, n_q, median_relevant, low, high)
    level = rng.normal(0.55, 0.05, n_q).astype(np.float32)
    spread = rng.uniform(0.05, 0.08, n_q).astype(np.float32)
    difficulty = rng.uniform(0.5, 1.5, n_q).astype(np.float32)
    scores = np.empty((n_q, n_g), dtype=np.float32)
    grades = np.zeros((n_q, n_g), dtype=np.int8)
    for q in range(n_q):
        columns = rng.choice(n_g, size=int(counts[q]), replace=False)
        row_grades = rng.choice(np.array([1, 2, 3], dtype=np.int8), size=columns.size, p=_GRADE_SHARES)
        grades[q, columns] = row_grades
        row = rng.standard_normal(n_g, dtype=np.float32)
        row[columns] += difficulty[q] * _GRADE_SHIFT[row_grades]
        row *= spread[q]
        row += level[q]
        np.clip(row, -1.0, 1.0, out=row)
        scores[q] = np.round(row, DECIMALS)
    return scores, grades


def graded_ndcg10(scale: str) -> Workload:
    """``graded-ndcg10`` at ``scale``: 1,000 x 50,000 (full) or 36 x 400 (smoke), nDCG@10."""
    if scale == "full":
        n_q, n_g, median, low, high = 1000, 50_000, 30, 3, 150
    else:
        n_q, n_g, median, low, high = 36, 400, 10, 2, 40
    seed = SEEDS["graded"]
    scores, grades = graded_scores(n_q, n_g, median, low, high, seed)
    title = (
        f"graded relevance nDCG@10 (TREC-DL-like): {n_q:,} x {n_g:,} float32 scores rounded to "
        f"{DECIMALS} decimals, grades 0..3, sklearn-ndcg (ties averaged)"
    )
    return Workload(
        "graded-ndcg10",
        scale,
        title,
        "scores",
        {"scores": scores, "relevance": grades},
        "sklearn-ndcg",
        {"k": 10},
        seed,
        metric="ndcg_at_k",
    )
