"""Per-query metrics of a block under a concrete tie order, or under ``ties="grouped"``.

Every relevant item gets a rank, and the metrics are counts over those ranks:
``stable`` and ``reverse`` (spec §4 ties=stable, §4 ties=reverse) read the ranks off
the sorted block; ``optimistic`` and ``pessimistic`` put a group's ``m`` relevant items on
its first or last ``m`` positions; ``grouped`` (spec §4 ties=grouped) gives them all
the group's end rank ``e = c + n`` and the precision ``(h + m) / e``.

AP terms (spec §5 ap_rule=precision_sum, §5 ap_rule=trapezoid): the term of the i-th
relevant item at rank r is ``i / r``, or ``(i / r + (i - 1) / (r - 1)) / 2`` (1 at r = 1).
It is linear in i, ``term = alpha(r) + (i - h - 1) beta(r)`` for h relevant items before:
precision-sum ``alpha = (h + 1) / r``, ``beta = 1 / r``; trapezoid
``alpha = ((h + 1) / r + h / (r - 1)) / 2``, ``beta = (1 / r + 1 / (r - 1)) / 2``
(``alpha(1) = 1``, ``beta(1) = 0``), which ``ties="expected"`` needs (:func:`alpha_beta`).
Terms are exact double-double quotients of integers; their sums are rounded once.
"""

from __future__ import annotations

from typing import Dict

from retrieval_conformance.implementations.vector.double_double import (
    dd_const,
    dd_quot,
    dd_rowsum,
    dd_where,
    dd_zero_where,
    ratio,
    safe_div,
)
from retrieval_conformance.implementations.vector.rank_metrics import item_gains, item_rank_metrics, order_in_groups
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES, INDEX_ORDERS
from retrieval_conformance.reference.contract.metric_names import computes
from retrieval_conformance.reference.contract.problem import Options


# -- AP terms -------------------------------------------------------------------------------------
def _trapezoid(ops, a, b, r, one_at_first: bool):
    """``(a / r + b / (r - 1)) / 2 = (a (r - 1) + b r) / (2 r (r - 1))`` for int64 arrays
    (a double-double); at r = 1 the value is 1 (``one_at_first``) or 0."""
    first = r == 1
    rr = ops.where(first, 2, r)
    t = dd_quot(ops.f64(a * (rr - 1) + b * rr), ops.f64(2 * rr * (rr - 1)))
    if one_at_first:
        return dd_where(ops, first, dd_const(ops.f64(first)), t)
    return dd_zero_where(ops, first, t)


def concrete_term(ops, i, r, rule: str, small: bool = False):
    """AP term of the i-th relevant item at rank r (int64 arrays, r >= 1), double-double.

    ``small``: every rank is below 2**26 (a cheaper exact quotient)."""
    if rule == "precision_sum":
        return dd_quot(ops.f64(i), ops.f64(r), small=small)
    return _trapezoid(ops, i, i - 1, r, True)


def grouped_term(ops, hm, h, e, rule: str):
    """Term of every relevant item of a group under ``grouped``: the precision (h+m)/e at
    the group's end rank e; trapezoid averages it with h/(e-1) (1 at e = 1), as the reference."""
    if rule == "precision_sum":
        return dd_quot(ops.f64(hm), ops.f64(e))
    return _trapezoid(ops, hm, h, e, True)


def alpha_beta(ops, h, r, rule: str):
    """alpha(r), beta(r) of the module docstring (double-doubles) for h relevant before."""
    if rule == "precision_sum":
        fr = ops.f64(r)
        return dd_quot(ops.f64(h + 1 + 0 * r), fr), dd_quot(fr * 0.0 + 1.0, fr)
    return _trapezoid(ops, h + 1, h, r, True), _trapezoid(ops, 1, 1, r, False)


# -- grouped: a cut-off inside a tie group is an error --------------------------------------------
def grouped_cutoff_error(k: int, query: int, before: int, end: int) -> ValueError:
    """The reference's error for ``ties="grouped"`` with ``k`` inside a tie group (same text)."""
    return ValueError(
        f"k: k={k} falls inside a tie group (ranks {before + 1}..{end}) of query "
        f"{query}; under ties='grouped' a cut-off inside a tie group has no meaning. Use "
        "ties='expected', or a k at a tie-group boundary"
    )


def check_grouped_cutoff(ops, groups, n_kept, k: int, row0: int) -> None:
    """Raise the reference's ValueError at the first query where c < k < c + n for a group."""
    inside = n_kept > k  # k < N': position k-1 is a non-junk item; else no group straddles k
    if not ops.any(inside):
        return
    rows = ops.nonzero(inside)[0]
    c, n, _, _ = groups.group_at(rows, ops.full(rows.shape, k - 1, "i64"))
    bad = c + n > k
    if ops.any(bad):
        first = ops.nonzero(bad)[0][0]
        raise grouped_cutoff_error(k, row0 + int(rows[first]), int(c[first]), int(c[first] + n[first]))


# -- metrics from ranks -----------------------------------------------------------------------------
def ranked_metrics(ops, rel_s, groups, R, n_kept, options: Options, row0: int, grade_s=None) -> Dict[str, object]:
    """Metrics of a block under a concrete tie order or ``grouped``.

    ``groups``: the block's :class:`~.tie_groups.TieGroups` (None for the index
    orders, whose ranks are the sorted positions).  ``row0``: the block's first query (for
    the error message of ``grouped``).  ``grade_s``: the grades in the sorted order (graded
    relevance; None for binary), which only nDCG reads.
    """
    ties, N = options.ties, rel_s.shape[1]
    if ties in INDEX_ORDERS:
        rows, cols = ops.nonzero(rel_s)
        grades = None if grade_s is None else grade_s[rows, cols]
        return item_metrics(ops, rows, cols + 1, None, R, n_kept, options, N, grades)
    grades = None if grade_s is None else grade_s.reshape(-1)[groups.rel_flat]
    return group_metrics(ops, groups, R, n_kept, options, row0, grades)


