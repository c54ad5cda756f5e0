"""MRR@k as sentence-transformers' InformationRetrievalEvaluator computes it.

Reproduces UKPLab/sentence-transformers@85ec6455
``sentence_transformers/evaluation/InformationRetrievalEvaluator.py``,
``InformationRetrievalEvaluator.compute_metrices`` + ``compute_metrics`` (the ``mrr@k`` entry):
queries without a relevant document are dropped at construction; the candidate list is
``torch.topk(sorted=False)`` (here ``np.argpartition``) pushed through a ``heapq`` of
``(score, corpus_id)`` and then sorted by score only (``reverse=True``), so tied documents come in
the heap's array order, no declared order; 1/rank of the first relevant document in the top k,
summed and divided by the number of evaluated queries; not rounded.

Wrapper (``mrr``): score = -distance; junk documents are left out of the corpus the query sees
(the evaluator has no junk notion); relevant means relevant and not junk; corpus ids ``"d<j>"``;
every ``*_at_k`` list is ``[k]``.
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


def st_mrr(distances, relevance, junk, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    junk = np.asarray(junk, dtype=bool)
    k = int(k)
    total, n_queries = 0.0, 0
    for q in range(distances.shape[0]):
        keep = np.flatnonzero(~junk[q])
        corpus_ids = [f"d{j}" for j in keep]
        rel_docs = {f"d{j}" for j in np.flatnonzero(relevance[q] & ~junk[q])}
        if not rel_docs:
            continue
        n_queries += 1
        hits = _top_hits(-distances[q, keep], k, corpus_ids)
        for rank, hit in enumerate(hits[0:k]):
            if hit["corpus_id"] in rel_docs:
                total += 1.0 / (rank + 1)
                break
    return total / n_queries
