"""One query's landmark AP from a lab's own loop: the junk list is subtracted from the positives
first, and |P| is the number of positives the ranked list holds.

Both are common where ground truth is cleaned by hand: a name listed both as positive and as
junk is then neither a hit nor a positive to find, and a positive the (truncated) ranked list
misses costs nothing.  Precision-sum AP, junk skipped, a name ranked twice a hit each time.
Signature of the ``oxford`` adapter.  Expected under ``--protocol oxford``: the usual inputs
conform (a plain precision sum is not ``oxford``'s trapezoid, so the protocol is ``gldv2``-like
there; see the test), and the two name rules are named each on its own: "skipped as junk and left
out of |P|" and "|P| counts only the positives found in the ranked list".
"""


def compute_ap(positives, junk, ranked_list):
    """Precision-sum AP; positives minus junk; |P| = those positives found in the ranked list."""
    junk = set(junk)
    pos = set(positives) - junk
    found = {name for name in ranked_list if name in pos}
    hits, rank, total = 0, 0, 0.0
    for name in ranked_list:
        if name in junk:
            continue
        rank += 1
        if name in pos:
            hits += 1
            total += hits / rank
    return total / len(found)
