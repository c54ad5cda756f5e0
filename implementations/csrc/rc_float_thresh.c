/* rc_float_thresh.c -- the placing pass over a whole float32 row with few distinct relevant
 * distances u_0 < .. < u_{K-1} (K <= RC_THRESH_MAX_RUNS; rc_float.c takes it where the AVX2
 * pass of rc_float_place.c would run): no bucket, no gather, no counter indexed by an item.
 * Every item is compared with each u_k, eight items a step (sixteen with AVX-512), each
 * comparison's mask added to a per-lane counter held in a vector register: lt(u_k), the items
 * closer than run k, so gap k holds lt(u_k) - lt(u_{k-1}) - tied(u_{k-1}), exactly what the
 * scalar pass counts per item.  The items tied with u_k are counted the same way (equality
 * compares), but only in a block where one occurs: with AVX-512 a block is first looked up in
 * a hash table of the u_k (64 slots, a multiplier chosen so that no two share one; one
 * permutation lookup and one compare per step), and the ties are counted only where an item
 * equals its slot's value; without AVX-512, or when no multiplier separates the u_k, every
 * block counts them.  The comparisons are those of the scalar pass (float32 values, exact in
 * float64; a negated row's sign flipped exactly; -0 and +0 equal, and hashed alike).  The row
 * is taken in blocks of consecutive items without a skipped one (at most RC_THRESH_BLOCK,
 * read again from L1 for each group of eight thresholds, or four at the end); a step that
 * holds a skipped item (junk, relevant) is counted up to it and the skipped item left to the
 * caller's scalar code, which meets the relevant items in gallery order as stable / reverse
 * need (rc_thresh_ties: a run's tied items counted so far).  NaN / inf are noted on the way,
 * as rc_place_avx2 does. */
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

/* the hash of a float32 (its bits after adding +0, so that -0 hashes as +0) into 64 slots */
static inline uint32_t slot_of(float x, uint32_t mul)
{
    uint32_t key;
    x += 0.0f;
    memcpy(&key, &x, sizeof(key));
    return (key * mul) >> 26;
}

/* th for the K runs of rd[0 .. G): thr[8 k .. 8 k + 8) holds u_k over eight lanes, then NaN (no
 * item is below or equal to it) up to a multiple of four thresholds; cnt[] (16 T) their
 * counters, zeroed (lt: the first 8 T, tied: the next); the hash table of the u_k */
void rc_thresh_setup(const double *rd, int64_t G, float *thr, uint32_t *cnt, rc_thresh *th)
{
    int64_t i, t = 0, l, s, try_;
    for (i = 0; i < G; i++) {
        if (i > 0 && rd[i] == rd[i - 1]) continue;
        for (l = 0; l < 8; l++) thr[8 * t + l] = (float)rd[i];  /* exact: a float32 row's distance */
        t++;
    }
    th->K = t;
    for (th->T = (t + 3) & ~(int64_t)3; t < th->T; t++)
        for (l = 0; l < 8; l++) thr[8 * t + l] = NAN;
    th->thr = thr;
    th->lt = cnt;
    th->eq = cnt + 8 * th->T;
    memset(cnt, 0, (size_t)(16 * th->T) * sizeof(uint32_t));
    th->mul = 0;
    /* only the AVX-512 pass reads it; past RC_THRESH_HASH_MAX_RUNS values, 64 slots seldom
     * keep them apart */
    for (try_ = 0; rc_use_avx512 && th->K <= RC_THRESH_HASH_MAX_RUNS && try_ < RC_THRESH_HASH_TRIES && !th->mul;
         try_++) {
        const uint32_t mul = (0x9e3779b1u + (uint32_t)try_ * 0x6a09e66eu) | 1u;
        for (s = 0; s < 64; s++) th->tab[s] = NAN;
        for (i = 0; i < th->K; i++) {
            const float u = thr[8 * i];
            float *slot = th->tab + slot_of(u, mul);
            if (*slot == *slot) break;  /* taken (a NaN u_k is never hit: its row is refused) */
            *slot = u;
        }
        if (i == th->K) th->mul = mul;
    }
}

