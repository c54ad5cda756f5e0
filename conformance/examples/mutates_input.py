"""A correct ``hashing`` mAP@k that rewrites its inputs in place.

A common shortcut: turn the ±1 codes into {0, 1} bits in place (``B += 1; B /= 2``) and count the
differing bits.  The returned value is right (stable sort, AP@k over the hits in the top k, a
query without a hit counts 0), but after the call the caller's ``qB`` and ``rB`` hold 0/1 codes:
a second evaluation on the same arrays (or anything else using them) sees different data.
Expected: the harness reports that the function modified its arguments (``query_codes`` and
``db_codes``); the values themselves conform to ``--protocol hashing``.
"""
import numpy as np
from retrieval_conformance.conformance.examples._common import relevant


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk; ``qB`` and ``rB`` are left as {0, 1} codes (the bug)."""
    if qB.min() < 0:
        qB += 1
        qB /= 2
    if rB.min() < 0:
        rB += 1
        rB /= 2
    q_bits, r_bits = np.asarray(qB, dtype=np.float64), np.asarray(rB, dtype=np.float64)
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        hamm = np.abs(r_bits - q_bits[q]).sum(axis=1)  # number of differing bits
        order = np.argsort(hamm, kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
