"""Capped Recall@k (R_cap@k) as BEIR's custom metrics compute it, rounded to 5 decimals.

Reproduces beir-cellar/beir@ef83d29 ``beir/retrieval/custom_metrics.py`` ``recall_cap``: stable
descending sort of the scores (Python ``sorted(reverse=True)``), relevant documents found in the
top k divided by ``min(number of relevant documents, k)``, summed over the queries, divided by
``len(qrels)`` and rounded with ``round(x, 5)``.

Wrapper: qrels hold only pairs with relevance > 0 (BEIR's loaders), so a query without a
relevant document is neither in qrels nor evaluated; score = -distance.
"""

import numpy as np


def beir_recall_cap(qrels, results, k_values):
    out = {f"R_cap@{k}": 0.0 for k in k_values}
    k_max = max(k_values)
    for qid, docs in results.items():
        top = sorted(docs.items(), key=lambda it: it[1], reverse=True)[0:k_max]
        rel = [d for d in qrels[qid] if qrels[qid][d] > 0]
        for k in k_values:
            found = [d for d, _ in top[0:k] if qrels[qid].get(d, 0) > 0]
            out[f"R_cap@{k}"] += len(found) / min(len(rel), k)
    for k in k_values:
        out[f"R_cap@{k}"] = round(out[f"R_cap@{k}"] / len(qrels), 5)
    return out


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    qrels, results = {}, {}
    for q in range(len(distances)):
        pos = {f"d{j}": 1 for j in np.flatnonzero(relevance[q])}
        if pos:
            qrels[f"q{q}"] = pos
            results[f"q{q}"] = {f"d{j}": -float(distances[q, j]) for j in range(distances.shape[1])}
    return beir_recall_cap(qrels, results, [int(k)])[f"R_cap@{int(k)}"]
