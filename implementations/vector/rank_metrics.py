"""nDCG@k, the reciprocal rank, AP@R and the hit rate of a block (spec §7 nDCG, §7 MRR,
§7 MAP@R, §7 recall=hit), for the numpy and torch implementations.

Notation as in the reference (``reference/rank_metrics.py``): ``K = min(k, N')`` (``N'``
without a cut-off), relevant items at ranks ``r_1 < ... < r_R``, a tie group has ``c``
items before it, ``n`` items and ``m`` relevant ones.

* DCG sums ``gain(g) d(r)``: a gain is an exact float64 (grades <= 52, so ``2**g - 1 < 2**53``)
  and ``d(r)`` a float64 of the table ``rank_discounts`` (never a logarithm computed here), so
  every product is an exact double-double (``two_prod``); sums are double-double and the
  quotient DCG / IDCG is rounded once.  IDCG takes each row's relevant gains sorted from the
  highest (binary relevance: a prefix sum of the discounts).
* concrete orders and ``grouped`` (:func:`item_rank_metrics`) work on the padded per-item
  ranks of :mod:`.concrete` (under ``grouped`` every item has its group's end rank);
* ``expected`` (:func:`expected_rank_metrics`): DCG adds, per group, its mean gain times the
  discounts of its positions inside the top K (a prefix table of the discounts); RR and the
  hit rate come from the first relevant group, whose "no relevant item among the first j
  positions" probabilities ``S(j) = prod_{i<j} (n-m-i)/(n-i)`` are one double-double prefix
  product of factors in [0, 1] (no overflow, no NaN, whatever the group size):
  ``P(first at p) = S(p-1) m / (n-p+1)`` and ``P(first within t) = 1 - S(t)``.
"""

from __future__ import annotations

from typing import Dict

import numpy as np
from retrieval_conformance.implementations.vector.double_double import (
    dd_add,
    dd_cumprod,
    dd_cumsum,
    dd_div,
    dd_int,
    dd_mul,
    dd_quot,
    dd_round,
    dd_rowsum,
    dd_take,
    dd_where,
    dd_zero_where,
    ratio,
    safe_div,
    two_prod,
)
from retrieval_conformance.reference.contract.discounts import rank_discounts
from retrieval_conformance.reference.contract.metric_names import computes
from retrieval_conformance.reference.contract.problem import Options

#: the largest grade (``validation.MAX_GRADE``) fits in these bits of a sort key
GRADE_BITS = 6
#: 2**g - 1 for every grade g that fits in GRADE_BITS (exact int64; grades stop at 52)
_EXP_GAIN = np.array([min(2**g, 2**63) - 1 for g in range(2**GRADE_BITS)], dtype=np.int64)
_HALF = 2**26  # gains are summed as two int64 halves of 26 bits (no int64 overflow)


# -- gains and discounts ------------------------------------------------------------------------------
def item_gains(ops, grades, rule: str):
    """The gains (int64) of int64 grades: ``g`` (linear) or ``2**g - 1`` (exponential)."""
    if rule == "linear":
        return grades
    return ops.table("exp_gain", _EXP_GAIN)[grades]


def discounts(ops, n: int, rule: str):
    """``d(1) .. d(n)`` under ``Options.discount`` (float64 on the device)."""
    return ops.cached(("discounts", rule, n), lambda: ops.f64(np.array(rank_discounts(n, rule))))


def discount_prefix(ops, n: int, rule: str):
    """``D[x] = d(1) + ... + d(x)`` for x = 0..n (1-D double-double)."""

    def make():
        d = discounts(ops, n, rule)[None, :]
        hi, lo = dd_cumsum(ops, (d, d * 0.0))
        z = ops.zeros((1, 1), "f64")
        return ops.hcat([z, hi])[0], ops.hcat([z, lo])[0]

    return ops.cached(("discount_prefix", rule, n), make)


