"""Precision@K as implicit computes it (benfred/implicit@8a95dbe, implicit/evaluation.pyx, ``ranking_metrics_at_k``,
the ``precision`` entry; top K from implicit/cpu/select.h via ``recommend``).

Reproduced behaviour (our own code): users without a test item are not evaluated; the top K ids come from a
min-heap of (score, id) pairs filled in id order (a later item enters only with a strictly greater score than the
heap's smallest pair) and sorted descending by (score, id); rows are zero-padded when K exceeds the items; the
value is one ratio over all evaluated users: the total number of hits in the top K divided by the total of
min(K, |test items|) (a pooled, capped recall rather than a mean of per-user values).
Wrapper for the ``recall-at-k`` adapter: score = -distance, test items = relevance > 0.
"""

import heapq

import numpy as np


def _select_top_k(scores, k):
    heap = []
    for col, score in enumerate(scores):
        if len(heap) < k or score > heap[0][0]:
            if len(heap) >= k:
                heapq.heappop(heap)
            heapq.heappush(heap, (float(score), col))
    ids = [col for _, col in sorted(heap, reverse=True)]
    return ids + [0] * (k - len(ids))


def implicit_precision(distances, relevance, k):
    scores = -np.asarray(distances, dtype=np.float64)
    likes_rows = np.asarray(relevance) > 0
    relevant, pr_div = 0.0, 0.0
    for row, likes in zip(scores, likes_rows):
        n_likes = int(likes.sum())
        if n_likes == 0:
            continue
        pr_div += min(k, n_likes)
        ids = _select_top_k(row, k)
        relevant += sum(1.0 for i in range(k) if likes[ids[i]])
    return relevant / pr_div
