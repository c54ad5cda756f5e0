"""Recall@k as metric learning means it, the hit rate, where the protocol means the fraction.

"Recall@1, 2, 4, 8" of metric-learning papers is 1 when some relevant item is in the top k
(spec §7 ``recall=hit``); the IR Recall@k is the share of the relevant items found there
(``recall=fraction``, the ``hashing`` and ``trec`` presets).  Ties keep gallery order (a stable
sort); every query counts, 0 without a relevant item.  Expected: flagged on
``spec §7 recall=fraction`` under ``hashing``; ``--identify`` says recall: hit.
"""

import numpy as np


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances), np.asarray(relevance, dtype=bool)
    hits = [relevance[q][np.argsort(distances[q], kind="stable")][:k].any() for q in range(len(distances))]
    return float(np.mean(hits))
