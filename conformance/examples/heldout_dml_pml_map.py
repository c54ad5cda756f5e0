"""``mean_average_precision`` (mAP@k) of pytorch-metric-learning's AccuracyCalculator
(KevinMusgrave/pytorch-metric-learning@216a792, ``src/pytorch_metric_learning/utils/accuracy_calculator.py``,
``mean_average_precision`` with ``at_r=False``, plus the calculator's removal of "lone" queries),
rewritten with numpy on a distance matrix.

Behaviour reproduced: the k nearest neighbours (k=None: the whole gallery) in distance order, ties
in gallery order (the exact k-NN search returns equal distances by index); AP@k sums the
precision at each hit inside the k neighbours and divides by R, the number of relevant items in
the whole gallery (not by the hits, not by min(k, R)); a query with R = 0 ("lone" label) is left
out of the mean.
"""

import numpy as np


def pml_map_at_k(distances, relevance, k=None):
    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    n = dist.shape[1] if k is None else min(int(k), dist.shape[1])
    per_query = []
    for d, r in zip(dist, rel):
        R = r.sum()
        if R == 0:
            continue
        same = r[np.argsort(d, kind="stable")[:n]]
        prec = np.cumsum(same) / np.arange(1, n + 1)
        per_query.append(np.sum(prec * same) / R)
    return float(np.mean(per_query))
