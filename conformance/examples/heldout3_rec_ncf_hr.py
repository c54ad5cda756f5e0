"""HR@K as the original NCF code evaluates it (hexiangnan/neural_collaborative_filtering@4aab159, evaluate.py,
``eval_one_rating`` + ``getHitRatio``; the mean over test ratings is what ``NCF.py`` prints).

Reproduced behaviour (our own code): one test rating is a (user, held-out item) pair; its candidates are the
user's sampled negatives followed by the held-out item (``items.append(gtItem)``), scored into a dict in that
order; the top K come from ``heapq.nlargest(K, dict, key=dict.get)``, which keeps equal scores in insertion order,
so the held-out item comes after every negative with the same score; HR is 1 when the held-out item is in the top
K, and the reported HR is the plain mean over test ratings (not over users).
Wrapper for the ``recall-at-k`` adapter: score = -distance; each relevant item of a query is one test rating whose
negatives are the query's non-relevant items in gallery order; a query without a relevant item gives no rating.
"""

import heapq

import numpy as np


def _eval_one_rating(item_scores, gt_item, k):
    ranklist = heapq.nlargest(k, item_scores, key=item_scores.get)
    return 1 if gt_item in ranklist else 0


def ncf_hit_ratio(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    hits = []
    for dist, rel in zip(distances, relevance):
        negatives = [int(j) for j in np.flatnonzero(~rel)]
        for gt in np.flatnonzero(rel):
            items = negatives + [int(gt)]
            item_scores = {item: -dist[item] for item in items}
            hits.append(_eval_one_rating(item_scores, int(gt), int(k)))
    return float(np.array(hits).mean())
