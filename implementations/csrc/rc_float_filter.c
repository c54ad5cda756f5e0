/* rc_float_filter.c -- the filter of a row of float distances (or scores, read negated) down
 * to the items to place: those up to a fixed distance, or the L nearest by a streaming
 * selection, checking the row for NaN/inf on the same read. */
#include "rc_float.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

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
/* the same masks (and *bad), four doubles a step */
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

/* the items of block j0's mask m (bit t: item j0 + t is at distance <= *p) into cand[n ..),
 * junk left out; returns the new n, or -1 to give up.  When cand is full: L == 0 gives up;
 * else *p becomes the L-th smallest of cand's items, only those at most *p stay, and should
 * they still fill 3/4 of cand (ties at *p), it gives up. */
static inline __attribute__((always_inline)) int64_t
take_block(const float *D32, const double *D64, const int is32, const int neg, int64_t j0, uint32_t m, double *p,
           int64_t L, const uint8_t *junk_mask, relitem *cand, int64_t n, int64_t cap, double *scratch)
{
    while (m) {
        const int64_t j = j0 + __builtin_ctz(m);
        double d;
        m &= m - 1;
        if (junk_mask && junk_mask[j] == 1) continue;
        if (n == cap) {
            int64_t t, kept = 0;
            if (L == 0) return -1;
            for (t = 0; t < n; t++) scratch[t] = cand[t].d;
            *p = rc_kth_smallest(scratch, n, L);
            for (t = 0; t < n; t++) {  /* keep those at most p, in order */
                cand[kept] = cand[t];
                kept += cand[t].d <= *p;
            }
            n = kept;
            if (4 * n > 3 * cap) return -1;
        }
        d = row_dist(D32, D64, is32, neg, j);
        cand[n].d = d;
        cand[n].j = j;
        n += d <= *p;  /* the rest of the block was compared with the p before a compaction */
    }
    return n;
}

/* the non-junk items at distance <= p, in gallery order, into cand[0 .. n); returns n.
 * Blocks of RC_PREFIX_BLOCK items are compared at once into a bit mask (most blocks hold few
 * such items), and only its set bits are visited.  The same read checks the row: *bad is the
 * column of its first NaN/inf, or -1 (valid only when the row was read through, n >= 0).
 * L == 0: p is fixed, and more than cap items give up (-1).  L > 0: p starts at +inf and
 * comes down as the row is read (a streaming selection of the L smallest): when cand is full,
 * p becomes the L-th smallest of its items and only those at most p stay.  Every item at or
 * below the row's L-th smallest distance is kept (the L-th smallest of a part of the row is
 * never below it); should the items tied at p still fill 3/4 of cand, it gives up (-1).
 * avx2: the AVX2 masks of doubles (only in the copy compiled for AVX2, row_filter64_avx2;
 * floats have their own AVX2 loop, row_filter32_avx2). */
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
            if (avx2 && !is32)
                m = block_mask64_avx2(D64 + j0, p, neg, &bad_lanes);
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
        if (m && (n = take_block(D32, D64, is32, neg, j0, m, &p, L, junk_mask, cand, n, cap, scratch)) < 0) return -1;
    }
    *bad = bad_lanes ? rc_first_nonfinite(is32 ? D32 : NULL, D64, N) : -1;
    return n;
}

#ifdef RC_HAVE_AVX2_DISPATCH
__attribute__((target("avx2"))) static int64_t
row_filter64_avx2(const double *D64, int neg, int64_t N, double p, int64_t L, const uint8_t *jm, relitem *cand,
                  int64_t cap, double *scratch, int64_t *bad)
{
    return neg ? row_filter_body(NULL, D64, 0, 1, N, p, L, jm, cand, cap, scratch, bad, 1)
               : row_filter_body(NULL, D64, 0, 0, N, p, L, jm, cand, cap, scratch, bad, 1);
}

/* row_filter_body for floats, 32 a block in four 8-lane vectors.  A block is tested by one
 * comparison of its largest score (smallest distance: a max / min tree) with p; only a block
 * that passes is compared lane by lane (few do once cand has filled).  The finite check rides
 * on a running sum of the row's values: finite while every value is (inf or NaN make it inf
 * or NaN, for good); should it overflow, the row is scanned again (rc_first_nonfinite), so a
 * false alarm costs time, never a value.  A NaN can hide an item of its block from the tree
 * (max and min return their second operand when either is NaN), but a row with a NaN is
 * refused whatever was kept. */
