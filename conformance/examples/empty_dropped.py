"""Queries without any relevant item are dropped from the mean instead of counting as 0.

The mean divides by the number of queries that have a relevant item somewhere in the gallery
(spec §8 ``skip``, as torchreid does), where the ``hashing`` protocol counts them as 0
(§8 ``zero``).  Expected: flagged on ``spec §8 empty=zero``; ``--identify`` says
"matches `hashing` except empty: skip".
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk averaged over the queries with R > 0 only (the bug)."""
    total = 0.0
    valid = 0
    for q in range(query_L.shape[0]):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        if gnd.sum() == 0:
            continue  # dropped: not counted in the denominator
        valid += 1
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / valid if valid else 0.0
