/* rc_rank.c -- nDCG@k, the reciprocal rank and the hit rate (recall = "hit") of one query
 * (spec §7 nDCG, §7 MRR, §7 recall=hit) from concrete ranks, `grouped` groups or `expected`
 * groups.  DCG reads the float64 discount table d(1..N) (reference/contract/discounts.py): a
 * product gain * d is exact in a double-double (gains are integers below 2^53), the sums are
 * double-double and every value is rounded once. */
#include "rc_core.h"

/* gain of a grade: g (linear) or 2^g - 1 (exponential), exact for g <= RC_MAX_GRADE */
static inline double gain_of(int64_t grade, int64_t rule)
{
    return rule == G_LINEAR ? (double)grade : (double)((UINT64_C(1) << grade) - 1);
}

/* K: the cut-off within the Np non-junk items (all of them without a cut-off) */
static inline int64_t cutoff(const rc_options *o, int64_t Np)
{
    return o->k < 0 ? Np : min64(o->k, Np);
}

/* the sum of the gains of grades gr[0..m-1]: integers, so the sum is exact */
static dd gain_sum(const uint8_t *gr, int64_t m, int64_t rule)
{
    ddacc s = {0.0, 0.0};
    int64_t i;
    for (i = 0; i < m; i++) acc_add(&s, dd_make(gain_of(gr[i], rule)));
    return acc_get(s);
}

/* ideal1[L] = d(1) + ... + d(L), L = 0 .. n: the IDCG of L relevant items of grade 1, in the
 * thread's workspace, extended on demand (the sums continue one accumulator, so each entry has
 * the bits of one pass from d(1), whatever the order of the queries): memory follows the
 * largest R seen, not the gallery.  0, or -1 when there is no memory. */
int rc_ideal_upto(workspace *w, const double *disc, int64_t n)
{
    int64_t i;
    if (n < w->ideal_n) return 0;
    if (grow((void **)&w->ideal1, &w->ideal_cap, max64(n + 1, 2 * w->ideal_cap), sizeof(dd))) return -1;
    if (w->ideal_n == 0) {
        w->ideal_acc.s = w->ideal_acc.c = 0.0;
        w->ideal1[0] = DD_ZERO;
        w->ideal_n = 1;
    }
    for (i = w->ideal_n; i <= n; i++) {
        acc_add(&w->ideal_acc, dd_make(disc[i - 1]));
        w->ideal1[i] = acc_get(w->ideal_acc);
    }
    w->ideal_n = n + 1;
    return 0;
}

/* what the rank metrics of a query with R relevant items read (the grades, if any, are set by
 * the caller once in rank order); 0, or -1 when there is no memory for the IDCG table (made
 * only when nDCG is asked for) */
int rc_rankin_init(rankin *ri, workspace *w, const rc_input *in, const rc_options *o, int64_t R)
{
    ri->disc = in->discounts;
    ri->gr = NULL;
    ri->ideal1 = NULL;
    if (!in->grades && RC_WANTS(o, RC_V_NDCG)) {
        if (rc_ideal_upto(w, in->discounts, R)) return -1;
        ri->ideal1 = w->ideal1;
    }
    return 0;
}

/* IDCG@K: the R relevant grades (gr, NULL: all 1, from ideal1) from the highest at ranks
 * 1 .. min(K, R); grades are at most RC_MAX_GRADE, so counting them sorts them */
static dd ideal_dcg(const rankin *ri, int64_t R, int64_t K, int64_t rule)
{
    int64_t cnt[RC_MAX_GRADE + 1], i, g, r = 0;
    const int64_t L = min64(K, R);
    const uint8_t *gr = ri->gr;
    const double *disc = ri->disc;
    ddacc s = {0.0, 0.0};
    if (!gr) return ri->ideal1[L];
    memset(cnt, 0, sizeof(cnt));
    for (i = 0; i < R; i++) cnt[gr[i]]++;
    for (g = RC_MAX_GRADE; g >= 1 && r < L; g--) {
        const double gv = gain_of(g, rule);
        const int64_t stop = min64(L, r + cnt[g]);
        for (; r < stop; r++) acc_add(&s, two_prod(gv, disc[r]));
    }
    return acc_get(s);
}

/* Concrete ranking: ranks rk[0..R-1] ascending, gr[i] the grade at rank rk[i]. */
void rc_rank_concrete(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                      const rankin *ri, qres *res)
{
    const int64_t K = cutoff(o, Np);
    const double *disc = ri->disc;
    ddacc s = {0.0, 0.0};
    int64_t i;
    if (RC_WANTS(o, RC_V_NDCG)) {
        if (ri->gr) {
            for (i = 0; i < R && rk[i] <= K; i++)
                acc_add(&s, two_prod(gain_of(ri->gr[i], o->gain), disc[rk[i] - 1]));
        } else {
            for (i = 0; i < R && rk[i] <= K; i++) acc_add(&s, dd_make(disc[rk[i] - 1]));
        }
        res->v[RC_V_NDCG] = dd_round(dd_div(acc_get(s), ideal_dcg(ri, R, K, o->gain)));
    }
    res->v[RC_V_RR] = rk[0] <= K ? 1.0 / (double)rk[0] : 0.0;
    if (o->recall == RECALL_HIT) res->v[RC_V_RECALL_AT_K] = rk[0] <= K ? 1.0 : 0.0;
}

