"""Capped recall R_cap@k as MTEB computes it (its own ``recall_cap``, averaged by the LMEB tasks).

Reproduces embeddings-benchmark/mteb@a905523d0 ``mteb/_evaluators/retrieval_metrics.py``
``recall_cap`` with the mean of ``mteb/tasks/retrieval/eng/lmeb_retrieval.py``
``_average_optional``: documents sorted by ``(score, doc_id)`` with ``reverse=True`` (ties broken
by doc id descending), relevant documents in the top k divided by ``min(|relevant|, k)``; a query
without a relevant document yields ``None`` and is left out of the mean (0.0 when every query is
``None``); not rounded (unlike BEIR's ``recall_cap``).

Wrapper (``recall-at-k``): score = -distance; doc ids ``d000000``, ``d000001``, ... (they sort like
gallery indices); qrels hold every judged item (grade 1 relevant, 0 not).
"""

import numpy as np


def mteb_recall_cap(qrels, results, k_values):
    out = {}
    k_max = max(k_values)
    for qid, doc_scores in results.items():
        top = sorted(doc_scores.items(), key=lambda it: (it[1], it[0]), reverse=True)[0:k_max]
        n_rel = sum(1 for g in qrels[qid].values() if g > 0)
        for k in k_values:
            found = sum(1 for d, _ in top[0:k] if qrels[qid].get(d, 0) > 0)
            denom = min(n_rel, k)
            out.setdefault(k, []).append(None if denom == 0 else found / denom)
    means = {}
    for k, vals in out.items():
        valid = [v for v in vals if v is not None]
        means[k] = sum(valid) / len(valid) if valid else 0.0
    return means


def recall_at_k(distances, relevance, k):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    qrels, results = {}, {}
    for q in range(distances.shape[0]):
        ids = [f"d{j:06d}" for j in range(distances.shape[1])]
        qrels[f"q{q}"] = {d: int(r) for d, r in zip(ids, relevance[q])}
        results[f"q{q}"] = {d: -float(s) for d, s in zip(ids, distances[q])}
    return mteb_recall_cap(qrels, results, [int(k)])[int(k)]
