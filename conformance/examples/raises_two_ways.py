"""Hashing mAP@topk that raises two different exceptions on two different inputs.

The lab logs the similarity of the ``topk``-th item (``score[order[topk - 1]]``: ``IndexError``
when ``topk`` is past the gallery) and spaces its recall samples ``1 / (topk - 1)`` apart in
Python floats (``ZeroDivisionError`` when ``topk`` is 1).  Elsewhere it is the ``hashing``
preset.  Expected: each (exception, trigger) reported on its own, with its own smallest input:
``ZeroDivisionError`` on a cut-off k of 1, ``IndexError`` on a cut-off k beyond the gallery.
"""

import numpy as np
from retrieval_conformance.conformance.examples._common import relevant


def calc_top_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk; raises for ``topk == 1`` and for ``topk`` past the gallery."""
    num_query = query_L.shape[0]
    total = 0.0
    for q in range(num_query):
        gnd = relevant(query_L[q], retrieval_L).astype(np.float64)
        score = qB[q] @ rB.T  # similarity: larger is closer
        order = np.argsort(-score, kind="stable")
        last_score = float(score[order[topk - 1]])  # logged by the lab: the k-th item's similarity
        step = 1.0 / (int(topk) - 1)  # recall sampled every 1/(k-1), for the lab's PR plot
        del last_score, step
        tgnd = gnd[order][:topk]
        tsum = int(tgnd.sum())
        if tsum == 0:
            continue
        count = np.arange(1, tsum + 1, dtype=np.float64)
        total += np.mean(count / (np.flatnonzero(tgnd == 1) + 1.0))
    return total / num_query
