"""Recall@K as LightGCN evaluates it (gusye1234/LightGCN-PyTorch@947ca2b, code/utils.py
``RecallPrecision_ATk`` with ``getLabel`` and code/Procedure.py ``Test``).

Reproduced behaviour (our own numpy code): the top K items come from ``torch.topk`` on the ratings
(no declared order of tied scores; here numpy's default argsort); recall of a user is the hits in
the top K divided by |test items| (a user with no test item gives 0/0 = nan, numpy only warns);
the per-user values are summed and divided by the number of users (no rounding).
Wrapper for the ``recall-at-k`` adapter: ratings = -distances.
"""

import numpy as np


def lightgcn_recall(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    rating = -distances
    total = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        for rat, rel in zip(rating, relevance):
            top = np.argsort(-rat)[:k]
            right = float(rel[top].sum())
            total += np.float64(right) / np.float64(rel.sum())
    return float(total / len(rating))
