/* rc_metrics.c -- every metric of one query from concrete ranks (stable, reverse, optimistic,
 * pessimistic) or from whole tie groups under ties = "grouped"; AP sums in double-double.
 * nDCG, RR and the hit rate: rc_rank.c. */
#include "rc_core.h"

/* AP term of the i-th relevant item at rank r: i/r, or (i/r + (i-1)/(r-1))/2 and 1 at r=1 */
static inline dd ap_term(double i, double r, int64_t rule)
{
    if (rule == AP_PS) return dd_ratio(i, r);
    if (r == 1.0) return dd_make(1.0);
    return dd_half(dd_add(dd_ratio(i, r), dd_ratio(i - 1.0, r - 1.0)));
}

/* sum of the AP terms of ranks rk[0..n-1] (the i-th relevant item at rank rk[i-1]) */
static void sum_terms_generic(const int64_t *rk, int64_t n, int64_t rule, ddacc *acc)
{
    int64_t i;
    if (rule == AP_PS) {
        for (i = 0; i < n; i++) acc_add(acc, dd_ratio((double)(i + 1), (double)rk[i]));
    } else {
        for (i = 0; i < n; i++) acc_add(acc, ap_term((double)(i + 1), (double)rk[i], AP_TRAP));
    }
}

#ifdef RC_HAVE_FMA_DISPATCH
/* the same with a hardware FMA for the exact remainder a - q b (two operations instead of
 * Dekker's seventeen); the result is identical: the remainder is exact either way */
__attribute__((target("fma"))) static void
sum_terms_fma(const int64_t *rk, int64_t n, int64_t rule, ddacc *acc)
{
    int64_t i;
    for (i = 0; i < n; i++) {
        const double a = (double)(i + 1), b = (double)rk[i];
        double q = a / b;
        dd t = quick_two_sum(q, __builtin_fma(-q, b, a) / b);
        if (rule == AP_TRAP) {
            if (b == 1.0) {
                t = dd_make(1.0);
            } else {
                const double a1 = a - 1.0, b1 = b - 1.0;
                double q1 = a1 / b1;
                t = dd_half(dd_add(t, quick_two_sum(q1, __builtin_fma(-q1, b1, a1) / b1)));
            }
        }
        acc_add(acc, t);
    }
}
#endif

int rc_use_fma = 0;  /* set once by rc_evaluate before the parallel region */
int rc_use_avx2 = 0; /* likewise */

static void sum_terms(const int64_t *rk, int64_t n, int64_t rule, ddacc *acc)
{
#ifdef RC_HAVE_FMA_DISPATCH
    if (rc_use_fma) {
        sum_terms_fma(rk, n, rule, acc);
        return;
    }
#endif
    sum_terms_generic(rk, n, rule, acc);
}

/* Concrete ranking: every metric asked for (o->wanted) from the sorted 1-based ranks
 * rk[0..R-1] (R >= 1); a rank past the largest one a wanted metric reads may be too small
 * (rc_float.c's prefix path), so nothing else reads it. */
void rc_metrics_ranks(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                      const rankin *ri, qres *res)
{
    const int64_t k = o->k;
    int64_t i, n_terms, den, hk = R, hr = 0;
    ddacc s = {0.0, 0.0};
    if (k >= 0) {
        hk = 0;
        while (hk < R && rk[hk] <= k) hk++;
    }
    if (RC_WANTS(o, RC_V_AP)) {
        if (k < 0) {                       /* full AP: (1/R) sum_i term_i */
            n_terms = den = R;
        } else if (o->ap_at_k == K_DCMH) { /* the first min(k, R) relevant items, wherever */
            n_terms = den = min64(k, R);
        } else {                           /* S_k = sum_{r_i <= k} term_i over a denominator */
            n_terms = hk;
            den = o->ap_at_k == K_HITS ? hk : (o->ap_at_k == K_R ? R : min64(k, R));
        }
        sum_terms(rk, n_terms, o->ap_rule, &s);
        res->v[RC_V_AP] = den ? dd_round(dd_div_d(acc_get(s), (double)den)) : 0.0;
    }
    res->v[RC_V_HITS_AT_K] = (double)hk;
    res->v[RC_V_PRECISION_AT_K] = (double)hk / (double)(k >= 0 ? k : Np);
    res->v[RC_V_RECALL_AT_K] = (double)hk / (double)R;
    if (RC_WANTS(o, RC_WANT_CMC))
        for (i = 0; i < o->max_rank; i++) res->cmc[i] = rk[0] <= i + 1 ? 1.0 : 0.0;
    if (RC_WANTS(o, RC_V_INP)) res->v[RC_V_INP] = (double)R / (double)rk[R - 1];
    if (RC_WANTS(o, RC_V_R_PRECISION) || RC_WANTS(o, RC_V_AP_AT_R)) {
        while (hr < R && rk[hr] <= R) hr++;
        res->v[RC_V_R_PRECISION] = (double)hr / (double)R;
    }
    if (RC_WANTS(o, RC_V_AP_AT_R)) {
        /* AP@R: (1/R) sum_{r_i <= R} i / r_i, precision terms whatever ap_rule (spec §7 MAP@R) */
        s.s = s.c = 0.0;
        sum_terms(rk, hr, AP_PS, &s);
        res->v[RC_V_AP_AT_R] = dd_round(dd_div_d(acc_get(s), (double)R));
    }
    rc_rank_concrete(rk, R, Np, o, ri, res);
}

