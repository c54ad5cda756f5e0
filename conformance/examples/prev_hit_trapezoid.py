"""Trapezoid AP with the precision at the previous HIT instead of the previous RANK.

The bug of seed 002 ("One More Thing", layumi/Person_reID_baseline_pytorch#110): the left
side of each trapezoid is the precision at the previous relevant item (1 before the first),
not the precision at rank r_i - 1 (spec §5, §11).  Expected under ``--protocol
reid-matlab`` (adapter ``distances-relevance``): flagged on ``spec §5
ap_rule=trapezoid``.
"""

import numpy as np


def mean_ap(distances, relevance, k=None):
    """Trapezoid mAP with ``old_precision`` carried from hit to hit (the bug)."""
    distances = np.asarray(distances)
    relevance = np.asarray(relevance, dtype=bool)
    aps = []
    for d, rel in zip(distances, relevance):
        hits = rel[np.argsort(d, kind="stable")]
        R = int(hits.sum())
        if R == 0:
            aps.append(0.0)
            continue
        ap, old_precision = 0.0, 1.0
        for i, r in enumerate(np.flatnonzero(hits) + 1, start=1):
            if k is not None and r > k:
                break
            precision = i / r
            ap += (old_precision + precision) / 2
            old_precision = precision
        aps.append(ap / R)
    return float(np.mean(aps))