def ideal_dcg(ops, gains_pad, L, n: int, options: Options):
    """IDCG: the gains of each row's relevant items (``gains_pad`` (B, W) float64, any order,
    0-padded; None for binary relevance) from the highest, at ranks 1..L (a double-double)."""
    if gains_pad is None:
        return dd_take(discount_prefix(ops, n, options.discount), L)
    best = -ops.sort_values(-gains_pad)  # each row descending, the padding last
    W = best.shape[1]
    d = discounts(ops, n, options.discount)[:W][None, :]
    terms = two_prod(best, d)
    return dd_rowsum(ops, dd_zero_where(ops, ops.arange(W)[None, :] >= L[:, None], terms))


def _ndcg(ops, dcg, idcg, has):
    """``fl(DCG / IDCG)``, 0 for a row without a relevant item."""
    one = idcg[0] * 0.0 + 1.0
    safe = dd_where(ops, has, idcg, (one, one * 0.0))
    return ops.where(has, dd_round(dd_div(dcg, safe)), 0.0)


def order_in_groups(ops, grades, group, ties: str):
    """The grades of the relevant items (``grades``, in the block's order, ``group`` their
    non-decreasing group numbers) ordered inside each group as a concrete policy ranks them:
    the highest first (``optimistic``) or last (``pessimistic``).  Sorts values only."""
    top = 2**GRADE_BITS - 1
    code = top - grades if ties == "optimistic" else grades
    key = ops.sort_values(group[None, :] * (top + 1) + code[None, :])[0]
    code = key & top
    return top - code if ties == "optimistic" else code


# -- concrete orders and grouped ---------------------------------------------------------------------
def item_rank_metrics(ops, r_pad, valid, ps_term, R, gains_pad, n: int, options: Options) -> Dict[str, object]:
    """ndcg, rr, ap_at_r and hit from the padded ranks ``r_pad`` (B, W) of each row's relevant
    items in ranked order (``valid`` marks them; padding has rank 1), ``ps_term`` their
    precision terms (double-double), ``gains_pad`` their gains (float64, None for binary
    relevance) and ``n`` the gallery size (the largest rank); ``ps_term`` None: AP@R is not
    asked for (``Options.metrics``), nor is nDCG computed unless it is."""
    k = options.k
    has = R > 0
    B, W = r_pad.shape
    if W == 0:
        zero = ops.zeros((B,), "f64")
        return {"ndcg": zero, "rr": zero, "ap_at_r": zero, "hit": zero}
    first = r_pad[:, 0]
    hit = has & (first <= k) if k is not None else has
    zero = ops.zeros((B,), "f64")
    ndcg = ap_at_r = zero  # the sums not asked for (``Options.metrics``) are skipped
    if computes(options.metrics, "ndcg"):
        in_k = valid if k is None else valid & (r_pad <= k)
        d = discounts(ops, n, options.discount)[r_pad - 1]
        terms = (d, d * 0.0) if gains_pad is None else two_prod(gains_pad, d)
        dcg = dd_rowsum(ops, dd_zero_where(ops, ~in_k, terms))
        L = R if k is None else ops.clip(R, None, k)
        ndcg = _ndcg(ops, dcg, ideal_dcg(ops, gains_pad, L, n, options), has)
    if ps_term is not None:  # None: AP@R not asked for
        ap_at_r = ratio(ops, dd_rowsum(ops, dd_zero_where(ops, ~(valid & (r_pad <= R[:, None])), ps_term)), R)
    return {
        "ndcg": ndcg,
        "rr": safe_div(ops, ops.i64(hit), ops.where(has, first, 0)),
        "ap_at_r": ap_at_r,
        "hit": ops.f64(hit),
    }


