"""Revisited Oxford/Paris as revisitop / cirtorch evaluate it (spec §5 revisitop trapezoid).

Ground truth per difficulty (:func:`roxford_split`; ``spec §3 roxford easy``,
``spec §3 roxford medium``, ``spec §3 roxford hard``), positions after junk removal
(:func:`revisitop_positions`, ``spec §5 revisitop positive also junk``), exact AP
(:func:`revisitop_ap`) and precision at k, both revisitop's quirk and the corrected value
(``spec §9 roxford mP@k``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from fractions import Fraction
from typing import Hashable, Iterable, List, Sequence, Tuple

from retrieval_conformance.reference.protocols.landmark.inputs import (
    check_k,
    check_names,
    check_positions,
    is_int,
)
from retrieval_conformance.reference.protocols.landmark.trapezoid import EXACT, trapezoid_sum

__all__ = [
    "corrected_precision_at_k",
    "revisitop_ap",
    "revisitop_positions",
    "revisitop_precision_at_k",
    "roxford_split",
]

_ROXFORD_DIFFICULTY = ("easy", "medium", "hard")


def revisitop_positions(
    ranked: Sequence[Hashable], positives: Iterable[Hashable], junk: Iterable[Hashable]
) -> List[int]:
    """0-based positions of the positives after junk removal, as revisitop computes them.

    revisitop marks every ranked item that is in the positive list and every ranked item
    that is in the junk list (membership, like ``np.isin``), then moves each positive up
    by the number of junk items strictly before it.  An item that is both positive and
    junk is therefore kept as a positive, and it still shifts the later positives (two
    positives can share a position, and AP can exceed 1).  An item ranked twice is found
    twice.

    Parameters
    ----------
    ranked : sequence of names
        The ranked list, best first.
    positives, junk : iterables of names
        As :func:`roxford_split` returns them.

    Returns
    -------
    list of int
        Non-decreasing positions, one per ranked occurrence of a positive.
    """
    ranked = check_names(ranked, "ranked", sequence=True)
    pos_set = set(check_names(positives, "positives", sequence=False))
    junk_set = set(check_names(junk, "junk", sequence=False))
    junk_at = [i for i, name in enumerate(ranked) if name in junk_set]
    return [i - bisect_left(junk_at, i) for i, name in enumerate(ranked) if name in pos_set]


def revisitop_ap(positions: Sequence[int], n_positives: int) -> Fraction:
    """revisitop / cirtorch ``compute_ap`` in exact arithmetic.

    With r_j the 0-based position of the j-th found positive (j = 0, 1, ...; after junk
    removal, see :func:`revisitop_positions`) and n the number of positives:

        AP = (1/n) Σ_j ( p0_j + (j+1)/(r_j+1) ) / 2,   p0_j = 1 if r_j = 0 else j / r_j

    the trapezoid between the precision at the previous rank and at this one.  n is the
    length of the positive LIST (revisitop does not de-duplicate: Medium concatenates easy
    and hard), so positives missing from the ranking simply lower AP.

    Parameters
    ----------
    positions : sequence of int
        0-based positions (non-decreasing).
    n_positives : int
        Must be >= 1 (revisitop gives NaN and leaves the query out before calling this).

    Returns
    -------
    Fraction
    """
    pos = check_positions(positions)
    if not is_int(n_positives):
        raise TypeError(f"n_positives must be an int, got {type(n_positives).__name__}")
    if n_positives < 1:
        raise ValueError(
            f"n_positives must be >= 1, got {n_positives} (a query without positives is left out of the mean)"
        )
    # the j-th found positive (0-based) is hit number j + 1 at rank r_j: Oxford's trapezoid
    return trapezoid_sum(((j + 1, r) for j, r in enumerate(pos)), int(n_positives), EXACT)


def _found_before(pos: List[int], k: int) -> int:
    """Found positives at 1-based position <= k."""
    return sum(1 for p in pos if p < k)


def revisitop_precision_at_k(positions: Sequence[int], k: int) -> Fraction:
    """revisitop's mP@k per query, quirk included.

    revisitop takes k_q = min(k, position of the LAST found positive) (1-based) and returns
    (found positives at position <= k_q) / k_q.  So two positives at ranks 1 and 2 give
    P@10 = 2/2 = 1, not 2/10: the value is precision at the last positive when that comes
    before k.  With no positive found in the ranking, revisitop's ``max()`` of an empty
    array raises ``ValueError``; this function raises ``ValueError`` too.

    See :func:`corrected_precision_at_k` for P@k.

    Parameters
    ----------
    positions : sequence of int
        0-based positions, as :func:`revisitop_positions` returns them.
    k : int
        The cut-off, >= 1.

    Returns
    -------
    Fraction
    """
    pos = check_positions(positions)
    k = check_k(k, "k")
    if not pos:
        raise ValueError(
            "revisitop's mP@k is undefined when no positive is ranked: it takes "
            "max() of an empty array and raises (use corrected_precision_at_k for P@k)"
        )
    kq = min(max(pos) + 1, k)
    return Fraction(_found_before(pos, kq), kq)


def corrected_precision_at_k(positions: Sequence[int], k: int) -> Fraction:
    """P@k after junk removal: (found positives at 1-based position <= k) / k.

    Same positions as revisitop (:func:`revisitop_positions`); only the denominator
    differs from :func:`revisitop_precision_at_k`: always k, and 0 when nothing is found.

    Parameters
    ----------
    positions : sequence of int
        0-based positions.
    k : int
        The cut-off, >= 1.

    Returns
    -------
    Fraction
    """
    pos = check_positions(positions)
    k = check_k(k, "k")
    return Fraction(_found_before(pos, k), k)


def roxford_split(gt: Mapping, difficulty: str) -> Tuple[List[Hashable], List[Hashable]]:
    """Positive and junk lists of one revisitop query for a difficulty (spec §3).

    Easy: positives = easy, junk = junk + hard.  Medium: positives = easy + hard, junk =
    junk.  Hard: positives = hard, junk = junk + easy.  Lists are concatenated as revisitop
    does (no de-duplication).  ``junk`` may be missing (revisitop then uses an empty list).

    Parameters
    ----------
    gt : mapping
        revisitop's ``gnd`` entry: ``easy``, ``hard`` and optionally ``junk``.
    difficulty : {"easy", "medium", "hard"}

    Returns
    -------
    positives, junk : lists of names
    """
    if difficulty not in _ROXFORD_DIFFICULTY:
        raise ValueError(f"difficulty must be one of {_ROXFORD_DIFFICULTY}, got {difficulty!r}")
    if not isinstance(gt, Mapping):
        raise TypeError(f"ground truth must be a mapping with 'easy', 'hard', 'junk', got {type(gt).__name__}")
    for key in ("easy", "hard"):
        if key not in gt:
            raise ValueError(f"revisitop ground truth needs {key!r} (has {sorted(map(str, gt))})")
    easy = check_names(gt["easy"], "easy", sequence=False)
    hard = check_names(gt["hard"], "hard", sequence=False)
    junk = check_names(gt.get("junk", []), "junk", sequence=False)
    if difficulty == "easy":
        return easy, junk + hard
    if difficulty == "medium":
        return easy + hard, junk
    return hard, junk + easy
