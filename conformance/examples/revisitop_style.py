"""One query's Oxford AP in the manner of revisitop's ``compute_ap`` (filipradenovic/revisitop).

revisitop ``python/evaluate.py``: the 0-based positions of the positives in the ranked list, each
lowered by the number of junk images ranked before it (junk taken out of the list), go to
``compute_ap(ranks, nres)`` with nres = the number of positives (ranked or not).  Trapezoid AP:
each positive j (0-based) at position p adds (1/nres) * (j/p + (j+1)/(p+1)) / 2, with j/p taken
as 1 at p = 0.  ``recall_step = 1. / nres`` raises ``ZeroDivisionError`` for a query without
positives (``compute_map`` itself skips such queries before the call).  Signature of the
``oxford`` adapter.  Expected: conforms to ``--protocol roxford-medium`` and ``--protocol oxford``
(trapezoid, junk skipped; the oxford preset's float32 digits are within tolerance).  These
presets leave a query without a positive out, so raising on it is not a deviation; called
directly on such a query it raises ZeroDivisionError, as revisitop's ``compute_ap`` does.
"""


def compute_ap(positives, junk, ranked_list):
    """Trapezoid AP of one query; junk names are removed from the ranking first."""
    junk = set(junk)
    wanted = set(positives)
    kept = [name for name in ranked_list if name not in junk]
    positions = [p for p, name in enumerate(kept) if name in wanted]
    recall_step = 1.0 / len(positives)  # ZeroDivisionError without positives
    ap = 0.0
    for j, p in enumerate(positions):
        before = 1.0 if p == 0 else j / p  # precision at the previous rank
        ap += (before + (j + 1) / (p + 1)) * recall_step / 2.0
    return ap
