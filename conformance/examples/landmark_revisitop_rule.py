"""One query's AP as revisitop's ``compute_map`` finds positions: membership tests, then junk shift.

revisitop marks the ranked items found in the positive list and those found in the junk list
(``np.in1d``), then lowers each positive's 0-based position by the junk ranked strictly before
it.  So a name both positive and junk stays a hit (and shifts later positives as junk: two hits
can share a position), a name ranked twice is found twice, and n is the length of the positive
list, duplicates included.  Trapezoid AP: each positive j (0-based) at position p adds
(j/p + (j+1)/(p+1)) / 2n, with j/p = 1 at p = 0.  Signature of the ``oxford`` adapter.
Expected: conforms to ``--protocol roxford-medium``; deviates from ``oxford`` on the inputs
outside the usual domain; its identification names a roxford preset, not ``oxford``.
"""

import numpy as np


def compute_ap(positives, junk, ranked_list):
    """revisitop's positions (junk shift after membership tests) and trapezoid AP over len(positives)."""
    ranked = np.array(ranked_list, dtype=object)
    positions = np.flatnonzero(np.isin(ranked, list(positives)))
    junk_at = np.flatnonzero(np.isin(ranked, list(junk)))
    shifted = positions - np.searchsorted(junk_at, positions)
    n = len(positives)
    ap = 0.0
    for j, p in enumerate(shifted):
        before = 1.0 if p == 0 else j / p
        ap += (before + (j + 1) / (p + 1)) / 2.0 / n
    return ap
