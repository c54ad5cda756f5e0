"""A mAP@k that pads a short ranking to k items by repeating it, so it can exceed 1.

``np.resize(order, topk)`` gives k indices even when the gallery holds fewer: the ranking is
repeated, and a relevant item is counted once per repetition.  With one gallery item and k = 4 a
relevant item is counted 4 times: AP@4 = (1/1 + 2/2 + 3/3 + 4/4) / 1 = 4.  Expected under
``--protocol hashing``: values above 1 named as impossible for a fraction (``spec §8 fractions in
[0, 1]``), with the smallest such input, and "cause unknown" where no candidate reproduces them.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """mean over queries of (sum of precisions at the hits in the padded top k) / R."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        R = int(gnd.sum())
        if R == 0:
            continue
        order = np.resize(np.argsort(hamming(qB[q], rB)[0], kind="stable"), topk)  # repeats a short ranking
        tgnd = gnd[order]
        hits = np.flatnonzero(tgnd == 1) + 1.0
        total += np.sum(np.arange(1, hits.size + 1) / hits) / R
    return total / num_query
