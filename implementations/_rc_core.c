/*
 * _rc_core.c -- per-query retrieval metrics in plain C99, loaded with ctypes.
 *
 * No Python.h: setuptools builds this file as an (optional) extension module and
 * implementations/c_backend.py loads the shared object with ctypes.  Every array is
 * validated (dtype, shape, C-contiguity) in Python before it reaches this file.
 *
 * Semantics (the reference, reference/per_query.py, is the yardstick): per query, junk
 * items are removed first; the remaining N' items are ranked by distance; items at exactly
 * equal distance form a tie group (c items before it, h of them relevant; n items, m
 * relevant).  A tie policy either orders every group (stable / reverse / optimistic /
 * pessimistic: concrete ranks r_1 < ... < r_R of the relevant items) or acts on whole groups
 * (expected: exact expectation over uniformly random orders; grouped: every item takes the
 * group's end rank c + n).
 *
 * Nothing here sorts a whole gallery:
 *   - Hamming codes: one XOR + popcount pass per query fills per-distance histograms of
 *     total and relevant items; concrete ranks come from a counting sort done in the same
 *     pass (each relevant item remembers how many items of its distance came before it);
 *     `expected` and `grouped` need only the histograms.
 *   - Float distances: the G relevant distances are sorted, every other item is
 *     binary-searched among them (O(N log G); most items are past the farthest relevant one
 *     and cost one comparison), and the tie policy decides where an item at a relevant
 *     item's exact distance goes.  A row is first checked for NaN/inf (vectorised).
 *   - `grouped` with a cut-off k: is k strictly inside a tie group?  Hamming: from the
 *     histogram; floats: the k+1 smallest distances in a heap (small k) or a three-way
 *     quickselect.
 *
 * Relevance and junk come one query at a time from whatever was given, never as a Q x N
 * matrix built here: a boolean row, single ids (the items of the query's id are a slice of
 * the gallery sorted by id, computed once in Python), or multi-hot labels packed into uint64
 * words (relevant iff the AND is non-zero); junk from a boolean row, same id and camera, and
 * a gallery-wide mask (junk ids).
 *
 * Arithmetic: metric values are accumulated in double-double (about 106 bits), so that the
 * final rounding to double is correct whenever the exact value is a double (and otherwise far
 * inside 1e-12).  Queries are independent: OpenMP parallelises over queries with no reduction
 * across queries, so results are identical for any thread count.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define RC_ABI_VERSION 5

/* ---- enums shared with c_backend.py ----------------------------------------------------- */
enum { T_STABLE = 0, T_REVERSE, T_OPTIMISTIC, T_PESSIMISTIC, T_EXPECTED, T_GROUPED };
enum { AP_PS = 0, AP_TRAP = 1 };
enum { K_HITS = 0, K_R, K_MINKR, K_DCMH };
enum { D_F64 = 0, D_F32 = 1, D_CODES = 2 };
enum { REL_MATRIX = 0, REL_IDS = 1, REL_MULTI = 2 };
/* return codes of rc_evaluate */
enum { RC_OK = 0, RC_ERR_QUERY = 1, RC_ERR_NOMEM = 2, RC_ERR_ARGS = 3 };
/* per-query status codes */
enum { Q_OK = 0, Q_GROUPED_K = 1, Q_NONFINITE = 2 };

/* ---- the structures passed from Python (int64 / double / pointers only: no padding) ----- */
typedef struct {
    int64_t n_queries, n_gallery;
    int64_t dist_kind;                      /* D_F64, D_F32 or D_CODES */
    const void *distances;                  /* (Q, N) float64 or float32 */
    const uint64_t *query_codes;            /* (Q, code_words) packed bits */
    const uint64_t *db_codes;               /* (N, code_words) */
    int64_t code_words, n_bits;
    int64_t rel_kind;                       /* REL_MATRIX, REL_IDS or REL_MULTI */
    const uint8_t *relevance;               /* (Q, N) 0/1 */
    const int64_t *query_ids, *db_ids;      /* (Q,), (N,) single ids */
    const uint64_t *query_label_bits;       /* (Q, label_words) multi-hot, packed */
    const uint64_t *db_label_bits;          /* (N, label_words) */
    int64_t label_words;
    const uint8_t *junk;                    /* (Q, N) 0/1 or NULL */
    const int64_t *query_cams, *db_cams;    /* (Q,), (N,) or NULL; needs single ids */
    const uint8_t *gallery_junk;            /* (N,) 0/1 or NULL (junk ids) */
    /* single ids only: the gallery indices sorted by id (stably), and per query the slice
     * [id_start, id_stop) of db_order holding the items with the query's id */
    const int64_t *db_order, *id_start, *id_stop;
} rc_input;

typedef struct {
    int64_t ties, ap_rule, k, ap_at_k, max_rank, has_radius; /* k < 0: no cut-off */
    double radius;
} rc_options;

typedef struct {
    double *ap;
    int64_t *n_relevant;
    double *hits_at_k, *precision_at_k, *recall_at_k, *cmc, *inp, *r_precision;
    double *precision_at_radius, *recall_at_radius;  /* NULL unless has_radius */
    int64_t *status, *err_a, *err_b;                  /* per query */
} rc_output;

/* ---- double-double arithmetic ---------------------------------------------------------- */
/* Error-free transformations (Dekker / Knuth); needs round-to-nearest double arithmetic
 * without contraction into FMA, which is what -std=c99 on x86-64 SSE2 gives. */
typedef struct { double hi, lo; } dd;

static const dd DD_ZERO = {0.0, 0.0};

static inline dd dd_make(double a) { dd r; r.hi = a; r.lo = 0.0; return r; }

static inline dd two_sum(double a, double b)
{
    dd r;
    double s = a + b, bb = s - a;
    r.hi = s;
    r.lo = (a - (s - bb)) + (b - bb);
    return r;
}

static inline dd quick_two_sum(double a, double b)
{
    dd r;
    double s = a + b;
    r.hi = s;
    r.lo = b - (s - a);
    return r;
}

static inline dd two_prod(double a, double b)
{
    dd r;
    double p = a * b;
    double t = 134217729.0 * a, ah = t - (t - a), al = a - ah;
    double u = 134217729.0 * b, bh = u - (u - b), bl = b - bh;
    r.hi = p;
    r.lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return r;
}

