/* rc_float.c -- one query of float32 / float64 distances: the relevant distances sorted, every
 * other item placed among them through a bucket table (binary-searched only inside a bucket
 * that holds a relevant distance); `grouped` with a cut-off by a heap or quickselect. */
#include "rc_core.h"

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

/* ---- the gap of an item among the sorted relevant distances ------------------------------ */
/* A monotone map of distances to buckets 0 .. nb + 1: 0 below the smallest relevant distance
 * lo, nb + 1 above the largest hi, 1 .. nb in between by fl(fl(d - lo) * scale).  Rounded
 * subtraction and multiplication by scale >= 0 never reverse an order, so d1 <= d2 gives
 * bucket(d1) <= bucket(d2) whatever the rounding (a NaN product, from an overflowing range,
 * goes to the top bucket: still monotone).  Hence an item in a bucket that holds no relevant
 * distance lies strictly between the same two relevant distances as its whole bucket: its gap
 * is read from the table, exact, without a search.  Items and relevant distances go through
 * this one function, so equal distances always share a bucket. */
typedef struct { double lo, hi, scale, top; int64_t nb; } bucketmap;

static inline __attribute__((always_inline)) int64_t bucket_of(const bucketmap *m, double d)
{
    double t = (d - m->lo) * m->scale;  /* in [0, nb - 1] when lo <= d <= hi (or NaN) */
    t = t < m->top ? t : m->top;        /* rounding past nb - 1, and NaN, go to the top */
    return d < m->lo ? 0 : d > m->hi ? m->nb + 1 : 1 + (int64_t)t;
}

/* bucket map over rd[0 .. G-1] (sorted, G >= 1); first[b] = relevant distances in buckets
 * below b, for b = 0 .. nb + 2; value[b] = the one relevant distance in bucket b, +inf for
 * none (every distance is below it), NaN for several different ones; about
 * RC_BUCKETS_PER_RELEVANT buckets per relevant item */
static void bucket_setup(const double *rd, int64_t G, int64_t N, int64_t *first, double *value, bucketmap *m)
{
    const double range = rd[G - 1] - rd[0];
    int64_t nb = 1, i, b;
    while (nb < RC_BUCKETS_PER_RELEVANT * G && nb < N && nb < RC_BUCKETS_MAX) nb <<= 1;
    m->lo = rd[0];
    m->hi = rd[G - 1];
    m->nb = nb;
    m->top = (double)(nb - 1);
    m->scale = range > 0 && range <= DBL_MAX ? (double)(nb - 1) / range : 0.0;
    if (!(m->scale <= DBL_MAX)) m->scale = 0.0;  /* a subnormal range: one bucket */
    memset(first, 0, (size_t)(nb + 3) * sizeof(int64_t));
    for (i = 0; i < G; i++) first[bucket_of(m, rd[i]) + 1]++;
    for (b = 1; b < nb + 3; b++) first[b] += first[b - 1];
    for (b = 0; b < nb + 2; b++) {
        const int64_t lo = first[b], hi = first[b + 1];
        value[b] = lo == hi ? HUGE_VAL : rd[lo] == rd[hi - 1] ? rd[lo] : NAN;
    }
}

/* the run of relevant items (start lo, end *hi) whose distance is d, a relevant distance */
static inline int64_t run_of(const bucketmap *m, const int64_t *first, const double *value, const double *rd,
                             const relitem *rel, double d, int64_t *hi)
{
    const int64_t b = bucket_of(m, d);
    int64_t lo = first[b];
    *hi = first[b + 1];
    if (value[b] != value[b]) {  /* several distances in the bucket */
        lo += lower_bound_bf(rd + lo, *hi - lo, d);
        *hi = lower_d(rel, lo, *hi, d, 1);
    }
    return lo;
}

/* stable / reverse: the pass reached relevant item (distance d) of a run; the tied items seen
 * since the run's previous relevant item stand between the two (in the policy's order) */
static void tie_snapshot(const bucketmap *m, const int64_t *first, const double *value, const double *rd,
                         const relitem *rel, double d, int64_t ties, const int64_t *eq, int64_t *seen,
                         int64_t *last, int64_t *before)
{
    int64_t hi, lo = run_of(m, first, value, rd, rel, d, &hi);
    const int64_t c = seen[lo]++;  /* relevant items of the run before this one, by index */
    before[ties == T_STABLE ? lo + c : hi - c] += eq[lo] - last[lo];
    last[lo] = eq[lo];
}

