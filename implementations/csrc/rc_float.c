/* rc_float.c -- one query of float32 / float64 distances (or similarity scores, read negated):
 * the relevant distances sorted, every other item placed among them through a bucket table
 * (binary-searched only inside a bucket that holds a relevant distance); with a cut-off, only
 * the items up to the L-th smallest distance are placed (the prefix path), else, when they are
 * few, only the items up to the farthest relevant distance (the bounded pass); `grouped` with
 * a cut-off by a heap or quickselect. */
#include "rc_core.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

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

/* the number of buckets for G relevant items among N: about RC_BUCKETS_PER_RELEVANT per
 * relevant item (a power of two), at most RC_BUCKETS_MAX and about N */
static int64_t bucket_count(int64_t G, int64_t N)
{
    int64_t nb = 1;
    while (nb < RC_BUCKETS_PER_RELEVANT * G && nb < N && nb < RC_BUCKETS_MAX) nb <<= 1;
    return nb;
}

/* bucket map over rd[0 .. G-1] (sorted, G >= 1) into t[0 .. nb + 2]: t[b].first = relevant
 * distances in buckets below b; t[b].value = the one relevant distance in bucket b, +inf for
 * none (every distance is below it), NaN for several different ones.  One entry holds both,
 * so an item reads one cache line (two at a line's end) */
