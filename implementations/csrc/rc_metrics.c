/* rc_metrics.c -- every metric of one query from concrete ranks (stable, reverse, optimistic,
 * pessimistic) or from whole tie groups under ties = "grouped"; AP sums in double-double.
 * nDCG, RR and the hit rate: rc_rank.c. */
#include "rc_core.h"
#if defined(RC_HAVE_AVX512_DISPATCH) || defined(RC_HAVE_AVX2_DISPATCH)
#include <immintrin.h>
#endif

/* AP term of the i-th relevant item at rank r: i/r, or (i/r + (i-1)/(r-1))/2 and 1 at r=1 */
static inline dd ap_term(double i, double r, int64_t rule)
{
    if (rule == AP_PS) return dd_ratio(i, r);
    if (r == 1.0) return dd_make(1.0);
    return dd_half(dd_add(dd_ratio(i, r), dd_ratio(i - 1.0, r - 1.0)));
}

/* Sum of the AP terms of ranks rk[0..n-1] (the i-th relevant item at rank rk[i-1]) in
 * RC_AP_LANES interleaved compensated sums: term i goes to lane i mod RC_AP_LANES, the lanes
 * are added in lane order at the end.  Every code path (plain, FMA, AVX2, AVX-512) sums in this one
 * order, so all give the same bits; the lanes take the sum's one addition per term off a
 * single dependency chain. */
static dd lanes_total(const double *s, const double *c)
{
    ddacc t = {0.0, 0.0};
    int l;
    for (l = 0; l < RC_AP_LANES; l++) acc_add(&t, two_sum(s[l], c[l]));
    return acc_get(t);
}

static inline void lane_add(double *s, double *c, int l, dd t)
{
    ddacc a = {s[l], c[l]};
    acc_add(&a, t);
    s[l] = a.s;
    c[l] = a.c;
}

static dd sum_terms_generic(const int64_t *rk, int64_t n, int64_t rule, int64_t i, double *s, double *c)
{
    for (; i < n; i++) lane_add(s, c, (int)(i % RC_AP_LANES), ap_term((double)(i + 1), (double)rk[i], rule));
    return lanes_total(s, c);
}

#ifdef RC_HAVE_FMA_DISPATCH
/* the same with a hardware FMA for the exact remainder a - q b (two operations instead of
 * Dekker's seventeen); the result is identical: the remainder is exact either way */
__attribute__((target("fma"))) static inline dd fma_ratio(double a, double b)
{
    double q = a / b;
    return quick_two_sum(q, __builtin_fma(-q, b, a) / b);
}

__attribute__((target("fma"))) static dd
sum_terms_fma(const int64_t *rk, int64_t n, int64_t rule, int64_t i, double *s, double *c)
{
    for (; i < n; i++) {
        const double a = (double)(i + 1), b = (double)rk[i];
        dd t = fma_ratio(a, b);
        if (rule == AP_TRAP) t = b == 1.0 ? dd_make(1.0) : dd_half(dd_add(t, fma_ratio(a - 1.0, b - 1.0)));
        lane_add(s, c, (int)(i % RC_AP_LANES), t);
    }
    return lanes_total(s, c);
}
#endif

#ifdef RC_HAVE_AVX512_DISPATCH
/* precision terms (AP_PS), RC_AP_LANES = 8 at once: the same divisions, exact remainders
 * (FMA), quick_two_sum and acc_add as above, lane by lane; the last n mod 8 terms as above */
__attribute__((target("avx512f,avx512dq,fma"))) static dd
sum_terms_avx512(const int64_t *rk, int64_t n, double *s, double *c)
{
    __m512d S = _mm512_setzero_pd(), C = _mm512_setzero_pd();
    __m512d a = _mm512_set_pd(8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0);
    const __m512d eight = _mm512_set1_pd(8.0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512d b = _mm512_cvtepi64_pd(_mm512_loadu_si512((const void *)(rk + i)));
        const __m512d q = _mm512_div_pd(a, b);
        const __m512d lo = _mm512_div_pd(_mm512_fnmadd_pd(q, b, a), b);
        const __m512d hi = _mm512_add_pd(q, lo);                         /* quick_two_sum */
        const __m512d tlo = _mm512_sub_pd(lo, _mm512_sub_pd(hi, q));
        const __m512d s2 = _mm512_add_pd(S, hi);                         /* two_sum(S, hi) */
        const __m512d bb = _mm512_sub_pd(s2, S);
        const __m512d ulo = _mm512_add_pd(_mm512_sub_pd(S, _mm512_sub_pd(s2, bb)), _mm512_sub_pd(hi, bb));
        C = _mm512_add_pd(C, _mm512_add_pd(ulo, tlo));
        S = s2;
        a = _mm512_add_pd(a, eight);
    }
    _mm512_storeu_pd(s, S);
    _mm512_storeu_pd(c, C);
    return sum_terms_fma(rk, n, AP_PS, i, s, c);
}
#endif

