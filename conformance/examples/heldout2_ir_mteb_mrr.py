"""MRR@k as MTEB's retrieval evaluator computes it (its own ``mrr``, not pytrec_eval).

Reproduces embeddings-benchmark/mteb@a905523d0 ``mteb/_evaluators/retrieval_metrics.py`` ``mrr``
with the average taken in ``calculate_retrieval_scores``: documents sorted by ``(score, doc_id)``
with ``reverse=True`` (ties broken by doc id descending, to agree with pytrec_eval, #5092), 1/rank
of the first relevant (grade > 0) document in the top k, else 0; the mean over every query in the
results (a query without a relevant document counts 0); not rounded.

Wrapper (``mrr``): score = -distance; doc ids ``d000000``, ``d000001``, ... (they sort like gallery
indices); junk items are not in the results; qrels list every judged non-junk item (1 relevant,
0 not).
"""

import numpy as np


def mteb_mrr(qrels, results, k_values):
    per_k = {k: [] for k in k_values}
    k_max = max(k_values)
    for qid, doc_scores in results.items():
        top = sorted(doc_scores.items(), key=lambda it: (it[1], it[0]), reverse=True)[0:k_max]
        rel = {d for d, g in qrels[qid].items() if g > 0}
        for k in k_values:
            rr = 0.0
            for rank, (doc, _) in enumerate(top[0:k]):
                if doc in rel:
                    rr = 1.0 / (rank + 1)
                    break
            per_k[k].append(rr)
    return {k: sum(v) / len(v) for k, v in per_k.items()}


def mrr(distances, relevance, junk, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    junk = np.asarray(junk, dtype=bool)
    qrels, results = {}, {}
    for q in range(distances.shape[0]):
        keep = np.flatnonzero(~junk[q])
        qrels[f"q{q}"] = {f"d{j:06d}": int(relevance[q, j]) for j in keep}
        results[f"q{q}"] = {f"d{j:06d}": -float(distances[q, j]) for j in keep}
    return mteb_mrr(qrels, results, [int(k)])[int(k)]
