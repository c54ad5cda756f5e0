"""MRR@K as RecBole computes it (RUCAIBox/RecBole@7b02be5e, recbole/evaluator/metrics.py, ``MRR.metric_info``).

Reproduced behaviour (our own numpy code): 1/rank of the first positive within the top K, 0 when
none is there (also for a user without positives); ``torch.topk`` orders tied scores in no
declared way (here numpy's default argsort); the mean over users rounded to 4 decimals.
In full-sort evaluation RecBole sets the scores of already-seen items to -inf; they end up below
every other item, which for MRR is the same as removing them, so junk is removed here.
Wrapper for the ``mrr`` adapter (distances, relevance, junk, k).
"""

import numpy as np


def recbole_mrr(distances, relevance, junk, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    junk = np.asarray(junk, dtype=bool)
    vals = []
    for dist, rel, bad in zip(distances, relevance, junk):
        scores = np.where(bad, -np.inf, -dist)
        top = np.argsort(-scores)[:k]
        hits = np.flatnonzero(rel[top] & ~bad[top])
        vals.append(1.0 / (hits[0] + 1) if hits.size else 0.0)
    return round(float(np.mean(vals)), 4)