#ifdef RC_HAVE_AVX2_DISPATCH
/* the int64 ranks (below 2^52) of 4 lanes as doubles, exactly: no AVX2 conversion, so the
 * value goes into the mantissa of 2^52 and 2^52 comes off */
__attribute__((target("avx2,fma"))) static inline __m256d ranks_pd(const int64_t *rk)
{
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
    const __m256i x = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)rk), magic);
    return _mm256_sub_pd(_mm256_castsi256_pd(x), _mm256_castsi256_pd(magic));
}

/* one step of sum_terms_avx512 for 4 of its 8 lanes (the same operations) */
__attribute__((target("avx2,fma"))) static inline void
lanes4_add(__m256d *S, __m256d *C, __m256d a, __m256d b)
{
    const __m256d q = _mm256_div_pd(a, b);
    const __m256d lo = _mm256_div_pd(_mm256_fnmadd_pd(q, b, a), b);
    const __m256d hi = _mm256_add_pd(q, lo);                         /* quick_two_sum */
    const __m256d tlo = _mm256_sub_pd(lo, _mm256_sub_pd(hi, q));
    const __m256d s2 = _mm256_add_pd(*S, hi);                        /* two_sum(S, hi) */
    const __m256d bb = _mm256_sub_pd(s2, *S);
    const __m256d ulo = _mm256_add_pd(_mm256_sub_pd(*S, _mm256_sub_pd(s2, bb)), _mm256_sub_pd(hi, bb));
    *C = _mm256_add_pd(*C, _mm256_add_pd(ulo, tlo));
    *S = s2;
}

/* precision terms (AP_PS) in AVX2: the RC_AP_LANES = 8 lanes as two vectors of 4, the same
 * operations lane by lane as sum_terms_avx512 and sum_terms_fma, so the same bits */
__attribute__((target("avx2,fma"))) static dd
sum_terms_avx2(const int64_t *rk, int64_t n, double *s, double *c)
{
    __m256d S0 = _mm256_setzero_pd(), C0 = _mm256_setzero_pd(), S1 = S0, C1 = C0;
    __m256d a0 = _mm256_set_pd(4.0, 3.0, 2.0, 1.0), a1 = _mm256_set_pd(8.0, 7.0, 6.0, 5.0);
    const __m256d eight = _mm256_set1_pd(8.0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lanes4_add(&S0, &C0, a0, ranks_pd(rk + i));
        lanes4_add(&S1, &C1, a1, ranks_pd(rk + i + 4));
        a0 = _mm256_add_pd(a0, eight);
        a1 = _mm256_add_pd(a1, eight);
    }
    _mm256_storeu_pd(s, S0);
    _mm256_storeu_pd(s + 4, S1);
    _mm256_storeu_pd(c, C0);
    _mm256_storeu_pd(c + 4, C1);
    return sum_terms_fma(rk, n, AP_PS, i, s, c);
}
#endif

int rc_use_fma = 0;    /* set once by rc_evaluate before the parallel region */
int rc_use_avx2 = 0;   /* likewise */
int rc_use_avx512 = 0; /* likewise */

static dd sum_terms(const int64_t *rk, int64_t n, int64_t rule)
{
    double s[RC_AP_LANES] = {0.0}, c[RC_AP_LANES] = {0.0};
#ifdef RC_HAVE_AVX512_DISPATCH
    if (rc_use_avx512 && rc_use_fma && rule == AP_PS) return sum_terms_avx512(rk, n, s, c);
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2 && rc_use_fma && rule == AP_PS) return sum_terms_avx2(rk, n, s, c);
#endif
#ifdef RC_HAVE_FMA_DISPATCH
    if (rc_use_fma) return sum_terms_fma(rk, n, rule, 0, s, c);
#endif
    return sum_terms_generic(rk, n, rule, 0, s, c);
}

/* Concrete ranking: every metric asked for (o->wanted) from the sorted 1-based ranks
 * rk[0..R-1] (R >= 1); a rank past the largest one a wanted metric reads may be too small
 * (rc_float.c's prefix path), so nothing else reads it. */
void rc_metrics_ranks(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                      const rankin *ri, qres *res)
{
    const int64_t k = o->k;
    int64_t i, n_terms, den, hk = R, hr = 0;
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
        res->v[RC_V_AP] = den ? dd_round(dd_div_d(sum_terms(rk, n_terms, o->ap_rule), (double)den)) : 0.0;
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
        res->v[RC_V_AP_AT_R] = dd_round(dd_div_d(sum_terms(rk, hr, AP_PS), (double)R));
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