static void bucket_setup(const double *rd, int64_t G, int64_t nb, bucketent *t, bucketmap *m)
{
    const double range = rd[G - 1] - rd[0];
    int64_t i, b;
    m->lo = rd[0];
    m->hi = rd[G - 1];
    m->nb = nb;
    m->top = (double)(nb - 1);
    m->scale = range > 0 && range <= DBL_MAX ? (double)(nb - 1) / range : 0.0;
    if (!(m->scale <= DBL_MAX)) m->scale = 0.0;  /* a subnormal range: one bucket */
    for (b = 0; b < nb + 3; b++) t[b].first = 0;
    for (i = 0; i < G; i++) t[bucket_of(m, rd[i]) + 1].first++;
    for (b = 1; b < nb + 3; b++) t[b].first += t[b - 1].first;
    for (b = 0; b < nb + 2; b++) {
        const int64_t lo = t[b].first, hi = t[b + 1].first;
        t[b].value = lo == hi ? HUGE_VAL : rd[lo] == rd[hi - 1] ? rd[lo] : NAN;
    }
    t[nb + 2].value = HUGE_VAL;
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

static void fold_counts(uint32_t *cnt, int64_t nc, int64_t G, int64_t *before, int64_t *eq)
{
    const int64_t S = 2 * (G + 1);
    int64_t g, c;
    for (c = 0; c < nc; c++) {
        for (g = 0; g <= G; g++) {
            before[g] += cnt[c * S + 2 * g];
            eq[g] += cnt[c * S + 2 * g + 1];
        }
    }
    memset(cnt, 0, (size_t)(nc * S) * sizeof(uint32_t));
}

/* stable / reverse: the pass reached a relevant item of the run rel[lo .. hi); the tied items
 * seen since the run's previous relevant item stand between the two (in the policy's order) */
static void tie_snapshot(int64_t lo, int64_t hi, int64_t ties, const int64_t *eq, const uint32_t *cnt, int64_t nc,
                         int64_t G, int64_t *seen, int64_t *last, int64_t *before)
{
    int64_t now = eq[lo], c2;
    const int64_t c = seen[lo]++;  /* relevant items of the run before this one, by index */
    for (c2 = 0; c2 < nc; c2++) now += cnt[c2 * 2 * (G + 1) + 2 * lo + 1];
    before[ties == T_STABLE ? lo + c : hi - c] += now - last[lo];
    last[lo] = now;
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


/* ---- the prefix path: a cut-off whose metrics read only the first L ranks ---------------- */
/* With a cut-off k (any AP@k denominator but dcmh, which reads the first min(k, R) relevant
 * items wherever they are), every metric reads ranks up to L = max(k, R, max_rank) and, for
 * INP, the rank of the last relevant item: AP@k, P@k, R@k, nDCG@k, RR@k and the CMC read ranks
 * <= max(k, max_rank), R-precision and AP@R ranks <= R (spec §7).  So only the items at
 * distance <= tau, the L-th smallest distance, need to be placed among the relevant ones:
 * every item tied with a relevant item at distance <= tau is among them, so those relevant
 * items get their exact ranks (or groups).  A relevant item beyond tau gets a rank (or group
 * start) that counts only those items: too small, but past L, where no metric reads it; the
 * last relevant item's exact rank (or group) is then set from three counts over the row. */

/* the pivot: a distance with about RC_PREFIX_AIM x L of the Np items at or below it, from a
 * sample spread over the row (rank estimates only: a wrong guess costs a retry or the full
 * pass, never a wrong number) */
static double prefix_pivot(const float *D32, const double *D64, int is32, int neg, int64_t N, int64_t Np,
                           int64_t L, double *buf)
{
    const int64_t S = RC_PREFIX_SAMPLE;
    int64_t s, t;
    for (s = 0; s < S; s++)  /* S spread items */
        buf[s] = row_dist(D32, D64, is32, neg, (int64_t)(((double)s + 0.5) * (double)N / (double)S));
    t = (int64_t)((double)RC_PREFIX_AIM * (double)L * (double)S / (double)Np) + 8;
    if (t > S) t = S;
    return rc_kth_smallest(buf, S, t);
}

/* bit t set: item t of x[0 .. RC_PREFIX_BLOCK) is at distance <= p (x as the row holds it;
 * -x <= p is x >= -p, exactly, for scores) */
static inline uint32_t block_mask32(const float *x, float p, int neg)
{
    uint32_t m = 0;
    int t;
#if defined(__SSE2__)
    const __m128 pv = _mm_set1_ps(neg ? -p : p);
    for (t = 0; t < RC_PREFIX_BLOCK; t += 4) {
        const __m128 v = _mm_loadu_ps(x + t);
        m |= (uint32_t)_mm_movemask_ps(neg ? _mm_cmpge_ps(v, pv) : _mm_cmple_ps(v, pv)) << t;
    }
#else
    for (t = 0; t < RC_PREFIX_BLOCK; t++) m |= (uint32_t)(neg ? -x[t] <= p : x[t] <= p) << t;
#endif
    return m;
}

static inline uint32_t block_mask64(const double *x, double p, int neg)
{
    uint32_t m = 0;
    int t;
#if defined(__SSE2__)
    const __m128d pv = _mm_set1_pd(neg ? -p : p);
    for (t = 0; t < RC_PREFIX_BLOCK; t += 2) {
        const __m128d v = _mm_loadu_pd(x + t);
        m |= (uint32_t)_mm_movemask_pd(neg ? _mm_cmpge_pd(v, pv) : _mm_cmple_pd(v, pv)) << t;
    }
#else
    for (t = 0; t < RC_PREFIX_BLOCK; t++) m |= (uint32_t)(neg ? -x[t] <= p : x[t] <= p) << t;
#endif
    return m;
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* the same masks, eight floats (four doubles) a step */
__attribute__((target("avx2"))) static inline uint32_t block_mask32_avx2(const float *x, float p, int neg)
{
    const __m256 pv = _mm256_set1_ps(neg ? -p : p);
    uint32_t m = 0;
    int t;
    for (t = 0; t < RC_PREFIX_BLOCK; t += 8) {
        const __m256 v = _mm256_loadu_ps(x + t);
        m |= (uint32_t)_mm256_movemask_ps(neg ? _mm256_cmp_ps(v, pv, _CMP_GE_OQ) : _mm256_cmp_ps(v, pv, _CMP_LE_OQ))
             << t;
    }
    return m;
}

__attribute__((target("avx2"))) static inline uint32_t block_mask64_avx2(const double *x, double p, int neg)
{
    const __m256d pv = _mm256_set1_pd(neg ? -p : p);
    uint32_t m = 0;
    int t;
    for (t = 0; t < RC_PREFIX_BLOCK; t += 4) {
        const __m256d v = _mm256_loadu_pd(x + t);
        m |= (uint32_t)_mm256_movemask_pd(neg ? _mm256_cmp_pd(v, pv, _CMP_GE_OQ) : _mm256_cmp_pd(v, pv, _CMP_LE_OQ))
             << t;
    }
    return m;
}
#endif

/* the non-junk items at distance <= p, in gallery order, into cand[0 .. n); returns n, or -1
 * when more than cap.  Blocks of RC_PREFIX_BLOCK items are compared at once into a bit mask
 * (most blocks hold few such items), and only its set bits are visited.  avx2: the AVX2
 * masks (only in the copy compiled for AVX2, prefix_filter_avx2). */
static inline __attribute__((always_inline)) int64_t
prefix_filter_body(const float *D32, const double *D64, const int is32, const int neg, int64_t N, double p,
                   const uint8_t *junk_mask, relitem *cand, int64_t cap, const int avx2)
{
    int64_t j0, n = 0;
    const int64_t full = N - N % RC_PREFIX_BLOCK;
    (void)avx2;
    for (j0 = 0; j0 < N; j0 += RC_PREFIX_BLOCK) {
        uint32_t m = 0;
        if (j0 < full) {
#ifdef RC_HAVE_AVX2_DISPATCH
            if (avx2)
                m = is32 ? block_mask32_avx2(D32 + j0, (float)p, neg) : block_mask64_avx2(D64 + j0, p, neg);
            else
#endif
                m = is32 ? block_mask32(D32 + j0, (float)p, neg) : block_mask64(D64 + j0, p, neg);
        } else {  /* the short last block */
            int64_t t;
            for (t = 0; j0 + t < N; t++) m |= (uint32_t)(row_dist(D32, D64, is32, neg, j0 + t) <= p) << t;
        }
        while (m) {
            const int64_t j = j0 + __builtin_ctz(m);
            m &= m - 1;
            if (junk_mask && junk_mask[j] == 1) continue;
            if (n == cap) return -1;
            cand[n].d = row_dist(D32, D64, is32, neg, j);
            cand[n].j = j;
            n++;
        }
    }
    return n;
}

#ifdef RC_HAVE_AVX2_DISPATCH
__attribute__((target("avx2"))) static int64_t
prefix_filter_avx2(const float *D32, const double *D64, int is32, int neg, int64_t N, double p,
                   const uint8_t *junk_mask, relitem *cand, int64_t cap)
{
    if (is32) return neg ? prefix_filter_body(D32, NULL, 1, 1, N, p, junk_mask, cand, cap, 1)
                         : prefix_filter_body(D32, NULL, 1, 0, N, p, junk_mask, cand, cap, 1);
    return neg ? prefix_filter_body(NULL, D64, 0, 1, N, p, junk_mask, cand, cap, 1)
               : prefix_filter_body(NULL, D64, 0, 0, N, p, junk_mask, cand, cap, 1);
}
#endif

/* prefix_filter_body with AVX2 where the CPU has it (rc_use_avx2), else SSE2 / plain C */
static inline __attribute__((always_inline)) int64_t
prefix_filter(const float *D32, const double *D64, const int is32, const int neg, int64_t N, double p,
              const uint8_t *junk_mask, relitem *cand, int64_t cap)
{
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2) return prefix_filter_avx2(D32, D64, is32, neg, N, p, junk_mask, cand, cap);
#endif
    return prefix_filter_body(D32, D64, is32, neg, N, p, junk_mask, cand, cap, 0);
}

/* over x[0 .. n): *l += items closer than t (below it; above it for scores), *e += items
 * equal to t, leaving out the junk (jm byte 1; jm NULL: none).  SSE2 where there is SSE2
 * (four floats a step, the counts in 32-bit lanes: n < 2^31 per call), else plain loops. */
static void count_closer32(const float *x, int64_t n, float t, int neg, const uint8_t *jm, uint32_t *l, uint32_t *e)
{
    int64_t j = 0;
    uint32_t cl = 0, ce = 0;
#if defined(__SSE2__)
    const __m128 tv = _mm_set1_ps(t);
    const __m128i one = _mm_set1_epi32(1), zero = _mm_setzero_si128();
    __m128i al = zero, ae = zero;
    uint32_t lanes[4];
    for (; j + 4 <= n; j += 4) {
        const __m128 v = _mm_loadu_ps(x + j);
        __m128i lt = _mm_castps_si128(neg ? _mm_cmpgt_ps(v, tv) : _mm_cmplt_ps(v, tv));
        __m128i eq = _mm_castps_si128(_mm_cmpeq_ps(v, tv));
        if (jm) {  /* four mask bytes to four lanes; a lane equal to 1 is junk */
            int32_t b4;
            __m128i m;
            memcpy(&b4, jm + j, sizeof(b4));
            m = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(b4), zero), zero);
            m = _mm_cmpeq_epi32(m, one);
            lt = _mm_andnot_si128(m, lt);
            eq = _mm_andnot_si128(m, eq);
        }
        al = _mm_sub_epi32(al, lt);  /* a true lane is -1 */
        ae = _mm_sub_epi32(ae, eq);
    }
    _mm_storeu_si128((__m128i *)lanes, al);
    cl = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    _mm_storeu_si128((__m128i *)lanes, ae);
    ce = lanes[0] + lanes[1] + lanes[2] + lanes[3];
#endif
    for (; j < n; j++) {
        const uint32_t keep = jm ? jm[j] != 1 : 1;
        cl += keep & (uint32_t)(neg ? x[j] > t : x[j] < t);
        ce += keep & (uint32_t)(x[j] == t);
    }
    *l += cl;
    *e += ce;
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* count_closer32, eight floats a step (the SSE2 loop's lanes, twice as wide); n < 2^31 */
__attribute__((target("avx2"))) static void
count_closer32_avx2(const float *x, int64_t n, float t, int neg, const uint8_t *jm, uint32_t *l, uint32_t *e)
{
    const __m256 tv = _mm256_set1_ps(t);
    const __m256i one = _mm256_set1_epi32(1);
    __m256i al = _mm256_setzero_si256(), ae = _mm256_setzero_si256();
    uint32_t lanes[8], cl = 0, ce = 0;
    int64_t j = 0;
    int c;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_loadu_ps(x + j);
        __m256i lt = _mm256_castps_si256(neg ? _mm256_cmp_ps(v, tv, _CMP_GT_OQ) : _mm256_cmp_ps(v, tv, _CMP_LT_OQ));
        __m256i eq = _mm256_castps_si256(_mm256_cmp_ps(v, tv, _CMP_EQ_OQ));
        if (jm) {  /* eight mask bytes to eight lanes; a lane equal to 1 is junk */
            int64_t b8;
            __m256i m;
            memcpy(&b8, jm + j, sizeof(b8));
            m = _mm256_cmpeq_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(b8)), one);
            lt = _mm256_andnot_si256(m, lt);
            eq = _mm256_andnot_si256(m, eq);
        }
        al = _mm256_sub_epi32(al, lt);  /* a true lane is -1 */
        ae = _mm256_sub_epi32(ae, eq);
    }
    _mm256_storeu_si256((__m256i *)lanes, al);
    for (c = 0; c < 8; c++) cl += lanes[c];
    _mm256_storeu_si256((__m256i *)lanes, ae);
    for (c = 0; c < 8; c++) ce += lanes[c];
    *l += cl;
    *e += ce;
    if (j < n) count_closer32(x + j, n - j, t, neg, jm ? jm + j : NULL, l, e);  /* the tail */
}
#endif

