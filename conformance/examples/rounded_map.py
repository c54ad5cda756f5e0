"""A correct ``hashing``-preset mAP@k whose value is rounded to 4 decimals before it is returned.

Recommender and information-retrieval toolkits round the numbers of their evaluation report (to
4 decimals by default); a lab that returns that report's value returns a rounded mAP.  Otherwise
seed 000's ``CalcTopMap`` with a stable sort.  Expected under ``--protocol hashing``: identified as
"every value is rounded to 4 decimals" (``spec §0 conformance``), and nothing else blamed.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """round(mAP@topk, 4)."""
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
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return round(total / num_query, 4)
