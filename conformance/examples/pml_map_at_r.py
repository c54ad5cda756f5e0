"""MAP@R, R-precision and precision_at_1 the way pytorch-metric-learning's ``AccuracyCalculator``
computes them (our own code, not theirs).

``get_accuracy(query, query_labels, reference, reference_labels)``: the reference items are
ranked by Euclidean distance to the query (ties in gallery order: a stable sort); R is the number
of reference items with the query's label; MAP@R sums the precision at each match within the
first R ranks and divides by R; R-precision is the share of matches among the first R;
precision_at_1 is whether the nearest item matches.  A query whose label no reference item has
is left out of every mean (its "lone query" rule; 0 when every query is lone).  Expected: conforms
to ``pml``; ``--identify`` says "matches `pml`".

``get_accuracy_dividing_by_matches`` divides by the matches found within the first R instead of R
(the AP@R of code that reuses an AP@k loop): not a convention of any preset, and not a bug model
of the harness either, so ``--identify`` says that nothing reproduces it.
"""

import numpy as np


def _per_query(query, query_labels, reference, reference_labels, by_matches=False):
    query, reference = np.asarray(query, np.float64), np.asarray(reference, np.float64)
    query_labels, reference_labels = np.asarray(query_labels), np.asarray(reference_labels)
    sq = ((query[:, None, :] - reference[None, :, :]) ** 2).sum(-1)
    rows = []
    for q in range(len(query)):
        match = reference_labels == query_labels[q]
        r = int(match.sum())
        if r == 0:
            continue  # a lone query
        ranked = match[np.argsort(sq[q], kind="stable")][:r]
        found = np.cumsum(ranked)
        precisions = (found / np.arange(1, r + 1))[ranked]
        denominator = max(int(ranked.sum()), 1) if by_matches else r
        rows.append((precisions.sum() / denominator, ranked.sum() / r, float(ranked[0])))
    return rows


def _as_dict(rows):
    if not rows:
        return {"mean_average_precision_at_r": 0.0, "r_precision": 0.0, "precision_at_1": 0.0}
    m = np.mean(np.asarray(rows, dtype=np.float64), axis=0)
    return {"mean_average_precision_at_r": float(m[0]), "r_precision": float(m[1]), "precision_at_1": float(m[2])}


def get_accuracy(query, query_labels, reference, reference_labels):
    return _as_dict(_per_query(query, query_labels, reference, reference_labels))


def get_accuracy_dividing_by_matches(query, query_labels, reference, reference_labels):
    return _as_dict(_per_query(query, query_labels, reference, reference_labels, by_matches=True))
