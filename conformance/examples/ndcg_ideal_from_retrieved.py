"""nDCG@k normalised by the retrieved top k's own grades (spec §11 ndcg-ideal-from-retrieved).

The loop sorts the grades of the top k it retrieved and takes their DCG as the ideal, so a
relevant item ranked beyond k costs nothing and any top k already sorted by grade scores 1.
Ties keep gallery order (a stable sort).  Expected: flagged on ``spec §7 nDCG`` (with
``ties=stable``); ``--identify`` names ties: stable and the bug ``ndcg-ideal-from-retrieved``.
"""

import numpy as np


def ndcg_at_k(y_true, y_score, k=None):
    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    k = y_true.shape[1] if k is None else min(k, y_true.shape[1])
    disc = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    values = []
    for grades, scores in zip(y_true, y_score):
        top = grades[np.argsort(-scores, kind="stable")][:k].astype(np.float64)
        ideal = float(np.dot(np.sort(top)[::-1], disc))  # the bug: the ideal of what was retrieved
        values.append(float(np.dot(top, disc)) / ideal if ideal > 0 else 0.0)
    return float(np.mean(values))
