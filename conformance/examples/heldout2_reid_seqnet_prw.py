"""Person-search ranking metrics in the manner of SeqNet's PRW/CUHK-SYSU evaluation.

serend1p1ty/SeqNet @ edec285, ``eval_func.py``, ``eval_search_prw`` (``eval_search_cuhk`` computes
the same per-query numbers).  Per query, every detection of every gallery image gets a label: in a
gallery image that holds the query person, only the best-scoring detection that overlaps the
person's box is a true match, every other detection a false one.  Then

- AP = ``sklearn.metrics.average_precision_score(labels, scores)`` times the recall rate
  ``count_tp / count_gt`` (gallery images holding the person that were matched / all gallery images
  holding the person), and 0 when nothing was matched; ``count_tp * 1.0 / count_gt`` raises
  ``ZeroDivisionError`` for a query whose person appears in no gallery image;
- top-k accuracy = 1 when a true match is among the k highest scores, the order taken as
  ``np.argsort(scores)[::-1]`` (default sort kind, reversed); it is computed after the AP, so the
  same ``ZeroDivisionError`` stops it first;
- mAP and top-k are plain means over all queries.

``ignore_cam_id=True`` (the default): no gallery image is left out, so there is no junk.

Wrappers:
- ``search_ap`` (adapter ``oxford``): the ranked list is read as the detections in score order,
  each named by its gallery image; the first detection of a positive image is its true match,
  a later detection of the same image a false one; ``count_gt`` is the number of distinct positive
  images, ranked or not; junk names are ordinary (false) detections.
- ``search_topk`` (adapter ``recall-at-k``): one detection per gallery item, scores = -distances,
  ``count_gt`` = the relevant items of the row.
"""

import numpy as np
from sklearn.metrics import average_precision_score


def query_search_metrics(labels, scores, count_gt, topk=(1, 5, 10)):
    """(AP scaled by the recall rate, [top-k hit for k in topk]) of one person-search query."""
    labels = np.asarray(labels, dtype=np.int32)
    scores = np.asarray(scores, dtype=np.float64)
    count_tp = int(labels.sum())
    recall_rate = count_tp * 1.0 / count_gt  # ZeroDivisionError when the person is in no gallery image
    ap = 0 if count_tp == 0 else average_precision_score(labels, scores) * recall_rate
    best_first = np.argsort(scores)[::-1]
    ranked_labels = labels[best_first]
    return ap, [min(1, int(ranked_labels[:k].sum())) for k in topk]


def search_ap(positives, junk, ranked_list):
    """Adapter ``oxford``: AP of one query from its detections named by gallery image."""
    wanted = set(positives)
    matched = set()
    labels = []
    for name in ranked_list:
        is_match = name in wanted and name not in matched
        if is_match:
            matched.add(name)
        labels.append(1 if is_match else 0)
    scores = -np.arange(len(ranked_list), dtype=np.float64)
    ap, _ = query_search_metrics(labels, scores, len(wanted))
    return ap


def search_topk(distances, relevance, k):
    """Adapter ``recall-at-k``: mean top-k accuracy over the queries."""
    distances = np.asarray(distances, dtype=np.float64)
    relevance = np.asarray(relevance)
    accs = []
    for d, rel in zip(distances, relevance):
        labels = (rel > 0).astype(np.int32)
        _, acc = query_search_metrics(labels, -d, int(labels.sum()), topk=[k])
        accs.append(acc)
    return float(np.mean(accs, axis=0)[0])
