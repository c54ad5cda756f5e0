"""Minimal reproduction: a protocol-correct metric whose result is rounded to 5 decimals.

BEIR (beir-cellar/beir@ef83d29) rounds every reported number with ``round(x, 5)``
(``beir/retrieval/custom_metrics.py`` and ``EvaluateRetrieval.evaluate``).  Apart from that
rounding these functions follow the ``hashing`` preset exactly: stable ties, every query counts,
0 for a query without a relevant item.  ``recall_at_k`` is Recall@k (fraction), ``mrr`` the MRR
(whole ranking, junk removed first).  Rounding at 5 decimals moves a value by up to 5e-6, which
is more than the default tolerance (1e-6 + 1e-5 * |value|) for values below about 0.4.
"""

import numpy as np


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    vals = []
    for d, rel in zip(distances, relevance):
        r = int(rel.sum())
        vals.append(0.0 if r == 0 else rel[np.argsort(d, kind="stable")][:k].sum() / r)
    return round(float(np.mean(vals)), 5)


def mrr(distances, relevance, junk):
    distances, relevance, junk = np.asarray(distances, float), np.asarray(relevance, bool), np.asarray(junk, bool)
    vals = []
    for d, rel, bad in zip(distances, relevance, junk):
        order = np.argsort(d, kind="stable")
        order = order[~bad[order]]
        hits = np.flatnonzero(rel[order])
        vals.append(1.0 / (hits[0] + 1) if hits.size else 0.0)
    return round(float(np.mean(vals)), 5)
