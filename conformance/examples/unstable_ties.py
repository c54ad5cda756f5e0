"""Seed 000's ``CalcTopMap`` as printed: ``np.argsort`` with its default (unstable) kind.

Tied Hamming distances come out in an order numpy does not promise; on AVX-512 CPUs with
numpy >= 1.25 the seed's mAP is 0.5915 instead of 0.6026 (spec §4, §11).  Expected:
flagged on ``spec §4 ties=stable`` by tie-heavy inputs.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk with ``np.argsort(hamm)`` (default kind: the bug)."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        order = np.argsort(hamming(qB[q], rB)[0])  # kind="quicksort": ties unordered
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
