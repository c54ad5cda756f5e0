/* rc_expected.c -- ties = "expected": exact expectations over uniformly random orders of
 * every tie group (closed forms and hypergeometric sums in double-double). */
#include "rc_core.h"

/* a value m * 2^e kept with m near 1, for probabilities that may underflow a double */
static inline void dd_renorm(dd *u, int64_t *e)
{
    int s;
    if (u->hi == 0.0) return;
    (void)frexp(u->hi, &s);
    u->hi = ldexp(u->hi, -s);
    u->lo = ldexp(u->lo, -s);
    *e += s;
}

static inline dd dd_unscale(dd u, int64_t e)
{
    if (u.hi == 0.0 || e < RC_UNSCALE_MIN_EXP) return DD_ZERO;
    u.hi = ldexp(u.hi, (int)e);
    u.lo = ldexp(u.lo, (int)e);
    return u;
}

/* ---- ties = "expected" (CONVENTIONS §4 closed forms) ------------------------------------ *
 * Hh[j] = 1 + 1/2 + ... + 1/j in double-double, shared read-only by every thread.
 *
 * For a group at offset c with h relevant items before it, take its first t positions and
 * put x relevant items uniformly among them.  Position p is relevant with probability x/t
 * and then has on average (p-1)(x-1)/(t-1) relevant items of the group before it, so
 *   E[sum of i/r over those t positions] = x * alpha + x(x-1) * beta,
 *   alpha = (h+1) A / t,  beta = B / (t(t-1)),
 *   A = sum_{p<=t} 1/(c+p) = Hh[c+t] - Hh[c],   B = sum_{p<=t} (p-1)/(c+p) = t - (c+1) A.
 * The trapezoid rule adds the previous-rank precision (i-1)/(r-1): the same with h+1 -> h
 * and c -> c-1 (A' = Hh[c+t-1] - Hh[c-1], B' = t - c A'), and for c = 0, where rank 1 counts
 * as 1, x/t + x(x-1)/t; then halves the sum. */
static void coeffs(int64_t c, int64_t h, int64_t t, const dd *Hh, int64_t rule, dd *alpha,
                   dd *beta)
{
    dd A = dd_sub(Hh[c + t], Hh[c]);
    dd B = dd_sub(dd_make((double)t), dd_mul_d(A, (double)(c + 1)));
    dd a1 = dd_div_d(dd_mul_d(A, (double)(h + 1)), (double)t);
    dd b1 = t >= 2 ? dd_div(B, two_prod((double)t, (double)(t - 1))) : DD_ZERO;
    dd a2, b2;
    if (rule == AP_PS) {
        *alpha = a1;
        *beta = b1;
        return;
    }
    if (c == 0) {
        a2 = dd_ratio(1.0, (double)t);
        b2 = t >= 2 ? a2 : DD_ZERO;
    } else {
        dd A2 = dd_sub(Hh[c + t - 1], Hh[c - 1]);
        dd B2 = dd_sub(dd_make((double)t), dd_mul_d(A2, (double)c));
        a2 = dd_div_d(dd_mul_d(A2, (double)h), (double)t);
        b2 = t >= 2 ? dd_div(B2, two_prod((double)t, (double)(t - 1))) : DD_ZERO;
    }
    *alpha = dd_half(dd_add(a1, a2));
    *beta = dd_half(dd_add(b1, b2));
}

/* E[sum of AP terms over the first t positions of group g] (m relevant among its n) */
static dd exp_group_sum(const group *g, int64_t t, const dd *Hh, int64_t rule)
{
    dd al, be, ex, exx;
    double n = (double)g->n, m = (double)g->m, tt = (double)t;
    coeffs(g->c, g->h, t, Hh, rule, &al, &be);
    if (t == g->n) {
        ex = dd_make(m);
        exx = two_prod(m, m - 1.0);
    } else {  /* hypergeometric: E[X] = tm/n, E[X(X-1)] = t(t-1)m(m-1)/(n(n-1)) */
        ex = dd_div_d(two_prod(tt, m), n);
        exx = dd_div(dd_mul(two_prod(tt, tt - 1.0), two_prod(m, m - 1.0)), two_prod(n, n - 1.0));
    }
    return dd_add(dd_mul(ex, al), dd_mul(exx, be));
}

