"""Code-search MRR as CodeBERT's ``codesearch/mrr.py`` computes it: rank = (scores >= correct).sum().

Reproduces microsoft/CodeBERT@c0de43d ``CodeBERT/codesearch/mrr.py`` ``main``: the rank of the
correct code among its batch is the number of candidates whose score is >= the correct one's,
so every candidate tied with the correct one is counted before it (its tie group's end rank);
MRR is ``np.mean(1.0 / ranks)`` over all queries, with no cut-off.

Generalisation (wrapper): CodeBERT has one correct code per query; with several relevant
items the query's rank is the smallest such count over its relevant items (the first relevant
tie group's end rank); a query without a relevant item scores 0.  score = -distance, so
``scores >= correct`` is ``distances <= d_correct``; junk candidates are dropped from the batch.
"""

import numpy as np


def mrr(distances, relevance, junk):
    distances, relevance, junk = np.asarray(distances, float), np.asarray(relevance, bool), np.asarray(junk, bool)
    rr = []
    for d, rel, bad in zip(distances, relevance, junk):
        scores = -d[~bad]
        correct = scores[rel[~bad]]
        if correct.size == 0:
            rr.append(0.0)
            continue
        rank = min(np.sum(scores >= c) for c in correct)
        rr.append(1.0 / rank)
    return float(np.mean(np.array(rr)))
