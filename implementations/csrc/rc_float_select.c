/* rc_float_select.c -- reading a row of float distances (or scores, read negated) once: the
 * check for NaN/inf, the filter of the items to place (those up to a fixed distance, or the
 * L nearest by a streaming selection, checking the row as it goes), the counts of the items
 * ahead of and tied with one distance, and whether a cut-off falls inside a tie group. */
#include "rc_float.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

/* column of the first NaN/inf of a row, or -1; the bit test vectorises (an exponent of all
 * ones carries into the sign bit) */
int64_t rc_first_nonfinite(const float *x32, const double *x64, int64_t n)
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


/* bit t set: item t of x[0 .. RC_PREFIX_BLOCK) is at distance <= p (x as the row holds it;
 * -x <= p is x >= -p, exactly, for scores); the lanes that hold NaN or +-inf are ORed into
 * *bad (a NaN compares false: it is never at distance <= p).  The comparisons of a block are
 * ORed first: most blocks hold no item at or below p, and cost no bit extraction. */
static inline uint32_t block_mask32(const float *x, float p, int neg, uint32_t *bad)
{
    uint32_t m = 0;
    int t;
#if defined(__SSE2__)
    const __m128 pv = _mm_set1_ps(neg ? -p : p), big = _mm_set1_ps(FLT_MAX);
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 c[RC_PREFIX_BLOCK / 4], any = _mm_setzero_ps(), out = _mm_setzero_ps();
    for (t = 0; t < RC_PREFIX_BLOCK / 4; t++) {
        const __m128 v = _mm_loadu_ps(x + 4 * t);
        c[t] = neg ? _mm_cmpge_ps(v, pv) : _mm_cmple_ps(v, pv);
        any = _mm_or_ps(any, c[t]);
        out = _mm_or_ps(out, _mm_cmpnle_ps(_mm_and_ps(v, abs_mask), big));
    }
    *bad |= (uint32_t)_mm_movemask_ps(out);
    if (!_mm_movemask_ps(any)) return 0;
    for (t = 0; t < RC_PREFIX_BLOCK / 4; t++) m |= (uint32_t)_mm_movemask_ps(c[t]) << (4 * t);
#else
    for (t = 0; t < RC_PREFIX_BLOCK; t++) {
        m |= (uint32_t)(neg ? -x[t] <= p : x[t] <= p) << t;
        *bad |= !(fabsf(x[t]) <= FLT_MAX);
    }
#endif
    return m;
}

static inline uint32_t block_mask64(const double *x, double p, int neg, uint32_t *bad)
{
    uint32_t m = 0;
    int t;
#if defined(__SSE2__)
    const __m128d pv = _mm_set1_pd(neg ? -p : p), big = _mm_set1_pd(DBL_MAX);
    const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
    __m128d c[RC_PREFIX_BLOCK / 2], any = _mm_setzero_pd(), out = _mm_setzero_pd();
    for (t = 0; t < RC_PREFIX_BLOCK / 2; t++) {
        const __m128d v = _mm_loadu_pd(x + 2 * t);
        c[t] = neg ? _mm_cmpge_pd(v, pv) : _mm_cmple_pd(v, pv);
        any = _mm_or_pd(any, c[t]);
        out = _mm_or_pd(out, _mm_cmpnle_pd(_mm_and_pd(v, abs_mask), big));
    }
    *bad |= (uint32_t)_mm_movemask_pd(out);
    if (!_mm_movemask_pd(any)) return 0;
    for (t = 0; t < RC_PREFIX_BLOCK / 2; t++) m |= (uint32_t)_mm_movemask_pd(c[t]) << (2 * t);
#else
    for (t = 0; t < RC_PREFIX_BLOCK; t++) {
        m |= (uint32_t)(neg ? -x[t] <= p : x[t] <= p) << t;
        *bad |= !(fabs(x[t]) <= DBL_MAX);
    }
#endif
    return m;
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* the same masks (and *bad), eight floats (four doubles) a step */
__attribute__((target("avx2"))) static inline uint32_t
block_mask32_avx2(const float *x, float p, int neg, uint32_t *bad)
{
    const __m256 pv = _mm256_set1_ps(neg ? -p : p), big = _mm256_set1_ps(FLT_MAX);
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 c[RC_PREFIX_BLOCK / 8], any = _mm256_setzero_ps(), out = _mm256_setzero_ps();
    uint32_t m = 0;
    int t;
    for (t = 0; t < RC_PREFIX_BLOCK / 8; t++) {
        const __m256 v = _mm256_loadu_ps(x + 8 * t);
        c[t] = neg ? _mm256_cmp_ps(v, pv, _CMP_GE_OQ) : _mm256_cmp_ps(v, pv, _CMP_LE_OQ);
        any = _mm256_or_ps(any, c[t]);
        out = _mm256_or_ps(out, _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), big, _CMP_NLE_UQ));
    }
    *bad |= (uint32_t)_mm256_movemask_ps(out);
    if (_mm256_testz_ps(any, any)) return 0;
    for (t = 0; t < RC_PREFIX_BLOCK / 8; t++) m |= (uint32_t)_mm256_movemask_ps(c[t]) << (8 * t);
    return m;
}