static inline __attribute__((always_inline, target("avx2"))) int64_t
row_filter32_avx2_body(const float *D32, const int neg, int64_t N, double p, int64_t L, const uint8_t *jm,
                       relitem *cand, int64_t cap, double *scratch, int64_t *bad)
{
    const int64_t full = N - N % RC_PREFIX_BLOCK;
    __m256 sum = _mm256_setzero_ps(), pv = _mm256_set1_ps(neg ? -(float)p : (float)p);
    float lanes[8];
    int64_t j0, n = 0;
    int finite = 1, c;
    for (j0 = 0; j0 < full; j0 += RC_PREFIX_BLOCK) {
        const float *x = D32 + j0;
        const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        const __m256 e = neg ? _mm256_max_ps(_mm256_max_ps(v0, v1), _mm256_max_ps(v2, v3))
                             : _mm256_min_ps(_mm256_min_ps(v0, v1), _mm256_min_ps(v2, v3));
        uint32_t m;
        sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
        if (!_mm256_movemask_ps(neg ? _mm256_cmp_ps(e, pv, _CMP_GE_OQ) : _mm256_cmp_ps(e, pv, _CMP_LE_OQ)))
            continue;
        if (neg)
            m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v0, pv, _CMP_GE_OQ)) |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v1, pv, _CMP_GE_OQ)) << 8 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v2, pv, _CMP_GE_OQ)) << 16 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v3, pv, _CMP_GE_OQ)) << 24;
        else
            m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v0, pv, _CMP_LE_OQ)) |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v1, pv, _CMP_LE_OQ)) << 8 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v2, pv, _CMP_LE_OQ)) << 16 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v3, pv, _CMP_LE_OQ)) << 24;
        if ((n = take_block(D32, NULL, 1, neg, j0, m, &p, L, jm, cand, n, cap, scratch)) < 0) return -1;
        pv = _mm256_set1_ps(neg ? -(float)p : (float)p);
    }
    _mm256_storeu_ps(lanes, sum);
    for (c = 0; c < 8; c++) finite &= fabsf(lanes[c]) <= FLT_MAX;
    if (full < N) {  /* the short last block */
        uint32_t m = 0;
        int64_t t;
        for (t = 0; full + t < N; t++) {
            const double d = row_dist(D32, NULL, 1, neg, full + t);
            m |= (uint32_t)(d <= p) << t;
            finite &= fabs(d) <= DBL_MAX;
        }
        if (m && (n = take_block(D32, NULL, 1, neg, full, m, &p, L, jm, cand, n, cap, scratch)) < 0) return -1;
    }
    *bad = finite ? -1 : rc_first_nonfinite(D32, NULL, N);
    return n;
}

__attribute__((target("avx2"))) static int64_t
row_filter32_avx2(const float *D32, int neg, int64_t N, double p, int64_t L, const uint8_t *jm, relitem *cand,
                  int64_t cap, double *scratch, int64_t *bad)
{
    return neg ? row_filter32_avx2_body(D32, 1, N, p, L, jm, cand, cap, scratch, bad)
               : row_filter32_avx2_body(D32, 0, N, p, L, jm, cand, cap, scratch, bad);
}
/* how far ahead (floats) the two-level filter's first read asks for the row, two lines a
 * block: the hardware's own prefetch alone leaves the loop waiting on memory (measured: 1,000
 * rows of 50,000 floats, ~1 ms less; 1 to 8 KB ahead do alike) */
#define RC_TOPS_AHEAD 1024

/* the order of floats as unsigned keys (a NaN lands beyond the infinities), and back */
static inline uint32_t float_key(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b ^ ((b >> 31) ? UINT32_C(0xffffffff) : UINT32_C(0x80000000));
}

static inline float key_float(uint32_t k)
{
    const uint32_t b = k ^ ((k >> 31) ? UINT32_C(0x80000000) : UINT32_C(0xffffffff));
    float x;
    memcpy(&x, &b, sizeof(x));
    return x;
}