def group_metrics(ops, groups, R, n_kept, options: Options, row0: int, grades=None) -> Dict[str, object]:
    """Metrics under ``optimistic``, ``pessimistic`` or ``grouped`` from the groups that hold
    relevant items alone (:class:`~.tie_groups.TieGroups`, or any object with its
    attributes): ``grades`` are the relevant items' grades in the order of ``groups.rel_flat``
    (None: binary relevance).  Under ``grouped`` with a cut-off, a cut-off inside a tie group
    raises the reference's error (``row0``: the index of the first row, for its message)."""
    ties = options.ties
    if ties == "grouped" and options.k is not None:
        check_grouped_cutoff(ops, groups, n_kept, options.k, row0)
    if ties in CONCRETE_POLICIES and ties not in INDEX_ORDERS:
        rows, ranks, g = groups.relevant_items("first" if ties == "optimistic" else "last")
        if grades is not None:  # a group's relevant items ranked by grade (spec §4)
            grades = order_in_groups(ops, grades, g, ties)
        return item_metrics(ops, rows, ranks, None, R, n_kept, options, groups.table_size, grades)
    if ties == "grouped":
        rows, ranks, g = groups.relevant_items("end")
        return item_metrics(
            ops, rows, ranks, (groups.h[g] + groups.m[g], groups.h[g]), R, n_kept, options, groups.table_size, grades
        )
    raise ValueError(f"ties: unknown tie policy {ties!r}")


def item_metrics(ops, rows, ranks, grouped, R, n_kept, options: Options, big_n: int, grades=None) -> Dict[str, object]:
    """Metrics from the relevant items of each row in ranked order (row-major lists).

    ``big_n``: at least the largest rank (the gallery size; the discount table is read up to it).
    ``ranks`` is each item's 1-based rank (under ``grouped`` the group's end rank, and then
    ``grouped`` = (h + m, h) of the item's group, for its term); ``grades`` their grades
    (None: binary relevance).  Also nDCG, RR, AP@R and the hit rate
    (:func:`~.rank_metrics.item_rank_metrics`).
    """
    B = R.shape[0]
    k, rule = options.k, options.ap_rule
    maxR = ops.max_int(R)
    offset = ops.cumsum(R, 0) - R
    i0 = ops.arange(rows.shape[0]) - offset[rows]
    valid = ops.arange(maxR)[None, :] < R[:, None]
    r_pad = ops.full((B, maxR), 1, "i64")
    r_pad[rows, i0] = ranks
    i_pad = ops.arange(maxR)[None, :] + 1
    # the double-double terms only for the sums asked for (AP, AP@R: ``Options.metrics``)
    want_ap, want_ap_at_r = computes(options.metrics, "ap"), computes(options.metrics, "ap_at_r")
    if grouped is not None:
        hm_pad = ops.zeros((B, maxR), "i64")
        h_pad = ops.zeros((B, maxR), "i64")
        hm_pad[rows, i0] = grouped[0]
        h_pad[rows, i0] = grouped[1]

    def terms(which: str):
        if grouped is None:
            return concrete_term(ops, i_pad, r_pad, which, small=big_n < 2**26)
        return grouped_term(ops, hm_pad, h_pad, r_pad, which)

    term = terms(rule) if want_ap else None
    ps_term = None
    if want_ap_at_r:
        ps_term = term if rule == "precision_sum" and term is not None else terms("precision_sum")
    gains_pad = None
    if grades is not None:
        gains_pad = ops.zeros((B, maxR), "f64")
        gains_pad[rows, i0] = ops.f64(item_gains(ops, grades, options.gain))

    def term_sum(mask):
        return dd_rowsum(ops, dd_zero_where(ops, ~mask, term))

    if k is None:
        ap = ratio(ops, term_sum(valid), R) if want_ap else ops.zeros((B,), "f64")
        hk = R
    else:
        in_k = valid & (r_pad <= k)
        hk = ops.sum(in_k, 1)
        if not want_ap:
            ap = ops.zeros((B,), "f64")
        elif options.ap_at_k == "dcmh":
            L = ops.clip(R, None, k)
            ap = ratio(ops, term_sum(valid & (i_pad <= L[:, None])), L)
        else:
            den = {"hits": hk, "r": R, "min_k_r": ops.clip(R, None, k)}[options.ap_at_k]
            ap = ratio(ops, term_sum(in_k), den)
    cut = n_kept if k is None else ops.full((B,), k, "i64")
    has = R > 0
    out = {
        "ap": ap,
        "hits_at_k": ops.f64(ops.where(has, hk, 0)),
        "precision_at_k": safe_div(ops, ops.where(has, hk, 0), cut),
        "recall_at_k": safe_div(ops, hk, R),
    }
    if maxR > 0:
        first = r_pad[:, 0]
        last = r_pad[ops.arange(B), ops.clip(R - 1, 0, None)]
        hits_R = ops.sum(valid & (r_pad <= R[:, None]), 1)
    else:
        first = last = hits_R = ops.zeros((B,), "i64")
    K = ops.arange(options.max_rank)[None, :] + 1
    out["cmc"] = ops.f64(has[:, None] & (K >= first[:, None]))
    out["inp"] = safe_div(ops, R, ops.where(has, last, 0))
    out["r_precision"] = safe_div(ops, hits_R, R)
    out.update(item_rank_metrics(ops, r_pad, valid, ps_term, R, gains_pad, big_n, options))
    return out
