"""A function that takes ``topk`` and silently computes full mAP (penghu-cs/UCCH#4).

Expected: flagged on ``spec §6 k`` for any k below the gallery size; ``--identify``
says the cut-off is ignored.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """Full hashing mAP; ``topk`` is accepted and never used (the bug)."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        tsum = int(gnd.sum())
        if tsum == 0:
            continue
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        gnd = gnd[order]
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(gnd == 1) + 1.0))
    return total / num_query