/* how many of tops[0 .. nb) are >= t (a NaN is not), eight a step (nb < 2^31) */
__attribute__((target("avx2"))) static int64_t tops_at_least(const float *tops, int64_t nb, float t)
{
    const __m256 tv = _mm256_set1_ps(t);
    __m256i acc = _mm256_setzero_si256();
    uint32_t lanes[8], total = 0;
    int64_t b = 0;
    int c;
    for (; b + 8 <= nb; b += 8)
        acc = _mm256_sub_epi32(acc, _mm256_castps_si256(_mm256_cmp_ps(_mm256_loadu_ps(tops + b), tv, _CMP_GE_OQ)));
    _mm256_storeu_si256((__m256i *)lanes, acc);
    for (c = 0; c < 8; c++) total += lanes[c];
    for (; b < nb; b++) total += tops[b] >= t;
    return (int64_t)total;
}

/* The two-level filter of a float32 row without junk (L > 0, at least RC_PREFIX_TOPS_PER_L
 * blocks per rank): the items at distance <= p, in gallery order, for a p at or above the
 * row's L-th smallest distance, as row_filter_body returns them.  In values as the row holds
 * them, read so that larger is closer (scores as they are, distances negated):
 *   1. one read of the row gives each block's best value, tops[b] (and the finite check, a
 *      running sum, as in row_filter32_avx2_body);
 *   2. t: the largest value (found by bisection over the order of floats) with at least L
 *      blocks whose best is >= t.  Those are L different items at distance <= p = -t, so p is
 *      at or above the row's L-th smallest distance, and an item at distance <= p lies in a
 *      block whose best is >= t;
 *   3. only those blocks are read again (from the cache), item by item, into cand as the
 *      streaming selection takes them (should they fill it: compactions, or it gives up).
 * The bisection stops early once the blocks are at most L + L/8 + 8: a p a little above the
 * tightest costs a few more items, never a different result. */
static inline __attribute__((always_inline, target("avx2"))) int64_t
row_filter32_tops_body(const float *D32, const int neg, int64_t N, int64_t L, relitem *cand, int64_t cap,
                       double *scratch, float *tops, int64_t *bad)
{
    const int64_t nb = N / RC_PREFIX_BLOCK, full = nb * RC_PREFIX_BLOCK;
    const int64_t enough = L + L / 8 + 8;
    __m256 sum = _mm256_setzero_ps(), pv, lo8, hi8;
    float lanes[8], t, mn, mx;
    uint32_t klo, khi;
    double p;
    int64_t b, n = 0;
    int finite = 1, c;
    for (b = 0; b < nb; b++) {
        const float *x = D32 + b * RC_PREFIX_BLOCK;
        const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m128 h;
        _mm_prefetch((const char *)(x + RC_TOPS_AHEAD), _MM_HINT_T0);  /* a hint: never faults */
        _mm_prefetch((const char *)(x + RC_TOPS_AHEAD + 16), _MM_HINT_T0);
        sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
        if (neg) {
            const __m256 e = _mm256_max_ps(_mm256_max_ps(v0, v1), _mm256_max_ps(v2, v3));
            h = _mm_max_ps(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1));
            h = _mm_max_ps(h, _mm_movehl_ps(h, h));
            h = _mm_max_ss(h, _mm_movehdup_ps(h));
            tops[b] = _mm_cvtss_f32(h);
        } else {
            const __m256 e = _mm256_min_ps(_mm256_min_ps(v0, v1), _mm256_min_ps(v2, v3));
            h = _mm_min_ps(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1));
            h = _mm_min_ps(h, _mm_movehl_ps(h, h));
            h = _mm_min_ss(h, _mm_movehdup_ps(h));
            tops[b] = -_mm_cvtss_f32(h);
        }
    }
    _mm256_storeu_ps(lanes, sum);
    for (c = 0; c < 8; c++) finite &= fabsf(lanes[c]) <= FLT_MAX;
    /* the range of the block bests (a NaN, in a row refused below, may spoil it: harmless) */
    lo8 = hi8 = _mm256_set1_ps(tops[0]);
    for (b = 0; b + 8 <= nb; b += 8) {
        const __m256 v = _mm256_loadu_ps(tops + b);
        lo8 = _mm256_min_ps(lo8, v);
        hi8 = _mm256_max_ps(hi8, v);
    }
    _mm256_storeu_ps(lanes, lo8);
    for (mn = lanes[0], c = 1; c < 8; c++) mn = lanes[c] < mn ? lanes[c] : mn;
    _mm256_storeu_ps(lanes, hi8);
    for (mx = lanes[0], c = 1; c < 8; c++) mx = lanes[c] > mx ? lanes[c] : mx;
    for (; b < nb; b++) {
        mn = tops[b] < mn ? tops[b] : mn;
        mx = tops[b] > mx ? tops[b] : mx;
    }
    /* bisection: at least L blocks at or above key klo (every block is >= mn) */
    klo = float_key(mn);
    khi = float_key(mx);
    if (tops_at_least(tops, nb, mx) >= L) klo = khi;
    while (khi - klo > 1) {
        const uint32_t mid = klo + (khi - klo) / 2;
        const int64_t at = tops_at_least(tops, nb, key_float(mid));
        if (at < L) {
            khi = mid;
        } else {
            klo = mid;
            if (at <= enough) break;
        }
    }
    t = key_float(klo);
    p = -(double)t;
    pv = _mm256_set1_ps(neg ? t : -t);
    for (b = 0; b < nb; b++) {
        const float *x = D32 + b * RC_PREFIX_BLOCK;
        uint32_t m;
        if (!(tops[b] >= t)) continue;
        if (neg)
            m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x), pv, _CMP_GE_OQ)) |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8), pv, _CMP_GE_OQ)) << 8 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 16), pv, _CMP_GE_OQ)) << 16 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 24), pv, _CMP_GE_OQ)) << 24;
        else
            m = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x), pv, _CMP_LE_OQ)) |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8), pv, _CMP_LE_OQ)) << 8 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 16), pv, _CMP_LE_OQ)) << 16 |
                (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 24), pv, _CMP_LE_OQ)) << 24;
        if (m && (n = take_block(D32, NULL, 1, neg, b * RC_PREFIX_BLOCK, m, &p, L, NULL, cand, n, cap, scratch)) < 0)
            return -1;
        pv = _mm256_set1_ps(neg ? -(float)p : (float)p);
    }
    if (full < N) {  /* the short last block */
        uint32_t m = 0;
        int64_t i;
        for (i = 0; full + i < N; i++) {
            const double d = row_dist(D32, NULL, 1, neg, full + i);
            m |= (uint32_t)(d <= p) << i;
            finite &= fabs(d) <= DBL_MAX;
        }
        if (m && (n = take_block(D32, NULL, 1, neg, full, m, &p, L, NULL, cand, n, cap, scratch)) < 0) return -1;
    }
    *bad = finite ? -1 : rc_first_nonfinite(D32, NULL, N);
    return n;
}

