"""NDCG@K as RecBole computes it (RUCAIBox/RecBole@7b02be5e, recbole/evaluator/metrics.py, ``NDCG.metric_info``).

Reproduced behaviour (our own numpy code): RecBole turns the ground truth into a 0/1 matrix of
positives (``pos_matrix[u, i] = 1``), so every relevant item has gain 1 whatever its grade; DCG@K
sums 1/log2(rank+1) over positives in the top K; the ideal DCG is the sum of 1/log2(i+1) for
i = 1..min(|R|, K); a user without a positive scores 0; ``torch.topk`` orders ties in no declared
way (here numpy's default argsort); the mean over users is rounded to 4 decimals.
Wrapper for the ``sklearn-ndcg`` adapter: y_true's grades > 0 are the positives, y_score larger is
better, k=None means the whole row.
"""

import numpy as np


def recbole_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    k = n if k is None else min(int(k), n)
    disc = 1.0 / np.log2(np.arange(1, k + 1) + 1.0)
    vals = []
    for grades, scores in zip(y_true, y_score):
        pos = grades > 0
        top = np.argsort(-scores)[:k]
        dcg = float(disc[pos[top]].sum())
        n_ideal = min(int(pos.sum()), k)
        idcg = float(disc[:n_ideal].sum()) if n_ideal > 0 else float(disc.sum())
        vals.append(dcg / idcg)
    return round(float(np.mean(vals)), 4)
