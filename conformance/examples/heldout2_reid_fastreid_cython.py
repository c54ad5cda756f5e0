"""Market-1501 evaluation in the manner of fast-reid's Cython evaluator (the path it takes by default).

JDAI-CV/fast-reid @ c9bc3ce, ``fastreid/evaluation/rank_cylib/rank_cy.pyx``, ``eval_market1501_cy``
(reached through ``evaluate_rank(..., use_cython=True)``, the default; ``ReidEvaluator`` then takes
``np.mean`` of the per-query AP and INP arrays).  Behaviour reproduced here in numpy:

- the distance matrix is cast to float32 and ranked with ``np.argsort`` (default kind: tied
  distances in no promised order);
- gallery items with the query's id AND camera are taken out; a query left without a match is
  skipped; AP is the precision sum over the hits, accumulated in a float32 variable; mINP is
  (number of hits) / (1-based rank of the last hit);
- the CMC row of a query is read from ONE work buffer of gallery length that every query reuses:
  only the first ``n`` entries (``n`` = the query's gallery after junk removal) are rewritten, so
  when ``n < max_rank`` the tail of the row holds whatever an earlier query left there (zeros for
  the first such query).  No ``ValueError`` as in the Python path: the CMC keeps ``max_rank``
  values, padded with stale entries;
- the mean CMC is summed in float32 over all queries (rows of skipped queries are zero) and
  divided by the number of valid queries.
"""

import numpy as np


def market1501_cy_like(distmat, q_pids, g_pids, q_camids, g_camids, max_rank):
    """(cmc, per-query AP, per-query INP) as the Cython evaluator returns them."""
    distmat = np.asarray(distmat, dtype=np.float32)
    q_pids, g_pids = np.asarray(q_pids, dtype=np.int64), np.asarray(g_pids, dtype=np.int64)
    q_camids, g_camids = np.asarray(q_camids, dtype=np.int64), np.asarray(g_camids, dtype=np.int64)
    num_q, num_g = distmat.shape
    if num_g < max_rank:
        max_rank = num_g
        print(f"Note: number of gallery samples is quite small, got {num_g}")
    order = np.argsort(distmat, axis=1)

    all_cmc = np.zeros((num_q, max_rank), dtype=np.float32)
    aps = np.zeros(num_q, dtype=np.float32)
    inps = np.zeros(num_q, dtype=np.float32)
    work = np.zeros(num_g, dtype=np.float32)  # shared by all queries, never cleared
    n_valid = 0
    for q in range(num_q):
        ranked = order[q]
        same_id = g_pids[ranked] == q_pids[q]
        kept = ~(same_id & (g_camids[ranked] == q_camids[q]))
        hits = same_id[kept].astype(np.float32)
        n = hits.size
        if not hits.any():
            continue
        counts = np.cumsum(hits, dtype=np.float32)
        work[:n] = counts
        last = int(np.flatnonzero(hits)[-1])
        inps[n_valid] = np.float32(float(work[last]) / (last + 1.0))
        work[:n] = np.minimum(work[:n], np.float32(1))
        all_cmc[q] = work[:max_rank]

        acc = np.float32(0)
        for i in range(n):
            acc = np.float32(float(acc) + float(counts[i]) / (i + 1.0) * float(hits[i]))
        aps[n_valid] = acc / np.float32(hits.sum())
        n_valid += 1
    assert n_valid > 0, "Error: all query identities do not appear in gallery"

    mean_cmc = np.zeros(max_rank, dtype=np.float32)
    for r in range(max_rank):
        for q in range(num_q):
            mean_cmc[r] += all_cmc[q, r]
        mean_cmc[r] /= np.float32(n_valid)
    return mean_cmc, aps[:n_valid], inps[:n_valid]


def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
    """Adapter ``reid``: (cmc, mAP, mINP), the means taken as fast-reid's ``ReidEvaluator`` takes them."""
    cmc, aps, inps = market1501_cy_like(distmat, q_pids, g_pids, q_camids, g_camids, max_rank)
    return cmc, np.mean(aps), np.mean(inps)