__attribute__((target("avx2"))) static inline uint32_t
block_mask64_avx2(const double *x, double p, int neg, uint32_t *bad)
{
    const __m256d pv = _mm256_set1_pd(neg ? -p : p), big = _mm256_set1_pd(DBL_MAX);
    const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d c[RC_PREFIX_BLOCK / 4], any = _mm256_setzero_pd(), out = _mm256_setzero_pd();
    uint32_t m = 0;
    int t;
    for (t = 0; t < RC_PREFIX_BLOCK / 4; t++) {
        const __m256d v = _mm256_loadu_pd(x + 4 * t);
        c[t] = neg ? _mm256_cmp_pd(v, pv, _CMP_GE_OQ) : _mm256_cmp_pd(v, pv, _CMP_LE_OQ);
        any = _mm256_or_pd(any, c[t]);
        out = _mm256_or_pd(out, _mm256_cmp_pd(_mm256_and_pd(v, abs_mask), big, _CMP_NLE_UQ));
    }
    *bad |= (uint32_t)_mm256_movemask_pd(out);
    if (_mm256_testz_pd(any, any)) return 0;
    for (t = 0; t < RC_PREFIX_BLOCK / 4; t++) m |= (uint32_t)_mm256_movemask_pd(c[t]) << (4 * t);
    return m;
}
#endif

/* the non-junk items at distance <= p, in gallery order, into cand[0 .. n); returns n.
 * Blocks of RC_PREFIX_BLOCK items are compared at once into a bit mask (most blocks hold few
 * such items), and only its set bits are visited.  The same read checks the row: *bad is the
 * column of its first NaN/inf, or -1 (valid only when the row was read through, n >= 0).
 * L == 0: p is fixed, and more than cap items give up (-1).  L > 0: p starts at +inf and
 * comes down as the row is read (a streaming selection of the L smallest): when cand is full,
 * p becomes the L-th smallest of its items and only those at most p stay.  Every item at or
 * below the row's L-th smallest distance is kept (the L-th smallest of a part of the row is
 * never below it); should the items tied at p still fill 3/4 of cand, it gives up (-1).
 * avx2: the AVX2 masks (only in the copy compiled for AVX2, row_filter_avx2). */
static inline __attribute__((always_inline)) int64_t
row_filter_body(const float *D32, const double *D64, const int is32, const int neg, int64_t N, double p, int64_t L,
                const uint8_t *junk_mask, relitem *cand, int64_t cap, double *scratch, int64_t *bad, const int avx2)
{
    int64_t j0, n = 0;
    const int64_t full = N - N % RC_PREFIX_BLOCK;
    uint32_t bad_lanes = 0;
    (void)avx2;
    for (j0 = 0; j0 < N; j0 += RC_PREFIX_BLOCK) {
        uint32_t m = 0;
        if (j0 < full) {
#ifdef RC_HAVE_AVX2_DISPATCH
            if (avx2)
                m = is32 ? block_mask32_avx2(D32 + j0, (float)p, neg, &bad_lanes)
                         : block_mask64_avx2(D64 + j0, p, neg, &bad_lanes);
            else
#endif
                m = is32 ? block_mask32(D32 + j0, (float)p, neg, &bad_lanes)
                         : block_mask64(D64 + j0, p, neg, &bad_lanes);
        } else {  /* the short last block */
            int64_t t;
            for (t = 0; j0 + t < N; t++) {
                const double d = row_dist(D32, D64, is32, neg, j0 + t);
                m |= (uint32_t)(d <= p) << t;
                bad_lanes |= !(fabs(d) <= DBL_MAX);
            }
        }
        while (m) {
            const int64_t j = j0 + __builtin_ctz(m);
            double d;
            m &= m - 1;
            if (junk_mask && junk_mask[j] == 1) continue;
            if (n == cap) {
                int64_t t, kept = 0;
                if (L == 0) return -1;
                for (t = 0; t < n; t++) scratch[t] = cand[t].d;
                p = rc_kth_smallest(scratch, n, L);
                for (t = 0; t < n; t++) {  /* keep those at most p, in order */
                    cand[kept] = cand[t];
                    kept += cand[t].d <= p;
                }
                n = kept;
                if (4 * n > 3 * cap) return -1;
            }
            d = row_dist(D32, D64, is32, neg, j);
            cand[n].d = d;
            cand[n].j = j;
            n += d <= p;  /* the rest of the block was compared with the p before a compaction */
        }
    }
    *bad = bad_lanes ? rc_first_nonfinite(is32 ? D32 : NULL, D64, N) : -1;
    return n;
}

