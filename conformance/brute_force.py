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
