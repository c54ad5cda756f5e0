"""ReID evaluation whose mAP is right and whose CMC counts hits instead of "a hit within rank k".

The CMC row is the cumulative number of matches (``row.cumsum()`` without the clip at 1), so with
two matches in the top k a Rank-k value of 2 comes out: impossible for a fraction.  mAP is
precision-sum AP over a stable ranking with junk (same id and camera) removed and a query without
a valid match left out, as the ``reid`` preset says.  Expected under ``--protocol reid``:
identified field by field ("mAP: matches `reid`", "CMC: no known convention or bug reproduces its
values"), the CMC value above 1 named as impossible with its input, and ``check`` heading its
deviations "cause unknown" (no clause is named that no candidate reproduces).

``evaluate_grouped`` computes its mAP with grouped ties instead (scikit-learn's thresholds, as
``per_field_ties``): a deviation only its mAP shows is named ``spec §4 ties=stable``, one its CMC
shows stays "cause unknown".
"""

import numpy as np
from retrieval_conformance.conformance.examples.per_field_ties import _grouped_ap


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50, grouped=False):
    """(cmc, mAP) with the CMC counting matches."""
    distmat = np.asarray(distmat, dtype=np.float64)
    q_pids, g_pids, q_camids, g_camids = (np.asarray(a) for a in (q_pids, g_pids, q_camids, g_camids))
    curves, aps = [], []
    for q in range(distmat.shape[0]):
        order = np.argsort(distmat[q], kind="stable")
        keep = ~((g_pids[order] == q_pids[q]) & (g_camids[order] == q_camids[q]))
        row = (g_pids[order] == q_pids[q]).astype(np.float64)[keep]
        if not row.any():
            continue
        precision = row.cumsum() / np.arange(1, row.size + 1)
        aps.append(_grouped_ap(row, distmat[q][order][keep]) if grouped else (precision * row).sum() / row.sum())
        curve = row.cumsum()  # the number of matches up to rank k, not min(that, 1)
        curve = np.concatenate([curve, np.full(max(0, max_rank - curve.size), curve[-1])])
        curves.append(curve[:max_rank])
    return np.mean(curves, axis=0), float(np.mean(aps))


def evaluate_grouped(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP): mAP with grouped ties, the CMC counting matches."""
    return evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank, grouped=True)
