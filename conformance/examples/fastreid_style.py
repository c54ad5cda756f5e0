"""ReID evaluation in the manner of fast-reid's python ``eval_market1501`` (JDAI-CV/fast-reid).

``fastreid/evaluation/rank.py`` is torchreid's code with one observable change: it returns
``(cmc, all_AP, all_INP)``, the per-query AP and INP LISTS (INP = hits / position of the last hit),
not their means; ``ReidEvaluator`` takes ``np.mean`` of each and reports them times 100.  Ties
(default ``np.argsort``), junk (same id and camera removed), empty queries (left out) and the
CMC cut (``cmc[:max_rank]`` with the printed note for a short gallery) are torchreid's.
Expected under ``--protocol reid`` with adapter ``reid``: every call is reported as returning the
wrong type (the second element is a list, not a number); wrapped with ``np.mean`` as
``ReidEvaluator`` does, it behaves like ``torchreid_style`` and also returns mINP.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import reid_ranking, valid_matches


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, per-query AP list, per-query INP list), fast-reid-style."""
    (q_pids, g_pids, q_camids, g_camids), max_rank, ranking = reid_ranking(
        distmat, q_pids, g_pids, q_camids, g_camids, max_rank
    )
    num_q = ranking.shape[0]
    curves, all_ap, all_inp = [], [], []
    for q in range(num_q):
        row, _ = valid_matches(ranking[q], q_pids[q], q_camids[q], g_pids, g_camids)
        if not row.any():
            continue
        hits_so_far = row.cumsum()
        last = np.flatnonzero(row)[-1]
        all_inp.append(hits_so_far[last] / (last + 1.0))
        curves.append(np.minimum(hits_so_far, 1)[:max_rank])
        precision = hits_so_far / np.arange(1.0, row.size + 1)
        all_ap.append((precision * row).sum() / row.sum())
    assert curves, "Error: all query identities do not appear in gallery"
    cmc = np.asarray(curves).astype(np.float32).sum(axis=0) / len(curves)
    return cmc, all_ap, all_inp
