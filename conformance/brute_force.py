"""Brute-force oracle: a metric's exact expectation over every order of every tie group.

Independent of the reference's closed forms (it enumerates orders and averages a tiny
textbook AP), so values it derives may serve as golden values; use it only on small inputs.

    python -m retrieval_conformance.conformance.brute_force
prints the seed-000 values under ties="expected".
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Callable, List, Sequence


def orders(distances: Sequence, relevant: Sequence[bool]):
    """Every ranked relevance list obtainable by permuting items at equal distance."""
    levels = sorted(set(distances))
    groups = [[relevant[i] for i in range(len(distances)) if distances[i] == d] for d in levels]
    per_group = [sorted(set(itertools.permutations(g))) for g in groups]
    counts = [len(list(itertools.permutations(g))) for g in groups]
    for combo in itertools.product(*per_group):
        # weight each distinct arrangement by how many item permutations give it
        weight = 1
        for arrangement, total in zip(combo, counts):
            weight *= total // len(set(itertools.permutations(arrangement)))
        yield [x for part in combo for x in part], weight


def expectation(distances, relevant, metric: Callable[[List[bool]], Fraction]) -> Fraction:
    total, weights = Fraction(0), 0
    for ranked, weight in orders(distances, relevant):
        total += weight * metric(ranked)
        weights += weight
    return total / weights


def ap_hits_at(k):
    """Precision-sum AP@k dividing by the hits in the top k (0 without a hit)."""
    def metric(ranked):
        hits, s = 0, Fraction(0)
        for rank, rel in enumerate(ranked[: k or len(ranked)], 1):
            if rel:
                hits += 1
                s += Fraction(hits, rank)
        return s / hits if hits else Fraction(0)
    return metric


def _seed000():
    q = [[1, -1, 1, 1], [-1, 1, -1, -1], [1, -1, -1, -1]]
    g = [[1, -1, -1, -1], [-1, 1, 1, -1], [1, 1, 1, -1], [-1, -1, 1, 1], [1, 1, -1, -1],
         [1, 1, 1, -1], [-1, 1, -1, -1]]
    ql = [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    gl = [[0, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]]
    for k in (5, None):
        aps = []
        for qi in range(3):
            dist = [sum(a != b for a, b in zip(q[qi], row)) for row in g]
            rel = [any(a and b for a, b in zip(ql[qi], row)) for row in gl]
            aps.append(expectation(dist, rel, ap_hits_at(k)))
        print(f"k={k}: per-query {[str(a) for a in aps]}, mean {sum(aps) / 3}")


if __name__ == "__main__":
    _seed000()


# -- an independent textbook implementation of the concrete metrics, for the tests ----
def textbook_metrics(ranked, k=None, ap_at_k="hits", rule="precision_sum", max_rank=5):
    """All per-query metrics of one concretely ranked relevance list (junk already removed).

    Written from the definitions of spec §5-§7 with running counters, independently
    of ``reference/per_query.py``.
    """
    R = sum(ranked)
    out = dict(ap=Fraction(0), p=Fraction(0), r=Fraction(0), cmc=[Fraction(0)] * max_rank,
               inp=Fraction(0), rprec=Fraction(0))
    if R == 0:
        return out
    cut = len(ranked) if k is None else k
    hits, s_cut, s_first, first, last = 0, Fraction(0), Fraction(0), None, None
    prev_precision = Fraction(1)
    hits_at = {}
    L = R if k is None else min(k, R)
    for rank, rel in enumerate(ranked, 1):
        hits += rel
        precision = Fraction(hits, rank)
        if rel:
            term = precision if rule == "precision_sum" else (precision + prev_precision) / 2
            if rank <= cut:
                s_cut += term
            if hits <= L:
                s_first += term
            first = first or rank
            last = rank
        prev_precision = precision
        hits_at[rank] = hits
    h_cut = hits_at.get(min(cut, len(ranked)), 0)
    if k is None:
        out["ap"] = s_cut / R
    elif ap_at_k == "dcmh":
        out["ap"] = s_first / L
    else:
        denominator = {"hits": h_cut, "r": R, "min_k_r": min(k, R)}[ap_at_k]
        out["ap"] = s_cut / denominator if denominator else Fraction(0)
    out["p"] = Fraction(h_cut, cut)
    out["r"] = Fraction(h_cut, R)
    out["cmc"] = [Fraction(int(first <= j + 1)) for j in range(max_rank)]
    out["inp"] = Fraction(R, last)
    out["rprec"] = Fraction(hits_at[min(R, len(ranked))], R)
    return out


def expected_metrics(distances, relevant, **kw):
    """Every metric's exact expectation over all tie orders (brute force)."""
    total, weights = None, 0
    for ranked, weight in orders(distances, relevant):
        m = textbook_metrics(ranked, **kw)
        if total is None:
            total = {key: ([weight * v for v in val] if isinstance(val, list) else weight * val)
                     for key, val in m.items()}
        else:
            for key, val in m.items():
                if isinstance(val, list):
                    total[key] = [a + weight * b for a, b in zip(total[key], val)]
                else:
                    total[key] += weight * val
        weights += weight
    return {key: ([v / weights for v in val] if isinstance(val, list) else val / weights)
            for key, val in total.items()}


def concrete_order(distances, relevant, ties):
    """Ranked relevance under a concrete tie policy, by an explicit sort key."""
    n = len(distances)
    keys = {
        "stable": lambda i: (distances[i], i),
        "reverse": lambda i: (distances[i], -i),
        "optimistic": lambda i: (distances[i], not relevant[i], i),
        "pessimistic": lambda i: (distances[i], bool(relevant[i]), i),
    }
    return [bool(relevant[i]) for i in sorted(range(n), key=keys[ties])]


def sklearn_style_ap(distances, relevant):
    """scikit-learn's AP: Σ over distinct thresholds of (ΔR / R) · precision at the threshold."""
    R = sum(relevant)
    total = Fraction(0)
    for d in sorted(set(distances)):
        retrieved = [i for i in range(len(distances)) if distances[i] <= d]
        hits = sum(relevant[i] for i in retrieved)
        new = sum(relevant[i] for i in range(len(distances)) if distances[i] == d)
        total += Fraction(new, R) * Fraction(hits, len(retrieved))
    return total
