"""Oxford-style AP of one query that does not know junk: junk names stay in the ranking as misses.

A generic retrieval metric (GLDv2's Kaggle scorer and most libraries have no junk notion) given a
landmark protocol's lists: the junk list is accepted and ignored, so each junk name ranked before
a positive pushes it down.  Otherwise ``compute_ap``'s trapezoid over the ranked list.  Signature
of the ``oxford`` adapter.  Expected under ``--protocol oxford``: identified as "junk items are not
removed" (``spec §3 junk is removed before ranking``), nothing else blamed.
"""


def compute_ap(positives, junk, ranked_list):
    """Trapezoid AP over the ranked list, junk counted as not relevant."""
    pos = set(positives)
    if not pos:
        raise ZeroDivisionError("no positives")
    old_recall, old_precision, ap, hits = 0.0, 1.0, 0.0, 0
    for j, name in enumerate(ranked_list):
        if name in pos:
            hits += 1
        recall = hits / len(pos)
        precision = hits / (j + 1.0)
        ap += (recall - old_recall) * ((old_precision + precision) / 2.0)
        old_recall, old_precision = recall, precision
    return ap
