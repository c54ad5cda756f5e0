"""MRR that reads only the first 100 ranked items, with no parameter saying so.

Evaluation scripts often keep a fixed top list (``np.argsort(d)[:100]``) before looking for the
first relevant item: a query whose first relevant item ranks beyond 100 scores 0, so the value
is MRR@100, not the MRR of the whole ranking.  Junk is removed before ranking (spec §3), ties
keep gallery order (a stable sort).  Expected under ``--protocol hashing``: deviates only on lists
whose first relevant item lies beyond 100 (``spec §6 k=None (whole gallery)``); ``--identify``
names the built-in cut-off 100 (bug ``default-cutoff[100]``).
"""

import numpy as np

TOP = 100


def mrr(distances, relevance, junk):
    """mean over queries of 1 / (rank of the first relevant item), 0 when it is not in the top 100."""
    distances, relevance, junk = (np.asarray(a) for a in (distances, relevance, junk))
    values = []
    for dist, rel, bad in zip(distances, relevance, junk):
        order = np.argsort(dist, kind="stable")
        order = order[~bad[order]][:TOP]
        hits = np.flatnonzero(rel[order])
        values.append(1.0 / (hits[0] + 1) if hits.size else 0.0)
    return float(np.mean(values))
