"""Text-to-video R@K as Frozen-in-Time's ``t2v_metrics`` computes it (ties broken optimistically).

Reproduces m-bain/frozen-in-time@e1f13e1 ``model/metric.py`` ``t2v_metrics`` + ``cols2metrics``:
distances are the negated similarities, each row is sorted with ``np.sort`` and the rank of a
text query is a position of the sorted row whose value equals its ground-truth video's distance.
When some ground truth is tied (more matches than queries) the code keeps, per row, the first
match (``break_ties = "optimistically"``): the ground truth is placed before every video tied
with it.  Queries switched off by ``query_masks`` are dropped and the denominator becomes the
number of kept queries.  R@K = ``100 * #(rank < K) / #kept queries`` (percent; R1 tests
``rank == 0``).  If every query is masked the division is 0/0 in numpy: NaN.

Wrapper (``recall-at-k``): sims = -distances; the ground-truth video of a query is its relevant
item with the smallest distance (exactly the GT when a query has one relevant item, as for a
caption); a query without a relevant item is masked out through ``query_masks`` (its gt column is
set to 0 so that the row still matches, as the code requires).
"""

import numpy as np


def t2v_recall(sims, gt_cols, query_masks, k):
    dists = -sims
    sorted_dists = np.sort(dists, axis=1)
    gt_dists = dists[np.arange(len(dists)), gt_cols][:, None]
    rows, cols = np.where(sorted_dists - gt_dists == 0)
    if rows.size > len(dists):
        _, first = np.unique(rows, return_index=True)
        cols = cols[first]
    keep = query_masks.reshape(-1).astype(bool)
    cols = cols[keep]
    num_queries = query_masks.sum()
    if k == 1:
        return 100 * float(np.sum(cols == 0)) / num_queries
    return 100 * float(np.sum(cols < k)) / num_queries


def recall_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    gt_cols = np.argmin(np.where(relevance, distances, np.inf), axis=1)
    masks = relevance.any(axis=1).astype(np.int64)
    return float(t2v_recall(-distances, gt_cols, masks, int(k)))
