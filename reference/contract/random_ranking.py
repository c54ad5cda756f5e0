r"""What a random ranking scores, and the warning when a run scores far below it.

A run whose scores are similarities passed as distances (or a ranking read backwards) puts its
relevant items last and gets a mAP far below what a random order of the same items would get.
That mistake gives a plausible-looking small number, so ``evaluate`` and ``audit`` compare each
query's AP with its expectation under a uniformly random order of the ranked items:

.. math::

    E[AP] = \frac{1}{N}\left(\frac{R - 1}{N - 1}(N - H_N) + H_N\right)

for R relevant among N ranked items (:math:`H_N` the N-th harmonic number; 1 when N = 1), and
warn when the run is below it on nearly every query and, on the mean, nearer the worst order
(every relevant item last: :math:`\frac{1}{R}\sum_{i=1}^{R} \frac{i}{N - R + i}`) than the
random one.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional, Sequence

__all__ = ["below_random_warning", "expected_random_ap", "worst_ap"]

#: the warning needs this many queries with a relevant item ranked
MIN_QUERIES = 5
#: ... the run below the random expectation on at least this share of them
SHARE_BELOW = 0.9


def expected_random_ap(n_items: int, n_relevant: int) -> float:
    """E[AP] over uniformly random orders of ``n_items`` items, ``n_relevant`` of them relevant
    (AP divided by those R; 0 when R = 0)."""
    if n_relevant <= 0 or n_items <= 0:
        return 0.0
    if n_items == 1:
        return 1.0
    harmonic = sum(Fraction(1, i) for i in range(1, n_items + 1)) if n_items <= 2000 else None
    if harmonic is None:  # large N: the float harmonic number is plenty for a warning
        h = sum(1.0 / i for i in range(1, n_items + 1))
        return ((n_relevant - 1) / (n_items - 1) * (n_items - h) + h) / n_items
    value = (Fraction(n_relevant - 1, n_items - 1) * (n_items - harmonic) + harmonic) / n_items
    return float(value)


def worst_ap(n_items: int, n_relevant: int) -> float:
    """AP with every relevant item ranked last (0 when R = 0)."""
    if n_relevant <= 0 or n_items <= 0:
        return 0.0
    return sum(i / (n_items - n_relevant + i) for i in range(1, n_relevant + 1)) / n_relevant


def below_random_warning(
    aps: Sequence[float], expected: Sequence[float], worst: Sequence[float], what: str
) -> Optional[str]:
    """A warning text when the run's APs are far below a random order's (None otherwise).

    ``aps``, ``expected`` (a random order's) and ``worst`` per query, for the queries with a
    relevant item among the ranked ones; ``what`` names the input in the advice."""
    triples = [(a, e, w) for a, e, w in zip(aps, expected, worst) if e > w]
    if len(triples) < MIN_QUERIES:
        return None
    below = sum(1 for a, e, _ in triples if a < e)
    mean_ap = sum(a for a, _, _ in triples) / len(triples)
    mean_random = sum(e for _, e, _ in triples) / len(triples)
    mean_worst = sum(w for _, _, w in triples) / len(triples)
    if below < SHARE_BELOW * len(triples) or mean_ap >= (mean_random + mean_worst) / 2:
        return None
    return (
        f"mAP {mean_ap:.4f} is far below a random order of the same items ({mean_random:.4f}; below it on "
        f"{below} of {len(triples)} queries, near the worst order's {mean_worst:.4f}): are similarities "
        f"given as distances, or the ranking reversed? Check {what}"
    )
