/* rc_float_place.c -- the placing pass over a whole float32 row with AVX2 (rc_float.c's full
 * pass, where rc_place_fast_ok says so).  Eight items a step: their buckets by bucket_of's own
 * arithmetic, lane by lane in float64 (so an item and a relevant distance of the same value
 * still share a bucket), then their side of the bucket's one relevant distance v (a gather of
 * the float table bval[]): below v, tied with it, above it.  Each item counts in sides[3 b +
 * side]; that is all the scalar pass learns from an item in such a bucket (slot 2 lo, 2 lo + 1
 * or 2 hi of its counters), so rc_fold_sides moves the counts into before[] / eq[] exactly.
 * An item whose bucket holds several relevant distances takes the scalar search (into cnt[],
 * as before).  A step of eight that holds a skipped item (junk, relevant) is left to the
 * caller's scalar code, which meets the relevant items in gallery order as stable / reverse
 * need.  NaN / inf are noted on the way (the row's check rides on this read). */
#include "rc_float.h"
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

/* counters per copy of sides[]: 3 per bucket 0 .. nb + 1, then one slot past them (bucket
 * nb + 2's first) that the items sent to the search count in, never folded */
int64_t rc_side_stride(int64_t nb) { return 3 * (nb + 3); }

/* copies of sides[] for nb buckets: RC_SIDE_COPIES while they fit in RC_SIDE_BYTES, else 1 */
int64_t rc_side_copies(int64_t nb)
{
    int64_t n = RC_SIDE_COPIES;
    while (n > 1 && n * rc_side_stride(nb) * (int64_t)sizeof(uint32_t) > RC_SIDE_BYTES) n >>= 1;
    return n;
}

/* bval[b] = the one relevant distance of bucket b as a float (exact: float32 rows), NaN where
 * there are several, +inf where there is none */
void rc_side_values(const bucketent *t, int64_t nb, float *bval)
{
    int64_t b;
    for (b = 0; b < nb + 3; b++) bval[b] = (float)t[b].value;
}

/* the items tied with the run of relevant items starting at lo, counted in sides[] so far */
int64_t rc_side_ties(const uint32_t *sides, int64_t copies, int64_t stride, const bucketmap *m, double d)
{
    const int64_t b = bucket_of(m, d);
    int64_t c, n = 0;
    for (c = 0; c < copies; c++) n += sides[c * stride + 3 * b + 1];
    return n;
}

/* sides[] into before[] / eq[], as the scalar pass would have counted each item, then zeroed */
void rc_fold_sides(uint32_t *sides, int64_t copies, int64_t stride, const bucketent *t, int64_t nb,
                   int64_t *before, int64_t *eq)
{
    int64_t c, b, i;
    for (c = 1; c < copies; c++)  /* the copies into the first (a vector loop) */
        for (i = 0; i < stride; i++) sides[i] += sides[c * stride + i];
    for (b = 0; b < nb + 2; b++) {
        const uint32_t *s = sides + 3 * b;
        before[t[b].first] += s[0];      /* below v (or an empty bucket): gap lo */
        eq[t[b].first] += s[1];          /* tied with v: the run starting at lo */
        before[t[b + 1].first] += s[2];  /* above v: gap hi */
    }
    memset(sides, 0, (size_t)(copies * stride) * sizeof(uint32_t));
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* bucket_of's 1 + trunc(clamp(fl(fl(d - lo) * scale), 0, top)) for four lanes (min/max keep
 * its NaN rule: a NaN product goes to top) */
__attribute__((target("avx2"))) static inline __m128i bucket_body4(__m256d d, const bucketmap *m)
{
    __m256d t = _mm256_mul_pd(_mm256_sub_pd(d, _mm256_set1_pd(m->lo)), _mm256_set1_pd(m->scale));
    t = _mm256_min_pd(t, _mm256_set1_pd(m->top));   /* t < top ? t : top */
    t = _mm256_max_pd(t, _mm256_setzero_pd());      /* t > 0 ? t : 0 */
    return _mm_add_epi32(_mm256_cvttpd_epi32(t), _mm_set1_epi32(1));
}

