"""hashing mAP@topk whose ``topk`` defaults to 10: called without one, it is mAP@10, not mAP@ALL.

Precision-sum AP@k over the stable order of the Hamming distances, divided by the hits in the
top k (the ``hashing`` preset's rule), with ``topk=10`` as its default, as many evaluation helpers
have one (recall@10, ndcg@10 and mrr@10 defaults).  Expected under ``--protocol hashing``: every
input with a cut-off conforms; on a gallery longer than 10 called without topk the value is
mAP@10, named ``spec §6 k=None (whole gallery)``, and ``--identify`` names the default cut-off 10.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L, topk=10):
    """mean over queries of (1/hits) sum_{r_i <= topk} i / r_i (0 without a hit)."""
    total = 0.0
    for q in range(query_L.shape[0]):
        gnd = relevant(query_L[q], retrieval_L)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        ranks = np.flatnonzero(gnd[order][:topk]) + 1.0
        if ranks.size:
            total += np.mean(np.arange(1, ranks.size + 1) / ranks)
    return total / query_L.shape[0]
