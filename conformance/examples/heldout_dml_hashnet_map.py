"""mAP@R of thuml/HashNet's PyTorch evaluation (thuml/HashNet@85387b8, ``pytorch/src/test.py``,
``mean_average_precision(params, R)``), rewritten as a small numpy function.

Behaviour reproduced:
* the ranking is ``np.argsort(-sim, axis=0)`` of the inner product ``db_codes @ query_codes.T``
  (default quicksort: tied items in no promised order; for ±1 codes the inner product orders like
  the Hamming distance, for {0, 1} codes it counts shared one-bits instead);
* relevance: the query's label row has its zeros set to -1 *in place* (the caller's query label
  array is modified), then a database item is relevant when it has a 1 where the query has a 1;
* AP@R sums precision at the hits in the top R and divides by the number of hits there;
* a query with no hit in its top R is left out of the mean (all left out: mean of nothing, NaN);
* R beyond the database size makes the ``Px`` product fail (shapes differ) and raise.
"""

import numpy as np


def hashnet_map(query_codes, db_codes, query_labels, db_labels, topk):
    qB = np.asarray(query_codes)
    rB = np.asarray(db_codes)
    qL = query_labels if isinstance(query_labels, np.ndarray) else np.asarray(query_labels)
    rL = np.asarray(db_labels)
    R = int(topk)
    order = np.argsort(-np.dot(rB, qB.T), axis=0)
    aps = []
    for i in range(qB.shape[0]):
        lab = qL[i, :]
        lab[lab == 0] = -1  # in place, as the original does
        top = order[:R, i]
        hit = np.sum(rL[top, :] == lab, axis=1) > 0
        n_hit = hit.sum()
        prec = np.cumsum(hit).astype(float) / np.arange(1, R + 1)
        if n_hit != 0:
            aps.append(np.sum(prec * hit) / n_hit)
    return np.mean(np.array(aps))