static inline dd dd_add(dd a, dd b)
{
    dd s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = quick_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return quick_two_sum(s.hi, s.lo);
}

static inline dd dd_neg(dd a) { a.hi = -a.hi; a.lo = -a.lo; return a; }
static inline dd dd_sub(dd a, dd b) { return dd_add(a, dd_neg(b)); }
static inline dd dd_half(dd a) { a.hi *= 0.5; a.lo *= 0.5; return a; }

static inline dd dd_mul(dd a, dd b)
{
    dd p = two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return quick_two_sum(p.hi, p.lo);
}

static inline dd dd_mul_d(dd a, double b)
{
    dd p = two_prod(a.hi, b);
    p.lo += a.lo * b;
    return quick_two_sum(p.hi, p.lo);
}

static inline dd dd_div(dd a, dd b)
{
    double q1 = a.hi / b.hi;
    dd r = dd_sub(a, dd_mul_d(b, q1));
    double q2 = r.hi / b.hi;
    r = dd_sub(r, dd_mul_d(b, q2));
    double q3 = r.hi / b.hi;
    return dd_add(quick_two_sum(q1, q2), dd_make(q3));
}

/* a / b for a double b: one exact product for the remainder, two divisions */
static inline dd dd_div_d(dd a, double b)
{
    double q1 = a.hi / b;
    dd p = two_prod(q1, b);
    dd r = two_sum(a.hi, -p.hi);
    r.lo -= p.lo;
    r.lo += a.lo;
    return quick_two_sum(q1, (r.hi + r.lo) / b);
}

/* a / b for integers a, b < 2^53 held in doubles: the remainder a - q*b is exact. */
static inline dd dd_ratio(double a, double b)
{
    double q = a / b;
    dd p = two_prod(q, b);
    double rem = (a - p.hi) - p.lo;
    return quick_two_sum(q, rem / b);
}

/* the double nearest to a normalised double-double */
static inline double dd_round(dd a) { return a.hi + a.lo; }

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
    if (u.hi == 0.0 || e < -1100) return DD_ZERO;
    u.hi = ldexp(u.hi, (int)e);
    u.lo = ldexp(u.lo, (int)e);
    return u;
}

/* weights below this (relative to the largest, which is 1) are dropped from pmf sums */
#define RC_TINY 1e-40

/* ---- per-thread workspace ---------------------------------------------------------------- */
typedef struct { double d; int64_t j; } relitem;
typedef struct { int64_t c, n, m, h; } group;   /* before, size, relevant, relevant before */

typedef struct {
    uint8_t *skip;           /* N: junk (and, in the float pass, relevant) items */
    int64_t *ranks;          /* N: 1-based ranks of the relevant items, ascending */
    group *groups;           /* N: groups holding relevant items */
    relitem *rel;            /* N + 1 (float path) */
    double *rd;              /* N: sorted relevant distances (float path) */
    int64_t *before, *eq;    /* 4 (N + 1) and N + 1 (float path) */
    double *sel;             /* N (float path, grouped with k) */
    int64_t *h2;             /* 4 x 2 (B + 1) (codes path): per (distance, relevant) */
    int64_t *ht, *hr;        /* B + 1: totals and relevant per distance */
    int64_t *clt, *rlt;      /* B + 1: items / relevant items at smaller distance */
    int64_t *run;            /* B + 1: counting-sort cursors */
    uint64_t *rinfo;         /* N + 1 (codes path): distance << 32 | items before it */
} workspace;

static void ws_free(workspace *w)
{
    free(w->skip); free(w->ranks); free(w->groups); free(w->rel); free(w->rd);
    free(w->before); free(w->eq); free(w->sel); free(w->h2); free(w->ht); free(w->hr);
    free(w->clt); free(w->rlt); free(w->run); free(w->rinfo);
    memset(w, 0, sizeof(*w));
}

static int ws_alloc(workspace *w, const rc_input *in, const rc_options *o)
{
    size_t N = (size_t)in->n_gallery + 1;
    memset(w, 0, sizeof(*w));
    const int by_group = o->ties == T_EXPECTED || o->ties == T_GROUPED;
    w->skip = (uint8_t *)malloc(N);
    if (!w->skip) return -1;
    if (by_group) w->groups = (group *)malloc(N * sizeof(group));
    else w->ranks = (int64_t *)malloc(N * sizeof(int64_t));
    if (!w->groups && !w->ranks) return -1;
    if (in->dist_kind == D_CODES) {
        size_t B = (size_t)in->n_bits + 1;
        w->h2 = (int64_t *)malloc(8 * B * sizeof(int64_t));
        w->ht = (int64_t *)malloc(B * sizeof(int64_t));
        w->hr = (int64_t *)malloc(B * sizeof(int64_t));
        w->clt = (int64_t *)malloc(B * sizeof(int64_t));
        w->rlt = (int64_t *)malloc(B * sizeof(int64_t));
        w->run = (int64_t *)malloc(B * sizeof(int64_t));
        if (o->ties == T_STABLE || o->ties == T_REVERSE) w->rinfo = (uint64_t *)malloc(N * sizeof(uint64_t));
        if (!w->h2 || !w->ht || !w->hr || !w->clt || !w->rlt || !w->run) return -1;
        if ((o->ties == T_STABLE || o->ties == T_REVERSE) && !w->rinfo) return -1;
    } else {
        w->rel = (relitem *)malloc(N * sizeof(relitem));
        w->rd = (double *)malloc(N * sizeof(double));
        w->before = (int64_t *)malloc(4 * N * sizeof(int64_t));
        if (by_group) w->eq = (int64_t *)malloc(N * sizeof(int64_t));
        if (!w->rel || !w->rd || !w->before || (by_group && !w->eq)) return -1;
        if (o->ties == T_GROUPED && o->k >= 0) {
            w->sel = (double *)malloc(N * sizeof(double));
            if (!w->sel) return -1;
        }
    }
    return 0;
}

static inline int has_junk(const rc_input *in)
{
    return in->junk != NULL || in->query_cams != NULL || in->gallery_junk != NULL;
}

