"""Google Landmarks v2 retrieval: Kaggle's AP@k on prediction lists (spec §9 preset=gldv2).

Precision-sum AP@k divided by min(k, R) (``spec §6 ap_at_k=min_k_r``), with k = 100 by
default; repeated predictions are skipped but keep their position.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Hashable, Sequence

from retrieval_conformance.reference.protocols.landmark.inputs import check_k, check_names

__all__ = ["GLDV2_K", "gldv2_ap_at_k"]

GLDV2_K = 100


def gldv2_ap_at_k(predictions: Sequence[Hashable], solution: Sequence[Hashable], k: int = GLDV2_K) -> Fraction:
    """GLDv2 / Kaggle retrieval AP@k of one query, exact.

        AP@k = (1 / min(k, |solution|)) Σ_{i <= k, prediction i relevant and new} hits_i / i

    Only the first k predictions are read; a prediction already seen earlier in the list is
    skipped (it still occupies its position i).  |solution| is the length of the solution
    list as given.

    Parameters
    ----------
    predictions : sequence of names
        The ranked predictions, best first.
    solution : sequence of names
        The relevant index images.
    k : int
        The cut-off, >= 1.

    Returns
    -------
    Fraction

    Raises
    ------
    ValueError
        When the solution is empty (GLDv2 leaves such queries out).
    """
    preds = check_names(predictions, "predictions", sequence=True)
    sol_list = check_names(solution, "solution", sequence=False)
    k = check_k(k, "k")
    if not sol_list:
        raise ValueError("the solution is empty: GLDv2 leaves queries without relevant index images out of the mean")
    sol = set(sol_list)
    seen = set()
    hits = 0
    total = Fraction(0)
    for i, name in enumerate(preds[:k], start=1):
        if name in seen:
            continue
        seen.add(name)
        if name in sol:
            hits += 1
            total += Fraction(hits, i)
    return total / min(k, len(sol_list))
