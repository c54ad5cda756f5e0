"""Hashing mAP@topk with two unrelated behaviours: tied items in reverse order (a catalogued tie
policy, spec §4 ``reverse``), and, when ``topk`` cuts the list, the precision at ``topk`` in
place of the AP (a lab that reused its P@k helper for the cut-off branch; no catalogued
convention or bug computes that).

Ranking by ``argsort(similarity, kind="stable")[::-1]`` reverses tied items.  On whole lists
(``topk`` at least the gallery size) the function is the ``hashing`` preset with reversed ties;
with a cut-off inside the list it returns hits in the top ``topk`` over ``topk``.  Expected
under ``--protocol hashing``: ``spec §4 ties=stable`` named on whole-list inputs with ties, and
"cause unknown" confined to the inputs with a cut-off inside the list.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """mAP@topk ranked by ``argsort(similarity)[::-1]``; P@topk where ``topk`` cuts the list."""
    num_query = query_L.shape[0]
    num_gallery = rB.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        score = qB[q] @ rB.T  # similarity: larger is closer
        order = np.argsort(score, kind="stable")[::-1]
        tgnd = gnd[order][:topk]
        if topk < num_gallery:
            total += tgnd.sum() / topk  # the P@k helper, used for the cut-off branch
            continue
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
