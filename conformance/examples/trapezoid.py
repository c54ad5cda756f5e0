"""Trapezoid AP (Market-1501 MATLAB / layumi ``compute_mAP`` style) on distances + relevance.

AP = (1/R) sum_i (i/r_i + (i-1)/(r_i-1)) / 2, with the second term 1 when r_i = 1 (spec
§5).  Correct for ``--protocol reid-matlab``; under ``--protocol hashing`` it is flagged on
``spec §5 ap_rule=precision_sum``.  Signature of the ``distances-relevance`` adapter.
"""

import numpy as np


def mean_ap(distances, relevance, k=None):
    """Trapezoid mAP (k is ignored unless given: AP over the top k, divided by R)."""
    distances = np.asarray(distances)
    relevance = np.asarray(relevance, dtype=bool)
    aps = []
    for d, rel in zip(distances, relevance):
        order = np.argsort(d, kind="stable")
        hits = rel[order]
        R = int(hits.sum())
        if R == 0:
            aps.append(0.0)
            continue
        ranks = np.flatnonzero(hits) + 1
        if k is not None:
            ranks = ranks[ranks <= k]
        ap = 0.0
        for i, r in enumerate(ranks, start=1):
            old = 1.0 if r == 1 else (i - 1) / (r - 1)  # precision at the previous rank
            ap += (i / r + old) / 2
        aps.append(ap / R)
    return float(np.mean(aps))
