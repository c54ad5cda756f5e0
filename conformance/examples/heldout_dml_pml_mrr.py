"""``mean_reciprocal_rank`` of pytorch-metric-learning's AccuracyCalculator
(KevinMusgrave/pytorch-metric-learning@216a792, ``src/pytorch_metric_learning/utils/accuracy_calculator.py``,
``mean_reciprocal_rank``, with the calculator's removal of "lone" queries), rewritten in numpy.

Behaviour reproduced: over the k nearest neighbours (ties in gallery order, as the exact k-NN
search gives them), 1 / rank of the first relevant neighbour; 0 when none of the k is relevant;
a query with no relevant item in the whole reference set is left out. The library has no junk:
the thin wrapper ``mrr`` drops the junk items from the gallery before the call.
"""

import numpy as np


def pml_mrr(distances, relevance, k=None):
    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    out = []
    for d, r in zip(dist, rel):
        if not r.any():
            continue
        n = len(d) if k is None else min(int(k), len(d))
        same = r[np.argsort(d, kind="stable")[:n]]
        out.append(1.0 / (np.argmax(same) + 1) if same.any() else 0.0)
    return float(np.mean(out))


def mrr(distances, relevance, junk, k=None):
    """adapter wrapper: drop each query's junk items, then the function above per query."""
    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    jk = np.zeros_like(rel) if junk is None else np.asarray(junk, dtype=bool)
    vals = []
    for d, r, j in zip(dist, rel, jk):
        if not r[~j].any():
            continue
        vals.append(pml_mrr(d[~j][None, :], r[~j][None, :], k))
    return float(np.mean(vals))
