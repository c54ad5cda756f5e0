"""Accuracy@k (hit rate) as sentence-transformers' InformationRetrievalEvaluator computes it.

Reproduces UKPLab/sentence-transformers@85ec6455
``sentence_transformers/evaluation/InformationRetrievalEvaluator.py``,
``InformationRetrievalEvaluator.compute_metrices`` + ``compute_metrics`` (the ``accuracy@k``
entry): a query counts 1 when any relevant document is among its top k, the count is divided by
the number of evaluated queries (those with at least one relevant document; the others are dropped
at construction). The top k come from ``torch.topk(sorted=False)`` (here ``np.argpartition``),
so which of several tied documents at the cut-off get in is not declared; the ``heapq`` and the
final sort only reorder them.

Wrapper (``recall-at-k``): score = -distance, corpus ids ``"d<j>"``, every ``*_at_k`` list ``[k]``.
"""

import heapq

import numpy as np


def _top_hits(scores, max_k, corpus_ids):
    m = min(max_k, len(scores))
    idx = np.argpartition(-scores, m - 1)[:m]
    heap = []
    for j in idx:
        item = (float(scores[j]), corpus_ids[j])
        if len(heap) < max_k:
            heapq.heappush(heap, item)
        else:
            heapq.heappushpop(heap, item)
    return sorted(({"corpus_id": c, "score": s} for s, c in heap), key=lambda x: x["score"], reverse=True)


def st_accuracy_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    k = int(k)
    corpus_ids = [f"d{j}" for j in range(distances.shape[1])]
    hits_at_k, n_queries = 0, 0
    for q in range(distances.shape[0]):
        rel_docs = {corpus_ids[j] for j in np.flatnonzero(relevance[q])}
        if not rel_docs:
            continue
        n_queries += 1
        for hit in _top_hits(-distances[q], k, corpus_ids)[0:k]:
            if hit["corpus_id"] in rel_docs:
                hits_at_k += 1
                break
    return hits_at_k / n_queries
