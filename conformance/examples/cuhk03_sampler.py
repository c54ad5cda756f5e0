"""CUHK03 single-gallery-shot CMC in the manner of torchreid's ``eval_cuhk03`` (also fast-reid's).

Per valid query (junk = same id and camera removed; queries without a valid match left out), the
kept gallery is grouped by identity and, 10 times over, ONE image per identity is drawn with the
global, unseeded ``np.random.choice``; the CMC of each draw is cut at ``max_rank`` and the 10 are
averaged.  The AP is computed on the whole (unsampled) ranking, precision-sum.  Ranking:
``np.argsort`` default kind; a gallery shorter than ``max_rank`` prints the torchreid note.
Returns ``(cmc, mAP)``; the CMC has min(max_rank, number of gallery identities) entries.  Two
calls on the same input give different CMCs (the mAP is stable).  Expected: the harness reports
the function as non-deterministic (the same input twice gives different values) on every check
with a CMC; seeding ``np.random`` before each call reproduces torchreid's ``eval_cuhk03`` exactly.
"""

from collections import defaultdict

import numpy as np
from retrieval_conformance.conformance.examples._common import reid_ranking, valid_matches


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50, num_repeats=10):
    """(cmc, mAP) with one randomly drawn gallery image per identity (unseeded)."""
    (q_pids, g_pids, q_camids, g_camids), max_rank, ranking = reid_ranking(
        distmat, q_pids, g_pids, q_camids, g_camids, max_rank
    )
    num_q = ranking.shape[0]
    curves, aps = [], []
    for q in range(num_q):
        ranked = ranking[q]
        row, keep = valid_matches(ranked, q_pids[q], q_camids[q], g_pids, g_camids)
        if not row.any():
            continue
        positions = defaultdict(list)
        for pos, pid in enumerate(g_pids[ranked][keep]):
            positions[pid].append(pos)
        cmc = 0.0
        for _ in range(num_repeats):
            chosen = np.zeros(row.size, dtype=bool)
            for idxs in positions.values():
                chosen[np.random.choice(idxs)] = True  # global RNG, never seeded
            cmc = cmc + np.minimum(row[chosen].cumsum(), 1)[:max_rank].astype(np.float32)
        curves.append(cmc / num_repeats)
        precision = row.cumsum() / np.arange(1.0, row.size + 1)
        aps.append((precision * row).sum() / row.sum())
    assert curves, "Error: all query identities do not appear in gallery"
    return np.asarray(curves, dtype=np.float32).sum(axis=0) / len(curves), np.mean(aps)
