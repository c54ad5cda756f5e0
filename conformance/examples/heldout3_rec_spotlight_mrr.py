"""MRR as spotlight computes it (maciejkula/spotlight@75f4c8c, spotlight/evaluation.py, ``mrr_score``;
the mean of the returned per-user array is what its examples report).

Reproduced behaviour (our own code): users without a test item are skipped; train items get the float32 maximum as
their (negated) prediction so they rank last; ranks come from ``scipy.stats.rankdata`` with its default
``method='average'`` over ALL items (other test items included); a user's value is the mean of 1/rank over all of
their test items (not the reciprocal rank of the first hit); the report is the mean over users.
Wrapper for the ``mrr`` adapter (three parameters: whole ranking): the prediction is -distance, so the negated
prediction is the distance; junk items play the train items; test items are relevant and not junk.
"""

import numpy as np
import scipy.stats as st

FLOAT_MAX = np.finfo(np.float32).max


def spotlight_mrr(distances, relevance, junk):
    distances = np.asarray(distances, dtype=np.float64)
    test = np.asarray(relevance, dtype=bool) & ~np.asarray(junk, dtype=bool)
    train = np.asarray(junk, dtype=bool)
    mrrs = []
    for dist, targets, rated in zip(distances, test, train):
        if not targets.any():
            continue
        predictions = dist.copy()
        predictions[rated] = FLOAT_MAX
        mrrs.append((1.0 / st.rankdata(predictions)[np.flatnonzero(targets)]).mean())
    return float(np.array(mrrs).mean())
