"""Seed 003's ``calc_map_k`` as the article prints it: a stray ``break`` after the first query.

Only query 0 is evaluated, and the sum is still divided by the number of queries, so on the
seed's 4 queries it returns AP(query 0) / 4 = (7/12) / 4 = 7/48 = 0.1458 instead of
169/240 = 0.7042 (spec §10, §11).  ``calc_map_k`` is the numpy transcription (our own
code), ``calc_map_k_torch`` the torch one the article uses (``--arrays torch``).
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map_k(qB, rB, query_L, retrieval_L, k=None):
    """dcmh mAP@k, but the loop stops after the first query (the bug)."""
    num_query = query_L.shape[0]
    if k is None:
        k = retrieval_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L)
        tsum = int(gnd.sum())
        if tsum == 0:
            continue
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        gnd = gnd[order]
        L = min(k, tsum)
        count = np.arange(1, L + 1, dtype=np.float64)
        ranks = np.flatnonzero(gnd)[:L] + 1.0
        total += np.mean(count / ranks)
        break  # the stray break of the article
    return total / num_query


def calc_map_k_torch(qB, rB, query_L, retrieval_L, k=None):
    """The torch form of the same bug (float32, ``torch.sort``)."""
    import torch

    num_query = query_L.shape[0]
    if k is None:
        k = retrieval_L.shape[0]
    total = torch.zeros((), dtype=torch.float32)
    n_bits = rB.shape[1]
    for q in range(num_query):
        gnd = (query_L[q : q + 1].float() @ retrieval_L.float().T > 0).squeeze(0)
        tsum = int(gnd.sum())
        if tsum == 0:
            continue
        hamm = 0.5 * (n_bits - qB[q : q + 1].float() @ rB.float().T).squeeze(0)
        _, order = torch.sort(hamm)
        gnd = gnd[order]
        L = min(k, tsum)
        count = torch.arange(1, L + 1, dtype=torch.float32)
        ranks = torch.nonzero(gnd).flatten()[:L].float() + 1.0
        total = total + torch.mean(count / ranks)
        break  # the stray break of the article
    return total / num_query