/* the concrete policies: the items tied with each run (eq[run start]) into before[]:
 * pessimistic before the run, optimistic after it, stable/reverse those not yet placed by
 * tie_snapshot after (stable) or before (reverse) every relevant item of the run */
static void ties_to_before(int64_t ties, const double *rd, int64_t G, const int64_t *eq, const int64_t *last,
                           int64_t *before)
{
    int64_t lo = 0, hi;
    for (; lo < G; lo = hi) {
        for (hi = lo + 1; hi < G && rd[hi] == rd[lo]; hi++) continue;
        if (ties == T_PESSIMISTIC) before[lo] += eq[lo];
        else if (ties == T_OPTIMISTIC) before[hi] += eq[lo];
        else before[ties == T_STABLE ? hi : lo] += eq[lo] - last[lo];
    }
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
            acc |= (b & RC_F32_EXP_MASK) + RC_F32_EXP_ONE;
        }
        if (!(acc & RC_F32_SIGN)) return -1;
        for (j = 0; j < n; j++)
            if (!(fabsf(x32[j]) <= FLT_MAX)) return j;
    } else {
        uint64_t acc = 0;
        for (j = 0; j < n; j++) {
            uint64_t b;
            memcpy(&b, x64 + j, sizeof(b));
            acc |= (b & RC_F64_EXP_MASK) + RC_F64_EXP_ONE;
        }
        if (!(acc & RC_F64_SIGN)) return -1;
        for (j = 0; j < n; j++)
            if (!(fabs(x64[j]) <= DBL_MAX)) return j;
    }
    return -1;
}

