"""Minimal reproduction (not real code): nDCG@k with binary gains, as sentence-transformers'
``InformationRetrievalEvaluator`` computes them (see ``heldout2_ir_st_ndcg.py``), with everything
else catalogued: a stable descending sort, 1/log2(rank + 1), the ideal DCG of min(R, k) ones, a
row without a relevant item scoring 0. Every relevant item has gain 1 whatever its grade, so on
0/1 grades it equals ``sklearn-ndcg`` with ``ties=stable``; only grades above 1 separate it.

Adapter ``sklearn-ndcg``: y_true grades (> 0 relevant), y_score larger is better, ``k=None`` the
whole row.
"""

import numpy as np


def binary_gain_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    k = n if k is None else min(int(k), n)
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    vals = []
    for grades, scores in zip(y_true, y_score):
        pos = grades > 0
        n_rel = int(pos.sum())
        if n_rel == 0:
            vals.append(0.0)
            continue
        top = np.argsort(-scores, kind="stable")[:k]
        vals.append(float(disc[pos[top]].sum() / disc[: min(n_rel, k)].sum()))
    return float(np.mean(vals))
