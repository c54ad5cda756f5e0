"""Recall@k of sketch-based image retrieval as SEM-PCYC's ``precak`` computes it (second value).

Reproduces AnjanDutta/sem-pcyc@2e083fa ``src/utils.py`` ``precak`` + ``rec``: each sketch query's
images are ordered by ``np.argsort(-sim, axis=1)`` (numpy's default quicksort: tied images in no
promised order); the relevant set is ``np.nonzero`` of the query's ``str_sim`` row and the top-k
set the first k of the order; recall = |relevant & top-k| / max(|relevant|, 1), so a query with no
relevant image scores 0 and stays in the mean; the result is the plain mean over queries.  Only
the recall is reproduced (``precak`` returns (mean precision, mean recall); SEM-PCYC reports the
precision as P@100 / P@200, which no adapter takes).

Wrapper (``recall-at-k``): sim = -distances; relevance as the 0/1 ``str_sim`` matrix.
"""

import numpy as np


def rec(actual, predicted, k):
    act_set = set(actual.tolist())
    pred_set = set(predicted[:k].tolist())
    return len(act_set & pred_set) / max(len(act_set), 1)


def mean_recall_at_k(sim, str_sim, k):
    act_lists = [np.nonzero(s)[0] for s in str_sim]
    pred_lists = np.argsort(-sim, axis=1)
    return np.mean([rec(act_lists[q], pred_lists[q], k) for q in range(len(act_lists))])


def recall_at_k(distances, relevance, k):
    sim = -np.asarray(distances, dtype=np.float64)
    str_sim = np.asarray(relevance).astype(bool).astype(int)
    return float(mean_recall_at_k(sim, str_sim, int(k)))
