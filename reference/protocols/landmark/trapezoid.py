"""The trapezoid AP sum of the landmark protocols, in a chosen arithmetic (spec §5 ap_rule=trapezoid).

Oxford's ``compute_ap`` (``spec §5 oxford compute_ap``) and revisitop's ``compute_ap``
(``spec §5 revisitop trapezoid``) add the same trapezoid over the ranks of the hits;
they differ in the arithmetic only.  :func:`trapezoid_sum` is that sum, once, and an
:class:`Arithmetic` says how each quantity is computed and rounded:

* :data:`FLOAT32` -- the operations and promotions of ``compute_ap.cpp`` (the protocol's value);
* :data:`FLOAT64` -- the same loop with every variable a double (a "float64 port");
* :data:`EXACT` -- rational arithmetic (``Fraction``), no rounding at all.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, NamedTuple, Tuple

import numpy as np

__all__ = ["EXACT", "FLOAT32", "FLOAT64", "Arithmetic", "trapezoid_sum"]

_F32 = np.float32


class Arithmetic(NamedTuple):
    """How :func:`trapezoid_sum` computes and rounds each quantity.

    Attributes
    ----------
    zero : number
        The empty sum (also the value of a ranking without hits).
    one : number
        The precision before the first rank.
    recall : callable (hits, n_positives) -> number
    precision : callable (hits, rank) -> number
        Precision after ``rank + 1`` names (``rank`` is 0-based).
    accumulate : callable (ap, d_recall, p_sum) -> number
        ``ap + d_recall * (p_sum / 2)``, rounded as the arithmetic rounds.  ``d_recall`` and
        ``p_sum`` are the differences and sums of ``recall`` and ``precision`` values, taken
        with the operators of their type (float32 numpy scalars stay float32).
    """

    zero: Any
    one: Any
    recall: Callable[[int, int], Any]
    precision: Callable[[int, int], Any]
    accumulate: Callable[[Any, Any, Any], Any]


#: ``compute_ap.cpp``: ``recall`` is a float quotient, ``precision`` a double quotient rounded
#: to float; the difference and sum are float operations; the halving, the product and the
#: running sum are double, and the sum is rounded to float at every step.
FLOAT32 = Arithmetic(
    zero=_F32(0.0),
    one=_F32(1.0),
    recall=lambda hits, n: _F32(hits) / _F32(n),
    precision=lambda hits, rank: _F32(hits / (rank + 1.0)),
    accumulate=lambda ap, d_recall, p_sum: _F32(float(ap) + float(d_recall) * (float(p_sum) / 2.0)),
)

#: The same loop in doubles.
FLOAT64 = Arithmetic(
    zero=0.0,
    one=1.0,
    recall=lambda hits, n: hits / float(n),
    precision=lambda hits, rank: hits / (rank + 1.0),
    accumulate=lambda ap, d_recall, p_sum: ap + d_recall * (p_sum / 2.0),
)

#: Exact rationals.
EXACT = Arithmetic(
    zero=Fraction(0),
    one=Fraction(1),
    recall=Fraction,
    precision=lambda hits, rank: Fraction(hits, rank + 1),
    accumulate=lambda ap, d_recall, p_sum: ap + d_recall * (p_sum / 2),
)


def trapezoid_sum(hits_at: Iterable[Tuple[int, int]], n_positives: int, arithmetic: Arithmetic) -> Any:
    """Trapezoid AP over the hits of a ranking, in ``arithmetic``.

    With h the number of hits so far (this one included) at 0-based rank r, recall_h =
    h / n and precision(h, r) = h / (r + 1):

        AP = Σ_hits (recall_h − recall_{h−1}) · (precision(h−1, r−1) + precision(h, r)) / 2

    with precision(h−1, r−1) := 1 at r = 0.  Only hits are visited: at a non-hit rank
    recall does not move, so its term is an exact zero and leaves the sum unchanged in
    every arithmetic; the previous rank's values are recomputed with the very operations
    a loop over every rank would have stored them with, so the result is bit-identical to
    that loop.

    Parameters
    ----------
    hits_at : iterable of (int, int)
        ``(h, r)`` for every hit, in ranking order; h counts from 1.  Two hits may share a
        rank (revisitop's ``spec §5 revisitop positive also junk``).
    n_positives : int
        n, >= 1.
    arithmetic : Arithmetic
        :data:`FLOAT32`, :data:`FLOAT64` or :data:`EXACT`.

    Returns
    -------
    number
        Of the arithmetic's type (``np.float32``, ``float`` or ``Fraction``).
    """
    a = arithmetic
    ap = a.zero
    for hits, rank in hits_at:
        old_recall = a.recall(hits - 1, n_positives)
        old_precision = a.one if rank == 0 else a.precision(hits - 1, rank - 1)
        ap = a.accumulate(ap, a.recall(hits, n_positives) - old_recall, old_precision + a.precision(hits, rank))
    return ap