/* the lanes sent to the search: their gap among the relevant distances, as RC_PLACE finds it */
static void search_lanes(unsigned mask, const float *x, const int32_t *bk, const bucketent *t, const double *rd,
                         uint32_t *cnt, int64_t nc, int64_t Gp, int64_t j)
{
    while (mask) {
        const int l = __builtin_ctz(mask);
        const double d = (double)x[l];
        int64_t lo = t[bk[l]].first;
        const int64_t hi = t[bk[l] + 1].first;
        int64_t tie;
        mask &= mask - 1;
        lo += lower_bound_bf(rd + lo, hi - lo, d);
        tie = lo < hi && rd[lo] == d;
        cnt[((j + l) & (nc - 1)) * 2 * (Gp + 1) + 2 * lo + tie]++;
    }
}

/* row[j ..) eight items a step until end, or a step holding a skipped item (returned: where
 * it stopped); *nonfinite set where a NaN / inf was read */
__attribute__((target("avx2"))) int64_t
rc_place_avx2(const float *row, int neg, const uint8_t *skip, int64_t j, int64_t end, const bucketmap *m,
              const bucketent *t, const float *bval, const double *rd, uint32_t *sides, int64_t copies,
              int64_t stride, uint32_t *cnt, int64_t nc, int64_t Gp, int *nonfinite)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(HUGE_VALF);
    const __m256 lo = _mm256_set1_ps((float)m->lo), hi = _mm256_set1_ps((float)m->hi);
    const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2), three = _mm256_set1_epi32(3);
    const __m256i parked = _mm256_set1_epi32((int32_t)(stride - 1));
    /* lane l's copy: l mod copies (copies 1, 2 or 4) */
    uint32_t *const c0 = sides, *const c1 = sides + (1 & (copies - 1)) * stride;
    uint32_t *const c2 = sides + (2 & (copies - 1)) * stride, *const c3 = sides + (3 & (copies - 1)) * stride;
    __m256 bad = _mm256_setzero_ps();
    for (; j + 8 <= end; j += 8) {
        uint64_t sk;
        float x[8];
        int32_t bk[8];
        int l;
        memcpy(&sk, skip + j, sizeof(sk));
        if (sk) break;
        __m256 d = _mm256_loadu_ps(row + j);
        if (neg) d = _mm256_xor_ps(d, sign);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_andnot_ps(sign, d), inf, _CMP_NLT_UQ));
        /* lo and hi are relevant distances of a float32 row: compared exactly in float32 */
        const __m128i b0 = bucket_body4(_mm256_cvtps_pd(_mm256_castps256_ps128(d)), m);
        const __m128i b1 = bucket_body4(_mm256_cvtps_pd(_mm256_extractf128_ps(d, 1)), m);
        __m256i b = _mm256_and_si256(_mm256_set_m128i(b1, b0), _mm256_castps_si256(_mm256_cmp_ps(d, lo, _CMP_GE_OQ)));
        b = _mm256_sub_epi32(b, _mm256_castps_si256(_mm256_cmp_ps(d, hi, _CMP_GT_OQ)));
        const __m256 v = _mm256_i32gather_ps(bval, b, 4);
        const __m256 several = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        const __m256i side =
            _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d, v, _CMP_GT_OQ)), two),
                            _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d, v, _CMP_EQ_OQ)), one));
        __m256i k = _mm256_add_epi32(_mm256_mullo_epi32(b, three), side);
        k = _mm256_blendv_epi8(k, parked, _mm256_castps_si256(several));
        {  /* the keys two a 64-bit word: fewer extractions than one a lane */
            const __m128i k0 = _mm256_castsi256_si128(k), k1 = _mm256_extracti128_si256(k, 1);
            const uint64_t w[4] = {(uint64_t)_mm_cvtsi128_si64(k0), (uint64_t)_mm_extract_epi64(k0, 1),
                                   (uint64_t)_mm_cvtsi128_si64(k1), (uint64_t)_mm_extract_epi64(k1, 1)};
            for (l = 0; l < 4; l += 2) {
                c0[(uint32_t)w[l]]++;
                c1[w[l] >> 32]++;
                c2[(uint32_t)w[l + 1]]++;
                c3[w[l + 1] >> 32]++;
            }
        }
        {
            const unsigned mask = (unsigned)_mm256_movemask_ps(several);
            if (mask) {
                _mm256_storeu_ps(x, d);
                _mm256_storeu_si256((__m256i *)bk, b);
                search_lanes(mask, x, bk, t, rd, cnt, nc, Gp, j);
            }
        }
    }
    *nonfinite |= _mm256_movemask_ps(bad) != 0;
    return j;
}
#endif
