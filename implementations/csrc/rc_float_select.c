/* rc_float_select.c -- reading a row of float distances (or scores, read negated): the check
 * for NaN/inf, the counts of the items ahead of and tied with one distance, and whether a
 * cut-off falls inside a tie group (the filters of the items to place: rc_float_filter.c). */
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
