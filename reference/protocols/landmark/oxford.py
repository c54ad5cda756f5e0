"""Oxford5k/Paris6k: the AP of VGG's ``compute_ap.cpp`` (spec §5 oxford compute_ap).

One walk over the ranked list (:func:`_hits`: junk skipped first, then hits counted) feeds
the trapezoid sum of :mod:`~retrieval_conformance.reference.protocols.landmark.trapezoid` in three
arithmetics: :func:`oxford_ap` (the program's float32, the protocol), :func:`oxford_ap_float64`
(a float64 port) and :func:`oxford_ap_exact` (rationals).  The edge cases follow
``spec §5 oxford positive also junk``, ``spec §5 oxford repeated names`` and
``spec §5 oxford empty positives``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Hashable, Iterable, Iterator, Optional, Sequence, Set, Tuple

from retrieval_conformance.reference.protocols.landmark.inputs import check_names
from retrieval_conformance.reference.protocols.landmark.trapezoid import (
    EXACT,
    FLOAT32,
    FLOAT64,
    Arithmetic,
    trapezoid_sum,
)

__all__ = ["oxford_ap", "oxford_ap_exact", "oxford_ap_float64"]

_NEG_NAN = math.copysign(math.nan, -1.0)  # the NaN x86 SSE produces for 0.0f / 0.0f


def _hits(ranked: Sequence[Hashable], positives: Set[Hashable], junk: Set[Hashable]) -> Iterator[Tuple[int, int]]:
    """(hits so far, 0-based non-junk rank) at every hit, as ``compute_ap.cpp`` walks the list.

    The junk test comes first, so a name both positive and junk is skipped; a name ranked
    twice is a hit twice.
    """
    hits = rank = 0  # rank: non-junk names before the current one (the C++ `j`)
    for name in ranked:
        if name in junk:
            continue
        if name in positives:
            hits += 1
            yield hits, rank
        rank += 1


def _oxford(
    ranked: Sequence[Hashable],
    good: Iterable[Hashable],
    ok: Iterable[Hashable],
    junk: Iterable[Hashable],
    arithmetic: Arithmetic,
    nan: Any,
) -> Any:
    """The Oxford AP in ``arithmetic``; ``nan`` stands for the program's ``-nan``."""
    ranked = check_names(ranked, "ranked", sequence=True)
    positives = set(check_names(good, "good", sequence=False))
    positives.update(check_names(ok, "ok", sequence=False))
    junk_set = set(check_names(junk, "junk", sequence=False))
    if not positives:
        # recall = 0 / 0.0f is NaN at the first non-junk name and poisons the sum
        return nan if any(name not in junk_set for name in ranked) else arithmetic.zero
    return trapezoid_sum(_hits(ranked, positives, junk_set), len(positives), arithmetic)


def oxford_ap(
    ranked: Sequence[Hashable], good: Iterable[Hashable], ok: Iterable[Hashable], junk: Iterable[Hashable]
) -> float:
    """AP of one query exactly as the VGG ``compute_ap.cpp`` computes and prints it.

    Trapezoid AP over the ranked list with junk removed, in the program's float32
    arithmetic.  With P = set(good ∪ ok) (de-duplicated), h_r the hits among the first r
    non-junk names, recall_r = h_r / |P| and precision_r = h_r / r (precision_0 = 1):

        AP = Σ_r (recall_r − recall_{r−1}) · (precision_{r−1} + precision_r) / 2

    evaluated with the C++ promotions: ``recall`` is a float quotient, ``precision`` a
    double quotient rounded to float, ``recall − old_recall`` and ``old_precision +
    precision`` are float operations, the halving, the product and the running sum are
    double, and the sum is rounded to float at every step.  So
    ``format_cpp_float(oxford_ap(...))`` equals the program's output, digit for digit.

    Edge cases, as the program: a junk name is skipped first, even when it is also a
    positive (it still counts in |P|, so AP < 1); a name ranked twice counts twice (AP > 1
    is possible); names compare exactly (``"a\\r"`` is not ``"a"``, ``""`` is a name); an
    empty P gives NaN (printed ``-nan``; the sign bit is set, as the x86 0/0 result) when
    any non-junk name is ranked, and 0 otherwise.

    Differences from exact arithmetic: the float32 value differs from the same loop in
    float64 (:func:`oxford_ap_float64`) and from the exact rational value
    (:func:`oxford_ap_exact`) by float32 rounding only.  Non-hits add an exact zero; each of
    the G hits rounds the running sum once (at most 2^-24 of it, relative) and its term
    (recall and precision roundings, which mostly cancel because the recall differences
    telescope).  So the error is at most about G · 2^-24 · max(AP, 1) and in practice far
    smaller, since the roundings partly cancel: below 2.1e-7 on all 605 real Oxford5k lists
    (Oxford5k/Paris6k queries have at most 221/289 positives), below 1e-6 on every
    generated case with AP <= 1 and up to 1,000 hits (spec §5 reports 6.5e-7), but
    6e-6 for a 5,000-item list with 2,500 hits, where the many similar additions round the
    same way.  Values above 1 (names ranked repeatedly) carry the same *relative* error.
    The printed six digits hide most of this, not all: a float64 port prints a different
    last digit on 10 of the 605 real lists, which is why the float32 value is the protocol.

    Parameters
    ----------
    ranked : sequence of names
        The ranked list, best first, as read (see ``readers.read_ranked_list``).
    good, ok, junk : iterables of names
        Ground-truth lists (duplicates allowed).

    Returns
    -------
    float
        The float32 result as a Python float (exactly representable in float32).
    """
    return float(_oxford(ranked, good, ok, junk, FLOAT32, _NEG_NAN))


def oxford_ap_float64(
    ranked: Sequence[Hashable], good: Iterable[Hashable], ok: Iterable[Hashable], junk: Iterable[Hashable]
) -> float:
    """The same loop as :func:`oxford_ap` with every variable a double (a "float64 port").

    Used to document how far float32 moves the result; NaN (sign bit set) and 0 as
    :func:`oxford_ap` for an empty positive set.

    Parameters
    ----------
    ranked, good, ok, junk
        As for :func:`oxford_ap`.

    Returns
    -------
    float
    """
    return _oxford(ranked, good, ok, junk, FLOAT64, _NEG_NAN)


def oxford_ap_exact(
    ranked: Sequence[Hashable], good: Iterable[Hashable], ok: Iterable[Hashable], junk: Iterable[Hashable]
) -> Optional[Fraction]:
    """The exact rational value of the Oxford trapezoid AP (same semantics, no rounding).

        AP = (1/|P|) Σ_{hits at non-junk rank r, the i-th hit} ((i−1)/(r−1) + i/r) / 2

    with (i−1)/(r−1) := 1 at r = 1.

    Parameters
    ----------
    ranked, good, ok, junk
        As for :func:`oxford_ap`.

    Returns
    -------
    Fraction or None
        None where the program gives NaN (empty P and something non-junk ranked),
        ``Fraction(0)`` when nothing non-junk is ranked.
    """
    return _oxford(ranked, good, ok, junk, EXACT, None)
