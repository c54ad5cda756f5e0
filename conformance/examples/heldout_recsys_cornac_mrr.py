"""MRR as Cornac computes it when another metric of the run has a cut-off (PreferredAI/cornac@4db147de,
cornac/metrics/ranking.py ``MRR.compute``, cornac/models/recommender.py ``Recommender.rank``,
cornac/eval_methods/base_method.py ``ranking_eval``), e.g. ``metrics=[MRR(), Recall(k=10)]``.

Reproduced behaviour (our own numpy code): ``ranking_eval`` calls ``rank(..., k=max_k)`` with the
largest k of all metrics (10 here), and ``rank`` then sorts only the top 10
(``np.argpartition(scores, -k)``, the top block sorted ascending with numpy's default argsort and
the whole index array reversed); the items past rank 10 stay in argpartition's order, unsorted.
``MRR`` (no k of its own) reads the first positive in that whole list, so a first positive beyond
rank 10 gets the reciprocal of an arbitrary position.  Items seen in training/validation are left
out of the scored items (here: junk removed); a user without a test positive is skipped; a
gallery shorter than 10 items makes ``argpartition`` raise ValueError.
Wrapper for the ``mrr`` adapter with three parameters (MRR of the whole ranking): scores = -distances.
"""

import numpy as np

MAX_K = 10  # from Recall(k=10) in the same metric list


def _cornac_rank(item_indices, item_scores, k):
    part = np.argpartition(item_scores, -k)
    top = part[-k:]
    part[-k:] = top[np.argsort(item_scores[top])]
    return item_indices[part[::-1]]


def cornac_mrr(distances, relevance, junk):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    junk = np.asarray(junk, dtype=bool)
    per_user = {}
    for u, (dist, rel, bad) in enumerate(zip(distances, relevance, junk)):
        gt_pos = np.flatnonzero(rel & ~bad)
        if gt_pos.size == 0:
            continue
        item_indices = np.flatnonzero(~bad)
        ranked = _cornac_rank(item_indices, -dist[item_indices], MAX_K)
        matched = np.flatnonzero(np.isin(ranked, gt_pos))
        per_user[u] = 1.0 / (matched[0] + 1)
    return sum(per_user.values()) / len(per_user)


def cornac_mrr_no_short_raise(distances, relevance, junk):
    """Diagnostic variant: the same partial sort, but cut at min(10, gallery) so short galleries do
    not raise (real Cornac raises there); every value past rank 10 is still in argpartition order."""
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    junk = np.asarray(junk, dtype=bool)
    per_user = {}
    for u, (dist, rel, bad) in enumerate(zip(distances, relevance, junk)):
        gt_pos = np.flatnonzero(rel & ~bad)
        if gt_pos.size == 0:
            continue
        item_indices = np.flatnonzero(~bad)
        ranked = _cornac_rank(item_indices, -dist[item_indices], min(MAX_K, item_indices.size))
        matched = np.flatnonzero(np.isin(ranked, gt_pos))
        per_user[u] = 1.0 / (matched[0] + 1)
    return sum(per_user.values()) / len(per_user)
