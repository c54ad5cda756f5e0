/* rc_float_thresh.c -- the placing pass over a whole float32 row with few distinct relevant
 * distances u_0 < .. < u_{K-1} (K <= RC_THRESH_MAX_RUNS; rc_float.c takes it where the AVX2
 * pass of rc_float_place.c would run): no bucket, no gather, no counter indexed by an item.
 * Each run k of relevant items has two thresholds, u_k and u_k+ (the next float32 above u_k:
 * for a float32 d, d < u_k+ exactly when d <= u_k), and every item is compared with all 2K
 * thresholds, eight items a step, each comparison's mask subtracted from a per-lane counter
 * held in a vector register.  So lt(u_k) counts the items closer than run k and lt(u_k+) -
 * lt(u_k) those tied with it: gap k holds lt(u_k) - lt(u_{k-1}+), exactly what the scalar pass
 * counts per item.  The comparisons are those of the scalar pass (float32 values, exact in
 * float64; a negated row's sign flipped exactly).  The row is taken in blocks of consecutive
 * items without a skipped one (at most RC_THRESH_BLOCK, read again from L1 for each group of
 * eight thresholds); a step that holds a skipped item (junk, relevant) is counted up to it and
 * the skipped item left to the caller's scalar code, which meets the relevant items in gallery
 * order as stable / reverse need (rc_thresh_ties: a run's tied items counted so far).  NaN /
 * inf are noted on the way, as rc_place_avx2 does. */
#include "rc_float.h"
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

/* the distinct values of rd[0 .. G) (sorted), or -1 once there are more than most */
int64_t rc_thresh_runs(const double *rd, int64_t G, int64_t most)
{
    int64_t i, k = G > 0;
    for (i = 1; i < G && k <= most; i++) k += rd[i] != rd[i - 1];
    return k <= most ? k : -1;
}

/* the thresholds of the K runs of rd[0 .. G), each repeated over eight lanes: thr[8 t ..
 * 8 t + 8) holds threshold t (u_k at t = 2 k, u_k+ at 2 k + 1), then NaN (no item is below it)
 * up to a multiple of four thresholds; their counters zeroed.  Returns the thresholds, T */
int64_t rc_thresh_setup(const double *rd, int64_t G, float *thr, uint32_t *tcnt)
{
    int64_t i, t = 0, l, T;
    for (i = 0; i < G; i++) {
        if (i > 0 && rd[i] == rd[i - 1]) continue;
        const float u = (float)rd[i];  /* exact: a float32 row's distance */
        const float up = nextafterf(u, HUGE_VALF);
        for (l = 0; l < 8; l++) {
            thr[8 * t + l] = u;
            thr[8 * t + 8 + l] = up;
        }
        t += 2;
    }
    for (T = (t + 3) & ~(int64_t)3; t < T; t++)
        for (l = 0; l < 8; l++) thr[8 * t + l] = NAN;
    memset(tcnt, 0, (size_t)(8 * T) * sizeof(uint32_t));
    return T;
}

/* threshold t's count over the eight lanes */
static int64_t lanes(const uint32_t *tcnt, int64_t t)
{
    int64_t l, n = 0;
    for (l = 0; l < 8; l++) n += tcnt[8 * t + l];
    return n;
}

/* the items tied with the run of the relevant distance d, counted in tcnt[] so far */
int64_t rc_thresh_ties(const float *thr, const uint32_t *tcnt, int64_t T, double d)
{
    int64_t t;
    for (t = 0; t < T; t += 2)
        if ((double)thr[8 * t] == d) return lanes(tcnt, t + 1) - lanes(tcnt, t);
    return 0;  /* not a relevant distance (a NaN one: the row is refused) */
}

/* tcnt[] into before[] / eq[] for the runs of rd[0 .. G) (placed: the items counted in it),
 * as the scalar pass would have counted each item, then zeroed */
