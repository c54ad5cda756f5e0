"""nDCG written the way scikit-learn's ``ndcg_score`` behaves (our own code, not theirs).

``ndcg_score(y_true, y_score, k=None)``: every row is one query; items with equal scores share
the mean gain of their tie group over the group's positions (spec §4 ``ties=expected``, §7
nDCG), linear gains, the ideal DCG from every item's grade, a row whose ideal is 0 scores 0,
and the mean over rows.  Expected: conforms to ``sklearn-ndcg``; ``--identify`` says
"matches `sklearn-ndcg`".

``ndcg_score_ignore_ties``: the ``ignore_ties=True`` variant, ranking by one sort and ignoring
ties.  scikit-learn reverses numpy's ascending argsort; for small rows that sort keeps equal keys
in gallery order, so tied items come out in reverse gallery order.  This copy makes that order
deterministic (a stable sort, reversed).  Expected: ``--identify`` says ties: reverse (the tie
order of ``trec``); scikit-learn's own ``ignore_ties=True`` is ``ties: unstable`` on rows where
numpy's sort is not stable.
"""

import numpy as np


def _discounts(n):
    return 1.0 / np.log2(np.arange(n) + 2.0)


def _tie_averaged_dcg(grades, scores, k):
    """DCG@k of one row where each tie group spreads its mean gain over its positions."""
    disc = _discounts(len(scores))
    disc[k:] = 0.0
    order = np.argsort(-scores, kind="stable")
    s, g = scores[order], grades[order].astype(np.float64)
    total, start = 0.0, 0
    while start < len(s):
        stop = start
        while stop < len(s) and s[stop] == s[start]:
            stop += 1
        total += g[start:stop].mean() * disc[start:stop].sum()
        start = stop
    return total


def _dcg_in_order(grades_in_order, k):
    disc = _discounts(len(grades_in_order))
    disc[k:] = 0.0
    return float(np.dot(grades_in_order.astype(np.float64), disc))


def ndcg_score(y_true, y_score, k=None):
    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    k = y_true.shape[1] if k is None else k
    values = []
    for grades, scores in zip(y_true, y_score):
        ideal = _dcg_in_order(np.sort(grades)[::-1], k)
        values.append(_tie_averaged_dcg(grades, scores, k) / ideal if ideal > 0 else 0.0)
    return float(np.mean(values))


def ndcg_score_ignore_ties(y_true, y_score, k=None):
    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    k = y_true.shape[1] if k is None else k
    values = []
    for grades, scores in zip(y_true, y_score):
        ideal = _dcg_in_order(np.sort(grades)[::-1], k)
        ranked = grades[np.argsort(scores, kind="stable")[::-1]]
        values.append(_dcg_in_order(ranked, k) / ideal if ideal > 0 else 0.0)
    return float(np.mean(values))
