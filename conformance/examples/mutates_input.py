"""A correct ``hashing`` mAP@k that rewrites its inputs in place.

A common shortcut: turn the ±1 codes into {0, 1} bits in place (``B += 1; B /= 2``) and count the
differing bits.  The returned value is right (stable sort, AP@k over the hits in the top k, a
query without a hit counts 0), but after the call the caller's ``qB`` and ``rB`` hold 0/1 codes:
a second evaluation on the same arrays (or anything else using them) sees different data.
Expected: the harness reports that the function modified its arguments (``query_codes`` and
``db_codes``); the values themselves conform to ``--protocol hashing``.
"""

from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk; ``qB`` and ``rB`` are left as {0, 1} codes (the bug)."""
    if qB.min() < 0:
        qB += 1
        qB /= 2
    if rB.min() < 0:
        rB += 1
        rB /= 2
    return calc_top_map(2 * qB - 1, 2 * rB - 1, query_L, retrieval_L, topk)  # the bits, as ±1 again
