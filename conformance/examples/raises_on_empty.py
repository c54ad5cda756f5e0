"""One query's precision-sum AP that raises ``ZeroDivisionError`` when it has no positive.

Correct otherwise: items ranked by descending score with ties in gallery order (a stable sort,
spec §4 ``stable``), AP = (1/R) sum_i i / r_i.  The final division is by R as a Python int,
so R = 0 raises ``ZeroDivisionError`` instead of giving 0 or being left out.  In the wild the same
thing comes from revisitop's ``compute_ap(ranks, nres)`` (``recall_step = 1. / nres``) when it is
called directly for a query without positives.  ranx does NOT do this: its ``_average_precision``
returns 0.0 for a query with no relevant document.  Signature of the ``sklearn`` adapter.
Expected under ``--protocol hashing``: equal on every query with a positive; the checks with an
empty query are reported as raising ZeroDivisionError (``spec §8 empty=zero``), with the input.
"""

import numpy as np


def average_precision(y_true, y_score):
    """sum of i / r_i over the relevant items, divided by their number (an int: may be 0)."""
    y_true = np.asarray(y_true).astype(bool)
    y_score = np.asarray(y_score, dtype=np.float64)
    order = np.argsort(-y_score, kind="stable")  # best first, ties in gallery order
    ranks = np.flatnonzero(y_true[order]) + 1
    n_pos = int(y_true.sum())
    total = 0.0
    for i, r in enumerate(ranks, start=1):
        total += i / int(r)
    return total / n_pos  # ZeroDivisionError when the query has no positive
