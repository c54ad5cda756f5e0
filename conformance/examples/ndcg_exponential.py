"""nDCG with exponential gains, 2**g - 1, where the protocol says linear gains (spec §7 gain).

Learning-to-rank code (LightGBM, XGBoost, ranx ``ndcg_burges``) gains ``2**g - 1``; scikit-learn
and trec_eval gain ``g``.  The two agree on binary relevance and differ on grades >= 2.
Ties are averaged as scikit-learn does.  Expected: flagged on ``spec §7 gain=linear`` under
``sklearn-ndcg``; ``--identify`` says "matches `sklearn-ndcg` except gain: exponential".
"""

import numpy as np


def ndcg_score(y_true, y_score, k=None):
    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    k = n if k is None else k
    disc = 1.0 / np.log2(np.arange(n) + 2.0)
    disc[k:] = 0.0
    out = []
    for grades, scores in zip(y_true, y_score):
        gains = 2.0**grades - 1.0
        ideal = float(np.dot(np.sort(gains)[::-1], disc))
        if ideal == 0:
            out.append(0.0)
            continue
        dcg = 0.0
        for s in np.unique(scores):  # each tie group: its mean gain on each of its positions
            members = scores == s
            first = int((scores > s).sum())
            dcg += gains[members].mean() * disc[first : first + int(members.sum())].sum()
        out.append(dcg / ideal)
    return float(np.mean(out))
