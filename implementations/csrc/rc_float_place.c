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

/* what a step shares: the map, the tables, the counters and the lanes' copies of sides[] */
typedef struct {
    const bucketmap *m;
    const bucketent *t;
    const float *bval;
    const double *rd;
    uint32_t *cnt, *copy[4];
    int64_t nc, Gp, stride;
} stepctx;

/* the items row[j .. j + 8) (d: their distances), those of lanes < keep only (8: all) */
__attribute__((target("avx2"))) static inline __m256 place_step(const stepctx *c, __m256 d, int64_t j, int keep)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i kept = _mm256_cmpgt_epi32(_mm256_set1_epi32(keep), lane);
    /* lo and hi are relevant distances of a float32 row: compared exactly in float32 */
    const __m256 lo = _mm256_set1_ps((float)c->m->lo), hi = _mm256_set1_ps((float)c->m->hi);
    const __m128i b0 = bucket_body4(_mm256_cvtps_pd(_mm256_castps256_ps128(d)), c->m);
    const __m128i b1 = bucket_body4(_mm256_cvtps_pd(_mm256_extractf128_ps(d, 1)), c->m);
    __m256i b = _mm256_and_si256(_mm256_set_m128i(b1, b0), _mm256_castps_si256(_mm256_cmp_ps(d, lo, _CMP_GE_OQ)));
    b = _mm256_sub_epi32(b, _mm256_castps_si256(_mm256_cmp_ps(d, hi, _CMP_GT_OQ)));
    const __m256 v = _mm256_i32gather_ps(c->bval, b, 4);
    const __m256 several = _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_castsi256_ps(kept));
    const __m256i side =
        _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d, v, _CMP_GT_OQ)), _mm256_set1_epi32(2)),
                        _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d, v, _CMP_EQ_OQ)), _mm256_set1_epi32(1)));
    __m256i k = _mm256_add_epi32(_mm256_mullo_epi32(b, _mm256_set1_epi32(3)), side);
    /* the lanes sent to the search, and those not kept, count in the parked slot */
    k = _mm256_blendv_epi8(_mm256_set1_epi32((int32_t)(c->stride - 1)), k,
                           _mm256_andnot_si256(_mm256_castps_si256(several), kept));
    {  /* the keys two a 64-bit word: fewer extractions than one a lane */
        const __m128i k0 = _mm256_castsi256_si128(k), k1 = _mm256_extracti128_si256(k, 1);
        const uint64_t w[4] = {(uint64_t)_mm_cvtsi128_si64(k0), (uint64_t)_mm_extract_epi64(k0, 1),
                               (uint64_t)_mm_cvtsi128_si64(k1), (uint64_t)_mm_extract_epi64(k1, 1)};
        int l;
        for (l = 0; l < 4; l += 2) {
            c->copy[0][(uint32_t)w[l]]++;
            c->copy[1][w[l] >> 32]++;
            c->copy[2][(uint32_t)w[l + 1]]++;
            c->copy[3][w[l + 1] >> 32]++;
        }
    }
    {
        const unsigned mask = (unsigned)_mm256_movemask_ps(several);
        if (mask) {
            float x[8];
            int32_t bk[8];
            _mm256_storeu_ps(x, d);
            _mm256_storeu_si256((__m256i *)bk, b);
            search_lanes(mask, x, bk, c->t, c->rd, c->cnt, c->nc, c->Gp, j);
        }
    }
    /* NaN or inf among the kept lanes */
    return _mm256_and_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, d), _mm256_set1_ps(HUGE_VALF), _CMP_NLT_UQ),
                         _mm256_castsi256_ps(kept));
}

/* row[j ..) eight items a step until end, or up to a skipped item (junk, relevant; returned:
 * where it stopped, the caller places that item); *nonfinite set where a NaN / inf was read */
__attribute__((target("avx2"))) int64_t
rc_place_avx2(const float *row, int neg, const uint8_t *skip, int64_t j, int64_t end, const bucketmap *m,
              const bucketent *t, const float *bval, const double *rd, uint32_t *sides, int64_t copies,
              int64_t stride, uint32_t *cnt, int64_t nc, int64_t Gp, int *nonfinite)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    stepctx c;
    int l;
    __m256 bad = _mm256_setzero_ps();
    c.m = m;
    c.t = t;
    c.bval = bval;
    c.rd = rd;
    c.cnt = cnt;
    c.nc = nc;
    c.Gp = Gp;
    c.stride = stride;
    for (l = 0; l < 4; l++) c.copy[l] = sides + (l & (copies - 1)) * stride;  /* lane l: copy l mod copies */
    for (; j + 8 <= end; j += 8) {
        uint64_t sk;
        __m256 d = _mm256_loadu_ps(row + j);
        if (neg) d = _mm256_xor_ps(d, sign);
        memcpy(&sk, skip + j, sizeof(sk));
        if (sk) {  /* the lanes before the first skipped item (little-endian: byte t is lane t) */
            const int first = __builtin_ctzll(sk) >> 3;
            if (first) bad = _mm256_or_ps(bad, place_step(&c, d, j, first));
            j += first;
            break;
        }
        bad = _mm256_or_ps(bad, place_step(&c, d, j, 8));
    }
    *nonfinite |= _mm256_movemask_ps(bad) != 0;
    return j;
}
#endif
