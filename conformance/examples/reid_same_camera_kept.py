"""A ReID evaluation that never removes the query's own-camera views from the gallery.

As :mod:`.reid_correct` (precision-sum AP, CMC flat past a short gallery, queries without a
valid match left out, stable ties), except that a gallery image of the query's identity taken
by the query's camera stays in the ranking: it is not a valid match (different identity or
different camera is what the loop asks for), so it is ranked and counted as a wrong
prediction, pushing the true matches down.  Expected under ``--protocol reid``: the known bug
``junk-kept`` (spec §3: junk is removed before ranking), named on its own.
"""

import numpy as np


def evaluate_rank(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc[:max_rank], mAP, mINP) over the queries with at least one valid match."""
    distmat = np.asarray(distmat, dtype=np.float64)
    all_cmc, all_ap, all_inp = [], [], []
    for q in range(distmat.shape[0]):
        order = np.argsort(distmat[q], kind="stable")
        # a valid match: the same identity seen by another camera (nothing is taken out)
        matches = (g_pids[order] == q_pids[q]) & (g_camids[order] != q_camids[q])
        if not matches.any():
            continue
        ranks = np.flatnonzero(matches) + 1.0
        cmc = np.zeros(max_rank)
        cmc[int(ranks[0]) - 1 :] = 1.0
        all_cmc.append(cmc)
        all_ap.append(np.mean(np.arange(1, ranks.size + 1) / ranks))
        all_inp.append(ranks.size / ranks[-1])
    if not all_cmc:
        raise ValueError("no query has a valid match in the gallery")
    return np.mean(all_cmc, axis=0), float(np.mean(all_ap)), float(np.mean(all_inp))
