"""Average precision as LensKit computes it (lenskit/lkpy@3bd1c175, src/lenskit/metrics/ranking/_map.py,
``AveragePrecision.measure_list``; lists ordered by ``ItemList.top_n``, a Rust ``sort_unstable``).

Reproduced behaviour (our own code): the list is truncated to n; AP sums (hits so far)/rank at each test item in the
list and divides by min(|test|, length of the truncated list), i.e. min(n, R) while the list is long enough and R
when n runs past the catalogue; a user without a test item divides the Python float 0.0 by the int 0 and raises
ZeroDivisionError; ties come in no declared order (numpy's default argsort stands in for the unstable Rust sort); the
report is the mean over users.
Wrapper for the ``distances-relevance`` adapter: recommendation order = ascending distance, test items =
relevance > 0, k = n (None: the whole list).
"""

import numpy as np


def lenskit_ap(distances, relevance, k=None):
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance) > 0
    values = []
    for dist, test in zip(distances, relevance):
        recs = np.argsort(dist)
        if k is not None and len(recs) > k:
            recs = recs[:k]
        good = test[recs]
        sum_good = np.cumsum(good)
        ranks = np.arange(1, len(recs) + 1)
        ap_sum = np.sum(sum_good[good] / ranks[good]).item()
        denom = min(int(test.sum()), len(recs))
        values.append(ap_sum / denom)
    return float(np.mean(values))
