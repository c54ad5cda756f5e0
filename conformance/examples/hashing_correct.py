"""A correct ``hashing``-preset mAP@k: seed 000's ``CalcTopMap`` with a stable sort.

AP@k of one query divides by the hits in the top k (spec §6 ``hits``); a query with no
hit in the top k contributes 0 and still counts in the mean (§8 ``zero``); ties keep gallery
order (§4 ``stable``).  Expected: conforms to ``--protocol hashing``.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """mAP@topk = mean over queries of (1/H_k) sum_{r_i <= k} i / r_i."""
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
        ranks = np.flatnonzero(tgnd == 1) + 1.0
        total += np.mean(count / ranks)
    return total / num_query