__attribute__((target("avx2"))) static int64_t
row_filter32_tops(const float *D32, int neg, int64_t N, int64_t L, relitem *cand, int64_t cap, double *scratch,
                  float *tops, int64_t *bad)
{
    return neg ? row_filter32_tops_body(D32, 1, N, L, cand, cap, scratch, tops, bad)
               : row_filter32_tops_body(D32, 0, N, L, cand, cap, scratch, tops, bad);
}

#endif

/* row_filter_body with AVX2 where the CPU has it (rc_use_avx2), else SSE2 / plain C; one
 * compiled copy per input type and sign.  tops: room for N / RC_PREFIX_BLOCK floats (the
 * two-level filter's; NULL: streaming only).  (tops is unused without AVX2.) */
int64_t rc_row_filter(const float *D32, const double *D64, int is32, int neg, int64_t N, double p, int64_t L,
                      const uint8_t *jm, relitem *cand, int64_t cap, double *scratch, float *tops, int64_t *bad)
{
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2 && is32 && tops && L > 0 && !jm && N / RC_PREFIX_BLOCK >= RC_PREFIX_TOPS_PER_L * L)
        return row_filter32_tops(D32, neg, N, L, cand, cap, scratch, tops, bad);
    if (rc_use_avx2)
        return is32 ? row_filter32_avx2(D32, neg, N, p, L, jm, cand, cap, scratch, bad)
                    : row_filter64_avx2(D64, neg, N, p, L, jm, cand, cap, scratch, bad);
#endif
    if (is32) return neg ? row_filter_body(D32, NULL, 1, 1, N, p, L, jm, cand, cap, scratch, bad, 0)
                         : row_filter_body(D32, NULL, 1, 0, N, p, L, jm, cand, cap, scratch, bad, 0);
    return neg ? row_filter_body(NULL, D64, 0, 1, N, p, L, jm, cand, cap, scratch, bad, 0)
               : row_filter_body(NULL, D64, 0, 0, N, p, L, jm, cand, cap, scratch, bad, 0);
}