/* counter k's count over the eight lanes */
static int64_t lanes(const uint32_t *cnt, int64_t k)
{
    int64_t l, n = 0;
    for (l = 0; l < 8; l++) n += cnt[8 * k + l];
    return n;
}

/* the items tied with the run of the relevant distance d, counted so far */
int64_t rc_thresh_ties(const rc_thresh *th, double d)
{
    int64_t k;
    for (k = 0; k < th->K; k++)
        if ((double)th->thr[8 * k] == d) return lanes(th->eq, k);
    return 0;  /* not a relevant distance (a NaN one: the row is refused) */
}

/* the counters into before[] / eq[] for the runs of rd[0 .. G) (placed: the items counted),
 * as the scalar pass would have counted each item, then zeroed */
void rc_fold_thresh(rc_thresh *th, const double *rd, int64_t G, int64_t placed, int64_t *before, int64_t *eq)
{
    int64_t lo = 0, hi, k = 0, below = 0;  /* below: items at most the previous run's distance */
    for (; lo < G; lo = hi, k++) {
        for (hi = lo + 1; hi < G && rd[hi] == rd[lo]; hi++) continue;
        const int64_t lt = lanes(th->lt, k), tied = lanes(th->eq, k);
        before[lo] += lt - below;
        eq[lo] += tied;
        below = lt + tied;
    }
    before[G] += placed - below;
    memset(th->lt, 0, (size_t)(16 * th->T) * sizeof(uint32_t));
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* the lanes compared, eq: tied (else closer) */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) __m256i cmp8(__m256 d, __m256 u, const int eq)
{
    return _mm256_castps_si256(eq ? _mm256_cmp_ps(d, u, _CMP_EQ_OQ) : _mm256_cmp_ps(d, u, _CMP_LT_OQ));
}

/* the steps row[j .. e) (e - j a multiple of eight), then the first `part` lanes of the step
 * at e, compared with the n (8 or 4) thresholds of thr[], counted in cnt[] (n, eq: constants
 * of each copy) */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
