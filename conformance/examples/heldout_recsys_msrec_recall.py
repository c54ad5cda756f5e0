"""Recall@k as microsoft/recommenders computes it (recommenders-team/recommenders@b02c95e2,
recommenders/evaluation/python_evaluation.py ``recall_at_k`` via ``merge_ranking_true_pred`` and
``get_top_k_items``).

Reproduced behaviour (our own numpy code): the top k by prediction, tied predictions in row order
(stable multi-column ``sort_values``); recall of a user = hits in the top k / |relevant items|;
users without any relevant item are not in ``rating_true``, so not common users, and are left out
of the mean (``n_users`` counts common users); when no user has a single hit the function
returns 0.0 early (the same value the mean would give).
Wrapper for the ``recall-at-k`` adapter: prediction = -distances.
"""

import numpy as np


def msrec_recall_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    ratios = []
    for dist, rel in zip(distances, relevance):
        n_rel = int(rel.sum())
        if n_rel == 0:
            continue
        top = np.argsort(dist, kind="stable")[:k]
        ratios.append(rel[top].sum() / n_rel)
    if not ratios or sum(ratios) == 0:
        return 0.0
    return float(sum(ratios) / len(ratios))