/* ---- junk of one query: jk[j] = 1 for junk items; returns how many ------------------------ */
static int64_t build_junk(const rc_input *in, int64_t q, uint8_t *jk)
{
    const int64_t N = in->n_gallery;
    int64_t j, n = 0;
    if (in->gallery_junk && in->junk) {
        const uint8_t *gj = in->gallery_junk, *row = in->junk + q * N;
        for (j = 0; j < N; j++) jk[j] = (uint8_t)(gj[j] | row[j]);
    } else if (in->gallery_junk) {
        memcpy(jk, in->gallery_junk, (size_t)N);
    } else if (in->junk) {
        memcpy(jk, in->junk + q * N, (size_t)N);
    } else {
        memset(jk, 0, (size_t)N);
    }
    if (in->query_cams) {  /* ReID: same id (the query's id slice) and same camera */
        const int64_t cam = in->query_cams[q], *dbc = in->db_cams, *ord = in->db_order;
        int64_t t;
        for (t = in->id_start[q]; t < in->id_stop[q]; t++)
            if (dbc[ord[t]] == cam) jk[ord[t]] = 1;
    }
    for (j = 0; j < N; j++) n += jk[j];  /* the masks hold 0/1 bytes */
    return n;
}

/* relevance of gallery item j to the current query, from whichever input was given */
typedef struct {
    int64_t kind, id, words;
    const uint8_t *row;
    const int64_t *db_ids;
    const uint64_t *ql, *db_bits;
} relsrc;

static inline void relsrc_init(relsrc *r, const rc_input *in, int64_t q)
{
    r->kind = in->rel_kind;
    r->row = in->relevance ? in->relevance + q * in->n_gallery : NULL;
    r->id = in->query_ids ? in->query_ids[q] : 0;
    r->db_ids = in->db_ids;
    r->words = in->label_words;
    r->ql = in->query_label_bits ? in->query_label_bits + q * in->label_words : NULL;
    r->db_bits = in->db_label_bits;
}

static inline __attribute__((always_inline)) int64_t relsrc_get(const relsrc *r, int64_t j)
{
    if (r->kind == REL_IDS) return r->db_ids[j] == r->id;
    if (r->kind == REL_MATRIX) return r->row[j] != 0;
    if (r->words == 1) return (r->ql[0] & r->db_bits[j]) != 0;
    {
        uint64_t any = 0;
        int64_t u;
        for (u = 0; u < r->words; u++) any |= r->ql[u] & r->db_bits[j * r->words + u];
        return any != 0;
    }
}

/* Sum of terms kept as s + c: two_sum keeps the rounding error of every addition and the
 * errors are added up in c, so the critical path is one addition per term (a plain
 * double-double sum serialises about fifteen).  Error ~ n^2 eps^2: far below half an ulp. */
typedef struct { double s, c; } ddacc;

static inline void acc_add(ddacc *a, dd t)
{
    dd u = two_sum(a->s, t.hi);
    a->s = u.hi;
    a->c += u.lo + t.lo;
}

static inline dd acc_get(ddacc a) { return two_sum(a.s, a.c); }

/* ---- metric helpers --------------------------------------------------------------------- */
typedef struct {
    double ap, hits, prec, rec, inp, rprec;
    double *cmc;
} qres;

/* AP term of the i-th relevant item at rank r: i/r, or (i/r + (i-1)/(r-1))/2 and 1 at r=1 */
static inline dd ap_term(double i, double r, int64_t rule)
{
    if (rule == AP_PS) return dd_ratio(i, r);
    if (r == 1.0) return dd_make(1.0);
    return dd_half(dd_add(dd_ratio(i, r), dd_ratio(i - 1.0, r - 1.0)));
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

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

#if defined(__GNUC__) && defined(__x86_64__)
#define RC_HAVE_FMA_DISPATCH 1
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

static int rc_use_fma = 0;  /* set once by rc_evaluate before the parallel region */

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

/* Concrete ranking: every metric from the sorted 1-based ranks rk[0..R-1] (R >= 1). */
static void metrics_ranks(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                          qres *res)
{
    const int64_t k = o->k;
    int64_t i, n_terms, den, hk = R, hr = 0;
    ddacc s = {0.0, 0.0};
    if (k >= 0) {
        hk = 0;
        while (hk < R && rk[hk] <= k) hk++;
    }
    if (k < 0) {                       /* full AP: (1/R) sum_i term_i */
        n_terms = den = R;
    } else if (o->ap_at_k == K_DCMH) { /* the first min(k, R) relevant items, wherever */
        n_terms = den = min64(k, R);
    } else {                           /* S_k = sum_{r_i <= k} term_i over a denominator */
        n_terms = hk;
        den = o->ap_at_k == K_HITS ? hk : (o->ap_at_k == K_R ? R : min64(k, R));
    }
    sum_terms(rk, n_terms, o->ap_rule, &s);
    res->ap = den ? dd_round(dd_div_d(acc_get(s), (double)den)) : 0.0;
    res->hits = (double)hk;
    res->prec = (double)hk / (double)(k >= 0 ? k : Np);
    res->rec = (double)hk / (double)R;
    for (i = 0; i < o->max_rank; i++) res->cmc[i] = rk[0] <= i + 1 ? 1.0 : 0.0;
    res->inp = (double)R / (double)rk[R - 1];
    while (hr < R && rk[hr] <= R) hr++;
    res->rprec = (double)hr / (double)R;
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

static void metrics_grouped(const group *g, int64_t ng, int64_t R, int64_t Np,
                            const rc_options *o, qres *res)
{
    const int64_t k = o->k;
    int64_t a, i, hk = R, hr = 0;
    dd s = DD_ZERO;
    if (k >= 0) {
        hk = 0;
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++) hk += g[a].m;
    }
    for (a = 0; a < ng && g[a].c + g[a].n <= R; a++) hr += g[a].m;
    if (k < 0) {
        for (a = 0; a < ng; a++) s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)g[a].m));
        res->ap = dd_round(dd_div_d(s, (double)R));
    } else if (o->ap_at_k == K_DCMH) {
        int64_t L = min64(k, R), taken = 0;
        for (a = 0; a < ng && taken < L; a++) {
            int64_t take = min64(g[a].m, L - taken);
            s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)take));
            taken += take;
        }
        res->ap = dd_round(dd_div_d(s, (double)L));
    } else {
        int64_t den = o->ap_at_k == K_HITS ? hk : (o->ap_at_k == K_R ? R : min64(k, R));
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++)
            s = dd_add(s, dd_mul_d(grouped_term(&g[a], o->ap_rule), (double)g[a].m));
        res->ap = den ? dd_round(dd_div_d(s, (double)den)) : 0.0;
    }
    res->hits = (double)hk;
    res->prec = (double)hk / (double)(k >= 0 ? k : Np);
    res->rec = (double)hk / (double)R;
    for (i = 0; i < o->max_rank; i++) res->cmc[i] = g[0].c + g[0].n <= i + 1 ? 1.0 : 0.0;
    res->inp = (double)R / (double)(g[ng - 1].c + g[ng - 1].n);
    res->rprec = (double)hr / (double)R;
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

