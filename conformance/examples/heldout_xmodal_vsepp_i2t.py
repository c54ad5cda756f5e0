"""Image-to-text Recall@K as VSE++ reports it (R@1/5/10 in percent, any of the captions a hit).

Reproduces fartashf/vsepp@abe382f ``evaluation.py`` ``i2t``: for each image the captions are
ordered by ``numpy.argsort(similarity)[::-1]`` (numpy's default quicksort, then reversed), the
query's rank is the best (smallest) position among its own captions, and R@K is
``100 * (number of queries whose best rank < K) / number of queries``.  So Recall@K is the hit
rate (any relevant item in the top K), in percent; ties come from an unstable sort read
backwards; a query without a relevant caption keeps the initial rank 1e20 and counts as a miss.

Wrapper: the harness gives distances (smaller is better); VSE++ gets similarities, so
``similarity = -distances``; the 5-captions-per-image structure is generalised to the boolean
relevance row.
"""

import numpy as np


def i2t_recall(similarity, relevance, k):
    ranks = np.zeros(len(similarity))
    for q in range(len(similarity)):
        order = np.argsort(similarity[q])[::-1]
        best = 1e20
        for item in np.flatnonzero(relevance[q]):
            pos = np.where(order == item)[0][0]
            if pos < best:
                best = pos
        ranks[q] = best
    return 100.0 * len(np.where(ranks < k)[0]) / len(ranks)


def recall_at_k(distances, relevance, k):
    return i2t_recall(-np.asarray(distances, dtype=float), np.asarray(relevance, dtype=bool), k)