count_block(const float *row, __m256 flip, int64_t j, int64_t e, int part, const float *thr, uint32_t *cnt,
            const int n, const int eq)
{
    __m256i a[8];
    __m256 u[8];
    int i;
    for (i = 0; i < n; i++) {
        a[i] = _mm256_loadu_si256((const __m256i *)(cnt + 8 * i));
        u[i] = _mm256_loadu_ps(thr + 8 * i);
    }
    for (; j < e; j += 8) {
        const __m256 d = _mm256_xor_ps(_mm256_loadu_ps(row + j), flip);
        for (i = 0; i < n; i++) a[i] = _mm256_sub_epi32(a[i], cmp8(d, u[i], eq));
    }
    if (part) {
        const __m256i kept = _mm256_cmpgt_epi32(_mm256_set1_epi32(part), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256 d = _mm256_xor_ps(_mm256_loadu_ps(row + e), flip);
        for (i = 0; i < n; i++) a[i] = _mm256_sub_epi32(a[i], _mm256_and_si256(kept, cmp8(d, u[i], eq)));
    }
    for (i = 0; i < n; i++) _mm256_storeu_si256((__m256i *)(cnt + 8 * i), a[i]);
}

/* every group of thresholds over a block (eq: the tied items, else the closer ones) */
__attribute__((target("avx2"))) static void count_all(const float *row, __m256 flip, int64_t j, int64_t e, int part,
                                                      const rc_thresh *th, const int eq)
{
    uint32_t *cnt = eq ? th->eq : th->lt;
    int64_t g;
    for (g = 0; g + 8 <= th->T; g += 8) {
        if (eq) count_block(row, flip, j, e, part, th->thr + 8 * g, cnt + 8 * g, 8, 1);
        else count_block(row, flip, j, e, part, th->thr + 8 * g, cnt + 8 * g, 8, 0);
    }
    if (g < th->T) {
        if (eq) count_block(row, flip, j, e, part, th->thr + 8 * g, cnt + 8 * g, 4, 1);
        else count_block(row, flip, j, e, part, th->thr + 8 * g, cnt + 8 * g, 4, 0);
    }
}

#ifdef RC_HAVE_AVX512_DISPATCH
#define RC_THRESH_AVX512 __attribute__((target("avx512f,avx512vl")))
/* the lanes of k compared, eq: tied (else closer) */
RC_THRESH_AVX512 static inline __attribute__((always_inline)) __mmask16 cmp16(__mmask16 k, __m512 d, __m512 u,
                                                                               const int eq)
{
    return eq ? _mm512_mask_cmp_ps_mask(k, d, u, _CMP_EQ_OQ) : _mm512_mask_cmp_ps_mask(k, d, u, _CMP_LT_OQ);
}

/* count_block with sixteen items a step (a compare into a mask register, a masked add); the
 * lanes' counts folded into the eight of cnt[] (lane l and l + 8 into l) at the end */
RC_THRESH_AVX512 static inline __attribute__((always_inline)) void
count_block512(const float *row, __m512i flip, int64_t j, int64_t e, int part, const float *thr, uint32_t *cnt,
               const int n, const int eq)
{
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
        for (i = 0; i < n; i++) a[i] = _mm512_mask_add_epi32(a[i], cmp16(0xffff, d, u[i], eq), a[i], one);
    }
    {  /* the rest: a step of eight (e - j is a multiple of eight) and the first `part` lanes at e */
        const __mmask16 kept = (__mmask16)((1u << (e - j + part)) - 1u);
        if (kept) {
            const __m512 d = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_maskz_loadu_epi32(kept, row + j), flip));
            for (i = 0; i < n; i++) a[i] = _mm512_mask_add_epi32(a[i], cmp16(kept, d, u[i], eq), a[i], one);
        }
    }
    for (i = 0; i < n; i++) {
        const __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(a[i]), _mm512_extracti64x4_epi64(a[i], 1));
        _mm256_storeu_si256((__m256i *)(cnt + 8 * i),
                            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(cnt + 8 * i)), s));
    }
}

/* count_block512 for n = 1 .. 8 thresholds (eq: the tied items, else the closer ones) */
#define RC_COUNT512(n_)                                                                            \
    RC_THRESH_AVX512 static void count512_##n_(const float *row, __m512i flip, int64_t j, int64_t e, int part, \
                                               const float *thr, uint32_t *cnt, int eq)            \
    {                                                                                              \
        if (eq) count_block512(row, flip, j, e, part, thr, cnt, n_, 1);                            \
        else count_block512(row, flip, j, e, part, thr, cnt, n_, 0);                               \
    }
RC_COUNT512(1) RC_COUNT512(2) RC_COUNT512(3) RC_COUNT512(4) RC_COUNT512(5) RC_COUNT512(6) RC_COUNT512(7)
RC_COUNT512(8)
#undef RC_COUNT512

/* every u_k over a block, eight a group, the last group as large as what is left (the
 * padding thresholds are not compared: their counts stay 0) */
RC_THRESH_AVX512 static void count_all512(const float *row, int neg, int64_t j, int64_t e, int part,
                                          const rc_thresh *th, int eq)
{
    typedef void (*countfn)(const float *, __m512i, int64_t, int64_t, int, const float *, uint32_t *, int);
    static const countfn by_n[9] = {NULL,       count512_1, count512_2, count512_3, count512_4,
                                    count512_5, count512_6, count512_7, count512_8};
    const __m512i flip = _mm512_set1_epi32(neg ? (int32_t)0x80000000u : 0);
    uint32_t *cnt = eq ? th->eq : th->lt;
    int64_t g;
    for (g = 0; g < th->K; g += 8)
        by_n[th->K - g < 8 ? th->K - g : 8](row, flip, j, e, part, th->thr + 8 * g, cnt + 8 * g, eq);
}

