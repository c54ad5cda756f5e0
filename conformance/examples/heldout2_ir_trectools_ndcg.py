"""nDCG as trectools computes it (``TrecEval.get_ndcg``, trec_eval=True, depth 1000 by default).

Reproduces joaopalotti/trectools@8a896de ``trectools/trec_eval.py`` ``TrecEval.get_ndcg`` on a
run read from a file by ``TrecRun.read_run`` (``trectools/trec_run.py``):
``read_run`` sorts the run by score descending and docid *ascending*; ``get_ndcg`` (unlike
``get_map``) does not sort again, so tied documents stay in docid order. The top ``depth`` rows per
query are kept, the gain is the grade itself (``trec_eval=True``), the discount 1/log2(rank + 1);
the ideal DCG ranks the query's relevant qrels by grade and cuts at ``depth``; per-query values
are summed (a query without relevant documents has none) and divided by the number of topics in
the run, so such a query counts 0.

Wrapper (``sklearn-ndcg``): the lab writes one run line per (query, item) with score = y_score
and docid ``d000000``, ``d000001``, ... (docids sort like columns), and qrels from y_true;
``k`` is passed as ``depth``, ``k=None`` leaves the default depth of 1000.
"""

import numpy as np


def trectools_ndcg(y_true, y_score, k=None):
    y_true = np.asarray(y_true, dtype=np.float64)
    y_score = np.asarray(y_score, dtype=np.float64)
    depth = 1000 if k is None else int(k)
    idx = np.arange(y_true.shape[1])
    total = 0.0
    for grades, scores in zip(y_true, y_score):
        rel = np.where(grades > 0, grades, 0.0)
        if not rel.any():
            continue
        order = np.lexsort((idx, -scores))[:depth]
        dcg = np.sum(rel[order] / np.log2(np.arange(1, len(order) + 1) + 1))
        ideal = np.sort(rel[rel > 0])[::-1][:depth]
        idcg = np.sum(ideal / np.log2(np.arange(1, len(ideal) + 1) + 1))
        total += dcg / idcg
    return float(total / y_true.shape[0])