/* E[H(K)]: relevant items of whole groups in the top K plus t m / n of a cut group */
static dd exp_hits(const group *g, int64_t ng, int64_t K)
{
    dd s = DD_ZERO;
    int64_t a;
    for (a = 0; a < ng; a++) {
        if (g[a].c + g[a].n <= K) {
            s = dd_add(s, dd_make((double)g[a].m));
        } else {
            if (g[a].c < K)
                s = dd_add(s, dd_div_d(two_prod((double)(K - g[a].c), (double)g[a].m), (double)g[a].n));
            break;
        }
    }
    return s;
}

/* P(Y_d <= a) for Y_d ~ Hypergeometric(N items, K marked, d draws), stepped d = 0, 1, ...
 * F is the cdf; u * 2^e = P(Y_d = a) (scaled, as it can underflow). */
typedef struct { int64_t N, K, a, d, e; dd F, u; } hcdf;

static void hcdf_init(hcdf *s, int64_t N, int64_t K, int64_t a)
{
    s->N = N; s->K = K; s->a = a; s->d = 0; s->e = 0;
    s->F = dd_make(1.0);
    s->u = dd_make(a == 0 ? 1.0 : 0.0);
}

static void hcdf_step(hcdf *s)
{
    const int64_t N = s->N, K = s->K, a = s->a, d = s->d;
    /* leaving "Y <= a" needs Y_d = a and a marked next draw: K-a marked among N-d left */
    dd leave = dd_div_d(dd_mul_d(dd_unscale(s->u, s->e), (double)(K - a)), (double)(N - d));
    s->F = dd_sub(s->F, leave);
    if (d + 1 < a) {
        s->u = DD_ZERO;
    } else if (d + 1 == a) {  /* P(Y_a = a) = C(K,a)/C(N,a) */
        int64_t i;
        s->u = dd_make(1.0);
        s->e = 0;
        for (i = 0; i < a; i++) {
            s->u = dd_div_d(dd_mul_d(s->u, (double)(K - i)), (double)(N - i));
            dd_renorm(&s->u, &s->e);
        }
    } else if (s->u.hi != 0.0) {
        /* P(Y_{d+1}=a)/P(Y_d=a) = (N-K-d+a)(d+1) / ((d+1-a)(N-d)) */
        double f = (double)(N - K - d + a);
        if (f <= 0.0) {
            s->u = DD_ZERO;
        } else {
            dd num = two_prod(f, (double)(d + 1)), den = two_prod((double)(d + 1 - a), (double)(N - d));
            if (num.lo == 0.0 && den.lo == 0.0)  /* products exact in a double: cheaper ops */
                s->u = dd_div_d(dd_mul_d(s->u, num.hi), den.hi);
            else
                s->u = dd_div(dd_mul(s->u, num), den);
            dd_renorm(&s->u, &s->e);
        }
    }
    s->d = d + 1;
}

/* E[sum of the AP terms of the first jp relevant items of group g] (1 <= jp < m).
 * Position p holds a relevant item with probability m/n; given that, the number Y of the
 * group's relevant items before it is Hypergeometric(n-1, m-1, p-1), and the item counts iff
 * Y <= jp - 1.  E[Y 1{Y<=a}] = ((m-1)(p-1)/(n-1)) P(Y' <= a-1) with
 * Y' ~ Hypergeometric(n-2, m-2, p-2), so two cdf sequences give an O(n) sum. */
static dd exp_dcmh_partial(const group *g, int64_t jp, const dd *Hh, int64_t rule)
{
    const int64_t n = g->n, m = g->m, c = g->c, h = g->h, a = jp - 1;
    const int64_t N = n - 1, K = m - 1;
    hcdf s0, s1;
    dd ps = DD_ZERO, prev = DD_ZERO;
    int64_t p;
    (void)Hh;
    hcdf_init(&s0, N, K, a);
    if (a >= 1) hcdf_init(&s1, N - 1, K - 1, a - 1);
    for (p = 1; p <= n; p++) {
        const int64_t d = p - 1;
        dd F0 = s0.F, F1 = DD_ZERO;
        if (a >= 1 && d >= 1)
            F1 = dd_div_d(dd_mul_d(s1.F, (double)K * (double)d), (double)N);
        ps = dd_add(ps, dd_div_d(dd_add(dd_mul_d(F0, (double)(h + 1)), F1), (double)(c + p)));
        if (rule == AP_TRAP) {
            if (c + p - 1 == 0)
                prev = dd_add(prev, F0);
            else
                prev = dd_add(prev, dd_div_d(dd_add(dd_mul_d(F0, (double)h), F1), (double)(c + p - 1)));
        }
        if (d < N) hcdf_step(&s0);
        if (a >= 1 && d >= 1 && d - 1 < N - 1) hcdf_step(&s1);
    }
    if (rule == AP_TRAP) ps = dd_half(dd_add(ps, prev));
    return dd_div_d(dd_mul_d(ps, (double)m), (double)n);
}

