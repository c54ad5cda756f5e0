"""Cross-modal hashing mAP@k as the PyTorch DCMH port computes it (``calc_map_k``).

Reproduces WendellGul/DCMH@db070d0 ``utils.py`` ``calc_map_k``: Hamming distance
0.5 * (bits - qB @ rB^T); the database is ordered by ``torch.sort`` of the distances (not stable:
tied items in no promised order); an item is relevant when it shares a label with the query.  A
query without a relevant item is skipped in the sum but the sum is divided by all queries (it
counts 0).  Otherwise total = min(k, R) (R = relevant items in the whole database, k=None: the
database size) and AP@k = mean over the first ``total`` relevant items *in the full ranking* of
(their index among the relevant) / (their rank), wherever they are ranked (beyond k too).  The
original squeezes its per-query tensors, so a one-item database raises (0-d tensor indexing).

Wrapper (``hashing-codes``): torch tensors from the arrays; topk passed as k.
"""

import numpy as np
import torch


def hamming(b1, b2):
    return 0.5 * (b2.shape[1] - b1.unsqueeze(0).mm(b2.t()))


def calc_map_k(qB, rB, query_L, retrieval_L, k=None):
    n_query = query_L.shape[0]
    if k is None:
        k = retrieval_L.shape[0]
    total_map = 0
    for i in range(n_query):
        gnd = (query_L[i].unsqueeze(0).mm(retrieval_L.t()) > 0).squeeze().float()
        n_rel = torch.sum(gnd)
        if n_rel == 0:
            continue
        _, ind = torch.sort(hamming(qB[i], rB))
        ind.squeeze_()
        gnd = gnd[ind]
        total = min(k, int(n_rel))
        count = torch.arange(1, total + 1).float()
        tindex = torch.nonzero(gnd)[:total].squeeze().float() + 1.0
        total_map = total_map + torch.mean(count / tindex)
    return total_map / n_query


def dcmh_map(query_codes, db_codes, query_labels, db_labels, topk=None):
    def t(a):
        return torch.as_tensor(np.asarray(a, dtype=np.float32))

    k = None if topk is None else int(topk)
    return float(calc_map_k(t(query_codes), t(db_codes), t(query_labels), t(db_labels), k))
