"""Recall@k of msight-tech/research-ms-loss (msight-tech/research-ms-loss@b68507d,
``ret_benchmark/data/evaluations/ret_metric.py``, ``RetMetric.recall_k``, separate query and gallery
sets); the same counting is Proxy-Anchor's ``evaluate_cos_Inshop.recall_k``.

Behaviour reproduced: no ranking is built; per query the best relevant score is the threshold
and the query is a hit when fewer than k non-relevant items score *strictly* better than it (so a
non-relevant item tied with the best relevant one does not count against it: relevant items first
inside a tie group). Recall@k is the hit rate over all queries. A query without a relevant item
makes the max over an empty set raise (ValueError).
Written on distances (smaller is better): threshold = smallest relevant distance.
"""

import numpy as np


def msloss_recall_at_k(distances, relevance, k):
    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    hits = 0
    for d, r in zip(dist, rel):
        best_pos = np.min(d[r])  # raises on a query without a relevant item
        if np.sum(d[~r] < best_pos) < k:
            hits += 1
    return float(hits) / len(dist)