static inline __attribute__((always_inline)) void
query_float_body(const rc_input *in, const rc_options *o, const dd *Hh, const dd *ideal1, int64_t q,
                 workspace *w, qres *res, rc_output *out, const float *D32, const double *D64,
                 const int is32)
{
    const int64_t N = in->n_gallery, ties = o->ties;
    uint8_t *skip = w->skip;
    relitem *rel = w->rel;
    double *rd = w->rd;
    int64_t *before = w->before, *eq = w->eq;
    int64_t j, G = 0, Np, i, bad;
    const int64_t *first = w->bucket;
    const double *bval = w->bucket_value;
    bucketmap bm;
    rankin rin;

#define RC_D(jj) (is32 ? (double)D32[jj] : D64[jj])
    if (is32) D32 += q * N; else D64 += q * N;
    bad = first_nonfinite(is32 ? D32 : NULL, D64, N);
    if (bad >= 0) {  /* NaN or inf (the front end rejects them) */
        out->status[q] = Q_NONFINITE;
        out->err_a[q] = bad;
        return;
    }
    Np = N - (rc_has_junk(in) ? rc_build_junk(in, q, skip) : (memset(skip, 0, (size_t)N), 0));

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
    } else if (in->rel_kind == REL_MATRIX) {
        /* a row of 0/1 flags, mostly 0: eight flags at a time, an all-zero word skipped */
        const uint8_t *row = in->relevance + q * N;
        for (j = 0; j < N; j += 8) {
            const int64_t stop = j + 8 < N ? j + 8 : N;
            int64_t t;
            uint64_t word = 1;  /* a short tail is read flag by flag */
            if (stop - j == 8) memcpy(&word, row + j, sizeof(word));
            if (!word) continue;
            for (t = j; t < stop; t++) {
                if (row[t] && !skip[t]) {
                    rel[G].d = RC_D(t);
                    rel[G].j = t;
                    G++;
                }
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
        if (k + 1 <= Np / RC_HEAP_SELECT_DIVISOR) {
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
        rc_metrics_zero(o, res);
        return;
    }
    for (i = 0; i < G; i++) skip[rel[i].j] = RC_SKIP_RELEVANT;
    /* relevant items by (distance, index): index descending under "reverse" */
    if (G > 1) qsort(rel, (size_t)G, sizeof(relitem), ties == T_REVERSE ? cmp_rel_desc_index : cmp_rel_asc);
    for (i = 0; i < G; i++) rd[i] = rel[i].d;
    bucket_setup(rd, G, N, w->bucket, w->bucket_value, &bm);
    rin.disc = in->discounts;
    rin.gr = NULL;
    rin.ideal1 = ideal1;
    if (in->grades) {  /* the grades in rank order; a tie run by grade under opt./pess. */
        const uint8_t *grow = in->grades + q * N;
        for (i = 0; i < G; i++) w->gr[i] = grow[rel[i].j];
        if (ties == T_OPTIMISTIC || ties == T_PESSIMISTIC) {
            int64_t lo = 0, hi;
            for (; lo < G; lo = hi) {
                for (hi = lo + 1; hi < G && rel[hi].d == rel[lo].d; hi++) continue;
                if (hi - lo > 1) rc_sort_grades(w->gr + lo, hi - lo, ties == T_OPTIMISTIC);
            }
        }
        rin.gr = w->gr;
    }
    /* before[i] += 1 for an item preceding relevant items i, i+1, ... but not i-1.  Four
     * (RC_INTERLEAVE) interleaved copies (by j mod 4): most items land in the same few slots (often slot G,
     * past every relevant item), and one counter would serialise them through memory. */
    memset(before, 0, (size_t)(RC_INTERLEAVE * (G + 1)) * sizeof(int64_t));
    memset(eq, 0, (size_t)(G + 1) * sizeof(int64_t));
    if (ties == T_STABLE || ties == T_REVERSE) {
        memset(w->tie_seen, 0, (size_t)(G + 1) * sizeof(int64_t));
        memset(w->tie_last, 0, (size_t)(G + 1) * sizeof(int64_t));
    }
    /* One pass in gallery order.  An item below or above every relevant distance of its run
     * counts in before[]; an item tied with a run counts in eq[run start], whatever the tie
     * policy (no branch on the data: ties are common and unpredictable); the concrete
     * policies move eq[] into before[] afterwards.  stable/reverse need to know where a tied
     * item stands among the run's relevant items by gallery index: the pass meets the run's
     * relevant items in index order, so at each one the tied items seen since the previous
     * one (eq now minus eq then) go to the gap between the two. */
    for (j = 0; j < N; j++) {
        double d, v;
        int64_t lo, hi, b, tie;
        int64_t *bf = before + (j & (RC_INTERLEAVE - 1)) * (G + 1);
        d = RC_D(j);
        if (skip[j]) {
            if (skip[j] == RC_SKIP_RELEVANT && (ties == T_STABLE || ties == T_REVERSE))
                tie_snapshot(&bm, first, bval, rd, rel, d, ties, eq, w->tie_seen, w->tie_last, before);
            continue;
        }
        b = bucket_of(&bm, d);
        lo = first[b];
        hi = first[b + 1];
        v = bval[b];
        if (v != v) {  /* several relevant distances share the bucket: search among them */
            lo += lower_bound_bf(rd + lo, hi - lo, d);
            tie = lo < hi && rd[lo] == d;
            hi = lo;
        } else {       /* one (v) or none (v = +inf): below v gap lo, above v gap hi */
            tie = d == v;
        }
        eq[lo] += tie;
        bf[d > v ? hi : lo] += !tie;  /* (items past every relevant one land in before[G], unread) */
    }
    for (i = 0; i <= G; i++) {
        int64_t c;
        for (c = 1; c < RC_INTERLEAVE; c++) before[i] += before[c * (G + 1) + i];
    }
#undef RC_D
    if (ties != T_EXPECTED && ties != T_GROUPED) ties_to_before(ties, rd, G, eq, w->tie_last, before);
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
        if (ties == T_EXPECTED) rc_metrics_expected(g, ng, G, Np, o, &rin, Hh, res);
        else rc_metrics_grouped(g, ng, G, Np, o, &rin, res);
    } else {
        int64_t acc = 0;
        for (i = 0; i < G; i++) {
            acc += before[i];
            w->ranks[i] = i + 1 + acc;
        }
        rc_metrics_ranks(w->ranks, G, Np, o, &rin, res);
    }
}

void rc_query_float(const rc_input *in, const rc_options *o, const dd *Hh, const dd *ideal1,
                    int64_t q, workspace *w, qres *res, rc_output *out)
{
    if (in->dist_kind == D_F32)
        query_float_body(in, o, Hh, ideal1, q, w, res, out, (const float *)in->distances, NULL, 1);
    else
        query_float_body(in, o, Hh, ideal1, q, w, res, out, NULL, (const double *)in->distances, 0);
}
