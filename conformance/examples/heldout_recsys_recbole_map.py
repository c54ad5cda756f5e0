"""MAP@K as RecBole computes it (RUCAIBox/RecBole@7b02be5e, recbole/evaluator/metrics.py, ``MAP.metric_info``
with ``TopkMetric.used_info``/``topk_result`` from base_metric.py and the ``rec.topk`` collector).

Reproduced behaviour (our own numpy code, not theirs):
- the top-K list comes from ``torch.topk`` on the scores, which gives no declared order among tied
  scores; here ``np.argsort`` with its default (non-stable) kind plays that part;
- AP@K sums precision@j at the hits inside the top K and divides by min(|R|, K);
- a user without a relevant item scores 0 and counts in the mean (the cumulative sum is 0);
- the mean over users is rounded to ``metric_decimal_place`` = 4 decimals (overall.yaml default).
Wrapper for the ``distances-relevance`` adapter: scores = -distances; k=None means the whole list.
"""

import numpy as np

DECIMALS = 4


def recbole_map(distances, relevance, k=None):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    n = distances.shape[1]
    k = n if k is None else min(int(k), n)
    per_user = []
    for dist, rel in zip(distances, relevance):
        scores = -dist
        top = np.argsort(-scores)[:k]  # "topk" of the scores
        pos = rel[top].astype(np.float64)
        prec = np.cumsum(pos) / np.arange(1, k + 1)
        denom = min(int(rel.sum()), k)
        per_user.append(float((prec * pos).sum()) / denom if denom > 0 else 0.0)
    return round(float(np.mean(per_user)), DECIMALS)
