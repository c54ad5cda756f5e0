"""Text-to-video R@K as CLIP4Clip reports it (percent; every tied position of the GT score counted).

Reproduces ArrowLuo/CLIP4Clip@508ffa3 ``metrics.py`` ``compute_metrics``: each row of the
text-video similarity matrix is sorted (``np.sort`` of the negated scores) and the positions whose
value equals the ground-truth (diagonal) score are collected with ``np.where(... == 0)``.  Every
such position becomes one entry of the rank list: a ground truth tied with t - 1 other videos adds
t entries (its tie group's positions p, ..., p + t - 1), not one.  R@K is
``100 * (#entries with position < K) / #entries``, so the denominator is the number of entries,
not the number of queries (with no ties the two agree: the hit rate in percent).

Wrapper (``recall-at-k``): distances are the negated similarities (so ``np.sort`` of the distances
is the same sort); the "diagonal" score of a query is the smallest distance among its relevant
items (exactly the diagonal when a query has one relevant item, as in CLIP4Clip).  A query without
a relevant item gets +inf, which equals no finite distance and so adds no entry (it is left out).
"""

import numpy as np


def clip4clip_recall(neg_sim, gt_neg_sim, k):
    sorted_rows = np.sort(neg_sim, axis=1)
    _, pos = np.nonzero(sorted_rows - gt_neg_sim[:, None] == 0)
    return float(np.count_nonzero(pos < k)) * 100 / len(pos)


def recall_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    gt = np.where(relevance, distances, np.inf).min(axis=1)
    return clip4clip_recall(distances, gt, int(k))
