"""nDCG@k as microsoft/recommenders computes it with ``score_type="raw"`` (recommenders-team/recommenders@b02c95e2,
recommenders/evaluation/python_evaluation.py ``ndcg_at_k``; default ``discfun_type="loge"``).

Reproduced behaviour (our own numpy code): the top k by prediction with tied predictions in row
order (stable multi-column sort); gain = the raw rating; discount 1/ln(1 + rank) (natural log,
which cancels in DCG/IDCG, so it equals log2); the ideal DCG from the k best ratings of all the
user's true items; a user without a relevant item is not in ``rating_true`` and is left out (its
0/0 would also be skipped by pandas' mean).
Wrapper for the ``sklearn-ndcg`` adapter: rating_true = cells with grade > 0; k=None = whole row.
"""

import numpy as np


def msrec_ndcg_raw(y_true, y_score, k=None):
    y_true = np.asarray(y_true, dtype=np.float64)
    y_score = np.asarray(y_score, dtype=np.float64)
    n = y_true.shape[1]
    k = n if k is None else min(int(k), n)
    vals = []
    for grades, scores in zip(y_true, y_score):
        if not (grades > 0).any():
            continue
        order = np.argsort(-scores, kind="stable")[:k]
        dcg = sum(grades[i] / np.log(1 + r) for r, i in enumerate(order, start=1) if grades[i] > 0)
        ideal = np.sort(grades[grades > 0])[::-1][:k]
        idcg = sum(g / np.log(1 + r) for r, g in enumerate(ideal, start=1))
        vals.append(dcg / idcg)
    return float(np.mean(vals)) if vals else 0.0
