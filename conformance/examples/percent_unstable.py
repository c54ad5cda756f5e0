"""A ``hashing``-preset mAP@k in percent whose sort keeps ties in gallery order up to 16 tied
items and reverses larger tie groups.

Two independent deviations: every value is 100 x the reference (``spec §11 percent``), and the
order of tied items changes with the size of the tie group, as sort implementations that switch
algorithm at 16 or 17 items do (a small-array insertion sort is stable, the large-array path is
not).  Inputs with fewer than 17 tied items show only the percent.  Expected under ``--protocol
hashing``: both causes named, ``spec §8 fractions in [0, 1]`` and ``spec §4 ties=stable``; no claim
that percent alone reproduces every value under stable ties.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant

SWITCH = 17  # tie groups of this many items or more come out reversed


def _order(dist):
    order = np.argsort(dist, kind="stable")
    d = dist[order]
    start = 0
    while start < d.size:
        end = start
        while end < d.size and d[end] == d[start]:
            end += 1
        if end - start >= SWITCH:
            order[start:end] = order[start:end][::-1]
        start = end
    return order


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """100 x mAP@topk."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        tgnd = gnd[_order(hamming(qB[q], rB)[0])][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return 100.0 * total / num_query
