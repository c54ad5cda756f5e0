"""Cross-modal hashing mAP (mAP@all, or mAP@k) as UCCH evaluates image->text and text->image retrieval.

Reproduces penghu-cs/UCCH@0c20e62 ``UCCH.py`` ``fx_calc_map_multilabel_k`` (called with k=0 and
metric='hamming'): distances are ``scipy.spatial.distance.cdist(query, retrieval, 'hamming')``
(the share of differing bits), each row is ordered by ``dist.argsort()`` (numpy's default
quicksort: tied items in no promised order) and cut to its first k items (k=0: the whole
database); an item is relevant when it shares a label with the query (label dot product > 0).
A query with a relevant item in the cut gets AP = sum of precisions at the hits / number of hits
in the cut; a query without one is not appended and so is left out of the mean (no query left:
``np.mean([])``, NaN with a warning).

Wrapper (``hashing-codes``): argument order (query codes, database codes, query labels, database
labels, topk) mapped onto UCCH's (retrieval, retrieval_labels, query, query_label, k); topk=None
or 0 means the whole database.
"""

import numpy as np
import scipy.spatial


def calc_map_multilabel_k(retrieval, retrieval_labels, query, query_label, k=0, metric="cosine"):
    dist = scipy.spatial.distance.cdist(query, retrieval, metric)
    order_all = dist.argsort()
    if k == 0:
        k = dist.shape[1]
    res = []
    for i in range(dist.shape[0]):
        order = order_all[i][:k]
        hits = np.dot(retrieval_labels[order], query_label[i]) > 0
        if hits.sum() > 0:
            prec = hits.cumsum() / np.arange(1.0, 1 + hits.shape[0])
            res.append(np.dot(hits, prec) / float(hits.sum()))
    return np.mean(res)


def ucch_map(query_codes, db_codes, query_labels, db_labels, topk=None):
    k = 0 if topk is None else int(topk)
    return float(
        calc_map_multilabel_k(
            np.asarray(db_codes, dtype=np.float64),
            np.asarray(db_labels, dtype=np.float64),
            np.asarray(query_codes, dtype=np.float64),
            np.asarray(query_labels, dtype=np.float64),
            k=k,
            metric="hamming",
        )
    )
