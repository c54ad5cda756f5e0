"""Full mAP with a 4-parameter signature that slices ``gnd[0:topk]`` with ``topk = -1``.

swuxyj/DeepHash-pytorch computes mAP@ALL (cifar10, voc2012, mirflickr configs) as
``CalcTopMap(..., topk=-1)``: ``tgnd = gnd[0:-1]`` drops the LAST ranked item, so a relevant item
ranked last is never counted and the AP divides by the hits among the first N-1 items.  The
ranking is ``np.argsort(hamm)`` with the default kind (ties unordered).  This example hard-codes
that "all" inside a function taking no ``topk``.  Expected under ``--protocol hashing``: called
without k (full mAP), flagged on ``spec §6 k=None`` by inputs with a relevant item ranked
last, and on ``spec §4 ties=stable`` by tie-heavy inputs.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L):
    """hashing mAP over "all" items, ``topk = -1`` (the last ranked item is dropped)."""
    topk = -1
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float32)
        order = np.argsort(hamming(qB[q], rB)[0])  # default kind
        tgnd = gnd[order][0:topk]
        tsum = int(np.sum(tgnd))
        if tsum == 0:
            continue
        count = np.linspace(1, tsum, tsum)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
