"""Metric learning's MAP@R returned as "mAP" through the ``distances-relevance`` signature.

Each query's ranking is cut at its own R (the number of its relevant items) and the precisions at
the hits within it are divided by R (``spec §7 MAP@R``, pytorch-metric-learning's
``mean_average_precision_at_r``); ties kept in gallery order; a query without a relevant item
scores 0.  Expected under ``--protocol hashing``: identified as "the list cut at its own R:
MAP@R" (``spec §6 k=None (whole gallery)``), nothing else blamed.
"""

import numpy as np


def map_at_r(distances, relevance):
    """mean over queries of (1/R) sum_{r_i <= R} i / r_i."""
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    aps = []
    for dist, rel in zip(distances, relevance):
        R = int(rel.sum())
        if R == 0:
            aps.append(0.0)
            continue
        top = rel[np.argsort(dist, kind="stable")][:R]
        ranks = np.flatnonzero(top) + 1.0
        aps.append(float(np.sum(np.arange(1, ranks.size + 1) / ranks) / R))
    return float(np.mean(aps))
