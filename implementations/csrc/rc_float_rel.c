/* rc_float_rel.c -- the relevant items of a query given as a row of 0/1 flags (a relevance
 * matrix): their indices, in gallery order, into w->rel[].j.  The row is mostly zeros, so it
 * is read in runs that are tested for zero as a whole: 128 flags a test with AVX2 (where the
 * CPU has it, rc_use_avx2), else 8 (one 64-bit word). */
#include "rc_float.h"
#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

/* how far ahead (bytes) the AVX2 scan asks for the row: the hardware's own prefetch alone
 * leaves the loop waiting on memory (measured: 1,000 rows of 50,000 flags, ~0.8 ms less) */
#define RC_FLAGS_AHEAD 2048

/* the flags of row[lo .. hi) one by one (the short tail, or every flag without a word test) */
static int flags_one_by_one(const uint8_t *row, int64_t lo, int64_t hi, const uint8_t *skip, workspace *w,
                            int64_t *G)
{
    int64_t j;
    for (j = lo; j < hi; j++) {
        if (row[j] && !skip[j]) {
            if (rc_rel_room(w, *G)) return -1;
            w->rel[(*G)++].j = j;
        }
    }
    return 0;
}

/* eight flags a word, an all-zero word skipped, the non-zero bytes of the others visited */
static int flags_by_word(const uint8_t *row, int64_t N, const uint8_t *skip, workspace *w, int64_t *G)
{
    const int64_t full = N - N % 8;
    int64_t j;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (j = 0; j < full; j += 8) {
        uint64_t word;
        memcpy(&word, row + j, sizeof(word));
        while (word) {  /* flag t is byte t of the word */
            const int bit = __builtin_ctzll(word) & ~7;
            const int64_t t = j + (bit >> 3);
            word &= ~((uint64_t)0xff << bit);
            if (!skip[t]) {
                if (rc_rel_room(w, *G)) return -1;
                w->rel[(*G)++].j = t;
            }
        }
    }
#else
    for (j = 0; j < full; j += 8) {
        uint64_t word;
        memcpy(&word, row + j, sizeof(word));
        if (word && flags_one_by_one(row, j, j + 8, skip, w, G)) return -1;
    }
#endif
    return flags_one_by_one(row, full, N, skip, w, G);
}

#ifdef RC_HAVE_AVX2_DISPATCH
/* 128 flags a test: four 32-byte loads ORed; a non-zero run gives two 64-bit masks of its
 * non-zero bytes, whose set bits are visited (room for all 128 made once per run) */
__attribute__((target("avx2"))) static int
flags_avx2(const uint8_t *row, int64_t N, const uint8_t *skip, workspace *w, int64_t *G_out)
{
    const __m256i zero = _mm256_setzero_si256();
    const int64_t full = N - N % 128;
    int64_t j, G = *G_out;
    for (j = 0; j < full; j += 128) {
        /* two lines, 2 KB ahead (a hint: never faults, past the row's end included) */
        _mm_prefetch((const char *)(row + j + RC_FLAGS_AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(row + j + RC_FLAGS_AHEAD + 64), _MM_HINT_T0);
        const __m256i a = _mm256_loadu_si256((const __m256i *)(row + j));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(row + j + 32));
        const __m256i c = _mm256_loadu_si256((const __m256i *)(row + j + 64));
        const __m256i d = _mm256_loadu_si256((const __m256i *)(row + j + 96));
        const __m256i any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
        uint64_t half[2];
        relitem *rel;
        int h;
        if (_mm256_testz_si256(any, any)) continue;
        /* bit t of half[h]: byte 64 h + t is non-zero */
        half[0] = (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, zero)) |
                  (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, zero)) << 32;
        half[1] = (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, zero)) |
                  (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(d, zero)) << 32;
        if (rc_rel_room(w, G + 128)) {
            *G_out = G;
            return -1;
        }
        rel = w->rel;
        for (h = 0; h < 2; h++) {
            uint64_t m = half[h];
            while (m) {  /* written always, kept unless junk */
                const int64_t t = j + 64 * h + __builtin_ctzll(m);
                m &= m - 1;
                rel[G].j = t;
                G += !skip[t];
            }
        }
    }
    *G_out = G;
    return flags_one_by_one(row, full, N, skip, w, G_out);
}
#endif

/* how many flags of row[0 .. N) are non-zero: 32 a step with AVX2 (a byte counter per lane,
 * summed every 255 steps), else one by one (the compiler vectorises it) */
#ifdef RC_HAVE_AVX2_DISPATCH
__attribute__((target("avx2"))) static int64_t count_flags_avx2(const uint8_t *row, int64_t N)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i total = zero;
    int64_t j = 0, zeros = 0, lanes[4];
    int c;
    while (j + 32 <= N) {
        __m256i bytes = zero;  /* zero flags per byte lane, at most 255 */
        int step;
        for (step = 0; step < 255 && j + 32 <= N; step++, j += 32) {
            _mm_prefetch((const char *)(row + j + RC_FLAGS_AHEAD), _MM_HINT_T0);
            bytes = _mm256_sub_epi8(bytes, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(row + j)), zero));
        }
        total = _mm256_add_epi64(total, _mm256_sad_epu8(bytes, zero));
    }
    _mm256_storeu_si256((__m256i *)lanes, total);
    for (c = 0; c < 4; c++) zeros += lanes[c];
    for (; j < N; j++) zeros += row[j] == 0;
    return N - zeros;
}
#endif

int64_t rc_count_flags(const uint8_t *row, int64_t N)
{
    int64_t j, n = 0;
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2) return count_flags_avx2(row, N);
#endif
    for (j = 0; j < N; j++) n += row[j] != 0;
    return n;
}

int rc_relevant_from_flags(const uint8_t *row, int64_t N, const uint8_t *skip, workspace *w, int64_t *G)
{
#ifdef RC_HAVE_AVX2_DISPATCH
    if (rc_use_avx2) return flags_avx2(row, N, skip, w, G);
#endif
    return flags_by_word(row, N, skip, w, G);
}
