"""A ``hashing``-preset mAP@k in which a query without a relevant item scores 1.

torchmetrics' retrieval metrics with ``empty_target_action="pos"``, and learning-to-rank
libraries, score a query with no relevant item as perfect; such a query still counts in the mean.
Otherwise seed 000's ``CalcTopMap`` with a stable sort.  Expected under ``--protocol hashing``:
identified as "a query without a relevant item scores 1" (``spec §8 empty=zero``) and nothing else.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """mean over queries of AP@topk, with AP = 1 for a query without a relevant item."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        if gnd.sum() == 0:
            total += 1.0  # empty_target_action="pos"
            continue
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