static void count_closer64(const double *x, int64_t n, double t, int neg, const uint8_t *jm, uint32_t *l, uint32_t *e)
{
    int64_t j;
    uint32_t cl = 0, ce = 0;
    for (j = 0; j < n; j++) {
        const uint32_t keep = jm ? jm[j] != 1 : 1;
        cl += keep & (uint32_t)(neg ? x[j] > t : x[j] < t);
        ce += keep & (uint32_t)(x[j] == t);
    }
    *l += cl;
    *e += ce;
}

/* counts over the non-junk items for the relevant item ranked last (distance dl, index jl):
 * below[0] items closer, below[1] items at dl with index < jl, below[2] items at dl.  float32
 * is compared as float32 (dl is one of the row's values, so exact); chunks of at most 2^30
 * items keep the 32-bit counts exact. */
static void last_counts(const float *D32, const double *D64, int is32, int neg, int64_t N, double dl, int64_t jl,
                        const uint8_t *junk_mask, int64_t *below)
{
    const int64_t chunk = (int64_t)1 << 30;
    const double x64 = neg ? -dl : dl;  /* dl as the row holds it */
    int64_t lt = 0, eq[2] = {0, 0}, part, c0;
    for (part = 0; part < 2; part++) {
        const int64_t lo = part ? jl : 0, hi = part ? N : jl;
        for (c0 = lo; c0 < hi; c0 += chunk) {
            const int64_t n = (hi - c0 > chunk ? c0 + chunk : hi) - c0;
            const uint8_t *jm = junk_mask ? junk_mask + c0 : NULL;
            uint32_t l = 0, e = 0;
#ifdef RC_HAVE_AVX2_DISPATCH
            if (is32 && rc_use_avx2) count_closer32_avx2(D32 + c0, n, (float)x64, neg, jm, &l, &e);
            else
#endif
            if (is32) count_closer32(D32 + c0, n, (float)x64, neg, jm, &l, &e);
            else count_closer64(D64 + c0, n, x64, neg, jm, &l, &e);
            lt += l;
            eq[part] += e;
        }
    }
    below[0] = lt;
    below[1] = eq[0];
    below[2] = eq[0] + eq[1];
}

