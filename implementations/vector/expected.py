"""Per-query metrics of a block under ``ties="expected"`` (spec §4 ties=expected).

The exact expectation of each per-query value over all orders of every tie group
(McSherry & Najork, ECIR 2008), from closed forms over the counts of the groups that hold
relevant items (:class:`~.tie_groups.TieGroups`), so the cost is per relevant group,
not per gallery item.

Position p of a group (c items before it, h of them relevant; n items, m relevant) is
relevant with probability m/n and then has on average (p-1)(m-1)/(n-1) of the group's other
relevant items before it.  Since an AP term is linear in i,
``term = alpha(r) + (i - h - 1) beta(r)`` (:func:`~.concrete.alpha_beta`), a run of
t positions contributes ``(m/n) A(t) + m(m-1)/(n(n-1)) Bs(t)`` with
``A(t) = Σ_{p<=t} alpha(c+p)`` and ``Bs(t) = Σ_{p<=t} (p-1) beta(c+p)``; the sums of 1/r
over runs of ranks come from one harmonic prefix table.  A cut-off inside a group
conditions on a hypergeometric count, CMC on the first relevant group, INP and
``ap_at_k="dcmh"`` on the position of one relevant item (:mod:`.distributions`).
"""

from __future__ import annotations

from typing import Dict

from retrieval_conformance.implementations.vector.concrete import alpha_beta
from retrieval_conformance.implementations.vector.distributions import hypergeom_pmf, jth_position_pmf
from retrieval_conformance.implementations.vector.double_double import (
    dd_add,
    dd_const,
    dd_cumprod,
    dd_cumsum,
    dd_div,
    dd_int,
    dd_mul,
    dd_quot,
    dd_round,
    dd_rowsum,
    dd_take,
    dd_zero_where,
    ratio,
    safe_div,
)
from retrieval_conformance.implementations.vector.rank_metrics import expected_rank_metrics
from retrieval_conformance.implementations.vector.tie_groups import TieGroups
from retrieval_conformance.reference.contract.metric_names import computes
from retrieval_conformance.reference.contract.problem import Options


def harmonic_table(ops, N: int):
    """T[x] = Σ_{r=1..x} 1/r for x = 0..N as a double-double (1-D), so that every sum of
    1/r over a run of ranks is a difference T[b] - T[a] with ~1e-30 absolute error."""
    r = ops.f64(ops.arange(N) + 1)[None, :]
    hi, lo = dd_cumsum(ops, dd_quot(r * 0.0 + 1.0, r, small=N < 2**26))
    z = ops.zeros((1, 1), "f64")
    return ops.hcat([z, hi])[0], ops.hcat([z, lo])[0]


def _run_sums(ops, T, c, h, t, rule: str):
    """A = Σ_{p=1..t} alpha(c+p) and Bs = Σ_{p=1..t} (p-1) beta(c+p) (double-doubles) for
    groups with c items (h relevant) before them, from the harmonic table:
    with S = Σ 1/(c+p) and S' = Σ 1/(c+p-1) (the p = 1 term left out when c = 0),
    precision-sum A = (h+1) S, Bs = t - (c+1) S; trapezoid
    A = ((h+1) S + h S')/2 (+1/2 for alpha(1) = 1 when c = 0), Bs = (t - (c+1) S + t - c S')/2
    (-1/2 when c = 0)."""

    def diff(a, b):
        x, y = dd_take(T, a), dd_take(T, b)
        return dd_add(x, (-y[0], -y[1]))

    def times(x, integer):
        return dd_mul(x, dd_const(ops.f64(integer)))

    def minus(integer, x):
        return dd_add(dd_const(ops.f64(integer)), (-x[0], -x[1]))

    S = diff(c + t, c)
    if rule == "precision_sum":
        return times(S, h + 1), minus(t, times(S, c + 1))
    S1 = diff(ops.clip(c + t - 1, 0, None), ops.clip(c - 1, 0, None))
    first = ops.where((c == 0) & (t >= 1), 1, 0)
    A = dd_add(times(S, h + 1), times(S1, h))
    A = dd_add(A, dd_const(ops.f64(first)))
    cS1 = times(S1, c)
    Bs = dd_add(minus(2 * t - first, times(S, c + 1)), (-cS1[0], -cS1[1]))
    # halving is exact
    return (A[0] * 0.5, A[1] * 0.5), (Bs[0] * 0.5, Bs[1] * 0.5)


