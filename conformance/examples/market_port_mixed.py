"""ReID evaluation ported from the Market-1501 MATLAB kit, half by half: the mAP keeps the kit's
trapezoid AP over a stable sort (MATLAB's ``sort`` keeps tied items in order), the CMC was
rewritten around ``np.argsort`` with its default kind (tied items in no promised order).

Junk (the query's identity seen by its own camera) is removed and queries without a valid match
are left out, as the ``reid`` preset says.  Expected under ``--protocol reid``: identified field
by field, the mAP by its AP rule (trapezoid) and the CMC by its tie order (unstable) alone: the
AP rule cannot change a CMC value, so it is no difference of the CMC.
"""

import numpy as np


def _trapezoid_ap(hits):
    """The kit's AP: the mean of the precision at each hit and at the rank before it."""
    ranks = np.flatnonzero(hits) + 1
    ap = 0.0
    for i, r in enumerate(ranks, start=1):
        before = 1.0 if r == 1 else (i - 1) / (r - 1)
        ap += (i / r + before) / 2
    return ap / len(ranks)


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP): trapezoid AP over a stable sort, CMC over the default argsort."""
    distmat = np.asarray(distmat, dtype=np.float64)
    q_pids, g_pids, q_camids, g_camids = (np.asarray(a) for a in (q_pids, g_pids, q_camids, g_camids))
    curves, aps = [], []
    for q in range(distmat.shape[0]):
        valid = ~((g_pids == q_pids[q]) & (g_camids == q_camids[q]))
        if not (g_pids[valid] == q_pids[q]).any():
            continue
        kit_order = np.argsort(distmat[q], kind="stable")  # the kit's [~, index] = sort(dist)
        aps.append(_trapezoid_ap((g_pids[kit_order] == q_pids[q])[valid[kit_order]]))
        order = np.argsort(distmat[q])  # the port's CMC: default kind
        hits = (g_pids[order] == q_pids[q])[valid[order]]
        first = int(np.flatnonzero(hits)[0])
        curve = np.zeros(max_rank)
        curve[first:] = 1.0
        curves.append(curve)
    return np.mean(curves, axis=0), float(np.mean(aps))
