"""Diagnostic variant of ``heldout_xmodal_beir_map_cut``: the same BEIR/pytrec_eval MAP@k without
BEIR's final ``round(x, 5)``, to separate the rounding from the rest of the behaviour.

Everything else as in ``heldout_xmodal_beir_map_cut.py`` (beir-cellar/beir@ef83d29
``EvaluateRetrieval.evaluate``): trec_eval ``map_cut_k`` (divides by R; ties by document id
descending, string order), queries without a relevant document not evaluated.
"""

import numpy as np
import pytrec_eval


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
    scores = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{k}"}).evaluate(results)
    return sum(s[f"map_cut_{k}"] for s in scores.values()) / len(scores)


def map_at_k(distances, relevance, k=None):
    return _run(distances, relevance, k, lambda j: f"d{j:03d}")


def map_at_k_plain_ids(distances, relevance, k=None):
    return _run(distances, relevance, k, lambda j: f"d{j}")