/* ---- ties = "grouped": every item of a group takes the group's end rank c + n ------------ */
static dd grouped_term(const group *g, int64_t rule)
{
    double e = (double)(g->c + g->n);
    dd p = dd_ratio((double)(g->h + g->m), e);  /* precision at the group's end */
    if (rule == AP_PS) return p;
    if (e == 1.0) return dd_make(1.0);
    return dd_half(dd_add(p, dd_ratio((double)g->h, e - 1.0)));
}

void rc_metrics_grouped(const group *g, int64_t ng, int64_t R, int64_t Np,
                        const rc_options *o, const rankin *ri, qres *res)
{
    const int64_t k = o->k;
    int64_t a, i, hk = R, hr = 0;
    dd s = DD_ZERO;
    if (k >= 0) {
        hk = 0;
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++) hk += g[a].m;
    }
    for (a = 0; a < ng && g[a].c + g[a].n <= R; a++) hr += g[a].m;
    if (!RC_WANTS(o, RC_V_AP)) {
        /* AP not asked for: its sums skipped */
    } else if (k < 0) {
        for (a = 0; a < ng; a++) s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)g[a].m));
        res->v[RC_V_AP] = dd_round(dd_div_d(s, (double)R));
    } else if (o->ap_at_k == K_DCMH) {
        int64_t L = min64(k, R), taken = 0;
        for (a = 0; a < ng && taken < L; a++) {
            int64_t take = min64(g[a].m, L - taken);
            s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)take));
            taken += take;
        }
        res->v[RC_V_AP] = dd_round(dd_div_d(s, (double)L));
    } else {
        int64_t den = o->ap_at_k == K_HITS ? hk : (o->ap_at_k == K_R ? R : min64(k, R));
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++)
            s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)g[a].m));
        res->v[RC_V_AP] = den ? dd_round(dd_div_d(s, (double)den)) : 0.0;
    }
    res->v[RC_V_HITS_AT_K] = (double)hk;
    res->v[RC_V_PRECISION_AT_K] = (double)hk / (double)(k >= 0 ? k : Np);
    res->v[RC_V_RECALL_AT_K] = (double)hk / (double)R;
    if (RC_WANTS(o, RC_WANT_CMC))
        for (i = 0; i < o->max_rank; i++) res->cmc[i] = g[0].c + g[0].n <= i + 1 ? 1.0 : 0.0;
    if (RC_WANTS(o, RC_V_INP)) res->v[RC_V_INP] = (double)R / (double)(g[ng - 1].c + g[ng - 1].n);
    res->v[RC_V_R_PRECISION] = (double)hr / (double)R;
    if (RC_WANTS(o, RC_V_AP_AT_R)) {
        /* AP@R: the groups ending within R, m (h + m) / (c + n) each */
        s = DD_ZERO;
        for (a = 0; a < ng && g[a].c + g[a].n <= R; a++)
            s = dd_add(s, dd_mul_d(grouped_term(&g[a], AP_PS), (double)g[a].m));
        res->v[RC_V_AP_AT_R] = dd_round(dd_div_d(s, (double)R));
    }
    rc_rank_grouped(g, ng, R, Np, o, ri, res);
}

void rc_metrics_zero(const rc_options *o, qres *res)
{
    int64_t j;
    memset(res->v, 0, sizeof(res->v));
    for (j = 0; j < o->max_rank; j++) res->cmc[j] = 0.0;
}
