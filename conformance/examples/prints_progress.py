"""A correct ``hashing`` mAP@k that talks: a tqdm-like progress line per query and some prints.

Many lab functions wrap the query loop in ``tqdm`` (swuxyj/DeepHash-pytorch's ``CalcTopMap``) and
print shapes or the result.  This one writes ``\\r mAP: 3/10 [...]`` to stderr after every query
and prints a header and the result to stdout.  The value is the ``hashing`` preset's: stable sort,
AP@k over the hits in the top k, a query without a hit counts 0.  Expected: conforms to
``--protocol hashing``; the output does not disturb the harness's report.
"""
import sys

import numpy as np
from retrieval_conformance.conformance.examples._common import hamming, relevant


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk with progress on stderr and prints on stdout."""
    num_query = query_L.shape[0]
    print(f"query codes {tuple(qB.shape)}, database codes {tuple(rB.shape)}, topk={topk}")
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        order = np.argsort(hamming(qB[q], rB)[0], kind="stable")
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum:
            count = np.arange(1, tsum + 1, dtype=np.float64)
            total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
        done = (q + 1) * 20 // num_query
        sys.stderr.write(f"\r mAP: {q + 1}/{num_query} [{'#' * done}{' ' * (20 - done)}]")
        sys.stderr.flush()
    sys.stderr.write("\n")
    result = total / num_query
    print(f"mAP@{topk}: {result:.4f}")
    return result
