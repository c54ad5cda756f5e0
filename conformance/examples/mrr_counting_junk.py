"""MRR whose rank of the first match still counts the junk items (spec §11 mrr-counting-junk).

``mrr`` ranks every gallery item, junk included, and reads the first relevant item's position
from that list: junk ranked before it pushes it down.  ``mrr_junk_removed`` removes junk first
(spec §3), as the protocol says.  Both keep tied items in gallery order (a stable sort).
Expected: ``mrr`` is flagged on ``spec §7 MRR`` under ``hashing`` and ``--identify`` names the bug
``mrr-counting-junk``; ``mrr_junk_removed`` conforms.
"""

import numpy as np


def _mean_rr(distances, relevance, junk, k, drop_junk):
    distances, relevance, junk = (np.asarray(a) for a in (distances, relevance, junk))
    values = []
    for d, rel, bad in zip(distances, relevance, junk):
        order = np.argsort(d, kind="stable")
        if drop_junk:
            order = order[~bad[order]]
        hits = np.flatnonzero(rel[order] & ~bad[order])
        rank = int(hits[0]) + 1 if hits.size else None
        values.append(1.0 / rank if rank is not None and (k is None or rank <= k) else 0.0)
    return float(np.mean(values))


def mrr(distances, relevance, junk, k=None):
    return _mean_rr(distances, relevance, junk, k, drop_junk=False)


def mrr_junk_removed(distances, relevance, junk, k=None):
    return _mean_rr(distances, relevance, junk, k, drop_junk=True)