static void metrics_expected(const group *g, int64_t ng, int64_t R, int64_t Np,
                             const rc_options *o, const dd *Hh, qres *res)
{
    const int64_t k = o->k, rule = o->ap_rule;
    int64_t a, j;
    dd s = DD_ZERO, hk;
    if (k < 0) {
        for (a = 0; a < ng; a++) s = dd_add(s, exp_group_sum(&g[a], g[a].n, Hh, rule));
        res->ap = dd_round(dd_div_d(s, (double)R));
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
        res->ap = dd_round(dd_div_d(s, (double)L));
    } else if (o->ap_at_k == K_R || o->ap_at_k == K_MINKR) {
        for (a = 0; a < ng && g[a].c < k; a++)
            s = dd_add(s, exp_group_sum(&g[a], min64(g[a].n, k - g[a].c), Hh, rule));
        res->ap = dd_round(dd_div_d(s, (double)(o->ap_at_k == K_R ? R : min64(k, R))));
    } else {  /* hits: E[S/H] conditions on the cut group */
        for (a = 0; a < ng && g[a].c + g[a].n <= k; a++)
            s = dd_add(s, exp_group_sum(&g[a], g[a].n, Hh, rule));
        if (a < ng && g[a].c < k) {
            res->ap = dd_round(exp_hits_cut(&g[a], k - g[a].c, s, Hh, rule));
        } else {
            int64_t h = a < ng ? g[a].h : R;
            res->ap = h ? dd_round(dd_div_d(s, (double)h)) : 0.0;
        }
    }
    hk = k >= 0 ? exp_hits(g, ng, k) : dd_make((double)R);
    res->hits = dd_round(hk);
    res->prec = dd_round(dd_div_d(hk, (double)(k >= 0 ? k : Np)));
    res->rec = dd_round(dd_div_d(hk, (double)R));
    {   /* CMC@K = P(r_1 <= K) = 1 - C(n-m, t)/C(n, t), t = K - c, for the first group */
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
    res->inp = dd_round(exp_inp(&g[ng - 1], R, Hh));
    res->rprec = dd_round(dd_div_d(exp_hits(g, ng, R), (double)R));
}

static void metrics_zero(const rc_options *o, qres *res)
{
    int64_t j;
    res->ap = res->hits = res->prec = res->rec = res->inp = res->rprec = 0.0;
    for (j = 0; j < o->max_rank; j++) res->cmc[j] = 0.0;
}

/* ---- grouped with a cut-off: is k strictly inside a tie group? -------------------------- */
/* Three-way quickselect: the k-th smallest (1-based) of a[0..n-1] (permuted); returns how
 * many values are below it and equal to it.  Values outside the active range are strictly
 * below or above every value inside it, so the counts are those of the whole array. */
static void kth_counts(double *a, int64_t n, int64_t k, int64_t *lt, int64_t *eq)
{
    int64_t lo = 0, hi = n;
    const int64_t target = k - 1;
    for (;;) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1], p, tmp;
        int64_t i = lo, l = lo, g = hi;
        p = (x < y) ? ((y < z) ? y : ((x < z) ? z : x)) : ((x < z) ? x : ((y < z) ? z : y));
        while (i < g) {
            if (a[i] < p) {
                tmp = a[i]; a[i] = a[l]; a[l] = tmp;
                i++; l++;
            } else if (a[i] > p) {
                g--;
                tmp = a[i]; a[i] = a[g]; a[g] = tmp;
            } else {
                i++;
            }
        }
        if (target < l) {
            hi = l;
        } else if (target >= g) {
            lo = g;
        } else {
            *lt = l;
            *eq = g - l;
            return;
        }
    }
}

/* ---- float distances: one query ----------------------------------------------------------- */
static int cmp_rel_asc(const void *pa, const void *pb)
{
    const relitem *a = (const relitem *)pa, *b = (const relitem *)pb;
    if (a->d < b->d) return -1;
    if (a->d > b->d) return 1;
    return (a->j > b->j) - (a->j < b->j);
}

static int cmp_rel_desc_index(const void *pa, const void *pb)
{
    const relitem *a = (const relitem *)pa, *b = (const relitem *)pb;
    if (a->d < b->d) return -1;
    if (a->d > b->d) return 1;
    return (a->j < b->j) - (a->j > b->j);
}