/* room for G relevant items in every G-sized array of the float path (0, or -1: no memory) */
static int grow_relevant(workspace *w, int64_t G, int graded)
{
    const size_t n = (size_t)G + 1;
    if (G + 1 <= w->g_cap) return 0;
    /* one capacity for all of them: each is resized to n elements (realloc keeps the old one
     * on failure, and the capacity stays the old one until every array has grown) */
    if (resize((void **)&w->rd, n * sizeof(double)) || resize((void **)&w->ranks, n * sizeof(int64_t)) ||
        resize((void **)&w->groups, n * sizeof(group)) || resize((void **)&w->tie_seen, n * sizeof(int64_t)) ||
        resize((void **)&w->tie_last, n * sizeof(int64_t)) || resize((void **)&w->before, n * sizeof(int64_t)) ||
        resize((void **)&w->eq, n * sizeof(int64_t)) || resize((void **)&w->runs, 2 * n * sizeof(int64_t)) ||
        (graded && resize((void **)&w->gr, n)) ||
        resize((void **)&w->cnt, RC_INTERLEAVE * 2 * n * sizeof(uint32_t)))
        return -1;
    w->g_cap = G + 1;
    return 0;
}

/* room for rel[0 .. G] (doubling, so a query grows it O(log G) times) */
static inline int rel_room(workspace *w, int64_t G)
{
    return G < w->rel_cap ? 0 : grow((void **)&w->rel, &w->rel_cap, max64(2 * w->rel_cap, G + 1024), sizeof(relitem));
}

