"""``topk=-1`` meaning "all", sliced as ``gnd[0:topk]``: the last ranked item is dropped.

swuxyj/DeepHash-pytorch passes ``topK=-1`` for mAP@ALL; ``gnd[0:-1]`` drops the last item of
the ranking, so a relevant item ranked last is never counted (spec §6, §11).  Called
without ``topk`` (its own "all"), it computes AP@(N-1).  Expected: flagged on
``spec §6 k=None`` by inputs with a relevant item ranked last.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk=-1):
    """hashing mAP@topk; the default ``topk=-1`` is meant as "all" (the bug)."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][0:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