def _group_expected_sum(ops, T, c, n, m, h, t, rule: str):
    """E[Σ term] over the first t positions of groups (c, n, m, h), double-double:
    (m/n) A(t) + m(m-1)/(n(n-1)) Bs(t) (position p relevant with probability m/n, with on
    average (p-1)(m-1)/(n-1) of the group's relevant items before it)."""
    A, Bs = _run_sums(ops, T, c, h, t, rule)
    nn1 = ops.where(n > 1, n * (n - 1), 1)
    first = dd_quot(ops.f64(m), ops.f64(n))
    second = dd_zero_where(ops, n <= 1, dd_quot(ops.f64(m * (m - 1)), ops.f64(nn1)))
    out = dd_add(dd_mul(first, A), dd_mul(second, Bs))
    return dd_zero_where(ops, m == 0, out)


def _cut_group(ops, groups: TieGroups, K):
    """For a cut-off K per row (>= 1): (c, n, m, h) of the group holding position
    min(K, N) - 1, and t = the number of its positions inside the top K."""
    Kc = ops.clip(K, 1, groups.N)
    c, n, m, h = groups.group_at(ops.arange(groups.B), Kc - 1)
    return c, n, m, h, Kc - c


def _expected_hits_num(ops, groups: TieGroups, K):
    """n E[H(K)] = h n + t m (an exact integer) and n, for the group cut by K."""
    c, n, m, h, t = _cut_group(ops, groups, K)
    return h * n + t * m, n


def expected_metrics(ops, groups: TieGroups, R, n_kept, options: Options, gains=None) -> Dict[str, object]:
    """Every per-query value of the block as its exact expectation (double-double sums,
    rounded once); P@k, R@k and R-precision are one division of exact integers.  ``gains``:
    the int64 gain of every relevant item, in the order of ``groups.rel_flat`` (graded
    relevance; None for binary), for nDCG (:mod:`.rank_metrics`)."""
    B = groups.B
    k, rule = options.k, options.ap_rule
    has = R > 0
    size = groups.table_size  # every rank a table is read at (<= N)
    T = ops.cached(("harmonic", size), lambda: harmonic_table(ops, size))
    # groups without a relevant item contribute nothing to AP: work on the others only
    c, n, m, h = groups.c, groups.n, groups.m, groups.h
    full = _group_expected_sum(ops, T, c, n, m, h, n, rule)
    everything = ops.full(c.shape, True, "bool")
    zero = ops.zeros((B,), "f64")
    wants = {name: computes(options.metrics, name) for name in ("ap", "ap_at_r", "r_precision", "cmc", "inp")}
    if not wants["ap"]:  # the values not asked for (``Options.metrics``) are skipped
        ap = zero
    elif k is None:
        ap = ratio(ops, groups.rel_sum(full, everything), R)
    elif options.ap_at_k in ("r", "min_k_r"):
        # a fixed denominator: E is linear, each position inside the top k counts
        t = ops.clip(k - c, 0, None)
        t = ops.where(t < n, t, n)
        s = groups.rel_sum(_group_expected_sum(ops, T, c, n, m, h, t, rule), everything)
        ap = ratio(ops, s, R if options.ap_at_k == "r" else ops.clip(R, None, k))
    elif options.ap_at_k == "hits":
        ap = _expected_ap_hits(ops, groups, T, full, R, k, rule)
    else:
        ap = _expected_ap_dcmh(ops, groups, T, full, R, k, rule)

    if k is None:
        hk = ops.f64(R)
        p_at_k = safe_div(ops, R, n_kept)
        r_at_k = ops.f64(has)
    else:
        num, n = _expected_hits_num(ops, groups, ops.full((B,), k, "i64"))
        num = ops.where(has, num, 0)
        hk = safe_div(ops, num, n)
        p_at_k = safe_div(ops, num, n * k)
        r_at_k = safe_div(ops, num, n * R)
    r_precision = ap_at_r = inp = zero
    if wants["r_precision"]:
        num_R, n_R = _expected_hits_num(ops, groups, R)
        r_precision = safe_div(ops, ops.where(has, num_R, 0), n_R * R)
    if wants["ap_at_r"]:
        # AP@R (spec §7 MAP@R): the expected precision-term sum over the top R, divided by R
        c, n = groups.c, groups.n  # (``n`` was the cut group's above)
        t_R = ops.clip(R[groups.rows] - c, 0, None)
        t_R = ops.where(t_R < n, t_R, n)
        s_R = groups.rel_sum(_group_expected_sum(ops, T, c, n, groups.m, groups.h, t_R, "precision_sum"), everything)
        ap_at_r = ratio(ops, s_R, R)
    if wants["inp"]:
        inp = _expected_inp(ops, groups, R)
    cmc = _expected_cmc(ops, groups, R, options.max_rank) if wants["cmc"] else ops.zeros((B, options.max_rank), "f64")
    rank = expected_rank_metrics(ops, groups, R, n_kept, options, gains)
    return {
        **rank,
        "ap_at_r": ap_at_r,
        "ap": ap,
        "hits_at_k": hk,
        "precision_at_k": p_at_k,
        "recall_at_k": r_at_k,
        "r_precision": r_precision,
        "cmc": cmc,
        "inp": inp,
    }