static inline __attribute__((always_inline)) void
query_float_body(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                 workspace *w, qres *res, rc_output *out, const float *D32, const double *D64,
                 const int is32, const int neg)
{
    const int64_t N = in->n_gallery, ties = o->ties;
    /* stable / reverse: tied items are placed among a run's relevant items by gallery index */
    const int snapshots = ties == T_STABLE || ties == T_REVERSE;
    uint8_t *skip = w->skip;
    relitem *rel;
    double *rd;
    int64_t *before, *eq;
    uint32_t *cnt;
    int64_t nc;  /* copies of the pass's counters: RC_INTERLEAVE while they fit in L1, else 1 */
    int64_t j, G = 0, Np, i, bad;
    const bucketent *tab;
    bucketmap bm;
    rankin rin;
    int64_t n_red = -1;  /* the prefix path: items cand[0 .. n_red) placed; -1: every item */
    int64_t last[3] = {0, 0, 0}; /* the prefix path: last_counts() of the last relevant item */
    int last_beyond = 0; /* the prefix path: the last relevant item lies beyond tau */
    const int junk_in = rc_has_junk(in);

#define RC_D(jj) row_dist(D32, D64, is32, neg, (jj))
    if (is32) D32 += q * N; else D64 += q * N;
    /* NaN or inf: the front end rejects them (in->finite), so the check here guards a
     * Problem made without it.  It also reads the row into the cache at full bandwidth, which
     * what follows needs: the prefix path samples the row at random (mAP@100 on 1,000 x 50,000
     * took 117 ms without it instead of 96) and many relevant items are read at scattered
     * places (full mAP, ~1% relevant: 4% longer).  Only a checked row without a cut-off and
     * with few relevant items (ReID, landmarks) goes without: the bounded pass streams it
     * itself (Market-1501: 45 -> 39 ms), and should that pass give up, the row is read then.
     * With ids, the query's id slice says how many; a relevance row gives the relevant items'
     * indices first and their distances after that decision; labels are compared item by
     * item, reading every distance anyway. */
    /* row_read: the row has been read through (the check here, or a read ahead later) */
    int row_read = !in->finite || o->k >= 0 || in->rel_kind == REL_MULTI ||
                   (in->rel_kind == REL_IDS && (in->id_stop[q] - in->id_start[q]) * RC_FEW_RELEVANT > N);
    bad = row_read ? first_nonfinite(is32 ? D32 : NULL, D64, N) : -1;
    if (bad >= 0) {
        out->status[q] = Q_NONFINITE;
        out->err_a[q] = bad;
        return;
    }
    Np = N - (junk_in ? rc_build_junk(in, q, skip) : (memset(skip, 0, (size_t)N), 0));

    /* the relevant non-junk items, in gallery order (rel grows as they are found) */
#define RC_NOMEM() do { out->status[q] = Q_NOMEM; return; } while (0)
    if (rel_room(w, 0)) RC_NOMEM();
    rel = w->rel;
    if (in->rel_kind == REL_IDS) {
        const int64_t *ord = in->db_order;
        int64_t t;
        if (rel_room(w, in->id_stop[q] - in->id_start[q])) RC_NOMEM();
        rel = w->rel;
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
        const int64_t full = N - N % 8;
        for (j = 0; j < full; j += 8) {
            uint64_t word;
            memcpy(&word, row + j, sizeof(word));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            while (word) {  /* flag t is byte t of the word: visit the non-zero bytes */
                const int bit = __builtin_ctzll(word) & ~7;
                const int64_t t = j + (bit >> 3);
                word &= ~((uint64_t)0xff << bit);
#else
            int64_t t;
            if (!word) continue;
            for (t = j; t < j + 8; t++) {
                if (!row[t]) continue;
#endif
                if (!skip[t]) {
                    if (rel_room(w, G)) RC_NOMEM();
                    rel = w->rel;
                    rel[G++].j = t;
                }
            }
        }
        for (j = full; j < N; j++) {  /* the short tail, flag by flag */
            if (row[j] && !skip[j]) {
                if (rel_room(w, G)) RC_NOMEM();
                rel = w->rel;
                rel[G++].j = j;
            }
        }
    } else {
        relsrc src;
        relsrc_init(&src, in, q);
        for (j = 0; j < N; j++) {  /* branch-free filter: write always, advance if kept */
            if (G + 1 >= w->rel_cap) {
                if (rel_room(w, G + 1)) RC_NOMEM();
                rel = w->rel;
            }
            rel[G].d = RC_D(j);
            rel[G].j = j;
            G += relsrc_get(&src, j) & !skip[j];
        }
    }
    if (in->rel_kind == REL_MATRIX) {
        if (!row_read && G * RC_FEW_RELEVANT > N) {
            (void)first_nonfinite(is32 ? D32 : NULL, D64, N);  /* the row, read ahead */
            row_read = 1;
        }
        for (i = 0; i < G; i++) rel[i].d = RC_D(rel[i].j);
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
        if (grow((void **)&w->sel, &w->sel_cap, k + 1 <= Np / RC_HEAP_SELECT_DIVISOR ? k + 1 : Np, sizeof(double)))
            RC_NOMEM();
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
            rc_kth_counts(w->sel, n_sel, k, &lt, &ne);
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
    if (grow_relevant(w, G, in->grades != NULL)) RC_NOMEM();
    rd = w->rd;
    before = w->before;
    eq = w->eq;
    cnt = w->cnt;
    for (i = 0; i < G; i++) skip[rel[i].j] = RC_SKIP_RELEVANT;
    /* relevant items by (distance, index): index descending under "reverse" (they were
     * gathered in index order; a stable sort by distance keeps it, or its reverse).  The sort
     * carries each item's place k in gallery order (in .j; the indices wait in ranks[], unused
     * until the end), so that the pass, which meets the relevant items in that order, finds
     * the run of the k-th in runs[2 k], runs[2 k + 1] without a search (stable / reverse:
     * the only policies that look a run up during the pass). */
    if (snapshots) {
        for (i = 0; i < G; i++) {
            w->ranks[i] = rel[i].j;
            rel[i].j = i;
        }
    }
    if (ties == T_REVERSE)
        for (i = 0; i < G / 2; i++) { relitem t = rel[i]; rel[i] = rel[G - 1 - i]; rel[G - 1 - i] = t; }
    if (G > 1) {
        if (grow((void **)&w->rtmp, &w->rtmp_cap, G, sizeof(relitem))) RC_NOMEM();
        rc_sort_by_distance(rel, w->rtmp, G);
    }
    if (snapshots) {
        int64_t lo = 0, hi;
        for (; lo < G; lo = hi) {
            for (hi = lo + 1; hi < G && rel[hi].d == rel[lo].d; hi++) continue;
            for (i = lo; i < hi; i++) {
                const int64_t k = rel[i].j;
                w->runs[2 * k] = lo;
                w->runs[2 * k + 1] = hi;
                rel[i].j = w->ranks[k];
            }
        }
    }
    for (i = 0; i < G; i++) rd[i] = rel[i].d;
    if (w->prefix && o->k >= 0 && o->ap_at_k != K_DCMH && N >= RC_PREFIX_MIN_N) {
        /* the prefix path: the items at distance <= tau, the L-th smallest; L counts only
         * the ranks the wanted metrics read (R-precision and AP@R: up to R; the CMC: up to
         * max_rank; the rest, and H_k, which is always wanted: up to k) */
        const int reads_r = RC_WANTS(o, RC_V_R_PRECISION) || RC_WANTS(o, RC_V_AP_AT_R);
        const int64_t L = max64(max64(o->k, reads_r ? G : 0), RC_WANTS(o, RC_WANT_CMC) ? o->max_rank : 0);
        if (L * RC_PREFIX_DIVISOR <= Np) {
            const uint8_t *jm = junk_in ? skip : NULL;
            const int64_t cap = RC_PREFIX_AIM * 4 * L + 16 * (Np / RC_PREFIX_SAMPLE) + 64;
            if (grow((void **)&w->cand, &w->cand_cap, cap, sizeof(relitem)) ||
                grow((void **)&w->sel, &w->sel_cap, max64(cap, RC_PREFIX_SAMPLE), sizeof(double)))
                RC_NOMEM();
            {
                const double p = prefix_pivot(D32, D64, is32, neg, N, Np, L, w->sel);
                const int64_t n_c = prefix_filter(D32, D64, is32, neg, N, p, jm, w->cand, cap);
                if (n_c >= L) {  /* else too few (or, -1, too many) below the pivot: every item */
                    int64_t t;
                    double tau;
                    for (t = 0; t < n_c; t++) w->sel[t] = w->cand[t].d;
                    tau = rc_kth_smallest(w->sel, n_c, L);
                    for (t = n_red = 0; t < n_c; t++) {  /* keep those at most tau, in order */
                        const relitem c = w->cand[t];
                        w->cand[n_red] = c;
                        n_red += c.d <= tau;
                    }
                    /* INP reads the last relevant item's rank; without INP it stays too small */
                    last_beyond = rd[G - 1] > tau && RC_WANTS(o, RC_V_INP);
                    if (last_beyond) last_counts(D32, D64, is32, neg, N, rd[G - 1], rel[G - 1].j, jm, last);
                }
            }
        }
    }
    if (w->prefix && n_red < 0 && N >= RC_PREFIX_MIN_N) {
        /* the bounded pass: an item farther than the farthest relevant item stands behind every
         * relevant item under every tie policy, so it changes no rank, group or metric (it
         * counts only in Np).  Only the items at distance <= rd[G - 1] are placed, when they
         * are at most 1/RC_PREFIX_DIVISOR of the row; the filter gives up as soon as they are
         * more, so a row whose relevant items reach far costs a fraction of a SIMD pass. */
        const int64_t cap = Np / RC_PREFIX_DIVISOR;
        int64_t n_c;
        if (grow((void **)&w->cand, &w->cand_cap, cap + 1, sizeof(relitem))) RC_NOMEM();
        n_c = prefix_filter(D32, D64, is32, neg, N, rd[G - 1], junk_in ? skip : NULL, w->cand, cap);
        if (n_c >= 0) n_red = n_c;
    }
    if (n_red < 0 && !row_read) (void)first_nonfinite(is32 ? D32 : NULL, D64, N);  /* the row, read ahead */
    {
        const int64_t nb = bucket_count(G, n_red < 0 ? N : n_red);  /* no more buckets than items placed */
        if (grow((void **)&w->bucket, &w->bucket_cap, nb + 3, sizeof(bucketent))) RC_NOMEM();
        bucket_setup(rd, G, nb, w->bucket, &bm);
        tab = w->bucket;
    }
    if (rc_rankin_init(&rin, w, in, o, G)) RC_NOMEM();
    if (in->grades) {  /* the grades in rank order; a tie run by grade under opt./pess. */
        const uint8_t *grades_row = in->grades + q * N;
        for (i = 0; i < G; i++) w->gr[i] = grades_row[rel[i].j];
        if (ties == T_OPTIMISTIC || ties == T_PESSIMISTIC) {
            int64_t lo = 0, hi;
            for (; lo < G; lo = hi) {
                for (hi = lo + 1; hi < G && rel[hi].d == rel[lo].d; hi++) continue;
                if (hi - lo > 1) rc_sort_grades(w->gr + lo, hi - lo, ties == T_OPTIMISTIC);
            }
        }
        rin.gr = w->gr;
    }
    /* before[g]: items in gap g (preceding relevant items g, g+1, ... but not g-1); counted
     * in RC_INTERLEAVE copies (by j mod 4) while G is small: most items then land in the same
     * few slots (often slot 2 G, past every relevant item), and one counter would serialise
     * them through memory */
    memset(before, 0, (size_t)(G + 1) * sizeof(int64_t));
    memset(eq, 0, (size_t)(G + 1) * sizeof(int64_t));
    nc = RC_INTERLEAVE * 2 * (G + 1) * (int64_t)sizeof(uint32_t) <= RC_INTERLEAVE_BYTES ? RC_INTERLEAVE : 1;
    memset(cnt, 0, (size_t)(nc * 2 * (G + 1)) * sizeof(uint32_t));
    if (snapshots) {
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
#define RC_PLACE(jj, dd_)                                                                          \
    do {                                                                                           \
        const int64_t j_ = (jj);                                                                   \
        const double d = (dd_);                                                                    \
        double v;                                                                                  \
        int64_t lo, hi, b, tie;                                                                    \
        if (skip[j_]) {                                                                            \
            if (skip[j_] == RC_SKIP_RELEVANT && snapshots) {                                       \
                int64_t rlo, rhi;                                                                  \
                if (n_red < 0) { /* every item: the relevant ones come in gallery order */         \
                    rlo = w->runs[2 * kk];                                                         \
                    rhi = w->runs[2 * kk + 1];                                                     \
                    kk++;                                                                          \
                } else {                                                                           \
                    rlo = run_of(&bm, tab, rd, rel, d, &rhi);                                      \
                }                                                                                  \
                tie_snapshot(rlo, rhi, ties, eq, cnt, nc, G, w->tie_seen, w->tie_last, before);    \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        b = bucket_of(&bm, d);                                                                     \
        lo = tab[b].first;                                                                         \
        hi = tab[b + 1].first;                                                                     \
        v = tab[b].value;                                                                          \
        if (v != v) { /* several relevant distances share the bucket: search among them */        \
            lo += lower_bound_bf(rd + lo, hi - lo, d);                                             \
            tie = lo < hi && rd[lo] == d;                                                          \
            hi = lo;                                                                               \
        } else { /* one (v) or none (v = +inf): below v gap lo, above v gap hi */                  \
            tie = d == v;                                                                          \
        }                                                                                          \
        /* a tied item has d == v, so d > v is false: slot 2 lo + 1 */                          \
        cnt[(j_ & (nc - 1)) * 2 * (G + 1) + 2 * (d > v ? hi : lo) + tie]++;                    \
    } while (0)
    {
        const int64_t n_items = n_red < 0 ? N : n_red;
        int64_t kk = 0;  /* relevant items met so far (the whole pass) */
        const relitem *cand = w->cand;
        int64_t c0;
        for (c0 = 0; c0 < n_items; c0 += RC_COUNT_CHUNK) {
            const int64_t c1 = n_items - c0 > RC_COUNT_CHUNK ? c0 + RC_COUNT_CHUNK : n_items;
            if (n_red < 0) {
                for (j = c0; j < c1; j++) RC_PLACE(j, RC_D(j));
            } else {
                for (i = c0; i < c1; i++) RC_PLACE(cand[i].j, cand[i].d);
            }
            fold_counts(cnt, nc, G, before, eq);
        }
    }
#undef RC_PLACE
#undef RC_D
#undef RC_NOMEM
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
        if (last_beyond) {  /* the last group, from the counts over the whole row */
            g[ng - 1].c = last[0];
            g[ng - 1].n = last[2];
        }
        if (ties == T_EXPECTED) rc_metrics_expected(g, ng, G, Np, o, &rin, Hh, res);
        else rc_metrics_grouped(g, ng, G, Np, o, &rin, res);
    } else {
        int64_t acc = 0;
        for (i = 0; i < G; i++) {
            acc += before[i];
            w->ranks[i] = i + 1 + acc;
        }
        if (last_beyond) {  /* the last relevant item's rank, from the counts over the whole row */
            int64_t m = 1;  /* relevant items of its run */
            while (m < G && rd[G - 1 - m] == rd[G - 1]) m++;
            w->ranks[G - 1] = ties == T_STABLE ? last[0] + last[1] + 1
                            : ties == T_REVERSE ? last[0] + (last[2] - last[1] - 1) + 1
                            : ties == T_PESSIMISTIC ? last[0] + last[2]
                            : last[0] + m;  /* optimistic: the run's relevant items come first */
        }
        rc_metrics_ranks(w->ranks, G, Np, o, &rin, res);
    }
}

void rc_query_float(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                    workspace *w, qres *res, rc_output *out)
{
    /* one copy of the body per input type and sign: the inner loops branch on neither */
    const float *D32 = (const float *)in->distances;
    const double *D64 = (const double *)in->distances;
    if (in->dist_kind == D_F32) {
        if (in->negated) query_float_body(in, o, Hh, q, w, res, out, D32, NULL, 1, 1);
        else query_float_body(in, o, Hh, q, w, res, out, D32, NULL, 1, 0);
    } else {
        if (in->negated) query_float_body(in, o, Hh, q, w, res, out, NULL, D64, 0, 1);
        else query_float_body(in, o, Hh, q, w, res, out, NULL, D64, 0, 0);
    }
}
