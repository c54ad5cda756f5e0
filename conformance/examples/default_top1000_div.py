"""hashing mAP@topk with ``topk=1000`` by default, ``np.argsort`` (unstable) and AP@k divided by k.

A common shape of hashing evaluation code: ``def calc_map(qB, rB, query_L, retrieval_L,
topk=1000)``, the Hamming distances sorted with ``np.argsort``'s default kind (ties in no promised
order) and the precision sum over the top k divided by k.  Called without topk, a gallery of N <=
1000 items gets its full precision sum divided by 1000; beyond 1000 items the cut binds too.
Expected under ``--protocol hashing``: deviates; ``--identify`` names all three: ties unstable, the
default cut-off 1000, AP@k divided by k.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L, topk=1000):
    """mean over queries of (1/topk) sum_{r_i <= topk} i / r_i, with an unstable sort."""
    total = 0.0
    for q in range(query_L.shape[0]):
        gnd = relevant(query_L[q], retrieval_L)
        order = np.argsort(hamming(qB[q], rB)[0])
        ranks = np.flatnonzero(gnd[order][:topk]) + 1.0
        total += np.sum(np.arange(1, ranks.size + 1) / ranks) / topk
    return total / query_L.shape[0]
