"""MAP@k as sentence-transformers' InformationRetrievalEvaluator computes it.

Reproduces UKPLab/sentence-transformers@85ec6455
``sentence_transformers/evaluation/InformationRetrievalEvaluator.py``,
``InformationRetrievalEvaluator.compute_metrices`` + ``compute_metrics`` (the ``map@k`` entry):

- queries without a relevant document are dropped in ``__init__`` (never evaluated, not counted);
- candidates: ``torch.topk(scores, min(max_k, n), sorted=False)`` (here ``np.argpartition``, which
  like topk picks and orders tied items in no declared way), pushed one by one into a ``heapq`` of
  ``(score, corpus_id)`` tuples, then ``sorted(..., key=score, reverse=True)``: tied documents keep
  the heap's internal array order, which is neither gallery order nor its reverse;
- AP@k sums precision at each hit in the top k and divides by ``min(k, |relevant|)``;
- the mean is ``np.mean`` over the evaluated queries, not rounded.

Wrapper (``distances-relevance``): score = -distance, corpus ids ``"d<j>"`` (strings, as
corpus ids usually are), every ``*_at_k`` list set to ``[k]`` so ``max_k = k``; ``k=None`` means the
whole gallery.
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


def st_map_at_k(distances, relevance, k=None):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    n = distances.shape[1]
    k = n if k is None else int(k)
    corpus_ids = [f"d{j}" for j in range(n)]
    aps = []
    for q in range(distances.shape[0]):
        rel_docs = {corpus_ids[j] for j in np.flatnonzero(relevance[q])}
        if not rel_docs:
            continue
        hits = _top_hits(-distances[q], k, corpus_ids)
        found, acc = 0, 0.0
        for rank, hit in enumerate(hits[0:k]):
            if hit["corpus_id"] in rel_docs:
                found += 1
                acc += found / (rank + 1)
        aps.append(acc / min(k, len(rel_docs)))
    return float(np.mean(aps))
