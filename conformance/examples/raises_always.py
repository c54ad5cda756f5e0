"""A mAP@k function that raises ``TypeError`` on modern numpy, as ADSH's and DPSH's ``calc_map`` do.

jiangqy/ADSH-AAAI2018 ``ADSH_pytorch/utils/calc_hr.py`` and jiangqy/DPSH-pytorch
``utils/CalcHammingRanking.py`` compute ``tsum = np.sum(gnd)`` on a float32 array and then
``np.linspace(1, tsum, tsum)``: since numpy 1.18 ``num`` must be an integer, so this raises
``TypeError: 'numpy.float32' object cannot be interpreted as an integer`` (checked on numpy 2.4).
The real functions test ``tsum == 0`` first, so an input where NO query has a relevant item
still returns 0.0 there; this example builds ``count`` before that test and so raises on EVERY
input.  Otherwise it is ``calc_topMap``: default ``np.argsort``, AP@k over the hits in the top k.
Expected: the harness cannot compare anything and stops with exit status 2, saying the function
raised ``TypeError: 'numpy.float32' object cannot be interpreted as an integer`` on every input.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """calc_topMap of ADSH/DPSH with ``np.linspace`` given a float count (raises on numpy >= 1.18)."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float32)
        order = np.argsort(hamming(qB[q], rB)[0])
        tgnd = gnd[order][0:topk]
        tsum = np.sum(tgnd)  # numpy.float32
        count = np.linspace(1, tsum, tsum)  # TypeError: num must be an integer
        if tsum == 0:
            continue
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