/* first index in rel[lo..hi) whose distance is >= d (or > d when strict) */
static inline int64_t lower_d(const relitem *rel, int64_t lo, int64_t hi, double d, int strict)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (strict ? (rel[mid].d <= d) : (rel[mid].d < d)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* first index i in a[0..n) with a[i] >= x (n if none); branch-free steps (conditional
 * moves), since whether an item falls below a relevant distance is unpredictable */
static inline int64_t lower_bound_bf(const double *a, int64_t n, double x)
{
    const double *base = a;
    int64_t len = n;
    if (n == 0) return 0;
    while (len > 1) {
        int64_t half = len >> 1;
        base += half & -(int64_t)(base[half - 1] < x);
        len -= half;
    }
    return (int64_t)(base - a) + (*base < x);
}

/* column of the first NaN/inf of a row, or -1; the bit test vectorises (an exponent of all
 * ones carries into the sign bit) */
static int64_t first_nonfinite(const float *x32, const double *x64, int64_t n)
{
    int64_t j;
    if (x32) {
        uint32_t acc = 0;
        for (j = 0; j < n; j++) {
            uint32_t b;
            memcpy(&b, x32 + j, sizeof(b));
            acc |= (b & 0x7f800000u) + 0x00800000u;
        }
        if (!(acc & 0x80000000u)) return -1;
        for (j = 0; j < n; j++)
            if (!(fabsf(x32[j]) <= FLT_MAX)) return j;
    } else {
        uint64_t acc = 0;
        for (j = 0; j < n; j++) {
            uint64_t b;
            memcpy(&b, x64 + j, sizeof(b));
            acc |= (b & 0x7ff0000000000000ull) + 0x0010000000000000ull;
        }
        if (!(acc & 0x8000000000000000ull)) return -1;
        for (j = 0; j < n; j++)
            if (!(fabs(x64[j]) <= DBL_MAX)) return j;
    }
    return -1;
}

static inline __attribute__((always_inline)) void
query_float_body(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                 workspace *w, qres *res, rc_output *out, const float *D32, const double *D64,
                 const int is32)
{
    const int64_t N = in->n_gallery, ties = o->ties;
    uint8_t *skip = w->skip;
    relitem *rel = w->rel;
    double *rd = w->rd;
    int64_t *before = w->before, *eq = w->eq;
    int64_t j, G = 0, Np, i, bad;
    double dmax;

#define RC_D(jj) (is32 ? (double)D32[jj] : D64[jj])
    if (is32) D32 += q * N; else D64 += q * N;
    bad = first_nonfinite(is32 ? D32 : NULL, D64, N);
    if (bad >= 0) {  /* NaN or inf (the front end rejects them) */
        out->status[q] = Q_NONFINITE;
        out->err_a[q] = bad;
        return;
    }
    Np = N - (has_junk(in) ? build_junk(in, q, skip) : (memset(skip, 0, (size_t)N), 0));

    /* the relevant non-junk items, in gallery order */
    if (in->rel_kind == REL_IDS) {
        const int64_t *ord = in->db_order;
        int64_t t;
        for (t = in->id_start[q]; t < in->id_stop[q]; t++) {
            j = ord[t];
            if (!skip[j]) {
                rel[G].d = RC_D(j);
                rel[G].j = j;
                G++;
            }
        }
    } else {
        relsrc src;
        relsrc_init(&src, in, q);
        for (j = 0; j < N; j++) {  /* branch-free filter: write always, advance if kept */
            rel[G].d = RC_D(j);
            rel[G].j = j;
            G += relsrc_get(&src, j) & !skip[j];
        }
    }
    out->n_relevant[q] = G;
    if (o->has_radius) {
        const double r = o->radius;
        int64_t rad_n = 0, rad_r = 0;
        for (j = 0; j < N; j++) rad_n += !skip[j] && RC_D(j) <= r;
        for (i = 0; i < G; i++) rad_r += rel[i].d <= r;
        out->precision_at_radius[q] = rad_n ? (double)rad_r / (double)rad_n : 0.0;
        out->recall_at_radius[q] = G ? (double)rad_r / (double)G : 0.0;
    }
    if (ties == T_GROUPED && o->k >= 0 && o->k < Np) {
        int64_t n_sel = 0, lt = 0, ne = 0;
        const int64_t k = o->k;
        if (k + 1 <= Np / 16) {
            /* a small k: keep the k+1 smallest distances in a max-heap (most items fail the
             * first comparison); k is inside a group iff the k-th and (k+1)-th are equal */
            double *hp = w->sel, top2;
            for (j = 0; j < N; j++) {
                double d;
                if (skip[j]) continue;
                d = RC_D(j);
                if (n_sel < k + 1) {
                    int64_t c = n_sel++;
                    while (c > 0 && hp[(c - 1) / 2] < d) {
                        hp[c] = hp[(c - 1) / 2];
                        c = (c - 1) / 2;
                    }
                    hp[c] = d;
                } else if (d < hp[0]) {
                    int64_t c = 0;
                    for (;;) {
                        int64_t l = 2 * c + 1, big = c;
                        double v = d;
                        if (l < n_sel && hp[l] > v) { big = l; v = hp[l]; }
                        if (l + 1 < n_sel && hp[l + 1] > v) big = l + 1;
                        if (big == c) break;
                        hp[c] = hp[big];
                        c = big;
                    }
                    hp[c] = d;
                }
            }
            top2 = n_sel > 2 && hp[2] > hp[1] ? hp[2] : hp[1];
            if (top2 == hp[0]) {  /* the group's bounds, for the error message */
                for (j = 0; j < N; j++) {
                    if (skip[j]) continue;
                    lt += RC_D(j) < hp[0];
                    ne += RC_D(j) == hp[0];
                }
            }
        } else {
            for (j = 0; j < N; j++)
                if (!skip[j]) w->sel[n_sel++] = RC_D(j);
            kth_counts(w->sel, n_sel, k, &lt, &ne);
        }
        if (lt < k && k < lt + ne) {
            out->status[q] = Q_GROUPED_K;
            out->err_a[q] = lt;
            out->err_b[q] = lt + ne;
            return;
        }
    }
    if (G == 0) {
        metrics_zero(o, res);
        return;
    }
    for (i = 0; i < G; i++) skip[rel[i].j] = 1;
    /* relevant items by (distance, index): index descending under "reverse" */
    if (G > 1) qsort(rel, (size_t)G, sizeof(relitem), ties == T_REVERSE ? cmp_rel_desc_index : cmp_rel_asc);
    for (i = 0; i < G; i++) rd[i] = rel[i].d;
    dmax = rd[G - 1];
    /* before[i] += 1 for an item preceding relevant items i, i+1, ... but not i-1.  Four
     * interleaved copies (by j mod 4): most items land in the same few slots (often slot G,
     * past every relevant item), and one counter would serialise them through memory. */
    memset(before, 0, (size_t)(4 * (G + 1)) * sizeof(int64_t));
    if (ties == T_EXPECTED || ties == T_GROUPED) memset(eq, 0, (size_t)(G + 1) * sizeof(int64_t));
    for (j = 0; j < N; j++) {
        double d;
        int64_t lo, a, b;
        int64_t *bf = before + (j & 3) * (G + 1);
        if (skip[j]) continue;
        d = RC_D(j);
        if (d > dmax) continue;  /* most items: past every relevant one, they count nowhere */
        lo = lower_bound_bf(rd, G, d);
        if (lo == G || rd[lo] != d) {
            bf[lo]++;
            continue;
        }
        switch (ties) {  /* d equals the distance of relevant items lo .. hi-1 */
        case T_STABLE:   /* the item precedes the tied relevant items of larger index */
            a = lo; b = lower_d(rel, lo, G, d, 1);
            while (a < b) {
                int64_t mid = a + (b - a) / 2;
                if (rel[mid].j < j) a = mid + 1; else b = mid;
            }
            bf[a]++;
            break;
        case T_REVERSE:  /* run sorted by index descending; precedes those of smaller index */
            a = lo; b = lower_d(rel, lo, G, d, 1);
            while (a < b) {
                int64_t mid = a + (b - a) / 2;
                if (rel[mid].j > j) a = mid + 1; else b = mid;
            }
            bf[a]++;
            break;
        case T_OPTIMISTIC:
            bf[lower_d(rel, lo, G, d, 1)]++;
            break;
        case T_PESSIMISTIC:
            bf[lo]++;
            break;
        default:          /* expected, grouped: the item joins the tie group */
            eq[lo]++;
            break;
        }
    }
    for (i = 0; i <= G; i++) before[i] += before[G + 1 + i] + before[2 * (G + 1) + i] + before[3 * (G + 1) + i];
#undef RC_D
    if (ties == T_EXPECTED || ties == T_GROUPED) {
        int64_t acc = 0, eqacc = 0, t = 0, ng = 0, lo = 0, hi;
        group *g = w->groups;
        while (lo < G) {
            hi = lo + 1;
            while (hi < G && rel[hi].d == rel[lo].d) hi++;
            while (t <= lo) acc += before[t++];
            g[ng].c = lo + acc + eqacc;
            g[ng].m = hi - lo;
            g[ng].n = (hi - lo) + eq[lo];
            g[ng].h = lo;
            eqacc += eq[lo];
            ng++;
            lo = hi;
        }
        if (ties == T_EXPECTED) metrics_expected(g, ng, G, Np, o, Hh, res);
        else metrics_grouped(g, ng, G, Np, o, res);
    } else {
        int64_t acc = 0;
        for (i = 0; i < G; i++) {
            acc += before[i];
            w->ranks[i] = i + 1 + acc;
        }
        metrics_ranks(w->ranks, G, Np, o, res);
    }
}

static void query_float(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                        workspace *w, qres *res, rc_output *out)
{
    if (in->dist_kind == D_F32)
        query_float_body(in, o, Hh, q, w, res, out, (const float *)in->distances, NULL, 1);
    else
        query_float_body(in, o, Hh, q, w, res, out, NULL, (const double *)in->distances, 0);
}

/* ---- Hamming codes: one query --------------------------------------------------------------- */
/* The distance pass over the gallery, no data-dependent branch except junk.
 * record = 0: histogram h2[2 d + relevant] (all the expected / grouped / optimistic /
 *   pessimistic policies need).
 * record = 1 (stable, reverse): a counting sort in one pass: every relevant item records its
 *   distance d and s = the number of non-junk items at distance d before it in gallery order
 *   (ht[d] as a running count). */
static inline __attribute__((always_inline)) int64_t
popcount_words(const uint64_t *a, const uint64_t *b, int64_t W)
{
    int64_t u, d = 0;
    for (u = 0; u < W; u++) d += __builtin_popcountll(a[u] ^ b[u]);
    return d;
}

static inline __attribute__((always_inline)) int
any_common(const uint64_t *a, const uint64_t *b, int64_t W)
{
    uint64_t any = 0;
    int64_t u;
    for (u = 0; u < W; u++) any |= a[u] & b[u];
    return any != 0;
}

/* one specialised loop per (distance, relevance) source keeps the hot loop free of
 * invariant tests and its variables in registers */
#define RC_CODES_LOOP1(DIST, REL, JUNK)                                                        \
    do {                                                                                \
        if (record) {                                                                   \
            for (j = 0; j < N; j++) {                                                   \
                int64_t d_;                                                             \
                if (JUNK) continue;                                                       \
                d_ = (DIST);                                                            \
                /* branch-free: write, keep if relevant; s < 2^32 (N < 2^32) */         \
                ri[nr] = (uint64_t)d_ << 32 | (uint64_t)ht[d_]++;                       \
                nr += (REL);                                                            \
            }                                                                           \
        } else {        /* four interleaved histograms: no chain through one counter */ \
            for (j = 0; j < N; j++) {                                                   \
                int64_t d_;                                                             \
                if (JUNK) continue;                                                       \
                d_ = (DIST);                                                            \
                h2[(j & 3) * H2 + 2 * d_ + (REL)]++;                                    \
            }                                                                           \
        }                                                                               \
    } while (0)

#define RC_CODES_LOOP(DIST, REL)                                                        \
    do {                                                                                \
        if (jk) RC_CODES_LOOP1(DIST, REL, jk[j]);                                       \
        else RC_CODES_LOOP1(DIST, REL, 0);                                              \
    } while (0)

#define RC_CODES_REL(DIST)                                                              \
    do {                                                                                \
        if (in->rel_kind == REL_IDS) {                                                  \
            const int64_t id = in->query_ids[q], *dbi = in->db_ids;                     \
            RC_CODES_LOOP(DIST, dbi[j] == id);                                          \
        } else if (in->rel_kind == REL_MATRIX) {                                        \
            const uint8_t *row = in->relevance + q * N;                                 \
            RC_CODES_LOOP(DIST, row[j] != 0);                                           \
        } else if (in->label_words == 1) {                                              \
            const uint64_t l0 = in->query_label_bits[q], *dbl = in->db_label_bits;      \
            RC_CODES_LOOP(DIST, (l0 & dbl[j]) != 0);                                    \
        } else {                                                                        \
            const int64_t LW = in->label_words;                                         \
            const uint64_t *ql = in->query_label_bits + q * LW, *dbl = in->db_label_bits; \
            RC_CODES_LOOP(DIST, any_common(ql, dbl + j * LW, LW));                      \
        }                                                                               \
    } while (0)

/* The distance pass over the gallery, with no data-dependent branch except junk.
 * record = 0: histogram h2[2 d + relevant] (all the expected / grouped / optimistic /
 *   pessimistic policies need).
 * record = 1 (stable, reverse): a counting sort in one pass: every relevant item records its
 *   distance d and s = the number of non-junk items at distance d before it in gallery order
 *   (ht[d] as a running count). */
static inline __attribute__((always_inline)) int64_t
codes_pass(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int record)
{
    const int64_t N = in->n_gallery, W = in->code_words;
    const uint64_t *qc = in->query_codes + q * W, *db = in->db_codes;
    int64_t *ht = w->ht, *h2 = w->h2;
    uint64_t *ri = w->rinfo;
    const int64_t H2 = 2 * in->n_bits + 2;
    int64_t j, nr = 0;
    if (W == 1) {
        const uint64_t q0 = qc[0];
        RC_CODES_REL(__builtin_popcountll(q0 ^ db[j]));
    } else {
        RC_CODES_REL(popcount_words(qc, db + j * W, W));
    }
    return nr;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define RC_HAVE_POPCNT_DISPATCH 1
__attribute__((target("popcnt"))) static int64_t
codes_pass_popcnt(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int record)
{
    return codes_pass(in, q, w, jk, record);
}
#endif

static int64_t codes_pass_generic(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk,
                                  int record)
{
    return codes_pass(in, q, w, jk, record);
}

static void query_codes(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                        workspace *w, qres *res, rc_output *out, int use_popcnt)
{
    const int64_t B = in->n_bits, ties = o->ties;
    int64_t *ht = w->ht, *hr = w->hr, *h2 = w->h2, *clt = w->clt, *rlt = w->rlt;
    const uint64_t *ri = w->rinfo;
    int64_t *run = w->run, *rk = w->ranks;
    const int record = ties == T_STABLE || ties == T_REVERSE;
    const uint8_t *jk = NULL;
    int64_t d, R = 0, Np = 0, Rb = 0, i;

    if (has_junk(in)) {
        build_junk(in, q, w->skip);
        jk = w->skip;
    }
    if (record) memset(ht, 0, (size_t)(B + 1) * sizeof(int64_t));
    else memset(h2, 0, (size_t)(8 * B + 8) * sizeof(int64_t));
#ifdef RC_HAVE_POPCNT_DISPATCH
    if (use_popcnt) R = codes_pass_popcnt(in, q, w, jk, record);
    else R = codes_pass_generic(in, q, w, jk, record);
#else
    (void)use_popcnt;
    R = codes_pass_generic(in, q, w, jk, record);
#endif
    if (record) {
        memset(hr, 0, (size_t)(B + 1) * sizeof(int64_t));
        for (i = 0; i < R; i++) hr[ri[i] >> 32]++;
    } else {
        const int64_t H2 = 2 * B + 2;
        for (d = 0; d < H2; d++) h2[d] += h2[H2 + d] + h2[2 * H2 + d] + h2[3 * H2 + d];
        for (d = 0; d <= B; d++) {
            ht[d] = h2[2 * d] + h2[2 * d + 1];
            hr[d] = h2[2 * d + 1];
            R += hr[d];
        }
    }
    for (d = 0; d <= B; d++) {
        clt[d] = Np;
        rlt[d] = Rb;
        Np += ht[d];
        Rb += hr[d];
    }
    out->n_relevant[q] = R;
    if (o->has_radius) {
        int64_t rn = 0, rr = 0;
        for (d = 0; d <= B && (double)d <= o->radius; d++) {
            rn += ht[d];
            rr += hr[d];
        }
        out->precision_at_radius[q] = rn ? (double)rr / (double)rn : 0.0;
        out->recall_at_radius[q] = R ? (double)rr / (double)R : 0.0;
    }
    if (ties == T_GROUPED && o->k >= 0) {
        for (d = 0; d <= B; d++) {
            if (ht[d] && clt[d] < o->k && o->k < clt[d] + ht[d]) {
                out->status[q] = Q_GROUPED_K;
                out->err_a[q] = clt[d];
                out->err_b[q] = clt[d] + ht[d];
                return;
            }
        }
    }
    if (R == 0) {
        metrics_zero(o, res);
        return;
    }
    switch (ties) {
    case T_STABLE:   /* relevant items of one distance come in gallery order */
        memcpy(run, rlt, (size_t)(B + 1) * sizeof(int64_t));
        for (i = 0; i < R; i++) {
            d = (int64_t)(ri[i] >> 32);
            rk[run[d]++] = clt[d] + (int64_t)(ri[i] & 0xffffffffu) + 1;
        }
        break;
    case T_REVERSE:  /* within a distance, larger gallery index first */
        for (d = 0; d <= B; d++) run[d] = rlt[d] + hr[d] - 1;
        for (i = 0; i < R; i++) {
            d = (int64_t)(ri[i] >> 32);
            rk[run[d]--] = clt[d] + ht[d] - (int64_t)(ri[i] & 0xffffffffu);
        }
        break;
    case T_OPTIMISTIC:
    case T_PESSIMISTIC:
        for (d = 0; d <= B; d++) {
            int64_t u, first = clt[d] + (ties == T_OPTIMISTIC ? 0 : ht[d] - hr[d]) + 1;
            for (u = 0; u < hr[d]; u++) rk[rlt[d] + u] = first + u;
        }
        break;
    default: {
        group *g = w->groups;
        int64_t ng = 0;
        for (d = 0; d <= B; d++) {
            if (!hr[d]) continue;
            g[ng].c = clt[d];
            g[ng].n = ht[d];
            g[ng].m = hr[d];
            g[ng].h = rlt[d];
            ng++;
        }
        if (ties == T_EXPECTED) metrics_expected(g, ng, R, Np, o, Hh, res);
        else metrics_grouped(g, ng, R, Np, o, res);
        return;
    }
    }
    metrics_ranks(rk, R, Np, o, res);
}

/* ---- entry points ----------------------------------------------------------------------- */
int64_t rc_abi_version(void) { return RC_ABI_VERSION; }

/* CPU features used when present: bit 0 popcnt, bit 1 fma.  rc_set_features(mask) limits
 * them to mask (tests compare the generic and the accelerated code paths); returns the
 * features this CPU has. */
static int64_t rc_feature_mask = 3;

int64_t rc_set_features(int64_t mask)
{
    int64_t have = 0;
    rc_feature_mask = mask;
#if defined(RC_HAVE_POPCNT_DISPATCH) || defined(RC_HAVE_FMA_DISPATCH)
    __builtin_cpu_init();
#endif
#ifdef RC_HAVE_POPCNT_DISPATCH
    if (__builtin_cpu_supports("popcnt")) have |= 1;
#endif
#ifdef RC_HAVE_FMA_DISPATCH
    if (__builtin_cpu_supports("fma")) have |= 2;
#endif
    return have;
}

int64_t rc_max_threads(void)
{
#ifdef _OPENMP
    return (int64_t)omp_get_max_threads();
#else
    return 1;
#endif
}

static int check_args(const rc_input *in, const rc_options *o, const rc_output *out)
{
    if (!in || !o || !out) return -1;
    if (in->n_queries < 0 || in->n_gallery < 0 || o->max_rank < 0) return -1;
    if (o->ties < T_STABLE || o->ties > T_GROUPED) return -1;
    if (o->ap_rule != AP_PS && o->ap_rule != AP_TRAP) return -1;
    if (o->ap_at_k < K_HITS || o->ap_at_k > K_DCMH || o->k == 0) return -1;
    if (o->has_radius && !(o->radius >= 0.0)) return -1;
    if (!out->ap || !out->n_relevant || !out->hits_at_k || !out->precision_at_k ||
        !out->recall_at_k || !out->inp || !out->r_precision || !out->status || !out->err_a ||
        !out->err_b || (o->max_rank > 0 && !out->cmc))
        return -1;
    if (o->has_radius && (!out->precision_at_radius || !out->recall_at_radius)) return -1;
    if (in->dist_kind == D_CODES) {
        if (!in->query_codes || !in->db_codes || in->code_words < 1 || in->n_bits < 1 ||
            in->n_bits > 64 * in->code_words)
            return -1;
    } else if (in->dist_kind == D_F32 || in->dist_kind == D_F64) {
        if (!in->distances) return -1;
    } else {
        return -1;
    }
    if (in->rel_kind == REL_MATRIX) {
        if (!in->relevance) return -1;
    } else if (in->rel_kind == REL_IDS) {
        if (!in->query_ids || !in->db_ids) return -1;
    } else if (in->rel_kind == REL_MULTI) {
        if (!in->query_label_bits || !in->db_label_bits || in->label_words < 1) return -1;
    } else {
        return -1;
    }
    if (in->rel_kind == REL_IDS && (!in->db_order || !in->id_start || !in->id_stop)) return -1;
    if (in->query_cams && (!in->db_cams || in->rel_kind != REL_IDS)) return -1;
    return 0;
}

/* Evaluate queries 0 .. n_queries-1.  Returns RC_OK, RC_ERR_QUERY (see out->status: the
 * caller raises for the first query with a non-zero status), RC_ERR_NOMEM or RC_ERR_ARGS.
 * num_threads <= 0: OpenMP's default.  Results do not depend on the thread count. */
int64_t rc_evaluate(const rc_input *in, const rc_options *o, rc_output *out, int64_t num_threads)
{
    const int64_t Q = in ? in->n_queries : 0, N = in ? in->n_gallery : 0;
    dd *Hh = NULL;
    int fail = 0, any_status = 0, use_popcnt = 0;
    int64_t q;
    if (check_args(in, o, out)) return RC_ERR_ARGS;
    if (Q == 0) return RC_OK;
    if (o->ties == T_EXPECTED) {  /* harmonic numbers H_0 .. H_{N+1} */
        int64_t j;
        Hh = (dd *)malloc((size_t)(N + 2) * sizeof(dd));
        if (!Hh) return RC_ERR_NOMEM;
        Hh[0] = DD_ZERO;
        for (j = 1; j <= N + 1; j++) Hh[j] = dd_add(Hh[j - 1], dd_ratio(1.0, (double)j));
    }
    {
        int64_t have = rc_set_features(rc_feature_mask) & rc_feature_mask;
        use_popcnt = (int)(have & 1);
        rc_use_fma = (int)((have >> 1) & 1);
    }
#ifdef _OPENMP
    if (num_threads <= 0) num_threads = omp_get_max_threads();
    if (num_threads > Q) num_threads = Q;
    /* if(): one thread runs the loop without touching the OpenMP thread pool (which does not
     * survive fork(): c_backend.py asks for one thread in a forked child) */
#pragma omp parallel num_threads((int)num_threads) reduction(| : any_status) if (num_threads > 1)
#else
    (void)num_threads;
#endif
    {
        workspace w;
        int mine = ws_alloc(&w, in, o);
        if (mine) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            fail = 1;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 4)
#endif
        for (q = 0; q < Q; q++) {
            qres res;
            if (mine) continue;
            out->status[q] = Q_OK;
            out->err_a[q] = out->err_b[q] = 0;
            res.cmc = out->cmc + q * o->max_rank;
            if (in->dist_kind == D_CODES) query_codes(in, o, Hh, q, &w, &res, out, use_popcnt);
            else query_float(in, o, Hh, q, &w, &res, out);
            if (out->status[q] != Q_OK) {
                any_status |= 1;
                continue;
            }
            out->ap[q] = res.ap;
            out->hits_at_k[q] = res.hits;
            out->precision_at_k[q] = res.prec;
            out->recall_at_k[q] = res.rec;
            out->inp[q] = res.inp;
            out->r_precision[q] = res.rprec;
        }
        ws_free(&w);
    }
    free(Hh);
    if (fail) return RC_ERR_NOMEM;
    return any_status ? RC_ERR_QUERY : RC_OK;
}