/* E[AP@k, hits denominator] when k cuts group g after t of its positions: X ~
 * Hypergeometric(n, m, t) relevant items inside; sum_x P(X=x) (S_before + x al + x(x-1) be)
 * / (h + x).  The pmf is built from its mode outwards by ratios and normalised. */
static dd exp_hits_cut(const group *g, int64_t t, dd s_before, const dd *Hh, int64_t rule)
{
    const int64_t n = g->n, m = g->m, h = g->h;
    const int64_t xlo = max64(0, t - (n - m)), xhi = min64(m, t);
    int64_t x0, x;
    dd al, be, w, wsum = DD_ZERO, fsum = DD_ZERO;
    coeffs(g->c, h, t, Hh, rule, &al, &be);
    x0 = (int64_t)floor(((double)(t + 1) * (double)(m + 1)) / (double)(n + 2));
    x0 = max64(xlo, min64(xhi, x0));
#define RC_HITS_TERM(xx)                                                                      \
    do {                                                                                      \
        wsum = dd_add(wsum, w);                                                               \
        if (h + (xx) > 0) {                                                                   \
            dd f_ = dd_add(s_before, dd_add(dd_mul_d(al, (double)(xx)),                       \
                                            dd_mul(be, two_prod((double)(xx), (double)(xx) - 1.0)))); \
            fsum = dd_add(fsum, dd_mul(w, dd_div_d(f_, (double)(h + (xx)))));                 \
        }                                                                                     \
    } while (0)
    w = dd_make(1.0);
    RC_HITS_TERM(x0);
    for (x = x0; x < xhi;) {  /* P(x+1)/P(x) = (m-x)(t-x) / ((x+1)(n-m-t+x+1)) */
        w = dd_div(dd_mul(w, two_prod((double)(m - x), (double)(t - x))),
                   two_prod((double)(x + 1), (double)(n - m - t + x + 1)));
        x++;
        if (w.hi < RC_TINY) break;
        RC_HITS_TERM(x);
    }
    w = dd_make(1.0);
    for (x = x0; x > xlo;) {  /* P(x-1)/P(x) = x(n-m-t+x) / ((m-x+1)(t-x+1)) */
        w = dd_div(dd_mul(w, two_prod((double)x, (double)(n - m - t + x))),
                   two_prod((double)(m - x + 1), (double)(t - x + 1)));
        x--;
        if (w.hi < RC_TINY) break;
        RC_HITS_TERM(x);
    }
#undef RC_HITS_TERM
    return dd_div(fsum, wsum);
}

/* E[R / r_R]: the last relevant item is the m-th of its group, at position p with
 * probability C(p-1, m-1) / C(n, m); weights from p = n downwards, normalised.  For m = 1
 * the position is uniform: E = (R/n) (Hh[c+n] - Hh[c]). */
static dd exp_inp(const group *g, int64_t R, const dd *Hh)
{
    const int64_t n = g->n, m = g->m, c = g->c;
    dd w = dd_make(1.0);
    ddacc wsum = {0.0, 0.0}, fsum = {0.0, 0.0};
    int64_t p;
    if (m == 1) return dd_div_d(dd_mul_d(dd_sub(Hh[c + n], Hh[c]), (double)R), (double)n);
    for (p = n; p >= m; p--) {
        acc_add(&wsum, w);
        acc_add(&fsum, dd_div_d(w, (double)(c + p)));
        if (p == m) break;
        w = dd_div_d(dd_mul_d(w, (double)(p - m)), (double)(p - 1));
        if (w.hi < RC_TINY) break;
    }
    return dd_div(dd_mul_d(acc_get(fsum), (double)R), acc_get(wsum));
}

