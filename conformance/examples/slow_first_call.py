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

from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map

_warm = False


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk; the first call in the process waits for the simulated compilation."""
    global _warm
    if not _warm:
        time.sleep(float(os.environ.get("RC_EXAMPLE_WARMUP_SECONDS", "12")))
        _warm = True
    return calc_top_map(qB, rB, query_L, retrieval_L, topk)
