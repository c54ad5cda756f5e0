"""One query's AP computed threshold by threshold, as scikit-learn's ``average_precision_score``.

Every distinct score is one threshold: a tie group enters all at once, so each of its relevant
items gets the precision at the END of the group (spec §4 ``grouped``).  A query with no
relevant item gives 0.  Signature of the ``sklearn`` adapter (``f(y_true, y_score)``).
Expected under ``--protocol hashing``: flagged on ``spec §4 ties=stable``;
``--identify`` says "matches `hashing` except ties: grouped".
"""

import numpy as np


def average_precision(y_true, y_score):
    """AP = sum over thresholds of (recall step) * precision at the threshold."""
    y_true = np.asarray(y_true, dtype=bool)
    y_score = np.asarray(y_score, dtype=np.float64)
    R = int(y_true.sum())
    if R == 0:
        return 0.0
    ap, seen, hits = 0.0, 0, 0
    for s in np.unique(y_score)[::-1]:  # thresholds, highest score first
        group = y_score == s
        seen += int(group.sum())
        new_hits = int((y_true & group).sum())
        hits += new_hits
        ap += (new_hits / R) * (hits / seen)
    return ap
