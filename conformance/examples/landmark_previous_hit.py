"""One query's Oxford AP with compute_ap.cpp's walk, but the trapezoid's left side taken at the
previous HIT (layumi/Person_reID_baseline_pytorch's ``compute_mAP`` before its fix, moved onto
landmark lists).

The walk is ``compute_ap.cpp``'s: a junk name is skipped first (a name both positive and junk is
skipped, yet counts in |P|), a name ranked twice is a hit twice, |P| is the number of distinct
positives.  Only the AP rule differs: each hit adds the mean of its precision and the precision
at the hit before it (1 before the first).  Signature of the ``oxford`` adapter.  Expected under
``--protocol oxford``: the previous-hit trapezoid named, and the unusual-name inputs judged under
that rule, where they follow ``oxford``'s rules (no unexplained name input, no "not `oxford`'s").
"""


def compute_ap(positives, junk, ranked_list):
    """Previous-hit trapezoid AP; junk tested before positives; |P| = distinct positives."""
    pos, junk = set(positives), set(junk)
    ap, hits, rank, last_precision = 0.0, 0, 0, 1.0
    for name in ranked_list:
        if name in junk:
            continue
        rank += 1
        if name in pos:
            hits += 1
            precision = hits / rank
            ap += (last_precision + precision) / 2.0
            last_precision = precision
    return ap / len(pos)
