"""Top-k accuracy as BEIR's custom metrics compute it (hit rate, rounded to 5 decimals).

Reproduces beir-cellar/beir@ef83d29 ``beir/retrieval/custom_metrics.py`` ``top_k_accuracy``:
stable descending sort of the scores (Python ``sorted(reverse=True)``), a query scores 1 when any
of its relevant documents is among the top k ids, the sum is divided by ``len(qrels)`` and
rounded with ``round(x, 5)``.

Wrapper: qrels hold only pairs with relevance > 0 (BEIR's loaders), so a query without a
relevant document is neither in qrels nor evaluated; score = -distance.
"""

import numpy as np


def beir_top_k_accuracy(qrels, results, k_values):
    acc = {f"Accuracy@{k}": 0.0 for k in k_values}
    k_max = max(k_values)
    top = {
        qid: [d for d, _ in sorted(docs.items(), key=lambda it: it[1], reverse=True)[0:k_max]]
        for qid, docs in results.items()
    }
    for qid in top:
        rel = {d for d, g in qrels[qid].items() if g > 0}
        for k in k_values:
            for d in rel:
                if d in top[qid][0:k]:
                    acc[f"Accuracy@{k}"] += 1.0
                    break
    for k in k_values:
        acc[f"Accuracy@{k}"] = round(acc[f"Accuracy@{k}"] / len(qrels), 5)
    return acc


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    qrels, results = {}, {}
    for q in range(len(distances)):
        pos = {f"d{j}": 1 for j in np.flatnonzero(relevance[q])}
        if pos:
            qrels[f"q{q}"] = pos
            results[f"q{q}"] = {f"d{j}": -float(distances[q, j]) for j in range(distances.shape[1])}
    return beir_top_k_accuracy(qrels, results, [int(k)])[f"Accuracy@{int(k)}"]