def _expected_ap_hits(ops, groups: TieGroups, T, full, R, k: int, rule: str):
    """E[S_k / H_k]: whole groups are fixed; a cut group (t of its n positions inside, X of
    its m relevant items inside, hypergeometric) contributes, given X = x, the uniform sum
    (x/t) A(t) + x(x-1)/(t(t-1)) Bs(t) over its first t positions."""
    B = groups.B
    c, n, m, h, t = _cut_group(ops, groups, ops.full((B,), k, "i64"))
    straddle = (t < n) & (m > 0) & (R > 0)
    stop = c + ops.where(straddle, 0, t)
    s_in = groups.rel_sum(full, groups.end <= stop[groups.rows])
    ap = ratio(ops, s_in, h + ops.where(t == n, m, 0))
    if not ops.any(straddle):
        return ap
    rows = ops.nonzero(straddle)[0]
    c, n, m, h, t = c[rows], n[rows], m[rows], h[rows], t[rows]
    A, Bs = _run_sums(ops, T, c, h, t, rule)
    x, pmf = hypergeom_pmf(ops, n, m, t)
    t_ = t[:, None] + 0 * x
    xt = dd_quot(ops.f64(x), ops.f64(t_))
    xx = dd_quot(ops.f64(x * (x - 1)), ops.f64(ops.where(t_ > 1, t_ * (t_ - 1), 1)))
    col = lambda v: (v[0][:, None] + 0.0 * xt[0], v[1][:, None] + 0.0 * xt[0])  # noqa: E731
    s = dd_add(col(dd_take(s_in, rows)), dd_add(dd_mul(xt, col(A)), dd_mul(xx, col(Bs))))
    hx = h[:, None] + x
    value = dd_zero_where(ops, hx == 0, dd_div(s, dd_int(ops, ops.where(hx == 0, 1, hx))))
    ap[rows] = dd_round(dd_rowsum(ops, dd_mul(pmf, value)))
    return ap


