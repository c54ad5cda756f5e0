"""MAP@k as microsoft/recommenders computes it (recommenders-team/recommenders@b02c95e2,
recommenders/evaluation/python_evaluation.py ``map_at_k`` via ``_get_reciprocal_rank``,
``merge_ranking_true_pred`` and ``get_top_k_items``).

Reproduced behaviour (our own numpy code): top k by prediction, sorted per user with a
multi-column ``sort_values`` (a stable lexsort: tied predictions keep row order, i.e. gallery
order); AP@k = sum over hits in the top k of (hit number / rank), divided by min(|R|, k); a user
with no relevant item is not in ``rating_true`` and so not a common user: left out of the mean;
users with relevant items but no hit count 0.  ``k`` defaults to ``DEFAULT_K`` = 10, as in the
library, so a call without k is MAP@10, not MAP of the whole ranking.
Wrapper for the ``distances-relevance`` adapter: prediction = -distances.
"""

import numpy as np

DEFAULT_K = 10


def msrec_map_at_k(distances, relevance, k=DEFAULT_K):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    vals = []
    for dist, rel in zip(distances, relevance):
        n_rel = int(rel.sum())
        if n_rel == 0:
            continue  # not a common user
        scores = -dist
        order = np.argsort(-scores, kind="stable")[:k]
        hit_ranks = np.flatnonzero(rel[order]) + 1
        rr = sum((i + 1) / r for i, r in enumerate(hit_ranks))
        vals.append(rr / min(n_rel, k))
    return float(np.sum(vals) / len(vals)) if vals else 0.0
