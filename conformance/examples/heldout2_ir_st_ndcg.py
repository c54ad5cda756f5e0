"""nDCG@k as sentence-transformers' InformationRetrievalEvaluator computes it.

Reproduces UKPLab/sentence-transformers@85ec6455
``sentence_transformers/evaluation/InformationRetrievalEvaluator.py``,
``InformationRetrievalEvaluator.compute_metrics`` (the ``ndcg@k`` entry) and ``compute_dcg_at_k``:
relevance is a set of document ids, so every relevant document has gain 1 whatever its grade;
DCG sums ``rel / log2(i + 2)`` over the top k; the ideal DCG is that of ``[1] * |relevant|`` cut
at k; queries without a relevant document are dropped at construction; ``np.mean`` over the
rest. Candidates: ``torch.topk(sorted=False)`` (here ``np.argpartition``) through a ``heapq`` of
``(score, corpus_id)``, then a score-only ``sorted(reverse=True)``: ties in no declared order.

Wrapper (``sklearn-ndcg``): a grade > 0 puts the document in ``relevant_docs`` (the evaluator takes
``qid -> set(cid)``); y_score is the similarity; ``k=None`` means the whole row.
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


def _dcg_at_k(rels, k):
    return sum(rels[i] / np.log2(i + 2) for i in range(min(len(rels), k)))


def st_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    k = n if k is None else int(k)
    corpus_ids = [f"d{j}" for j in range(n)]
    vals = []
    for grades, scores in zip(y_true, y_score):
        rel_docs = {corpus_ids[j] for j in np.flatnonzero(grades > 0)}
        if not rel_docs:
            continue
        hits = _top_hits(scores, k, corpus_ids)
        predicted = [1 if h["corpus_id"] in rel_docs else 0 for h in hits[0:k]]
        vals.append(_dcg_at_k(predicted, k) / _dcg_at_k([1] * len(rel_docs), k))
    return float(np.mean(vals))
