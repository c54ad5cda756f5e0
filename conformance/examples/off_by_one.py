"""0-based ranks in i / r_i (the ``+ 1`` after ``np.where`` forgotten).

A relevant item at the top gets rank 0: the division gives ``inf`` and the mAP is ``inf``;
otherwise every precision is too large (spec §5, §11).  Expected: flagged on
``spec §5 ranks start at 1``, reported as a non-finite return where it is one.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk with 0-based ranks (the bug)."""
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
        with np.errstate(divide="ignore"):
            total += np.mean(count / np.flatnonzero(tgnd == 1))  # missing + 1
    return total / num_query
