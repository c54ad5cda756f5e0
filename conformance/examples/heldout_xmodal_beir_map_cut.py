"""MAP@k as BEIR's ``EvaluateRetrieval.evaluate`` reports it (pytrec_eval ``map_cut``, rounded to 5).

Reproduces beir-cellar/beir@ef83d29 ``beir/retrieval/evaluation.py`` ``EvaluateRetrieval.evaluate``
(with ``ignore_identical_ids``, which never fires here): qrels and run go to
``pytrec_eval.RelevanceEvaluator(qrels, {"map_cut.k"})``; trec_eval ranks each query's documents
by score descending, equal scores by document id descending (string order), and ``map_cut_k``
divides the precisions at the hits in the top k by R; BEIR sums the per-query values over the
queries pytrec_eval returned (those in qrels), divides by their number and applies
``round(x, 5)``.

Wrapper: qrels hold only pairs with relevance > 0 (BEIR's loaders), so a query without a relevant
document is not evaluated; score = -distance.  ``map_at_k`` names documents ``d000``, ``d001``,
... (ids whose string order is gallery order, so trec_eval's tie order is reverse gallery
order); ``map_at_k_plain_ids`` names them ``d0``, ``d1``, ..., ``d10``, ... as corpora with numeric
ids do, where string order differs from gallery order from 11 documents on.  Without k the cut
is the gallery size (the whole ranking).
"""

import numpy as np
import pytrec_eval


def beir_map(qrels, results, k):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{k}"})
    scores = evaluator.evaluate(results)
    total = 0.0
    for qid in scores:
        total += scores[qid][f"map_cut_{k}"]
    return round(total / len(scores), 5)


def _run(distances, relevance, k, name):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    n = distances.shape[1]
    k = n if k is None else int(k)
    qrels, results = {}, {}
    for q in range(len(distances)):
        pos = {name(j): 1 for j in np.flatnonzero(relevance[q])}
        if pos:
            qrels[f"q{q}"] = pos
            results[f"q{q}"] = {name(j): -float(distances[q, j]) for j in range(n)}
    return beir_map(qrels, results, k)


def map_at_k(distances, relevance, k=None):
    return _run(distances, relevance, k, lambda j: f"d{j:03d}")


def map_at_k_plain_ids(distances, relevance, k=None):
    return _run(distances, relevance, k, lambda j: f"d{j}")
