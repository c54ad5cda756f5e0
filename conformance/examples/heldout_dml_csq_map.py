"""mAP@R of CSQ / "Hadamard matrix guided hashing" (yuanli2333/Hadamard-Matrix-for-hashing@55cab00,
``test.py``, ``mean_average_precision(database_hash, test_hash, database_labels, test_labels, args)``),
rewritten in numpy; only its first return value (mAP) is reproduced (its recall uses ``np.float``,
which numpy >= 1.24 no longer has).

Behaviour reproduced:
* codes are binarised in place with threshold T = 0 (its default ``--T``): x < 0 -> -1, x >= 0 -> 1
  (so {0, 1} codes all become 1 and every item ties);
* ranking ``np.argsort(-inner product, axis=0)`` (default quicksort: ties in no promised order);
* a query whose label row is all zeros is skipped; otherwise its zeros are set to -1 in place (the
  caller's label array changes) and an item is relevant when it shares a 1 with the query;
* AP@R = sum of precisions at the hits in the top R / number of hits there; no hit in the top R
  scores 0 and counts in the mean;
* R beyond the database size raises (shapes of ``Lx`` and ``arange(1, R + 1)`` differ).
"""

import numpy as np


def csq_map(query_codes, db_codes, query_labels, db_labels, topk):
    rB = db_codes if isinstance(db_codes, np.ndarray) else np.asarray(db_codes)
    qB = query_codes if isinstance(query_codes, np.ndarray) else np.asarray(query_codes)
    qL = query_labels if isinstance(query_labels, np.ndarray) else np.asarray(query_labels)
    rL = np.asarray(db_labels)
    R = int(topk)
    for B in (rB, qB):  # binarise in place at T = 0
        B[B < 0] = -1
        B[B >= 0] = 1
    order = np.argsort(-(rB @ qB.T), axis=0)
    aps = []
    for i in range(qB.shape[0]):
        lab = qL[i, :]
        if np.sum(lab) == 0:
            continue
        lab[lab == 0] = -1
        hit = np.sum(rL[order[:R, i], :] == lab, axis=1) > 0
        found = np.sum(hit)
        prec = np.cumsum(hit).astype(float) / np.arange(1, R + 1)
        aps.append(np.sum(prec * hit) / found if found != 0 else 0)
    return np.mean(np.array(aps))
