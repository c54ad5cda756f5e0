"""ReID evaluation in the manner of torchreid's ``eval_market1501`` (python path, ``use_cython=False``).

KaiyangZhou/deep-person-reid ``torchreid/metrics/rank.py``: ``np.argsort(distmat, axis=1)`` with
the default kind (tied distances in no promised order; with numpy 2.4 on this AVX2 machine even
8-item rows come out unstable), gallery items with the query's id AND camera removed, queries without a valid match
left out, precision-sum AP, and ``cmc[:max_rank]`` per query.  When the gallery is shorter than
``max_rank`` it prints ``Note: number of gallery samples is quite small, got N`` and lowers
``max_rank`` to N.  Returns ``(cmc, mAP)``: torchreid computes no mINP.

CMC length: each query's row is its ranking after junk removal, cut at ``max_rank``, so when
``N - (junk of a query) < max_rank`` the rows differ in length and ``np.asarray`` raises
``ValueError`` (inhomogeneous shape; numpy >= 1.24), and when every query loses the same number
of items the CMC is shorter than ``max_rank`` (the ``reid`` preset keeps it flat to max_rank).
Expected under ``--protocol reid``: flagged on ``CONVENTIONS §7 cmc`` (a CMC shorter than
max_rank whenever the gallery minus a query's junk is shorter than max_rank: most small
inputs), and on ``§4 ties=stable`` by tie-heavy inputs; mAP and the CMC values agree otherwise.
"""
import numpy as np


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP) over the queries with at least one valid match, torchreid-style."""
    distmat = np.asarray(distmat)
    q_pids, g_pids = np.asarray(q_pids), np.asarray(g_pids)
    q_camids, g_camids = np.asarray(q_camids), np.asarray(g_camids)
    num_q, num_g = distmat.shape
    if num_g < max_rank:
        max_rank = num_g
        print(f"Note: number of gallery samples is quite small, got {num_g}")
    ranking = np.argsort(distmat, axis=1)  # default kind: ties unordered
    hits = (g_pids[ranking] == q_pids[:, None]).astype(np.int32)
    curves, aps = [], []
    for q in range(num_q):
        ranked = ranking[q]
        same = (g_pids[ranked] == q_pids[q]) & (g_camids[ranked] == q_camids[q])
        row = hits[q][~same]
        if not row.any():
            continue  # identity absent from the gallery: left out
        curve = np.minimum(row.cumsum(), 1)
        curves.append(curve[:max_rank])
        precision = row.cumsum() / np.arange(1.0, row.size + 1)
        aps.append((precision * row).sum() / row.sum())
    assert curves, "Error: all query identities do not appear in gallery"
    cmc = np.asarray(curves).astype(np.float32).sum(axis=0) / len(curves)
    return cmc, np.mean(aps)
