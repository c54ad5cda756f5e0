"""nDCG as LensKit computes it by default (lenskit/lkpy@3bd1c175, src/lenskit/metrics/ranking/_dcg.py, ``NDCG``
with no ``gain`` field: ``_binary_dcg``, ``fixed_dcg`` and ``LogRankWeight`` from _weighting.py; lists ordered by
``ItemList.top_n``, a Rust ``sort_unstable``).

Reproduced behaviour (our own code): every test item has gain 1 whatever its rating; the weight of rank r is
1/log2(max(r, 2)), so ranks 1 and 2 both weigh 1 (the default clip, no offset); DCG sums the weights of test items
in the list truncated to n; the ideal is the same weights summed over ranks 1..min(n, |test|); a user without a test
item gives NaN, which the pandas mean over users leaves out; ties come in no declared order (numpy's default argsort
stands in for the unstable Rust sort).
Wrapper for the ``sklearn-ndcg`` adapter: rows of y_true with grade > 0 are the test items, larger score ranks first,
k = n (None: the whole list).
"""

import numpy as np


def _weight(ranks):
    return np.log(2.0) / np.log(np.maximum(ranks, 2))


def lenskit_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    values = []
    for grades, scores in zip(y_true, y_score):
        test = grades > 0
        n_test = int(test.sum())
        if n_test == 0:
            values.append(np.nan)
            continue
        order = np.argsort(-scores)
        if k is not None:
            order = order[:k]
        ranks = np.arange(1, len(order) + 1)
        good = test[order]
        realized = float(np.sum(_weight(ranks[good])))
        n_ideal = n_test if k is None or k >= n_test else k
        ideal = float(np.sum(_weight(np.arange(1, n_ideal + 1))))
        values.append(realized / ideal)
    return float(np.nanmean(values))
