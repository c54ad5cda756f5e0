"""A correct ``hashing`` mAP@k whose first call in a process is slow, like a numba-compiled metric.

ranx's metrics are ``@njit(cache=True)`` functions: the first call in a fresh environment spends
seconds compiling (about 12 s for ``average_precision`` on this machine; a later process loads the
cache), every later call is fast.  This example sleeps ``RC_EXAMPLE_WARMUP_SECONDS`` (default 12)
on its first call in a process and never again.  Values: the ``hashing`` preset (stable sort,
AP@k over the hits in the top k, a query without a hit counts 0).  Expected: conforms to
``--protocol hashing`` with the default ``--timeout``: the first call of a worker process is a
warm-up with a longer time limit, so the sleep is not a hang; only a warm-up longer than that
limit is reported as a time-out (the following calls, in a new worker, warm up again).
"""
import os
import time

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant

_warm = False


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk; the first call in the process waits for the simulated compilation."""
    global _warm
    if not _warm:
        time.sleep(float(os.environ.get("RC_EXAMPLE_WARMUP_SECONDS", "12")))
        _warm = True
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
