"""A correct ``dcmh``-preset mAP@k: seed 003's ``calc_map_k`` without its stray ``break``.

AP@k of one query averages i / r_i over its first L = min(k, R) relevant items, wherever they
sit in the FULL ranking (spec §6 ``dcmh``); ``k=None`` is full AP.  Queries without a
relevant item add 0 and count (§8 ``zero``).  Ties: stable.  Expected: conforms to
``--protocol dcmh``.  ``calc_map_k_torch`` is the same in torch (``--arrays torch``).
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map_k(qB, rB, query_L, retrieval_L, k=None):
    """mAP@k = mean over queries of (1/L) sum_{i<=L} i / r_i, L = min(k, R)."""
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
    return total / num_query


def calc_map_k_torch(qB, rB, query_L, retrieval_L, k=None):
    """The same in torch (float32 arithmetic, ``torch.sort(stable=True)``)."""
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
        _, order = torch.sort(hamm, stable=True)
        gnd = gnd[order]
        L = min(k, tsum)
        count = torch.arange(1, L + 1, dtype=torch.float32)
        ranks = torch.nonzero(gnd).flatten()[:L].float() + 1.0
        total = total + torch.mean(count / ranks)
    return total / num_query
