"""MAP@K as implicit computes it (benfred/implicit@8a95dbe, implicit/evaluation.pyx, ``ranking_metrics_at_k``,
the ``map`` entry; top K from ``MatrixFactorizationBase.recommend`` -> implicit/cpu/topk.pyx -> cpu/select.h).

Reproduced behaviour (our own code): users without a test item are not evaluated; the top K ids come from a
min-heap of (score, id) pairs filled in id order, where a later item replaces the heap's smallest pair only when
its score is strictly greater, and the heap is then sorted descending by (score, id) (so tied items are neither in
gallery order nor reversed); when K exceeds the number of items the id rows stay zero-padded, so item 0 is read
again at every padded rank; AP of a user sums hits/rank over the top K and divides by min(K, |test items|); the
result is the mean over evaluated users; K defaults to 10.
Wrapper for the ``distances-relevance`` adapter: score = -distance, test items = relevance > 0.
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


def implicit_map(distances, relevance, K=10):
    scores = -np.asarray(distances, dtype=np.float64)
    likes_rows = np.asarray(relevance) > 0
    mean_ap, total = 0.0, 0.0
    for row, likes in zip(scores, likes_rows):
        n_likes = int(likes.sum())
        if n_likes == 0:
            continue
        ids = _select_top_k(row, K)
        ap, hit = 0.0, 0.0
        for i in range(K):
            if likes[ids[i]]:
                hit += 1
                ap += hit / (i + 1)
        mean_ap += ap / min(K, n_likes)
        total += 1
    return mean_ap / total


def implicit_map_k(distances, relevance, k):
    """The same with K always passed (no default of 10), to see the rest of the behaviour apart from the default."""
    return implicit_map(distances, relevance, K=np.shape(distances)[1] if k is None else int(k))
