"""A correct ``hashing`` mAP@k that talks: a tqdm-like progress line per query and some prints.

Many lab functions wrap the query loop in ``tqdm`` (swuxyj/DeepHash-pytorch's ``CalcTopMap``) and
print shapes or the result.  This one writes ``\\r mAP: 3/10 [...]`` to stderr after every query
and prints a header and the result to stdout.  The value is the ``hashing`` preset's: stable sort,
AP@k over the hits in the top k, a query without a hit counts 0.  Expected: conforms to
``--protocol hashing``; the output does not disturb the harness's report.
"""

import sys

from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk with progress on stderr and prints on stdout."""
    num_query = query_L.shape[0]
    print(f"query codes {tuple(qB.shape)}, database codes {tuple(rB.shape)}, topk={topk}")
    total = 0.0
    for q in range(num_query):
        total += calc_top_map(qB[q : q + 1], rB, query_L[q : q + 1], retrieval_L, topk)
        done = (q + 1) * 20 // num_query
        sys.stderr.write(f"\r mAP: {q + 1}/{num_query} [{'#' * done}{' ' * (20 - done)}]")
        sys.stderr.flush()
    sys.stderr.write("\n")
    result = total / num_query
    print(f"mAP@{topk}: {result:.4f}")
    return result