void rc_fold_thresh(uint32_t *tcnt, int64_t T, const double *rd, int64_t G, int64_t placed, int64_t *before,
                    int64_t *eq)
{
    int64_t lo = 0, hi, t = 0, below = 0;  /* below: items at most the previous run's distance */
    for (; lo < G; lo = hi, t += 2) {
        for (hi = lo + 1; hi < G && rd[hi] == rd[lo]; hi++) continue;
        const int64_t lt = lanes(tcnt, t), le = lanes(tcnt, t + 1);
        before[lo] += lt - below;
        eq[lo] += le - lt;
        below = le;
    }
    before[G] += placed - below;
    memset(tcnt, 0, (size_t)(8 * T) * sizeof(uint32_t));
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* the steps row[j .. e) (e - j a multiple of eight), then the first `part` lanes of the step
 * at e, against the n (8 or 4: a constant of each copy) thresholds of thr[] */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
count_block(const float *row, __m256 flip, int64_t j, int64_t e, int part, const float *thr, uint32_t *tcnt,
            const int n)
{
    __m256i a[8];
    __m256 u[8];
    int i;
    for (i = 0; i < n; i++) {
        a[i] = _mm256_loadu_si256((const __m256i *)(tcnt + 8 * i));
        u[i] = _mm256_loadu_ps(thr + 8 * i);
    }
    for (; j < e; j += 8) {
        const __m256 d = _mm256_xor_ps(_mm256_loadu_ps(row + j), flip);
        for (i = 0; i < n; i++) a[i] = _mm256_sub_epi32(a[i], _mm256_castps_si256(_mm256_cmp_ps(d, u[i], _CMP_LT_OQ)));
    }
    if (part) {
        const __m256i kept = _mm256_cmpgt_epi32(_mm256_set1_epi32(part), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256 d = _mm256_xor_ps(_mm256_loadu_ps(row + e), flip);
        for (i = 0; i < n; i++)
            a[i] = _mm256_sub_epi32(
                a[i], _mm256_and_si256(kept, _mm256_castps_si256(_mm256_cmp_ps(d, u[i], _CMP_LT_OQ))));
    }
    for (i = 0; i < n; i++) _mm256_storeu_si256((__m256i *)(tcnt + 8 * i), a[i]);
}

__attribute__((target("avx2"))) static void count8(const float *row, __m256 flip, int64_t j, int64_t e, int part,
                                                   const float *thr, uint32_t *tcnt)
{
    count_block(row, flip, j, e, part, thr, tcnt, 8);
}

__attribute__((target("avx2"))) static void count4(const float *row, __m256 flip, int64_t j, int64_t e, int part,
                                                   const float *thr, uint32_t *tcnt)
{
    count_block(row, flip, j, e, part, thr, tcnt, 4);
}

#ifdef RC_HAVE_AVX512_DISPATCH
/* count_block with sixteen items a step (AVX-512: a compare into a mask register, a masked
 * subtraction), the n thresholds of thr[] (8 or 4); the lanes' counts folded into the eight
 * of tcnt[] (lane l and l + 8 into l) at the end */
__attribute__((target("avx512f,avx512vl"))) static inline __attribute__((always_inline)) void
count_block512(const float *row, int neg, int64_t j, int64_t e, int part, const float *thr, uint32_t *tcnt,
               const int n)
{
    const __m512i flip = _mm512_set1_epi32(neg ? (int32_t)0x80000000u : 0);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i a[8];
    __m512 u[8];
    int i;
    for (i = 0; i < n; i++) {
        a[i] = _mm512_setzero_si512();
        u[i] = _mm512_set1_ps(thr[8 * i]);
    }
    for (; j + 16 <= e; j += 16) {
        const __m512 d = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_loadu_si512(row + j), flip));
        for (i = 0; i < n; i++) a[i] = _mm512_mask_add_epi32(a[i], _mm512_cmp_ps_mask(d, u[i], _CMP_LT_OQ), a[i], one);
    }
    {  /* the rest: a step of eight (e - j is a multiple of eight) and the first `part` lanes at e */
        const __mmask16 kept = (__mmask16)(((1u << (e - j + part)) - 1u) & 0xffffu);
        if (kept) {
            const __m512 d = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_maskz_loadu_epi32(kept, row + j), flip));
            for (i = 0; i < n; i++)
                a[i] = _mm512_mask_add_epi32(a[i], _mm512_mask_cmp_ps_mask(kept, d, u[i], _CMP_LT_OQ), a[i], one);
        }
    }
    for (i = 0; i < n; i++) {
        const __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(a[i]), _mm512_extracti64x4_epi64(a[i], 1));
        _mm256_storeu_si256((__m256i *)(tcnt + 8 * i),
                            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(tcnt + 8 * i)), s));
    }
}

