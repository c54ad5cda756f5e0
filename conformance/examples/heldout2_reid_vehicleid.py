"""VehicleID-style ReID evaluation: nothing is removed from the gallery (no camera information).

Jakel21/vehicle-ReID-baseline @ 5c5b798, ``vehiclereid/eval_metrics.py``, ``eval_vehicleid``: the
same-id-same-camera filter of the Market-1501 code is commented out (``remove = False``), so every
gallery item of the query's identity counts as a correct match, whatever its camera; a query
without any gallery item of its identity is skipped.  Otherwise as the torchreid-style code:
``np.argsort(distmat, axis=1)`` with the default kind (tied distances in no promised order),
precision-sum AP, ``cmc[:max_rank]`` with ``max_rank`` lowered to the gallery size (all rows have
the gallery's length, so no ragged CMC), mean over valid queries, no mINP.
"""

import numpy as np


def eval_vehicleid_like(distmat, q_pids, g_pids, q_camids, g_camids, max_rank):
    """(cmc, mAP); the camera ids are accepted and not used."""
    distmat = np.asarray(distmat)
    q_pids, g_pids = np.asarray(q_pids), np.asarray(g_pids)
    num_q, num_g = distmat.shape
    if num_g < max_rank:
        max_rank = num_g
        print(f"Note: number of gallery samples is quite small, got {num_g}")
    ranking = np.argsort(distmat, axis=1)
    hits_all = (g_pids[ranking] == q_pids[:, None]).astype(np.int32)
    curves, aps = [], []
    for q in range(num_q):
        hits = hits_all[q]
        if not hits.any():
            continue
        found = hits.cumsum()
        curves.append(np.minimum(found, 1)[:max_rank])
        aps.append(np.sum(found / np.arange(1.0, num_g + 1) * hits) / hits.sum())
    assert curves, "Error: all query identities do not appear in gallery"
    cmc = np.asarray(curves).astype(np.float32).sum(axis=0) / float(len(curves))
    return cmc, np.mean(aps)


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """Adapter ``reid``: the repository's ``evaluate`` signature, calling the VehicleID metric."""
    return eval_vehicleid_like(distmat, q_pids, g_pids, q_camids, g_camids, max_rank)
