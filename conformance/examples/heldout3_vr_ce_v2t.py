"""Video-to-text R@K as Collaborative Experts' ``v2t_metrics`` computes it (tie positions averaged).

Reproduces albanie/collaborative-experts@7eb3b9d ``model/metric.py`` ``v2t_metrics`` +
``cols2metrics`` (``break_ties = "averaging"``; m-bain/frozen-in-time@e1f13e1 ships the same
``v2t_metrics``).  For each video query the distance row (negated similarities) is sorted with
``np.sort``; for every caption of the video the positions of the sorted row equal to that
caption's distance are found and their *mean* is the caption's rank (a mid-rank: a tie group at
positions p..p+t-1 gives p + (t - 1) / 2); the query's rank is the smallest rank over its
captions (+inf when it has none, which then never counts as a hit).  Then
R@1 = ``100 * #(rank == 0) / #queries`` and R@K = ``100 * #(rank < K) / #queries`` for K = 5, 10,
50 (the mid-rank is compared with K, so a tie group straddling K counts fully or not at all, and
R@1 needs an untied first place).  Every query is in the denominator.

Wrapper (``recall-at-k``): sims = -distances; a query's captions are its relevant items (the
code's contiguous block of ``num_caps // num_queries`` captions generalised to the relevance row).
"""

import numpy as np


def v2t_ranks(dists, caption_sets):
    ranks = []
    for row, captions in zip(dists, caption_sets):
        sorted_row = np.sort(row)
        best = np.inf
        for jj in captions:
            rank = np.where(sorted_row - row[jj] == 0)[0].mean()
            if rank < best:
                best = rank
        ranks.append(best)
    return np.array(ranks)


def v2t_recall(sims, caption_sets, k):
    cols = v2t_ranks(-sims, caption_sets)
    if k == 1:
        return 100 * float(np.sum(cols == 0)) / len(cols)
    return 100 * float(np.sum(cols < k)) / len(cols)


def recall_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    caption_sets = [np.flatnonzero(r) for r in relevance]
    return v2t_recall(-distances, caption_sets, int(k))
