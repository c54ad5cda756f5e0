"""Revisited Oxford/Paris AP in the manner of DELF/DELG's evaluation (tensorflow/models).

tensorflow/models @ 3617973 (newest stored version of the file),
``research/delf/delf/python/datasets/revisited_op/dataset.py``: ``ComputeMetrics`` ->
``AdjustPositiveRanks`` -> ``ComputeAveragePrecision``.  The 0-based positions of the positives in
the ranked list and those of the junk images are found with ``np.in1d`` (removed in numpy 2.4;
``np.isin`` is its equivalent and is used here); each positive position is lowered by the number of
junk images ranked strictly before it; the trapezoid AP then steps recall by 1 / (number of
positive POSITIONS found in the ranked list), not by the size of the ground-truth list: a positive
absent from the ranked list costs nothing, a positive ranked twice is two hits and counts twice, a
name both positive and junk is a hit that still shifts the positives after it (strict ``>``).  An
empty set of found positives gives AP 0; a query with an empty ground-truth list is left out of the
mean (``ComputeMetrics`` divides by the number of the other queries; with one query that is a
division by zero).  Signature of the ``oxford`` adapter through ``revisited_ap``.
"""

import numpy as np


def shift_for_junk(positive_pos, junk_pos):
    """Lower each sorted positive position by the junk positions strictly before it."""
    if junk_pos.size == 0:
        return positive_pos
    out = positive_pos.copy()
    j = 0
    for i, p in enumerate(positive_pos):
        while j < junk_pos.size and p > junk_pos[j]:
            j += 1
        out[i] -= j
    return out


def trapezoid_ap(positive_pos):
    """Trapezoid AP with recall step 1 / len(positive_pos); 0 when nothing was found."""
    n = len(positive_pos)
    if n == 0:
        return 0.0
    ap = 0.0
    for i, p in enumerate(positive_pos):
        left = 1.0 if p == 0 else i / p
        right = (i + 1) / (p + 1)
        ap += (left + right) / (2.0 * n)
    return ap


def revisited_map(ranked_ids, ground_truth):
    """Mean AP over queries with a non-empty 'ok' list (ranked_ids: one ranked row per query)."""
    total, n_empty = 0.0, 0
    for row, gnd in zip(ranked_ids, ground_truth):
        ok = np.asarray(gnd["ok"])
        if ok.size == 0:
            n_empty += 1
            continue
        row = np.asarray(row)
        pos = np.arange(row.size)[np.isin(row, ok)]
        junk = np.arange(row.size)[np.isin(row, np.asarray(gnd["junk"]))]
        total += trapezoid_ap(shift_for_junk(pos, junk))
    return total / (len(ground_truth) - n_empty)


def revisited_ap(positives, junk, ranked_list):
    """Adapter ``oxford``: one query's AP."""
    return revisited_map([list(ranked_list)], [{"ok": list(positives), "junk": list(junk)}])
