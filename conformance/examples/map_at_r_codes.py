"""MAP@R returned as the mAP of a hashing evaluation: ``calc_map(qB, rB, query_L, retrieval_L)``.

Each query's ranking by Hamming distance (a stable sort) is cut at its own R, the number of
database items sharing a label with it, and the precisions at the hits within it are divided
by R (``spec §7 MAP@R``, pytorch-metric-learning's ``mean_average_precision_at_r``); a query
without a relevant item scores 0.  Expected under ``--protocol hashing``: deviates on full mAP;
``--identify`` names the list cut at its own R (bug ``cut-at-r``), nothing else.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L):
    """mean over queries of (1/R) sum_{r_i <= R} i / r_i."""
    total = 0.0
    for q in range(query_L.shape[0]):
        gnd = relevant(query_L[q], retrieval_L)
        n_rel = int(gnd.sum())
        if n_rel == 0:
            continue
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        ranks = np.flatnonzero(gnd[order][:n_rel]) + 1.0
        total += np.sum(np.arange(1, ranks.size + 1) / ranks) / n_rel
    return total / query_L.shape[0]
