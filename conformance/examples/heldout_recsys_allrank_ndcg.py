"""NDCG as allRank computes it (allegro/allRank@c884756, allrank/models/metrics.py ``ndcg`` and ``dcg``,
averaged over slates as the training loop reports it).

Reproduced behaviour (our own numpy code): gain 2^grade - 1 (the default ``gain_function``),
discount 1/log2(rank + 1), the ideal DCG from the whole slate sorted by its true grades, a slate
whose ideal DCG is 0 scores ``filler_value`` = 1.0 (not 0), the cut-off ``at`` clipped to the
slate length; the ranking by ``torch.sort(descending=True)``, which on CPU does not keep tied
items in order (here numpy's default argsort of -score).  Padding (label -1) never occurs here.
Wrapper for the ``sklearn-ndcg`` adapter: k=None = the whole slate.
"""

import numpy as np


def allrank_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true, dtype=np.float64)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    at = n if k is None else min(int(k), n)
    disc = 1.0 / np.log2(np.arange(n) + 2.0)
    vals = []
    for grades, scores in zip(y_true, y_score):
        gains = 2.0 ** grades[np.argsort(-scores)] - 1.0
        ideal = 2.0 ** np.sort(grades)[::-1] - 1.0
        dcg = float((gains * disc)[:at].sum())
        idcg = float((ideal * disc)[:at].sum())
        vals.append(dcg / idcg if idcg != 0 else 1.0)
    return float(np.mean(vals))
