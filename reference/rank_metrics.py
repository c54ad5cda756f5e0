"""Stage 4, continued: nDCG@k, the reciprocal rank, AP@R and the hit rate of one query, exactly.

Notation as in :mod:`.per_query` (spec §0): ``K`` is the cut-off clipped to the ``N'``
non-junk items (``N'`` without a cut-off); relevant items at ranks ``r_1 < ... < r_R``.

Clauses (spec §7):

* ``§7 nDCG`` -- ``DCG@K = Σ_{r <= K} gain(g_r) d(r)`` over the ranked items' grades,
  ``IDCG@K`` the same over the relevant grades sorted from the highest (every judged relevant
  item, retrieved or not), ``nDCG@K = DCG@K / IDCG@K``.  ``d(r)`` is the float64 table of
  :mod:`~retrieval_conformance.reference.contract.discounts`, summed here exactly:
  ``§7 discount=log2`` ``1 / log2(r + 1)``; ``§7 discount=trec_eval_9.0a3`` 1 at rank 1, then
  ``1 / log2(r)``.
* ``§7 gain=linear`` ``gain(g) = g``; ``§7 gain=exponential`` ``gain(g) = 2**g - 1``.
* ``§7 MRR`` -- ``RR@K = 1 / r_1`` when ``r_1 <= K``, else 0.
* ``§7 MAP@R`` -- ``AP@R = (1/R) Σ_{i : r_i <= R} i / r_i`` (precision terms, whatever
  ``ap_rule``).
* ``§7 recall=hit`` -- ``[r_1 <= K]``, the hit rate metric learning calls Recall@k.

Under ``ties="expected"`` each is its exact expectation over random orders of every tie
group: DCG is linear in the gains, so a group contributes its mean gain times the discounts
of its positions within K (scikit-learn's tie-averaged DCG); RR and the hit rate condition
on where the group's first relevant item lands.  Under ``ties="grouped"`` every item takes
its group's end rank ``c + n``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from retrieval_conformance.reference.contract.discounts import discount as rank_discount
from retrieval_conformance.reference.contract.problem import Options

ZERO = Fraction(0)


def gain(grade: int, rule: str) -> int:
    """The gain of a relevance grade: ``g`` (linear) or ``2**g - 1`` (exponential)."""
    return grade if rule == "linear" else 2**grade - 1


def discount(r: int, rule: str = "log2") -> Fraction:
    """The discount of 1-based rank ``r`` under ``rule`` (``Options.discount``), exactly: the
    value of the float64 table's entry."""
    return Fraction(rank_discount(r, rule))


def cutoff(opts: Options, n_kept: int) -> int:
    """K: the cut-off within the non-junk items (all of them without a cut-off)."""
    return n_kept if opts.k is None else min(opts.k, n_kept)


def ideal_dcg(grades: Sequence[int], K: int, opts: Options) -> Fraction:
    """IDCG@K: the relevant grades (all of them, retrieved or not) from the highest."""
    best = sorted((g for g in grades if g > 0), reverse=True)[:K]
    return sum((gain(g, opts.gain) * discount(i, opts.discount) for i, g in enumerate(best, 1)), ZERO)


# -- concrete rankings ---------------------------------------------------------------
def concrete_rank_metrics(ranked_grades: Sequence[int], opts: Options) -> dict:
    """nDCG, RR, AP@R and the hit rate of one concretely ranked list of grades (R >= 1)."""
    n_kept = len(ranked_grades)
    K = cutoff(opts, n_kept)
    dcg = sum((gain(g, opts.gain) * discount(r, opts.discount) for r, g in enumerate(ranked_grades[:K], 1) if g), ZERO)
    ranks = [r for r, g in enumerate(ranked_grades, 1) if g > 0]
    R = len(ranks)
    first = ranks[0]
    return {
        "ndcg": dcg / ideal_dcg(ranked_grades, K, opts),
        "rr": Fraction(1, first) if first <= K else ZERO,
        "ap_at_r": sum((Fraction(i, r) for i, r in enumerate(ranks, 1) if r <= R), ZERO) / R,
        "hit": Fraction(int(first <= K)),
    }


# -- ties="expected" -------------------------------------------------------------------
def expected_rank_metrics(groups, opts: Options, positions_of_jth, term_sum_up_to) -> dict:
    """The exact expectations over random orders of every tie group (R >= 1).

    ``positions_of_jth(j, m, n)`` and ``term_sum_up_to(K, rule)`` are :mod:`.per_query`'s
    distribution of the j-th relevant position of a group and its expected AP-term sum.
    """
    n_kept = sum(g.size for g in groups)
    K = cutoff(opts, n_kept)
    dcg = ZERO
    grades = []
    for g in groups:
        grades.extend(g.item_grades)
        inside = min(g.size, K - g.before)
        total_gain = sum(gain(x, opts.gain) for x in g.item_grades)
        if inside > 0 and total_gain:
            dcg += Fraction(total_gain, g.size) * sum(
                (discount(g.before + p, opts.discount) for p in range(1, inside + 1)), ZERO
            )
    R = sum(g.relevant for g in groups)
    first = next(g for g in groups if g.relevant)
    rr = hit = ZERO
    for p, chance in positions_of_jth(1, first.relevant, first.size):
        if first.before + p <= K:
            rr += chance / (first.before + p)
            hit += chance
    return {
        "ndcg": dcg / ideal_dcg(grades, K, opts),
        "rr": rr,
        "ap_at_r": term_sum_up_to(R, "precision_sum") / R,
        "hit": hit,
    }


# -- ties="grouped" --------------------------------------------------------------------
def grouped_rank_metrics(groups, opts: Options) -> dict:
    """Every item of a group at its end rank ``e = c + n`` (R >= 1); the caller has checked
    that ``k`` does not fall inside a tie group."""
    n_kept = sum(g.size for g in groups)
    K = cutoff(opts, n_kept)
    dcg = sum(
        (
            sum(gain(x, opts.gain) for x in g.item_grades) * discount(g.end, opts.discount)
            for g in groups
            if g.relevant and g.end <= K
        ),
        ZERO,
    )
    grades = [x for g in groups for x in g.item_grades]
    R = sum(g.relevant for g in groups)
    first_end = next(g for g in groups if g.relevant).end
    ap_at_r = (
        sum(
            (g.relevant * Fraction(g.relevant_before + g.relevant, g.end) for g in groups if g.relevant and g.end <= R),
            ZERO,
        )
        / R
    )
    return {
        "ndcg": dcg / ideal_dcg(grades, K, opts),
        "rr": Fraction(1, first_end) if first_end <= K else ZERO,
        "ap_at_r": ap_at_r,
        "hit": Fraction(int(first_end <= K)),
    }
