"""The Google Landmarks v2 retrieval metric written from the Kaggle description: no junk notion.

AP@100 of one query: the precision at every new relevant prediction among the first 100,
summed and divided by min(100, number of relevant images); a repeated prediction is skipped but
keeps its position.  The ``junk`` argument of the ``oxford`` adapter's signature is not read:
GLDv2 has no junk, so a junk name in the list is an ordinary wrong prediction.  Expected under
``--protocol gldv2``: conforms (exit 0); identified as ``gldv2``, its cut at 100 and its
min(R, 100) shown on long lists.  Under ``--protocol oxford`` it deviates: junk not removed.
"""


def gldv2_ap(positives, junk, ranked_list, k=100):
    """sum over new relevant predictions i <= k of hits_i / i, divided by min(k, len(positives))."""
    relevant = set(positives)
    seen = set()
    hits = 0
    total = 0.0
    for i, name in enumerate(ranked_list[:k], start=1):
        if name in seen:
            continue
        seen.add(name)
        if name in relevant:
            hits += 1
            total += hits / i
    return total / min(k, len(positives))
