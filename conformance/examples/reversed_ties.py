"""Ranking by similarity with ``argsort(score)[::-1]`` (layumi-style): ties in reverse order.

Sorting the similarity ascending (stably) and reversing puts tied items in descending gallery
order (spec §4 ``reverse``, §11).  Expected: flagged on ``spec §4 ties=stable``;
``--identify`` says "matches `hashing` except ties: reverse".
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk ranked by ``argsort(similarity)[::-1]``."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        score = qB[q] @ rB.T  # similarity: larger is closer
        order = np.argsort(score, kind="stable")[::-1]
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
