"""A ``reid``-preset evaluation that returns an empty CMC when no query has a valid match.

As :mod:`.reid_correct` (junk = the query's id seen by its own camera, removed; precision-sum
AP; CMC flat past a short gallery; queries without a valid match left out; stable ties), but
where every query's gallery holds only junk and wrong identities it returns what its loop
collected: an empty curve ``np.zeros(0)`` and 0 for mAP and mINP instead of raising.  Expected
under ``--protocol reid``: conforms; on such an input no query is counted, so the protocol
leaves every value undefined and the empty curve is accepted with that reason.
"""

import numpy as np


def evaluate_rank(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc[:max_rank], mAP, mINP) over the queries with at least one valid match."""
    distmat = np.asarray(distmat, dtype=np.float64)
    q_pids, g_pids = np.asarray(q_pids), np.asarray(g_pids)
    q_camids, g_camids = np.asarray(q_camids), np.asarray(g_camids)
    all_cmc, all_ap, all_inp = [], [], []
    for q in range(distmat.shape[0]):
        order = np.argsort(distmat[q], kind="stable")
        keep = ~((g_pids[order] == q_pids[q]) & (g_camids[order] == q_camids[q]))
        matches = (g_pids[order] == q_pids[q])[keep]
        if not matches.any():
            continue
        ranks = np.flatnonzero(matches) + 1.0
        cmc = np.zeros(max_rank)
        cmc[int(ranks[0]) - 1 :] = 1.0
        all_cmc.append(cmc)
        all_ap.append(np.mean(np.arange(1, ranks.size + 1) / ranks))
        all_inp.append(ranks.size / ranks[-1])
    if not all_cmc:
        return np.zeros(0), 0.0, 0.0  # nothing collected: an empty curve
    return np.mean(all_cmc, axis=0), float(np.mean(all_ap)), float(np.mean(all_inp))
