"""Stage 4 of the pipeline: the metrics of one query, exactly, as ``fractions.Fraction``.

Notation (spec §0): after junk removal the relevant items sit at 1-based ranks
``r_1 < ... < r_R``; ``H(K)`` is the number of relevant items in the top ``K``; ``N'`` is
the number of non-junk gallery items.  A tie group has ``c`` items before it (``h`` of them
relevant), ``n`` items and ``m`` relevant ones.

Clauses (each a function below, cited by tests and error reports):

* ``ap_term`` -- the AP term of the i-th relevant item at rank r (spec §5):
  precision-sum ``i / r``; trapezoid ``(i / r + (i - 1) / (r - 1)) / 2``, and 1 at r = 1.
* ``average_precision`` -- AP and AP@k with the denominator of spec §6:
  full ``(1/R) Σ term_i``; with k, ``S_k = Σ_{r_i <= k} term_i`` divided by ``H(k)``
  (``hits``, 0 when ``H(k) = 0``), ``R`` (``r``) or ``min(k, R)`` (``min_k_r``); ``dcmh``
  averages the terms of the first ``min(k, R)`` relevant items wherever they are ranked.
* P@k = H(k)/k (k = N' when no k is given), R@k = H(k)/R, CMC@K = [r_1 <= K],
  INP = R / r_R, R-precision = H(R)/R (spec §7).
* ``expected_values`` -- the exact expectation of each of these over uniformly random
  orders of every tie group (McSherry & Najork 2008; spec §4).
* ``grouped_values`` -- scikit-learn's threshold view: every item of a group takes the
  group's end rank ``c + n``.
* nDCG@k, RR, AP@R and the hit rate (``recall="hit"``): :mod:`.rank_metrics`.
A query with R = 0 has 0 everywhere; the empty-query policy decides later what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb
from typing import List, Optional, Sequence

from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES
from retrieval_conformance.reference.contract.problem import Options
from retrieval_conformance.reference.rank_metrics import (
    concrete_rank_metrics,
    expected_rank_metrics,
    grouped_rank_metrics,
)
from retrieval_conformance.reference.ranking import TieGroup, ranked_grades

ZERO = Fraction(0)


@dataclass
class QueryValues:
    """Exact metrics of one query."""

    ap: Fraction
    n_relevant: int
    hits_at_k: Fraction
    precision_at_k: Fraction
    recall_at_k: Fraction
    cmc: List[Fraction]
    inp: Fraction
    r_precision: Fraction
    ndcg: Fraction = ZERO
    rr: Fraction = ZERO
    ap_at_r: Fraction = ZERO
    precision_at_radius: Optional[Fraction] = None
    recall_at_radius: Optional[Fraction] = None


def ap_term(i, r: int, rule: str) -> Fraction:
    """AP term of the i-th relevant item at rank r (``i`` may be an expected count).

    precision_sum: ``i / r``.  trapezoid: mean of the precision at rank r and at the
    previous *rank* (not the previous hit: seed 002 "One More Thing"), 1 at r = 1.
    """
    i = Fraction(i)
    if rule == "precision_sum":
        return i / r
    if r == 1:
        return Fraction(1)
    return (i / r + (i - 1) / (r - 1)) / 2


def grouped_cutoff_error(k: int, query: int, group: TieGroup) -> ValueError:
    return ValueError(
        f"k: k={k} falls inside a tie group (ranks {group.before + 1}..{group.end}) of query "
        f"{query}; under ties='grouped' a cut-off inside a tie group has no meaning. Use "
        "ties='expected', or a k at a tie-group boundary"
    )


# -- concrete rankings ---------------------------------------------------------------
def with_rank_metrics(values: QueryValues, metrics: dict, opts: Options) -> QueryValues:
    """``values`` with nDCG, RR and AP@R set, and R@k as the hit rate under ``recall="hit"``."""
    values.ndcg, values.rr, values.ap_at_r = metrics["ndcg"], metrics["rr"], metrics["ap_at_r"]
    if opts.recall == "hit":
        values.recall_at_k = metrics["hit"]
    return values


def concrete_values(ranked: Sequence[int], opts: Options) -> QueryValues:
    """Metrics of one concretely ranked list of grades (non-junk items only; grade > 0 is
    relevant, and binary relevance is grades 0 and 1)."""
    ranks = [r for r, rel in enumerate(ranked, 1) if rel]
    R = len(ranks)
    terms = [ap_term(i, r, opts.ap_rule) for i, r in enumerate(ranks, 1)]

    def hits(K: int) -> int:
        return sum(1 for r in ranks if r <= K)

    k = opts.k
    if k is None:
        ap = sum(terms, ZERO) / R
    elif opts.ap_at_k == "dcmh":
        L = min(k, R)
        ap = sum(terms[:L], ZERO) / L
    else:
        h = hits(k)
        s = sum(terms[:h], ZERO)
        denominator = {"hits": h, "r": R, "min_k_r": min(k, R)}[opts.ap_at_k]
        ap = s / denominator if denominator else ZERO
    hk = hits(k) if k is not None else R
    cut = k if k is not None else len(ranked)
    values = QueryValues(
        ap=ap,
        n_relevant=R,
        hits_at_k=Fraction(hk),
        precision_at_k=Fraction(hk, cut),
        recall_at_k=Fraction(hk, R),
        cmc=[Fraction(int(ranks[0] <= j + 1)) for j in range(opts.max_rank)],
        inp=Fraction(R, ranks[-1]),
        r_precision=Fraction(hits(R), R),
    )
    return with_rank_metrics(values, concrete_rank_metrics(ranked, opts), opts)


# -- ties="expected" -------------------------------------------------------------------
def _expected_count_before(group: TieGroup, p: int, m: int, n: int) -> Fraction:
    """E[i | the group's position p is relevant]: h + 1 + (p-1)(m-1)/(n-1)."""
    extra = Fraction((p - 1) * (m - 1), n - 1) if n > 1 else ZERO
    return group.relevant_before + 1 + extra


def _expected_term_sum(group: TieGroup, positions: int, m: int, n: int, rule: str) -> Fraction:
    """E[Σ term] over the first ``positions`` positions of a group whose ``n`` positions
    hold ``m`` relevant items uniformly at random.  Each position is relevant with
    probability m/n and the term is linear in the count i, so E = Σ (m/n) term(E[i | rel])."""
    if m == 0:
        return ZERO
    return sum(
        (
            Fraction(m, n) * ap_term(_expected_count_before(group, p, m, n), group.before + p, rule)
            for p in range(1, positions + 1)
        ),
        ZERO,
    )


def _hypergeom(m: int, n: int, t: int, x: int) -> Fraction:
    """P(X = x): x of the m relevant items among the first t of n uniformly ordered positions."""
    return Fraction(comb(m, x) * comb(n - m, t - x), comb(n, t))


def _positions_of_jth(j: int, m: int, n: int):
    """``(p, P(the j-th relevant item of a group sits at its position p))`` for every p.

    P = C(p-1, j-1) C(n-p, m-j) / C(n, m).  The numerator goes from p to p + 1 by the exact
    integer step ``* p (n-p-m+j) / ((p-j+1)(n-p))``: one ``comb`` per j instead of two per
    position, which is what keeps tie groups of 10**4 items affordable.
    """
    total = comb(n, m)
    ways = comb(n - j, m - j)  # p = j: C(j-1, j-1) = 1
    last = n - m + j
    for p in range(j, last + 1):
        yield p, Fraction(ways, total)
        if p < last:
            ways = ways * p * (n - p - m + j) // ((p - j + 1) * (n - p))


def _straddling(groups: Sequence[TieGroup], k: int) -> Optional[TieGroup]:
    for g in groups:
        if g.before < k < g.end:
            return g
    return None


def expected_hits(groups: Sequence[TieGroup], K: int) -> Fraction:
    """E[H(K)] = relevant items of whole groups in the top K + t·m/n for a cut group."""
    total = ZERO
    for g in groups:
        if g.end <= K:
            total += g.relevant
        elif g.before < K:
            total += Fraction((K - g.before) * g.relevant, g.size)
    return total


def expected_values(groups: Sequence[TieGroup], opts: Options) -> QueryValues:
    """Exact expectation of every per-query metric over random orders of each tie group."""
    rule = opts.ap_rule
    R = sum(g.relevant for g in groups)
    n_kept = sum(g.size for g in groups)

    def term_sum_up_to(K: int, term_rule: str = rule) -> Fraction:
        return sum(
            (
                _expected_term_sum(g, min(g.size, K - g.before), g.relevant, g.size, term_rule)
                for g in groups
                if g.before < K
            ),
            ZERO,
        )

    k = opts.k
    if k is None:
        ap = term_sum_up_to(n_kept) / R
    elif opts.ap_at_k == "dcmh":
        L = min(k, R)
        total = ZERO
        for g in groups:
            for j in range(1, g.relevant + 1):
                i = g.relevant_before + j
                if i > L:
                    break
                total += sum(
                    (chance * ap_term(i, g.before + p, rule) for p, chance in _positions_of_jth(j, g.relevant, g.size)),
                    ZERO,
                )
        ap = total / L
    elif opts.ap_at_k in ("r", "min_k_r"):
        # a fixed denominator: the expectation is linear
        ap = term_sum_up_to(k) / (R if opts.ap_at_k == "r" else min(k, R))
    else:  # hits: E[S/H] conditions on how many relevant items of a cut group are inside
        cut = _straddling(groups, k)
        if cut is None:
            h = expected_hits(groups, k)
            ap = term_sum_up_to(k) / h if h else ZERO
        else:
            s_before = term_sum_up_to(cut.before)
            h0, m, n, t = cut.relevant_before, cut.relevant, cut.size, k - cut.before
            ap = ZERO
            for x in range(max(0, t - (n - m)), min(m, t) + 1):
                if h0 + x == 0:
                    continue
                s_cut = _expected_term_sum(cut, t, x, t, rule)
                ap += _hypergeom(m, n, t, x) * (s_before + s_cut) / (h0 + x)

    first = next(g for g in groups if g.relevant)
    last = [g for g in groups if g.relevant][-1]

    def cmc_at(K: int) -> Fraction:
        t = K - first.before
        if t <= 0:
            return ZERO
        if t >= first.size:
            return Fraction(1)
        return 1 - Fraction(comb(first.size - first.relevant, t), comb(first.size, t))

    m, n = last.relevant, last.size
    inp = sum(
        (chance * Fraction(R, last.before + p) for p, chance in _positions_of_jth(m, m, n)),
        ZERO,
    )
    hk = expected_hits(groups, k) if k is not None else Fraction(R)
    values = QueryValues(
        ap=ap,
        n_relevant=R,
        hits_at_k=hk,
        precision_at_k=hk / (k if k is not None else n_kept),
        recall_at_k=hk / R,
        cmc=[cmc_at(j + 1) for j in range(opts.max_rank)],
        inp=inp,
        r_precision=expected_hits(groups, R) / R,
    )
    return with_rank_metrics(values, expected_rank_metrics(groups, opts, _positions_of_jth, term_sum_up_to), opts)


# -- ties="grouped" --------------------------------------------------------------------
def grouped_values(groups: Sequence[TieGroup], opts: Options) -> QueryValues:
    """Every item of a tie group takes the group's end rank ``c + n`` (a threshold view).

    The caller has checked that ``k`` does not fall inside a tie group.
    """
    rule = opts.ap_rule
    R = sum(g.relevant for g in groups)
    n_kept = sum(g.size for g in groups)
    k = opts.k

    def term(g: TieGroup) -> Fraction:
        precision = Fraction(g.relevant_before + g.relevant, g.end)
        if rule == "precision_sum":
            return precision
        if g.end == 1:
            return Fraction(1)
        return (precision + Fraction(g.relevant_before, g.end - 1)) / 2

    def hits(K: int) -> int:
        return sum(g.relevant for g in groups if g.end <= K)

    if k is None:
        ap = sum((g.relevant * term(g) for g in groups), ZERO) / R
    elif opts.ap_at_k == "dcmh":
        L, taken, total = min(k, R), 0, ZERO
        for g in groups:
            take = min(g.relevant, L - taken)
            total += take * term(g)
            taken += take
        ap = total / L
    else:
        h = hits(k)
        s = sum((g.relevant * term(g) for g in groups if g.end <= k), ZERO)
        denominator = {"hits": h, "r": R, "min_k_r": min(k, R)}[opts.ap_at_k]
        ap = s / denominator if denominator else ZERO
    relevant_groups = [g for g in groups if g.relevant]
    first_end, last_end = relevant_groups[0].end, relevant_groups[-1].end
    hk = hits(k) if k is not None else R
    values = QueryValues(
        ap=ap,
        n_relevant=R,
        hits_at_k=Fraction(hk),
        precision_at_k=Fraction(hk, k if k is not None else n_kept),
        recall_at_k=Fraction(hk, R),
        cmc=[Fraction(int(first_end <= j + 1)) for j in range(opts.max_rank)],
        inp=Fraction(R, last_end),
        r_precision=Fraction(hits(R), R),
    )
    return with_rank_metrics(values, grouped_rank_metrics(groups, opts), opts)


# -- one query, any policy ----------------------------------------------------------------
def empty_values(opts: Options) -> QueryValues:
    """A query with no relevant non-junk item: 0 everywhere (the policy decides later)."""
    return QueryValues(
        ap=ZERO,
        n_relevant=0,
        hits_at_k=ZERO,
        precision_at_k=ZERO,
        recall_at_k=ZERO,
        cmc=[ZERO] * opts.max_rank,
        inp=ZERO,
        r_precision=ZERO,
    )


def radius_values(groups: Sequence[TieGroup], radius: float, R: int):
    """Precision and recall within a distance (Hamming) radius; ties do not matter."""
    within = [g for g in groups if g.distance <= radius]
    n_within = sum(g.size for g in within)
    rel_within = sum(g.relevant for g in within)
    precision = Fraction(rel_within, n_within) if n_within else ZERO
    recall = Fraction(rel_within, R) if R else ZERO
    return precision, recall


def query_values(groups: Sequence[TieGroup], opts: Options, query: int = 0) -> QueryValues:
    """All metrics of one query under ``opts`` (dispatches on the tie policy)."""
    R = sum(g.relevant for g in groups)
    if opts.ties == "grouped" and opts.k is not None:
        cut = _straddling(groups, opts.k)
        if cut is not None:  # checked for every query, relevant items or not
            raise grouped_cutoff_error(opts.k, query, cut)
    if R == 0:
        values = empty_values(opts)
    elif opts.ties in CONCRETE_POLICIES:
        values = concrete_values(ranked_grades(groups, opts.ties), opts)
    elif opts.ties == "expected":
        values = expected_values(groups, opts)
    elif opts.ties == "grouped":
        values = grouped_values(groups, opts)
    else:
        raise ValueError(f"ties: unknown tie policy {opts.ties!r}")
    if opts.radius is not None:
        values.precision_at_radius, values.recall_at_radius = radius_values(groups, opts.radius, R)
    return values
