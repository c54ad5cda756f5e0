"""A correct ``hashing`` mAP@k whose per-query APs come from a ``multiprocessing.Pool``.

Labs with large query sets spread the query loop over processes: ``Pool(2).map`` over the
queries, each worker computing one AP@k with seed 000's ``CalcTopMap`` (stable sort, AP@k over
the hits in the top k, a query without a hit counts 0).  The harness's worker must be allowed
to start these processes, and none may outlive the call.  Expected: conforms to
``--protocol hashing``.
"""

import multiprocessing

import numpy as np
from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map


def query_ap(job):
    """AP@k of one query: ``job`` is ``(query code, database codes, query label, database labels, k)``."""
    code, db_codes, label, db_labels, topk = job
    return calc_top_map(code[None, :], db_codes, label[None, :], db_labels, topk)


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk, one query per task of a pool of two processes."""
    jobs = [(qB[q], rB, query_L[q], retrieval_L, topk) for q in range(query_L.shape[0])]
    with multiprocessing.Pool(2) as pool:
        aps = pool.map(query_ap, jobs)
    return float(np.mean(aps))
