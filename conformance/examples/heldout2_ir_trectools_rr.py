"""Reciprocal rank as trectools computes it (``TrecEval.get_reciprocal_rank``, default depth 1000).

Reproduces joaopalotti/trectools@8a896de ``trectools/trec_eval.py``
``TrecEval.get_reciprocal_rank`` (trec_eval=True): the run is re-sorted by score descending with
ties broken by docid descending, cut at ``depth`` (default 1000), 1/rank of the first relevant
document; summed over the queries that have one and divided by the number of topics in the run
(a query without a relevant document in the cut counts 0).

Wrapper (``mrr``, three parameters: the function takes no cut-off, so trectools' default depth
applies): one run line per non-junk item (score = -distance, docid ``d000000``, ``d000001``,
...; junk items are not in the run, trectools has no junk notion), qrels with relevance 1 for the
relevant non-junk items.
"""

import numpy as np


def trectools_rr(distances, relevance, junk, depth=1000):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool)
    junk = np.asarray(junk, dtype=bool)
    total = 0.0
    for q in range(distances.shape[0]):
        keep = np.flatnonzero(~junk[q])
        order = keep[np.lexsort((-keep, distances[q, keep]))][:depth]
        found = np.flatnonzero(relevance[q, order])
        if found.size:
            total += 1.0 / (found[0] + 1)
    return total / distances.shape[0]


def trectools_mrr(distances, relevance, junk):
    return trectools_rr(distances, relevance, junk)
