"""AP@k divided by k instead of by the hits in the top k.

AP@k = (1/k) sum_{r_i <= k} i / r_i: a query with 2 hits at ranks 1 and 2 in the top 10 gets
0.2 instead of 1 (spec §6, §11).  Expected: flagged on ``spec §6
ap_at_k=hits``; ``--identify`` reports the divided-by-k rule.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """mAP@topk with the sum of precisions divided by topk (the bug)."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.sum(count / (np.flatnonzero(tgnd == 1) + 1.0)) / topk
    return total / num_query
