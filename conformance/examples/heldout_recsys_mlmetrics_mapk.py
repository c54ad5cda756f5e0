"""MAP@k as ml_metrics computes it (benhamner/Metrics@9a637ae, Python/ml_metrics/average_precision.py
``apk``/``mapk``), fed the way a Kaggle-style script does: predicted = np.argsort(distances)[:k].

Reproduced behaviour (our own numpy code): AP@k = sum over the first k predicted items that are
relevant of (hits so far / position), divided by min(|actual|, k); an empty ``actual`` scores 0.0
and counts in ``np.mean``; ``k`` defaults to 10 as in ``apk``/``mapk``, so a call without k
is MAP@10; the ranking uses numpy's default argsort (not stable for large tie groups).
Wrapper for the ``distances-relevance`` adapter.
"""

import numpy as np


def mlmetrics_mapk(distances, relevance, k=10):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    scores = []
    for dist, rel in zip(distances, relevance):
        actual = set(np.flatnonzero(rel).tolist())
        predicted = np.argsort(dist)[:k].tolist()
        if not actual:
            scores.append(0.0)
            continue
        hits, s = 0.0, 0.0
        for i, p in enumerate(predicted):
            if p in actual:
                hits += 1.0
                s += hits / (i + 1.0)
        scores.append(s / min(len(actual), k))
    return float(np.mean(scores))
