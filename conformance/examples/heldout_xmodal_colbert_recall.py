"""Recall at the retrieval depth as ColBERT's ``evaluate_recall`` computes it (rounded to 3 decimals).

Reproduces stanford-futuredata/ColBERT@501c29d ``colbert/evaluation/metrics.py``
``evaluate_recall``: per query, |qrels ∩ top-K pids| / max(1, |qrels|) (a set intersection, so
the order inside the top K does not matter; a query without a positive scores 0 and still
counts), the mean over all queries in qrels, then ``round(recall, 3)``.

Wrapper: the top-K pid list of each query is the K smallest distances with a stable sort (the
order the ranking stage hands over); K is the harness's k; qrels hold each query's relevant ids
(an empty list for a query without one).
"""

import numpy as np


def evaluate_recall(qrels, topK_pids):
    per_query = [len(set(qrels[qid]) & set(topK_pids[qid])) / max(1.0, len(qrels[qid])) for qid in qrels]
    return round(sum(per_query) / len(qrels), 3)


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    qrels = {q: [int(j) for j in np.flatnonzero(relevance[q])] for q in range(len(distances))}
    topk = {q: [int(j) for j in np.argsort(distances[q], kind="stable")[:k]] for q in range(len(distances))}
    return evaluate_recall(qrels, topk)
