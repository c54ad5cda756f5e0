"""Recall@k of Proxy-Anchor's ``evaluate_cos`` (tjddus9597/Proxy-Anchor-CVPR2020@952c5af,
``code/utils.py``, ``evaluate_cos`` + ``calc_recall_at_k``), applied to a query x gallery matrix.

Behaviour reproduced: neighbours come from ``torch.topk(sim, 1 + K)`` and the first column is
dropped, because the code evaluates the set against itself and assumes the top neighbour is the
query itself. Given a gallery that does not contain the query, the best-ranked item is thrown away:
a query is a hit when a relevant item lies at ranks 2..k+1. Hit rate over all queries (recall as a
hit, metric-learning style). torch.topk decides the order of tied scores. K is the k asked
(the original fixes K = 32 and reads k <= 32 of it); topk raises when 1 + k exceeds the gallery.
"""

import numpy as np
import torch


def proxyanchor_recall_at_k(distances, relevance, k):
    sim = -torch.as_tensor(np.asarray(distances, dtype=np.float64))
    rel = torch.as_tensor(np.asarray(relevance, dtype=bool))
    nn_idx = sim.topk(1 + int(k))[1][:, 1:]  # column 0 taken to be the query itself
    hit = torch.gather(rel, 1, nn_idx)[:, :k].any(dim=1)
    return hit.sum().item() / (1.0 * len(rel))
