"""A correct ``reid``-preset evaluation in the shape of torchreid's ``evaluate_rank``.

Per query: gallery items with the query's id AND camera are junk (removed, spec §3);
AP is precision-sum over the remaining ranking (§5); CMC[j] = 1 if the first match is within
the top j+1, kept flat past the end of a short gallery (§7); INP = R / r_R; queries with no
valid match are left out (§8 ``skip``).  Ties: stable.  Returns ``(cmc, mAP, mINP)``.
Expected: conforms to ``--protocol reid``.
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
        cmc[int(ranks[0]) - 1 :] = 1.0  # flat to max_rank, also past a short gallery
        all_cmc.append(cmc)
        all_ap.append(np.mean(np.arange(1, ranks.size + 1) / ranks))
        all_inp.append(ranks.size / ranks[-1])
    if not all_cmc:
        raise ValueError("no query has a valid match in the gallery")
    return np.mean(all_cmc, axis=0), float(np.mean(all_ap)), float(np.mean(all_inp))