/* whether an item of the block equals some u_k: its slot's value (slot_of, sixteen lanes);
 * *nonfinite set where one is NaN / inf */
RC_THRESH_AVX512 static int any_tie512(const float *row, int neg, int64_t j, int64_t e, int part,
                                       const rc_thresh *th, int *nonfinite)
{
    const __m512 inf = _mm512_set1_ps(HUGE_VALF);
    const __m512i flip = _mm512_set1_epi32(neg ? (int32_t)0x80000000u : 0);
    const __m512i mul = _mm512_set1_epi32((int32_t)th->mul);
    const __m512 lo = _mm512_loadu_ps(th->tab), hi = _mm512_loadu_ps(th->tab + 32);
    const __m512 lo2 = _mm512_loadu_ps(th->tab + 16), hi2 = _mm512_loadu_ps(th->tab + 48);
    __mmask16 hit = 0, bad = 0, kept = 0xffff;
    for (; j < e + part; j += 16) {
        if (e + part - j < 16) kept = (__mmask16)((1u << (e + part - j)) - 1u);
        const __m512 d = _mm512_add_ps(
            _mm512_castsi512_ps(_mm512_xor_si512(_mm512_maskz_loadu_epi32(kept, row + j), flip)), _mm512_setzero_ps());
        const __m512i h = _mm512_srli_epi32(_mm512_mullo_epi32(_mm512_castps_si512(d), mul), 26);
        /* slots 0 .. 31 from (lo, lo2), 32 .. 63 from (hi, hi2), chosen by bit 5 */
        const __m512 v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(h, _mm512_set1_epi32(32)),
                                              _mm512_permutex2var_ps(lo, h, lo2), _mm512_permutex2var_ps(hi, h, hi2));
        hit |= _mm512_mask_cmp_ps_mask(kept, d, v, _CMP_EQ_OQ);
        bad |= _mm512_mask_cmp_ps_mask(kept, _mm512_abs_ps(d), inf, _CMP_NLT_UQ);
    }
    *nonfinite |= bad != 0;
    return hit != 0;
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
    for (l = 0; l < part; l++) bad = _mm256_or_ps(bad, _mm256_set1_ps(!(fabsf(row[e + l]) < HUGE_VALF) ? -1.0f : 0.0f));
    return _mm256_movemask_ps(bad) != 0;
}

/* row[j ..) eight items a step until end, or up to a skipped item (returned: where it stopped,
 * the caller places that item); *placed counts the items counted, *nonfinite is set where a
 * NaN / inf was read */
__attribute__((target("avx2"))) int64_t rc_thresh_avx2(const float *row, int neg, const uint8_t *skip, int64_t j,
                                                       int64_t end, const rc_thresh *th, int64_t *placed,
                                                       int *nonfinite)
{
    const __m256 flip = neg ? _mm256_set1_ps(-0.0f) : _mm256_setzero_ps();
    while (j + 8 <= end) {
        int64_t e = j;
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
            count_all512(row, neg, j, e, part, th, 0);
            if (!th->mul) {
                count_all512(row, neg, j, e, part, th, 1);
                *nonfinite |= any_nonfinite(row, j, e, part);
            } else if (any_tie512(row, neg, j, e, part, th, nonfinite)) {
                count_all512(row, neg, j, e, part, th, 1);
            }
        } else
#endif
        {
            count_all(row, flip, j, e, part, th, 0);
            count_all(row, flip, j, e, part, th, 1);
            *nonfinite |= any_nonfinite(row, j, e, part);
        }
        *placed += e - j + part;
        j = e + part;
        if (stop) break;
    }
    return j;
}
#endif
