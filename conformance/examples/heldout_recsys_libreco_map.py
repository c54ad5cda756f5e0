"""MAP@k as LibRecommender computes it (massquantity/LibRecommender@7463d9d,
libreco/evaluation/metrics.py ``average_precision_at_k`` and ``listwise_scores``, with the top-k list
of libreco/recommendation/ranking.py ``rank_recommendations``/``partition_select``).

Reproduced behaviour (our own numpy code): the k recommendations are chosen with
``np.argpartition(preds, -k)`` and ordered by ``np.argsort(preds)[::-1]`` (default, non-stable
kind, reversed), so tied scores come in no declared order; AP@k is the mean of the precisions at
the hits inside the top k, i.e. divided by the number of hits (0 without a hit, also for a user
without a positive, which counts in the mean); precisions are means of a float32 0/1 vector, so
the AP and the final ``np.mean`` are float32 numbers (about 7 significant digits); k above the
number of items raises ValueError, as ``rank_recommendations`` does.
Wrapper for the ``distances-relevance`` adapter: preds = -distances, k=None = every item.
"""

import numpy as np


def libreco_map(distances, relevance, k=None):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    n_items = distances.shape[1]
    k = n_items if k is None else int(k)
    if k > n_items:
        raise ValueError(f"`n_rec` {k} exceeds num of items {n_items}")
    scores = []
    for dist, rel in zip(distances, relevance):
        preds = -dist
        chosen = np.argpartition(preds, -k)[-k:]
        reco = chosen[np.argsort(preds[chosen])[::-1]]
        flags = np.zeros(k, np.float32)
        flags[rel[reco]] = 1
        if flags.sum() == 0:
            scores.append(0)
            continue
        precisions = [np.mean(flags[: i + 1]) for i in range(k) if flags[i]]
        scores.append(np.mean(precisions))
    return np.mean(scores)