def _expected_ap_dcmh(ops, groups: TieGroups, T, full, R, k: int, rule: str):
    """E[(1/L) Σ_{i<=L} term_i], L = min(k, R) (spec §6 ap_at_k=dcmh): groups whose
    relevant items all come before the L-th count wholly; in the group holding the L-th
    relevant item (the J = L - h-th of its m), condition on the position q of that item
    (negative hypergeometric): the other J-1 sit uniformly among the group's first q-1
    positions, which gives
    alpha(c+q) + (J-1) beta(c+q) + (J-1)/(q-1) A(q-1) + (J-1)(J-2)/((q-1)(q-2)) Bs(q-1)."""
    B = groups.B
    L = ops.clip(R, None, k)
    Lg = L[groups.rows]
    sel = (groups.h < Lg) & (groups.h + groups.m >= Lg)  # the group holding the L-th item
    gsel = ops.nonzero(sel)[0]
    rows = groups.rows[gsel]
    c, n, m, h = groups.c[gsel], groups.n[gsel], groups.m[gsel], groups.h[gsel]
    J = L[rows] - h
    whole = J == m
    stop = ops.zeros((B,), "i64")
    stop[rows] = c + ops.where(whole, n, 0)
    total = groups.rel_sum(full, groups.end <= stop[groups.rows])
    part = ~whole
    if ops.any(part):
        pr = ops.nonzero(part)[0]
        c, n, m, h, J, rows_p = c[pr], n[pr], m[pr], h[pr], J[pr], rows[pr]
        q, pmf = jth_position_pmf(ops, n, m, J)
        # rows are padded to the longest; a padded column (pmf 0) may lie beyond its group and
        # the gallery: keep its table lookups at the row's last position (fuzz case 835145)
        last = (n - m + J)[:, None]
        q = ops.where(q <= last, q, last)
        c_, h_, J_ = c[:, None] + 0 * q, h[:, None] + 0 * q, J[:, None] + 0 * q
        alpha, beta = alpha_beta(ops, h_, c_ + q, rule)
        A, Bs = _run_sums(ops, T, c_, h_, ops.clip(q - 1, 0, None), rule)
        value = dd_add(alpha, dd_mul(beta, dd_const(ops.f64(J_ - 1))))
        c1 = dd_zero_where(ops, q <= 1, dd_quot(ops.f64(J_ - 1), ops.f64(ops.where(q > 1, q - 1, 1))))
        value = dd_add(value, dd_mul(c1, A))
        q2 = ops.where(q > 2, (q - 1) * (q - 2), 1)
        c2 = dd_zero_where(ops, (q <= 2) | (J_ <= 2), dd_quot(ops.f64((J_ - 1) * (J_ - 2)), ops.f64(q2)))
        value = dd_add(value, dd_mul(c2, Bs))
        extra = dd_rowsum(ops, dd_mul(pmf, value))
        th, tl = dd_add(dd_take(total, rows_p), extra)
        total[0][rows_p] = th
        total[1][rows_p] = tl
    return ratio(ops, total, L)


def _expected_inp(ops, groups: TieGroups, R):
    """E[R / r_R] (spec §7 INP): the last relevant item is the m-th of the last
    relevant group."""
    B = groups.B
    out = ops.zeros((B,), "f64")
    gsel = ops.nonzero(groups.h + groups.m == R[groups.rows])[0]
    if gsel.shape[0] == 0:
        return out
    rows = groups.rows[gsel]
    c, n, m = groups.c[gsel], groups.n[gsel], groups.m[gsel]
    q, pmf = jth_position_pmf(ops, n, m, m)
    value = dd_quot(ops.f64(R[rows][:, None] + 0 * q), ops.f64(c[:, None] + q))
    out[rows] = dd_round(dd_rowsum(ops, dd_mul(pmf, value)))
    return out


def _expected_cmc(ops, groups: TieGroups, R, max_rank: int):
    """CMC@K = P(first relevant item within the top K) = 1 - C(n-m, t)/C(n, t) for the first
    relevant group, t = K - c of its positions inside the top K (spec §7 cmc)."""
    B = groups.B
    out = ops.zeros((B, max_rank), "f64")
    gsel = ops.nonzero(groups.h == 0)[0]
    if gsel.shape[0] == 0:
        return out
    rows = groups.rows[gsel]
    c, n, m = groups.c[gsel][:, None], groups.n[gsel][:, None], groups.m[gsel][:, None]
    t = ops.arange(max_rank)[None, :] + 1 - c
    active = (t >= 1) & (t < n)
    # C(n-m, t)/C(n, t) = prod_{i<t} (n-m-i)/(n-i): a double-double prefix product of exact
    # quotients, so that 1 - it rounds correctly (e.g. to exactly 1/4 when it is 1/4).
    # Factors past i = n-m are clamped to 0: the product is 0 from there on anyway, but the
    # log-depth scan also multiplies runs of those factors without the zero, and (i-(n-m))/(n-i)
    # grows towards m - 1: with more than ~1,000 relevant items such a run overflowed to inf
    # and 0 * inf gave NaN.  With every factor in [0, 1] no partial product can overflow.
    fnum = ops.where(active, ops.f64(ops.clip(n - m - (t - 1), 0, None)), 1.0)
    fden = ops.where(active, ops.f64(n - (t - 1)), 1.0)
    none_yet = dd_cumprod(ops, dd_quot(fnum, fden))
    one_minus = dd_round(dd_add(dd_const(none_yet[0] * 0.0 + 1.0), (-none_yet[0], -none_yet[1])))
    out[rows] = ops.where(t <= 0, 0.0, ops.where(t >= n, 1.0, one_minus))
    return out