void rc_metrics_expected(const group *g, int64_t ng, int64_t R, int64_t Np,
                         const rc_options *o, const rankin *ri, const dd *Hh, qres *res)
{
    const int64_t k = o->k, rule = o->ap_rule;
    int64_t a, j;
    dd s = DD_ZERO, hk;
    if (!RC_WANTS(o, RC_V_AP)) {
        /* AP not asked for: its sums skipped */
    } else if (k < 0) {
        for (a = 0; a < ng; a++) s = dd_add(s, exp_group_sum(&g[a], g[a].n, Hh, rule));
        res->v[RC_V_AP] = dd_round(dd_div_d(s, (double)R));
    } else if (o->ap_at_k == K_DCMH) {
        int64_t L = min64(k, R);
        for (a = 0; a < ng; a++) {
            if (g[a].h + g[a].m <= L) {
                s = dd_add(s, exp_group_sum(&g[a], g[a].n, Hh, rule));
            } else {
                if (g[a].h < L) s = dd_add(s, exp_dcmh_partial(&g[a], L - g[a].h, Hh, rule));
                break;
            }
        }
        res->v[RC_V_AP] = dd_round(dd_div_d(s, (double)L));
    } else if (o->ap_at_k == K_R || o->ap_at_k == K_MINKR) {
        for (a = 0; a < ng && g[a].c < k; a++)
            s = dd_add(s, exp_group_sum(&g[a], min64(g[a].n, k - g[a].c), Hh, rule));
        res->v[RC_V_AP] = dd_round(dd_div_d(s, (double)(o->ap_at_k == K_R ? R : min64(k, R))));
    } else {  /* hits: E[S/H] conditions on the cut group */
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++)
            s = dd_add(s, exp_group_sum(&g[a], g[a].n, Hh, rule));
        if (a < ng && g[a].c < k) {
            res->v[RC_V_AP] = dd_round(exp_hits_cut(&g[a], k - g[a].c, s, Hh, rule));
        } else {
            int64_t h = a < ng ? g[a].h : R;
            res->v[RC_V_AP] = h ? dd_round(dd_div_d(s, (double)h)) : 0.0;
        }
    }
    hk = k >= 0 ? exp_hits(g, ng, k) : dd_make((double)R);
    res->v[RC_V_HITS_AT_K] = dd_round(hk);
    res->v[RC_V_PRECISION_AT_K] = dd_round(dd_div_d(hk, (double)(k >= 0 ? k : Np)));
    res->v[RC_V_RECALL_AT_K] = dd_round(dd_div_d(hk, (double)R));
    if (RC_WANTS(o, RC_WANT_CMC)) {  /* CMC@K = P(r_1 <= K) = 1 - C(n-m, t)/C(n, t), t = K - c, first group */
        const int64_t c = g[0].c, n = g[0].n, m = g[0].m;
        int64_t tcur = 0;
        dd prod = dd_make(1.0);
        for (j = 0; j < o->max_rank; j++) {
            int64_t t = j + 1 - c;
            if (t <= 0) {
                res->cmc[j] = 0.0;
            } else if (t >= n) {
                res->cmc[j] = 1.0;
            } else {
                while (tcur < t) {
                    prod = dd_div_d(dd_mul_d(prod, (double)(n - m - tcur)), (double)(n - tcur));
                    tcur++;
                }
                res->cmc[j] = dd_round(dd_sub(dd_make(1.0), prod));
            }
        }
    }
    if (RC_WANTS(o, RC_V_INP)) res->v[RC_V_INP] = dd_round(exp_inp(&g[ng - 1], R, Hh));
    if (RC_WANTS(o, RC_V_R_PRECISION))
        res->v[RC_V_R_PRECISION] = dd_round(dd_div_d(exp_hits(g, ng, R), (double)R));
    if (RC_WANTS(o, RC_V_AP_AT_R)) {
        /* AP@R: the expected precision-term sum over the first R positions, over R */
        s = DD_ZERO;
        for (a = 0; a < ng && g[a].c < R; a++)
            s = dd_add(s, exp_group_sum(&g[a], min64(g[a].n, R - g[a].c), Hh, AP_PS));
        res->v[RC_V_AP_AT_R] = dd_round(dd_div_d(s, (double)R));
    }
    rc_rank_expected(g, ng, R, Np, o, ri, res);
}
