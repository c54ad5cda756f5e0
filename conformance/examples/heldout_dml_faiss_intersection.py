"""k-recall@k ("intersection measure") of FAISS (facebookresearch/faiss@02dbb4e,
``contrib/evaluation.py``, ``knn_intersection_measure(I1, I2)``; the benchmarks' ``compute_recall``
in ``benchs/bench_hnsw_prune_headroom.py`` is the same ratio).

Behaviour reproduced: the result table holds each query's k best items (by distance, ties in
np.argsort's default order) and the ground-truth table the query's true neighbours cut to the same
width k; the measure is the number of ids the two rows share, summed over queries, divided by
nq * k. It is divided by k whatever the number of true neighbours.

The thin wrapper ``recall_at_k`` only converts the adapter's arguments into the two id tables:
result ids from ``argsort(distances)[:, :k]``, ground truth = each query's relevant item ids in
gallery order, cut or padded with -1 to width k (FAISS ground-truth files have exactly k columns).
"""

import numpy as np


def knn_intersection_measure(I1, I2):
    nq, width = I1.shape
    assert I2.shape == (nq, width)
    shared = 0
    for a, b in zip(I1, I2):
        shared += len(set(a.tolist()) & set(b.tolist()))
    return shared / I1.size


def recall_at_k(distances, relevance, k):
    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    k = dist.shape[1] if k is None else int(k)
    I = np.argsort(dist, axis=1)[:, :k]
    gt = np.full((len(rel), k), -1, dtype=np.int64)
    for q, row in enumerate(rel):
        ids = np.flatnonzero(row)[:k]
        gt[q, : len(ids)] = ids
    if I.shape[1] < k:  # k beyond the gallery: FAISS pads missing results with -1
        I = np.hstack([I, np.full((len(I), k - I.shape[1]), -2, dtype=np.int64)])
    return knn_intersection_measure(I, gt)
