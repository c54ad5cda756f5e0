/* rc_float.h -- what the float path's units share (rc_float.c: one query; rc_float_gaps.c: the
 * bucket table, the pass's counters, the tie policies and the split at tau; rc_float_filter.c:
 * the filters of the items to place, checking the row on the same read; rc_float_rel.c: the
 * relevant items of a relevance row; rc_float_select.c: the finite check, the counts behind a
 * distance, a cut-off inside a tie group; rc_float_place.c and rc_float_thresh.c: the AVX2 and
 * threshold passes over a whole float32 row).
 * The helpers of the placing pass are inline here: they run once per item. */
#ifndef RC_FLOAT_H
#define RC_FLOAT_H
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

/* room for w->rel[0 .. G] (doubling, so a query grows it O(log G) times) */
static inline int rc_rel_room(workspace *w, int64_t G)
{
    return G < w->rel_cap ? 0 : grow((void **)&w->rel, &w->rel_cap, max64(2 * w->rel_cap, G + 1024), sizeof(relitem));
}

/* ---- float distances: one query ----------------------------------------------------------- */
/* the distance of item j of a row: the value as stored, negated when the row holds similarity
 * scores (exact); is32 and neg are constants of each compiled copy of the callers */
static inline __attribute__((always_inline)) double
row_dist(const float *D32, const double *D64, const int is32, const int neg, int64_t j)
{
    const double x = is32 ? (double)D32[j] : D64[j];
    return neg ? -x : x;
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
 * lo, 1 .. nb from lo on by 1 + trunc(fl(fl(d - lo) * scale)) clamped to [0, nb - 1], plus one
 * above the largest hi.  Rounded subtraction and multiplication by scale >= 0 never reverse an
 * order, so d1 <= d2 gives bucket(d1) <= bucket(d2) whatever the rounding (a NaN product, from
 * an overflowing range, goes to the top: still monotone; an item above hi lands past every
 * bucket that holds a relevant distance).  Hence an item in a bucket that holds no relevant
 * distance lies strictly between the same two relevant distances as its whole bucket: its gap
 * is read from the table, exact, without a search.  Items and relevant distances go through
 * this one function, so equal distances always share a bucket.  No branch: which side of lo
 * and hi an item falls is a coin flip for the branch predictor. */
typedef struct { double lo, hi, scale, top; int64_t nb; } bucketmap;

static inline __attribute__((always_inline)) int64_t bucket_of(const bucketmap *m, double d)
{
    double t = (d - m->lo) * m->scale;
    t = t < m->top ? t : m->top;  /* rounding past nb - 1, and NaN, go to the top */
    t = t > 0.0 ? t : 0.0;        /* below lo (masked to bucket 0 below) */
    return ((1 + (int64_t)t) & -(int64_t)(d >= m->lo)) + (int64_t)(d > m->hi);
}


/* the run of relevant items (start lo, end *hi) whose distance is d, a relevant distance */
static inline int64_t run_of(const bucketmap *m, const bucketent *t, const double *rd, const relitem *rel,
                             double d, int64_t *hi)
{
    const int64_t b = bucket_of(m, d);
    int64_t lo = t[b].first;
    *hi = t[b + 1].first;
    if (t[b].value != t[b].value) {  /* several distances in the bucket */
        lo += lower_bound_bf(rd + lo, *hi - lo, d);
        *hi = lower_d(rel, lo, *hi, d, 1);
    }
    return lo;
}

/* the pass's counters, in nc copies: copy c (items j with j mod nc = c) holds slot 2 g for the
 * items in gap g (closer than relevant item g, farther than g - 1) and slot 2 g + 1 for the
 * items tied with the run of relevant items starting at g; 32 bits, folded into the int64
 * before[] and eq[] every RC_COUNT_CHUNK items */
#define RC_COUNT_CHUNK ((int64_t)1 << 30)

/* the prefix path: the relevant item ranked last, beyond tau (m: relevant items at its
 * distance; 0: not counted) */
typedef struct { double d; int64_t j, m; } relfar;

/* ---- rc_float_gaps.c ---------------------------------------------------------------------- */
RC_INTERNAL int64_t rc_bucket_count(int64_t G, int64_t N);
RC_INTERNAL void rc_bucket_setup(const double *rd, int64_t G, int64_t nb, bucketent *t, bucketmap *m);
RC_INTERNAL void rc_fold_counts(uint32_t *cnt, int64_t nc, int64_t G, int64_t *before, int64_t *eq);
RC_INTERNAL void rc_tie_snapshot(int64_t lo, int64_t hi, int64_t ties, const int64_t *eq, const uint32_t *cnt,
                                 int64_t nc, int64_t G, int64_t counted, int64_t *seen, int64_t *last,
                                 int64_t *before);
RC_INTERNAL void rc_ties_to_before(int64_t ties, const double *rd, int64_t G, const int64_t *eq,
                                   const int64_t *last, int64_t *before);
RC_INTERNAL int rc_grow_relevant(workspace *w, int64_t G, int graded);
RC_INTERNAL int64_t rc_split_far(relitem *rel, int64_t G, double tau, int64_t ties, relitem *tmp, relfar *far);

/* ---- rc_float_place.c --------------------------------------------------------------------- */
/* the AVX2 pass suits a float32 row whose skipped items (junk, relevant) are few: a step of
 * eight that holds one goes to the scalar code */
static inline int rc_place_fast_ok(int is32, int64_t N, int64_t Np, int64_t G)
{
#ifdef RC_HAVE_AVX2_DISPATCH
    return is32 && rc_use_avx2 && (N - Np + G) * RC_SIDE_SPARSE <= N;
#else
    (void)is32; (void)N; (void)Np; (void)G;
    return 0;
#endif
}
RC_INTERNAL int64_t rc_side_stride(int64_t nb);
RC_INTERNAL int64_t rc_side_copies(int64_t nb);
RC_INTERNAL void rc_side_values(const bucketent *t, int64_t nb, float *bval);
RC_INTERNAL int64_t rc_side_ties(const uint32_t *sides, int64_t copies, int64_t stride, const bucketmap *m, double d);
RC_INTERNAL void rc_fold_sides(uint32_t *sides, int64_t copies, int64_t stride, const bucketent *t, int64_t nb,
                               int64_t *before, int64_t *eq);
#ifdef RC_HAVE_AVX2_DISPATCH
RC_INTERNAL int64_t rc_place_avx2(const float *row, int neg, const uint8_t *skip, int64_t j, int64_t end,
                                  const bucketmap *m, const bucketent *t, const float *bval, const double *rd,
                                  uint32_t *sides, int64_t copies, int64_t stride, uint32_t *cnt, int64_t nc,
                                  int64_t Gp, int *nonfinite);
#endif

/* ---- rc_float_thresh.c -------------------------------------------------------------------- */
/* the threshold pass's thresholds and counters (rc_thresh_setup) */
typedef struct {
    const float *thr;   /* 8 T: u_k over eight lanes, k < K, then NaN */
    uint32_t *lt, *eq;  /* 8 T each: per-lane counts of the items closer than / tied with u_k */
    float tab[64];      /* the u_k by slot_of (NaN: an empty slot) */
    uint32_t mul;       /* slot_of's multiplier; 0: none keeps the u_k apart (ties counted everywhere) */
    int64_t K, T;       /* runs, thresholds (K padded to a multiple of four) */
} rc_thresh;
RC_INTERNAL int64_t rc_thresh_runs(const double *rd, int64_t G, int64_t most);
RC_INTERNAL void rc_thresh_setup(const double *rd, int64_t G, float *thr, uint32_t *cnt, rc_thresh *th);
RC_INTERNAL int64_t rc_thresh_ties(const rc_thresh *th, double d);
RC_INTERNAL void rc_fold_thresh(rc_thresh *th, const double *rd, int64_t G, int64_t placed, int64_t *before,
                                int64_t *eq);
#ifdef RC_HAVE_AVX2_DISPATCH
RC_INTERNAL int64_t rc_thresh_avx2(const float *row, int neg, const uint8_t *skip, int64_t j, int64_t end,
                                   const rc_thresh *th, int64_t *placed, int *nonfinite);
#endif

/* ---- rc_float_rel.c ----------------------------------------------------------------------- */
RC_INTERNAL int64_t rc_count_flags(const uint8_t *row, int64_t N);
RC_INTERNAL int rc_relevant_from_flags(const uint8_t *row, int64_t N, const uint8_t *skip, workspace *w, int64_t *G);

/* ---- rc_float_select.c -------------------------------------------------------------------- */
RC_INTERNAL int64_t rc_first_nonfinite(const float *x32, const double *x64, int64_t n);
RC_INTERNAL int64_t rc_row_filter(const float *D32, const double *D64, int is32, int neg, int64_t N, double p,
                                  int64_t L, const uint8_t *junk_mask, relitem *cand, int64_t cap, double *scratch,
                                  float *tops, int64_t *bad);
RC_INTERNAL void rc_last_counts(const float *D32, const double *D64, int is32, int neg, int64_t N, double dl,
                                int64_t jl, const uint8_t *junk_mask, int64_t *below);
RC_INTERNAL int rc_cutoff_group(const float *D32, const double *D64, int is32, int neg, int64_t N,
                                const uint8_t *skip, int64_t Np, int64_t k, workspace *w, int64_t *lt, int64_t *ne);
#endif
