"""Recall@k capped at k, as BEIR's ``recall_cap`` computes it, where the protocol means the fraction.

BEIR's ``R_cap@k`` divides the relevant items found in the top k by ``min(R, k)``, the most the
top k can hold (spec §7 R_cap), so a query with more relevant items than k can still reach 1;
the IR Recall@k divides by R (``recall=fraction``).  Ties keep gallery order (a stable sort);
every query counts, 0 without a relevant item.  Expected: flagged on ``spec §7 recall=fraction``
under ``hashing``; ``--identify`` says recall: capped.
"""

import numpy as np


def recall_at_k(distances, relevance, k):
    """mean over queries of hits in the top k / min(R, k) (0 when R = 0)."""
    distances, relevance = np.asarray(distances), np.asarray(relevance, dtype=bool)
    values = []
    for dist, rel in zip(distances, relevance):
        n_rel = int(rel.sum())
        if n_rel == 0:
            values.append(0.0)
            continue
        hits = int(rel[np.argsort(dist, kind="stable")][:k].sum())
        values.append(hits / min(n_rel, k))
    return float(np.mean(values))
