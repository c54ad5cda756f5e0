"""One query's AP that is NaN for a query without a relevant item (0 / 0), as many lab helpers.

Precision-sum AP over the scores sorted descending with a stable sort (ties in gallery order):
AP = (1/R) sum_i i / r_i.  With R = 0 the division gives NaN (numpy warns and returns it), the way
``np.mean`` of an empty array or an unguarded ``hits / n_relevant`` does.  Signature of the
``sklearn`` adapter.  Expected under ``--protocol hashing --empty skip`` (a query without a
relevant item is left out): conforms, exit 0.  Its NaN does not depend on the scores, so the
score-sign probe (scores <= 0) finds nothing.
"""

import numpy as np


def average_precision(y_true, y_score):
    """(1/R) sum_i i / r_i over the stable descending order of the scores; NaN when R = 0."""
    y_true = np.asarray(y_true)
    order = np.argsort(-np.asarray(y_score, dtype=np.float64), kind="stable")
    hits = y_true[order] > 0
    ranks = np.flatnonzero(hits) + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.sum(np.arange(1, ranks.size + 1) / ranks) / np.float64(hits.sum()))
