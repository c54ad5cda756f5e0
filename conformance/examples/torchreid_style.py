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
Expected under ``--protocol reid``: ``§4 ties=stable`` on tie-heavy inputs (``--identify``: "matches
``reid`` except ties: unstable"), its CMC length recognised as the gallery rule and compared on
the common prefix, and the ``ValueError`` reported as its own finding on the inputs with CMC rows
of different lengths.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import reid_ranking, valid_matches


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP) over the queries with at least one valid match, torchreid-style."""
    (q_pids, g_pids, q_camids, g_camids), max_rank, ranking = reid_ranking(
        distmat, q_pids, g_pids, q_camids, g_camids, max_rank
    )
    num_q = ranking.shape[0]
    curves, aps = [], []
    for q in range(num_q):
        row, _ = valid_matches(ranking[q], q_pids[q], q_camids[q], g_pids, g_camids)
        if not row.any():
            continue  # identity absent from the gallery: left out
        curve = np.minimum(row.cumsum(), 1)
        curves.append(curve[:max_rank])
        precision = row.cumsum() / np.arange(1.0, row.size + 1)
        aps.append((precision * row).sum() / row.sum())
    assert curves, "Error: all query identities do not appear in gallery"
    cmc = np.asarray(curves).astype(np.float32).sum(axis=0) / len(curves)
    return cmc, np.mean(aps)
