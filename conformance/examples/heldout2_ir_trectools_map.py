"""MAP as trectools computes it (``TrecEval.get_map``, trec_eval=True, depth 1000 by default).

Reproduces joaopalotti/trectools@8a896de ``trectools/trec_eval.py`` ``TrecEval.get_map``:
the run is re-sorted by ``["query", "score", "docid"]`` ascending ``[True, False, False]`` (score
descending, ties broken by docid descending), cut at ``depth`` per query; every relevant document
in the cut adds (hits so far / rank); the sum is divided by the number of relevant documents in
the qrels (all of them, not only those inside the cut); the per-query values are summed (a query
without relevant documents gives NaN, which the sum skips) and divided by the number of topics in
the run, so such a query counts 0.

Wrapper (``distances-relevance``): the lab writes a TREC run file with every gallery item for every
query (score = -distance, docid ``d000000``, ``d000001``, ... so docids sort like gallery
indices) and a qrels file with relevance 1 for the relevant items; ``k`` is passed as ``depth``,
``k=None`` leaves trectools' default depth of 1000.
"""

import numpy as np


def get_map(scores, rel, depth=1000):
    """One query's AP in trectools' way (numpy): ``scores`` per docid index, ``rel`` 0/1."""
    idx = np.arange(len(scores))
    order = np.lexsort((-idx, -scores))[:depth]
    hits = rel[order]
    n_rel = rel.sum()
    if n_rel == 0:
        return np.nan
    cum = np.cumsum(hits)
    ranks = np.arange(1, len(order) + 1)
    return float(np.sum((cum / ranks)[hits > 0]) / n_rel)


def trectools_map(distances, relevance, k=None):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance, dtype=bool).astype(np.int64)
    depth = 1000 if k is None else int(k)
    per_query = [get_map(-distances[q], relevance[q], depth) for q in range(distances.shape[0])]
    return float(np.nansum(per_query) / len(per_query))
