/* rc_float.c -- one query of float32 / float64 distances: the relevant distances sorted, every
 * other item binary-searched among them; `grouped` with a cut-off by a heap or quickselect. */
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
    double dmax;
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
    for (i = 0; i < G; i++) skip[rel[i].j] = 1;
    /* relevant items by (distance, index): index descending under "reverse" */
    if (G > 1) qsort(rel, (size_t)G, sizeof(relitem), ties == T_REVERSE ? cmp_rel_desc_index : cmp_rel_asc);
    for (i = 0; i < G; i++) rd[i] = rel[i].d;
    dmax = rd[G - 1];
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
    if (ties == T_EXPECTED || ties == T_GROUPED) memset(eq, 0, (size_t)(G + 1) * sizeof(int64_t));
    for (j = 0; j < N; j++) {
        double d;
        int64_t lo, a, b;
        int64_t *bf = before + (j & (RC_INTERLEAVE - 1)) * (G + 1);
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
    for (i = 0; i <= G; i++) {
        int64_t c;
        for (c = 1; c < RC_INTERLEAVE; c++) before[i] += before[c * (G + 1) + i];
    }
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
