"""ReID evaluation in the manner of layumi's ``evaluate.py``, still calling ``np.in1d``.

layumi/Person_reID_baseline_pytorch ``evaluate.py`` (``evaluate_gpu.py`` moved to ``np.isin``):
per query, ranking = ``np.argsort(score)[::-1]`` on the similarity (ties reversed, unstable);
good = same id, other camera; junk = same id and same camera, and every gallery id -1; trapezoid
AP over the ranking without junk (precision at the previous rank, 1 at the top); a query without
a good match gets AP 0 and no CMC, yet mAP and CMC are divided by ALL queries; CMC has the
gallery's length.  ``np.in1d`` was removed in numpy 2.4, so on numpy >= 2.4 every input in which
at least one query has a good match (same id, other camera) raises ``AttributeError`` at that line;
an input where no query has one returns zeros.  Adapter ``reid`` (no max_rank).  Expected: the
harness reports that it cannot run in this environment (AttributeError: ``np.in1d``; exit 2); with
``np.in1d`` present it matches ``--protocol reid-matlab`` except on tied distances.
"""

import numpy as np


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids):
    """(cmc, mAP): trapezoid AP, empty queries counted as 0 in both means."""
    distmat = np.asarray(distmat, dtype=np.float64)
    g_pids, g_camids = np.asarray(g_pids), np.asarray(g_camids)
    num_q, num_g = distmat.shape
    cmc_sum, ap_sum = np.zeros(num_g), 0.0
    for q in range(num_q):
        index = np.argsort(-distmat[q])[::-1]  # similarity = -distance, sorted small to large
        same_id = np.argwhere(g_pids == q_pids[q]).ravel()
        same_cam = np.argwhere(g_camids == q_camids[q]).ravel()
        good = np.setdiff1d(same_id, same_cam, assume_unique=True)
        if good.size == 0:
            continue  # AP 0, no CMC, still counted in the mean
        junk = np.append(np.intersect1d(same_id, same_cam), np.argwhere(g_pids == -1).ravel())
        index = index[np.in1d(index, junk, invert=True)]  # AttributeError on numpy >= 2.4
        rows = np.flatnonzero(np.in1d(index, good))
        cmc_sum[rows[0] :] += 1
        for i, r in enumerate(rows):
            before = 1.0 if r == 0 else i / r
            ap_sum += (before + (i + 1) / (r + 1)) / 2 / good.size
    return cmc_sum / num_q, ap_sum / num_q