#ifdef RC_HAVE_AVX2_DISPATCH
__attribute__((target("avx2"))) static int64_t
row_filter_avx2(const float *D32, const double *D64, int is32, int neg, int64_t N, double p, int64_t L,
                const uint8_t *jm, relitem *cand, int64_t cap, double *scratch, int64_t *bad)
{
    if (is32) return neg ? row_filter_body(D32, NULL, 1, 1, N, p, L, jm, cand, cap, scratch, bad, 1)
                         : row_filter_body(D32, NULL, 1, 0, N, p, L, jm, cand, cap, scratch, bad, 1);
    return neg ? row_filter_body(NULL, D64, 0, 1, N, p, L, jm, cand, cap, scratch, bad, 1)
               : row_filter_body(NULL, D64, 0, 0, N, p, L, jm, cand, cap, scratch, bad, 1);
}
#endif

/* row_filter_body with AVX2 where the CPU has it (rc_use_avx2), else SSE2 / plain C; one
 * compiled copy per input type and sign */
int64_t rc_row_filter(const float *D32, const double *D64, int is32, int neg, int64_t N, double p, int64_t L,
                      const uint8_t *jm, relitem *cand, int64_t cap, double *scratch, int64_t *bad)
{
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2) return row_filter_avx2(D32, D64, is32, neg, N, p, L, jm, cand, cap, scratch, bad);
#endif
    if (is32) return neg ? row_filter_body(D32, NULL, 1, 1, N, p, L, jm, cand, cap, scratch, bad, 0)
                         : row_filter_body(D32, NULL, 1, 0, N, p, L, jm, cand, cap, scratch, bad, 0);
    return neg ? row_filter_body(NULL, D64, 0, 1, N, p, L, jm, cand, cap, scratch, bad, 0)
               : row_filter_body(NULL, D64, 0, 0, N, p, L, jm, cand, cap, scratch, bad, 0);
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
void rc_last_counts(const float *D32, const double *D64, int is32, int neg, int64_t N, double dl, int64_t jl,
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

/* `grouped` with a cut-off k < Np: *lt items closer than the k-th smallest distance and *ne
 * items at it (both 0 when the k-th and the (k+1)-th differ: k then ends a group); 0, or -1
 * when out of memory */
static inline __attribute__((always_inline)) int
cutoff_group_body(const float *D32, const double *D64, const int is32, const int neg, int64_t N, const uint8_t *skip,
                  int64_t Np, int64_t k, workspace *w, int64_t *lt, int64_t *ne)
{
    int64_t j, n_sel = 0;
    *lt = *ne = 0;
    if (grow((void **)&w->sel, &w->sel_cap, k + 1 <= Np / RC_HEAP_SELECT_DIVISOR ? k + 1 : Np, sizeof(double)))
        return -1;
    if (k + 1 <= Np / RC_HEAP_SELECT_DIVISOR) {
        /* a small k: keep the k+1 smallest distances in a max-heap (most items fail the
         * first comparison); k is inside a group iff the k-th and (k+1)-th are equal */
        double *hp = w->sel, top2;
        for (j = 0; j < N; j++) {
            double d;
            if (skip[j]) continue;
            d = row_dist(D32, D64, is32, neg, j);
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
                *lt += row_dist(D32, D64, is32, neg, j) < hp[0];
                *ne += row_dist(D32, D64, is32, neg, j) == hp[0];
            }
        }
    } else {
        for (j = 0; j < N; j++)
            if (!skip[j]) w->sel[n_sel++] = row_dist(D32, D64, is32, neg, j);
        rc_kth_counts(w->sel, n_sel, k, lt, ne);
    }
    return 0;
}

int rc_cutoff_group(const float *D32, const double *D64, int is32, int neg, int64_t N, const uint8_t *skip,
                    int64_t Np, int64_t k, workspace *w, int64_t *lt, int64_t *ne)
{
    if (is32) return neg ? cutoff_group_body(D32, NULL, 1, 1, N, skip, Np, k, w, lt, ne)
                         : cutoff_group_body(D32, NULL, 1, 0, N, skip, Np, k, w, lt, ne);
    return neg ? cutoff_group_body(NULL, D64, 0, 1, N, skip, Np, k, w, lt, ne)
               : cutoff_group_body(NULL, D64, 0, 0, N, skip, Np, k, w, lt, ne);
}
