"""ReID evaluation whose mAP and CMC both come from one ranking: ``np.argsort`` of the negated
similarity, default kind (tied items in no promised order).

The lab computes cosine similarities, sorts each row once, then walks that one ranking twice: a
hit flag per rank for the CMC (the first hit's rank) and a running precision for the AP.  Junk
(the query's identity seen by its own camera) is removed and queries without a valid match are
left out, as the ``reid`` preset says.  Both fields therefore share one tie order, whatever it
is.  Expected under ``--protocol reid``: one description for the whole function ("matches
``reid`` except ties: unstable"), never a declared tie order claimed for the CMC alone, and
``check`` naming the same cause (``spec §4 ties=stable``) as ``--identify``.
"""

import numpy as np


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP) from one ``np.argsort`` per query row."""
    similarity = -np.asarray(distmat, dtype=np.float64)
    q_pids, g_pids, q_camids, g_camids = (np.asarray(a) for a in (q_pids, g_pids, q_camids, g_camids))
    ranking = np.argsort(-similarity, axis=1)  # most similar first; ties in whatever order the sort leaves
    all_cmc, all_ap = [], []
    for q in range(ranking.shape[0]):
        order = ranking[q]
        junk = (g_pids[order] == q_pids[q]) & (g_camids[order] == q_camids[q])
        hits = (g_pids[order] == q_pids[q])[~junk]
        if not hits.any():
            continue
        cmc = np.zeros(max_rank)
        first = int(np.flatnonzero(hits)[0])
        if first < max_rank:
            cmc[first:] = 1.0
        all_cmc.append(cmc)
        found, precisions = 0, []
        for rank, hit in enumerate(hits, start=1):
            if hit:
                found += 1
                precisions.append(found / rank)
        all_ap.append(sum(precisions) / len(precisions))
    return np.mean(all_cmc, axis=0), float(np.mean(all_ap))
