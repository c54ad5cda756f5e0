"""Image/text retrieval Recall@k as LAION-AI/CLIP_benchmark computes it (hit rate through topk).

Reproduces LAION-AI/CLIP_benchmark@48de38c ``clip_benchmark/metrics/zeroshot_retrieval.py``
``recall_at_k`` + the ``(... > 0).float().mean()`` in ``evaluate``: the top k items of each
query come from ``torch.topk(scores, k)``, the per-query recall is true positives / positives
(0/0 = NaN for a query without a positive), and the reported number is the share of queries
whose recall is > 0, i.e. the hit rate; NaN > 0 is False, so an empty query counts as a miss.
``torch.topk`` raises when k exceeds the gallery.  Tie order is whatever ``torch.topk`` gives.

Wrapper: scores = -distances (the harness passes distances; smaller is better).
"""

import numpy as np
import torch


def clip_recall(scores, positive_pairs, k):
    topk_idx = torch.topk(scores, k, dim=1)[1]
    n_pos = positive_pairs.sum(dim=1)
    onehot = torch.nn.functional.one_hot(topk_idx, num_classes=scores.shape[1])
    tp = (onehot * positive_pairs.view(scores.shape[0], 1, scores.shape[1])).sum(dim=(1, 2))
    per_query = tp / n_pos
    return (per_query > 0).float().mean().item()


def recall_at_k(distances, relevance, k):
    scores = -torch.as_tensor(np.asarray(distances, dtype=np.float64))
    pos = torch.as_tensor(np.asarray(relevance, dtype=bool))
    return clip_recall(scores, pos, int(k))