__attribute__((target("avx512f,avx512vl"))) static void count8_512(const float *row, int neg, int64_t j, int64_t e,
                                                                   int part, const float *thr, uint32_t *tcnt)
{
    count_block512(row, neg, j, e, part, thr, tcnt, 8);
}

__attribute__((target("avx512f,avx512vl"))) static void count4_512(const float *row, int neg, int64_t j, int64_t e,
                                                                   int part, const float *thr, uint32_t *tcnt)
{
    count_block512(row, neg, j, e, part, thr, tcnt, 4);
}
#endif

/* NaN or inf among row[j .. e) and the first `part` lanes at e */
__attribute__((target("avx2"))) static int any_nonfinite(const float *row, int64_t j, int64_t e, int part)
{
    const __m256 mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 inf = _mm256_set1_ps(HUGE_VALF);
    __m256 bad = _mm256_setzero_ps();
    int l;
    for (; j < e; j += 8)
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(row + j), mag), inf, _CMP_NLT_UQ));
    for (l = 0; l < part; l++) bad = _mm256_or_ps(bad, _mm256_set1_ps(fabsf(row[e + l]) >= HUGE_VALF || row[e + l] != row[e + l] ? -1.0f : 0.0f));
    return _mm256_movemask_ps(bad) != 0;
}

/* row[j ..) eight items a step until end, or up to a skipped item (returned: where it stopped,
 * the caller places that item); *placed counts the items counted, *nonfinite is set where a
 * NaN / inf was read */
__attribute__((target("avx2"))) int64_t
rc_thresh_avx2(const float *row, int neg, const uint8_t *skip, int64_t j, int64_t end, const float *thr,
               int64_t T, uint32_t *tcnt, int64_t *placed, int *nonfinite)
{
    const __m256 flip = neg ? _mm256_set1_ps(-0.0f) : _mm256_setzero_ps();
    while (j + 8 <= end) {
        int64_t e = j, g;
        int part = 0, stop = 0;
        while (e + 8 <= end && e - j < RC_THRESH_BLOCK) {
            uint64_t sk;
            memcpy(&sk, skip + e, sizeof(sk));
            if (sk) {  /* little-endian: byte t is lane t */
                part = __builtin_ctzll(sk) >> 3;
                stop = 1;
                break;
            }
            e += 8;
        }
#ifdef RC_HAVE_AVX512_DISPATCH
        if (rc_use_avx512) {
            for (g = 0; g + 8 <= T; g += 8) count8_512(row, neg, j, e, part, thr + 8 * g, tcnt + 8 * g);
            if (g < T) count4_512(row, neg, j, e, part, thr + 8 * g, tcnt + 8 * g);
        } else
#endif
        {
            for (g = 0; g + 8 <= T; g += 8) count8(row, flip, j, e, part, thr + 8 * g, tcnt + 8 * g);
            if (g < T) count4(row, flip, j, e, part, thr + 8 * g, tcnt + 8 * g);
        }
        *nonfinite |= any_nonfinite(row, j, e, part);
        *placed += e - j + part;
        j = e + part;
        if (stop) break;
    }
    return j;
}
#endif
