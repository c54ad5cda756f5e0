"""Code-search MRR as GraphCodeBERT / UniXcoder ``run.py`` ``evaluate`` computes it.

Reproduces microsoft/CodeBERT@c0de43d ``GraphCodeBERT/codesearch/run.py`` ``evaluate`` (same
loop in ``UniXcoder/downstream-tasks/code-search/run.py``): candidates are ordered by
``np.argsort(scores, kind='quicksort')[:, ::-1]`` (an unstable ascending sort read backwards),
only the first 1000 are walked, the rank counts positions up to the first candidate with the
query's url, 1/rank is added when one is found in the first 1000 and 0 otherwise; the result is
the mean over all queries.

Wrapper: scores = -distances; "same url" is the boolean relevance row; junk candidates are
dropped before ranking.  No cut-off parameter (the 1000 is built in).
"""

import numpy as np


def mrr(distances, relevance, junk):
    distances, relevance, junk = np.asarray(distances, float), np.asarray(relevance, bool), np.asarray(junk, bool)
    ranks = []
    for d, rel, bad in zip(distances, relevance, junk):
        keep = np.flatnonzero(~bad)
        scores, hit = -d[keep], rel[keep]
        sort_id = np.argsort(scores, axis=-1, kind="quicksort")[::-1]
        rank, find = 0, False
        for idx in sort_id[:1000]:
            if find is False:
                rank += 1
            if hit[idx]:
                find = True
        ranks.append(1 / rank if find else 0)
    return float(np.mean(ranks))
