"""Recall@k as spotlight computes it (maciejkula/spotlight@75f4c8c, spotlight/evaluation.py,
``precision_recall_score`` + ``_get_precision_recall``, the recall half, averaged over users as its examples do).

Reproduced behaviour (our own code): users without a test item are skipped; the ranking is
``predictions.argsort()`` on the negated predictions with numpy's default (not stable) sort; recall of a user is the
number of test items among the first k divided by the number of test items; the report is the mean over users.
Wrapper for the ``recall-at-k`` adapter: negated prediction = distance, test items = relevance > 0.
"""

import numpy as np


def spotlight_recall(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    recalls = []
    for dist, rel in zip(distances, relevance):
        targets = np.flatnonzero(rel)
        if not len(targets):
            continue
        predictions = dist.argsort()[:k]
        num_hit = len(set(predictions.tolist()) & set(targets.tolist()))
        recalls.append(float(num_hit) / len(targets))
    return float(np.array(recalls).squeeze().mean())
