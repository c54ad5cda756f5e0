"""AP@k divided by k, where ``topk=None`` means the whole gallery: full AP is divided by N.

AP@k = (1/k) sum_{r_i <= k} i / r_i with k = N when no ``topk`` is given, so a query whose
2 relevant items sit at ranks 1 and 2 of a 100-item gallery gets 2/100 instead of 1.  Ties keep
gallery order (stable sort); a query without a hit in the top k adds 0 and still counts.
Expected under ``--protocol hashing``: flagged on ``spec §6 ap_at_k=hits`` both with k and
when called without topk (full mAP); ``--identify`` reports the divided-by-k rule.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L, topk=None):
    """mean over queries of (1/topk) sum_{r_i <= topk} i / r_i, topk = N by default."""
    num_query, num_db = query_L.shape[0], retrieval_L.shape[0]
    if topk is None:
        topk = num_db
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        ranks = np.flatnonzero(gnd[order][:topk]) + 1.0
        if ranks.size == 0:
            continue
        total += np.sum(np.arange(1, ranks.size + 1) / ranks) / topk
    return total / num_query
