"""ReID evaluation whose fields come from different code: mAP through a grouped-ties AP (as
scikit-learn's ``average_precision_score``, one threshold per distinct distance) and CMC through
``np.argsort`` with its default (unstable) kind.

Real evaluators mix helpers so: the AP of each query is handed to a library, the CMC is cut from
the evaluator's own ranking.  Junk (the query's identity seen by its own camera) is removed and a
query without a valid match is left out, as the ``reid`` preset says.  Expected under
``--protocol reid``: identified field by field ("mAP: ties grouped; CMC: ties unstable"), and
``check`` names ``spec §4 ties=stable`` only (no AP rule, CMC or mean clause).
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import valid_matches


def _grouped_ap(matches, dist):
    """AP with each tie group entering at once: its hits get the precision at the group's end."""
    R = int(matches.sum())
    ap, seen, hits = 0.0, 0, 0
    for d in np.unique(dist):  # thresholds, closest first
        group = dist == d
        seen += int(group.sum())
        new = int(matches[group].sum())
        hits += new
        ap += (new / R) * (hits / seen)
    return ap


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """(cmc, mAP): mAP with grouped ties, CMC from an unstable argsort."""
    distmat = np.asarray(distmat, dtype=np.float64)
    q_pids, g_pids, q_camids, g_camids = (np.asarray(a) for a in (q_pids, g_pids, q_camids, g_camids))
    curves, aps = [], []
    for q in range(distmat.shape[0]):
        keep = ~((g_pids == q_pids[q]) & (g_camids == q_camids[q]))
        matches = (g_pids[keep] == q_pids[q]).astype(np.int32)
        if not matches.any():
            continue
        aps.append(_grouped_ap(matches, distmat[q][keep]))
        order = np.argsort(distmat[q])  # default kind: tied items in no promised order
        row, _ = valid_matches(order, q_pids[q], q_camids[q], g_pids, g_camids)
        curve = np.minimum(row.cumsum(), 1).astype(np.float64)
        if curve.size < max_rank:
            curve = np.concatenate([curve, np.full(max_rank - curve.size, curve[-1])])
        curves.append(curve[:max_rank])
    cmc = np.mean(curves, axis=0)
    return cmc, float(np.mean(aps))
