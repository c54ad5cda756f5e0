"""One query's Oxford AP following ``compute_ap.cpp``'s walk over the ranked list, in Python.

The VGG program reads the good, ok and junk lists into sets and walks the ranked list once: a
junk name is skipped first (so a name that is both positive and junk is skipped, yet counts in
|P|); a positive adds a trapezoid between the precision before and after it, so a name ranked
twice is a hit twice.  |P| is the number of distinct positives.  Signature of the ``oxford``
adapter.  Expected: conforms to ``--protocol oxford``; deviates from ``roxford-medium`` on the
inputs outside the usual domain (a name both positive and junk, a positive listed twice); its
identification names ``oxford``.
"""


def compute_ap(positives, junk, ranked_list):
    """Trapezoid AP; junk tested before positives; |P| = distinct positives."""
    pos, junk = set(positives), set(junk)
    old_recall, old_precision, ap = 0.0, 1.0, 0.0
    intersect = j = 0
    for name in ranked_list:
        if name in junk:
            continue
        if name in pos:
            intersect += 1
        recall = intersect / len(pos)
        precision = intersect / (j + 1.0)
        ap += (recall - old_recall) * ((old_precision + precision) / 2.0)
        old_recall, old_precision = recall, precision
        j += 1
    return ap