/* ties = "grouped": every item at its group's end rank e = c + n; k is not inside a group.
 * g: the groups holding relevant items, gr[h .. h+m-1] the grades of group g's items. */
void rc_rank_grouped(const group *g, int64_t ng, int64_t R, int64_t Np, const rc_options *o,
                     const rankin *ri, qres *res)
{
    const int64_t K = cutoff(o, Np), e1 = g[0].c + g[0].n;
    ddacc s = {0.0, 0.0};
    int64_t a;
    if (RC_WANTS(o, RC_V_NDCG)) {
        for (a = 0; a < ng && g[a].c + g[a].n <= K; a++) {
            const double d = ri->disc[g[a].c + g[a].n - 1];
            if (ri->gr) acc_add(&s, dd_mul_d(gain_sum(ri->gr + g[a].h, g[a].m, o->gain), d));
            else acc_add(&s, two_prod((double)g[a].m, d));
        }
        res->v[RC_V_NDCG] = dd_round(dd_div(acc_get(s), ideal_dcg(ri, R, K, o->gain)));
    }
    res->v[RC_V_RR] = e1 <= K ? 1.0 / (double)e1 : 0.0;
    if (o->recall == RECALL_HIT) res->v[RC_V_RECALL_AT_K] = e1 <= K ? 1.0 : 0.0;
}

/* ties = "expected": a group contributes its mean gain times the discounts of its positions
 * within K (DCG is linear in the gains).  The first relevant item of the first group (c, n,
 * m) is at its position p with probability P(p) = C(n-p, m-1) / C(n, m): P(1) = m/n and
 * P(p+1)/P(p) = (n-p-m+1)/(n-p); RR = sum_{c+p <= K} P(p)/(c+p), hit = sum_{c+p <= K} P(p). */
void rc_rank_expected(const group *g, int64_t ng, int64_t R, int64_t Np, const rc_options *o,
                      const rankin *ri, qres *res)
{
    const int64_t K = cutoff(o, Np), c = g[0].c, n = g[0].n, m = g[0].m;
    const double *disc = ri->disc;
    ddacc s = {0.0, 0.0}, rr = {0.0, 0.0}, hit = {0.0, 0.0};
    int64_t a, p, last;
    if (RC_WANTS(o, RC_V_NDCG)) {
        for (a = 0; a < ng && g[a].c < K; a++) {
            const int64_t inside = min64(g[a].n, K - g[a].c);
            ddacc ds = {0.0, 0.0};
            dd G = ri->gr ? gain_sum(ri->gr + g[a].h, g[a].m, o->gain) : dd_make((double)g[a].m);
            for (p = 0; p < inside; p++) acc_add(&ds, dd_make(disc[g[a].c + p]));
            acc_add(&s, dd_div_d(dd_mul(G, acc_get(ds)), (double)g[a].n));
        }
        res->v[RC_V_NDCG] = dd_round(dd_div(acc_get(s), ideal_dcg(ri, R, K, o->gain)));
    }
    last = min64(n - m + 1, K - c);  /* the positions p that can hold it within K */
    if (last >= 1 && (RC_WANTS(o, RC_V_RR) || o->recall == RECALL_HIT)) {
        dd w = dd_ratio((double)m, (double)n);
        const double w0 = w.hi;
        for (p = 1; p <= last; p++) {
            acc_add(&rr, dd_div_d(w, (double)(c + p)));
            acc_add(&hit, w);
            if (p == last) break;
            w = dd_div_d(dd_mul_d(w, (double)(n - p - m + 1)), (double)(n - p));
            if (w.hi < RC_TINY * w0) break;  /* the rest is far below 2^-106 of the sums */
        }
    }
    res->v[RC_V_RR] = dd_round(acc_get(rr));
    if (o->recall == RECALL_HIT)
        res->v[RC_V_RECALL_AT_K] = last >= n - m + 1 ? 1.0 : (last >= 1 ? dd_round(acc_get(hit)) : 0.0);
}

/* sort grades a[0..n-1] (each at most RC_MAX_GRADE), descending or ascending */
void rc_sort_grades(uint8_t *a, int64_t n, int descending)
{
    int64_t i, j;
    if (n <= RC_SMALL_RUN) {
        for (i = 1; i < n; i++) {
            uint8_t v = a[i];
            for (j = i; j > 0 && (descending ? a[j - 1] < v : a[j - 1] > v); j--) a[j] = a[j - 1];
            a[j] = v;
        }
    } else {
        int64_t cnt[RC_MAX_GRADE + 1], g, r = 0;
        memset(cnt, 0, sizeof(cnt));
        for (i = 0; i < n; i++) cnt[a[i]]++;
        for (g = 0; g <= RC_MAX_GRADE; g++) {
            const int64_t v = descending ? RC_MAX_GRADE - g : g;
            for (j = 0; j < cnt[v]; j++) a[r++] = (uint8_t)v;
        }
    }
}