# -- expected ------------------------------------------------------------------------------------
def _group_gains(ops, groups, gains):
    """The total gain of every listed (relevant) group as an exact double-double: ``m`` for
    binary relevance (``gains`` None), else the sum of its items' int64 gains (``gains`` in the
    order of ``groups.rel_flat``), summed as two 26-bit halves so that nothing overflows."""
    if gains is None:
        return dd_int(ops, groups.m)
    start = ops.cumsum(groups.m, 0) - groups.m
    stop = start + groups.m

    def sums(part):
        prefix = ops.concat([ops.zeros((1,), "i64"), ops.cumsum(part, 0)])
        return prefix[stop] - prefix[start]

    high = dd_int(ops, sums(gains // _HALF))
    return dd_add((high[0] * _HALF, high[1] * _HALF), dd_int(ops, sums(gains % _HALF)))


def _first_group(ops, groups, K):
    """E[RR@K] and P(r_1 <= K) (module docstring) per row, from its first relevant group."""
    B = groups.B
    rr, hit = ops.zeros((B,), "f64"), ops.zeros((B,), "f64")
    gsel = ops.nonzero(groups.h == 0)[0]
    if gsel.shape[0] == 0:
        return rr, hit
    rows = groups.rows[gsel]
    c, n, m = groups.c[gsel], groups.n[gsel], groups.m[gsel]
    # positions past n - m + 1 cannot hold the first relevant item (and S(n - m + 1) = 0)
    t = ops.clip(K[rows] - c, 0, None)
    t = ops.where(t < n - m + 1, t, n - m + 1)
    W = ops.max_int(t)
    if W == 0:
        return rr, hit
    j = ops.arange(W)[None, :]
    c_, n_, m_, t_ = c[:, None], n[:, None], m[:, None], t[:, None]
    active = j < t_
    num = ops.where(active, ops.f64(ops.clip(n_ - m_ - j, 0, None)), 1.0)
    den = ops.where(active, ops.f64(n_ - j), 1.0)
    S = dd_cumprod(ops, dd_quot(num, den))  # column j: S(j + 1)
    one = ops.full((rows.shape[0], 1), 1.0, "f64")
    before = ops.hcat([one, S[0][:, :-1]]), ops.hcat([one * 0.0, S[1][:, :-1]])  # S(j)
    chance = dd_mul(before, dd_quot(ops.f64(m_ + 0 * j), den))
    term = dd_mul(chance, dd_quot(one + 0.0 * den, ops.f64(c_ + j + 1)))
    rr[rows] = dd_round(dd_rowsum(ops, dd_zero_where(ops, ~active, term)))
    last = ops.arange(rows.shape[0]), ops.clip(t - 1, 0, None)
    none = S[0][last], S[1][last]
    within = dd_round(dd_add((one[:, 0], one[:, 0] * 0.0), (-none[0], -none[1])))
    hit[rows] = ops.where(t > 0, within, 0.0)
    return rr, hit


def expected_rank_metrics(ops, groups, R, n_kept, options: Options, gains=None) -> Dict[str, object]:
    """ndcg, rr and hit under ``ties="expected"`` (:class:`~.tie_groups.TieGroups`
    ``groups``); ``gains``: the int64 gain of every relevant item in the order of
    ``groups.rel_flat`` (None for binary relevance)."""
    B, N = groups.B, groups.N
    k = options.k
    has = R > 0
    K = n_kept if k is None else ops.clip(n_kept, None, k)
    size = groups.table_size  # every rank a table is read at (<= N)
    Dc = discount_prefix(ops, size, options.discount)
    c, n = groups.c, groups.n
    inside = ops.clip(K[groups.rows] - c, 0, None)
    inside = ops.where(inside < n, inside, n)
    before = dd_take(Dc, c)
    run = dd_add(dd_take(Dc, c + inside), (-before[0], -before[1]))
    mean_gain = dd_div(_group_gains(ops, groups, gains), dd_int(ops, n))
    dcg = groups.rel_sum(dd_mul(mean_gain, run), inside > 0)
    gains_pad = None
    if gains is not None:
        rows = groups.rel_flat // N
        counts = ops.bincount(rows, B)
        i0 = ops.arange(rows.shape[0]) - (ops.cumsum(counts, 0) - counts)[rows]
        gains_pad = ops.zeros((B, ops.max_int(R)), "f64")
        gains_pad[rows, i0] = ops.f64(gains)
    L = R if k is None else ops.clip(R, None, k)
    rr, hit = _first_group(ops, groups, K)
    return {"ndcg": _ndcg(ops, dcg, ideal_dcg(ops, gains_pad, L, size, options), has), "rr": rr, "hit": hit}
