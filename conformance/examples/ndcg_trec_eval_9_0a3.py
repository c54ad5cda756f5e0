"""nDCG as trec_eval 9.0a3 (2008) computed ``ndcg_cut``: documents in score order with ties by
name descending (here: reverse gallery order), the gain of the first document undiscounted and
the i-th (0-based, i >= 1) divided by log2(i + 1), so ranks 1 and 2 weigh the same (spec §7
discount=trec_eval_9.0a3).  The ideal uses the same discounts.  trec_eval 9.0.4 and later
divide the i-th by log2(i + 2) instead (spec §7 discount=log2).

Expected: ``--identify`` under ``sklearn-ndcg`` says "matches `trec`" with
discount=trec_eval_9.0a3; ``check`` under ``sklearn-ndcg`` flags ``spec §7 discount=log2``.
"""

import math

import numpy as np


def ndcg_cut(y_true, y_score, k=None):
    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    out = []
    for grades, scores in zip(y_true, y_score):
        n = len(scores)
        cut = n if k is None else min(k, n)
        # score descending; among equal scores the later gallery item first (trec's docno order)
        order = sorted(range(n), key=lambda j: (-scores[j], -j))
        dcg = ideal = 0.0
        for i, j in enumerate(order[:cut]):
            if grades[j] > 0:
                dcg += grades[j] if i == 0 else grades[j] / math.log2(i + 1)
        for i, g in enumerate(sorted((g for g in grades if g > 0), reverse=True)[:cut]):
            ideal += g if i == 0 else g / math.log2(i + 1)
        out.append(dcg / ideal if ideal > 0 else 0.0)
    return float(np.mean(out))
