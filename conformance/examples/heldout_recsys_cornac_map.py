"""MAP as Cornac computes it (PreferredAI/cornac@4db147de, cornac/metrics/ranking.py ``MAP.compute``,
averaged by cornac/eval_methods/base_method.py ``ranking_eval``).

Reproduced behaviour (our own numpy code): no cut-off, the whole list of scored items; the rank of
an item is ``rankdata(-score, "max")``, i.e. the last position of its tie group, and the count of
relevant items above it is likewise the count of relevant items scoring at least as high, so a
tie group enters all at once (grouped ties, as in a precision-recall curve); AP is the mean over
the relevant items of (relevant items scoring >= it) / (items scoring >= it); a user without a
test positive is skipped by ``ranking_eval`` (``continue``) and the mean is over the others
(``sum(values) / len(values)``, so a batch without any such user raises ZeroDivisionError).
Wrapper for the ``distances-relevance`` adapter: scores = -distances.
"""

import numpy as np


def cornac_map(distances, relevance):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    per_user = {}
    for u, (dist, rel) in enumerate(zip(distances, relevance)):
        if not rel.any():
            continue
        scores = -dist
        pos_scores = scores[rel]
        rank = np.array([(scores >= s).sum() for s in pos_scores], dtype=np.float64)
        above = np.array([(pos_scores >= s).sum() for s in pos_scores], dtype=np.float64)
        per_user[u] = float((above / rank).mean())
    return sum(per_user.values()) / len(per_user)
