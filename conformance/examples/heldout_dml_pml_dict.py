"""The three ranking fields of pytorch-metric-learning's ``AccuracyCalculator.get_accuracy``
(KevinMusgrave/pytorch-metric-learning@216a792, ``src/pytorch_metric_learning/utils/accuracy_calculator.py``:
``mean_average_precision`` with ``at_r=True``, ``r_precision``, ``precision_at_k`` with k = 1, and the
removal of "lone" queries), for separate query and reference sets, rewritten with numpy.

Behaviour reproduced: neighbours by Euclidean distance, ties in reference order (the exact k-NN
search returns equal distances by index); R = number of reference items with the query's label;
MAP@R sums precision at the hits inside the first R neighbours and divides by R; R-precision =
hits in the first R / R; precision_at_1 = whether the nearest neighbour shares the label; queries
whose label no reference item has are left out of every mean. Returns a dict with PML's keys.
"""

import numpy as np


def pml_accuracy(query, query_labels, reference, reference_labels):
    q = np.asarray(query, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    ql, rl = np.asarray(query_labels), np.asarray(reference_labels)
    d2 = (q * q).sum(1)[:, None] + (ref * ref).sum(1)[None, :] - 2 * q @ ref.T
    mapr, rp, p1 = [], [], []
    for i in range(len(q)):
        same = rl == ql[i]
        R = int(same.sum())
        if R == 0:
            continue
        s = same[np.argsort(d2[i], kind="stable")]
        top = s[:R]
        mapr.append(np.sum(np.cumsum(top) / np.arange(1, R + 1) * top) / R)
        rp.append(top.sum() / R)
        p1.append(float(s[0]))
    return {
        "mean_average_precision_at_r": float(np.mean(mapr)),
        "r_precision": float(np.mean(rp)),
        "precision_at_1": float(np.mean(p1)),
    }
