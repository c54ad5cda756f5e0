"""MRR@k as BEIR's custom metrics compute it (stable descending sort, rounded to 5 decimals).

Reproduces beir-cellar/beir@ef83d29 ``beir/retrieval/custom_metrics.py`` ``mrr``: each query's
documents are sorted by ``sorted(..., key=score, reverse=True)`` (Python's sort is stable, so
tied documents keep their insertion order), the first relevant document in the top k adds
1/rank, the sum is divided by the number of queries in qrels and rounded with ``round(x, 5)``.

Wrapper: qrels hold only (query, doc) pairs with relevance > 0, as BEIR's loaders read them, so
a query without a relevant document is not in qrels and not evaluated (BEIR filters the queries
to those in qrels); score = -distance; junk documents are left out of the corpus given to the
query (BEIR has no junk notion).
"""

import numpy as np


def beir_mrr(qrels, results, k_values):
    out = {f"MRR@{k}": 0.0 for k in k_values}
    k_max = max(k_values)
    top = {qid: sorted(docs.items(), key=lambda it: it[1], reverse=True)[0:k_max] for qid, docs in results.items()}
    for qid, hits in top.items():
        rel = {d for d, g in qrels[qid].items() if g > 0}
        for k in k_values:
            for rank, (doc, _) in enumerate(hits[0:k]):
                if doc in rel:
                    out[f"MRR@{k}"] += 1.0 / (rank + 1)
                    break
    for k in k_values:
        out[f"MRR@{k}"] = round(out[f"MRR@{k}"] / len(qrels), 5)
    return out


def mrr(distances, relevance, junk, k):
    distances, relevance, junk = np.asarray(distances, float), np.asarray(relevance, bool), np.asarray(junk, bool)
    qrels, results = {}, {}
    for q in range(len(distances)):
        pos = {f"d{j}": 1 for j in np.flatnonzero(relevance[q] & ~junk[q])}
        if pos:
            qrels[f"q{q}"] = pos
            results[f"q{q}"] = {f"d{j}": -float(distances[q, j]) for j in range(distances.shape[1]) if not junk[q, j]}
    return beir_mrr(qrels, results, [int(k)])[f"MRR@{int(k)}"]
