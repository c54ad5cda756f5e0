/* rc_codes_avx2.c -- rc_codes.c's Hamming pass for codes of one 64-bit word, in AVX2 (CPUs
 * without AVX-512's VPOPCNTQ, or with it masked off).
 *
 * The gallery goes by blocks of 64 items, each two halves of 32 taken 4 to a vector.  Per 4
 * items: XOR, the popcount of each 64-bit lane (a nibble table through VPSHUFB, the 16 nibble
 * counts of a lane summed by VPSADBW), the label AND or id compare; each lane's result (under
 * 256) is shifted into its own byte of the lane, so 8 vectors give the 32 keys of a half in one
 * register.  The keys then stand in lane order (byte 8 i + v: item 4 v + i of the half): the
 * histogram does not care, the counting sort and a partial block put them in gallery order (one
 * VPERMD, one VPSHUFB).  The scalar part is left with one counter increment per item, as in
 * rc_codes_avx512.c, and what the pass leaves is exactly what rc_codes.c's plain pass leaves:
 * the same counts per distance (summed over the RC_INTERLEAVE copies) and the same rinfo entries
 * in gallery order.  No junk, one word (rc_codes_one_word_takes). */
#include "rc_core.h"

#ifdef RC_HAVE_AVX2_DISPATCH
#include <immintrin.h>

#define RC_AVX2 __attribute__((target("avx2,popcnt")))
#define RC_BLOCK 64
#define RC_HALF 32

enum { REL4_MULTI, REL4_IDS, REL4_MATRIX };

/* where query q's relevance comes from (one of them, by kind); the pointers start at the block */
typedef struct {
    const uint64_t *codes;   /* the gallery's code words */
    const uint64_t *labels;  /* REL4_MULTI: the gallery's label words */
    const int64_t *ids;      /* REL4_IDS */
    const uint8_t *row;      /* REL4_MATRIX: query q's row */
} blocksrc;

/* the popcount of each 64-bit lane of x, times scale (1 or 2: the table holds scale x the
 * popcount of a nibble, so the histogram's 2 d costs nothing) */
RC_AVX2 static inline __attribute__((always_inline)) __m256i popcount_lanes(__m256i x, __m256i table)
{
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(x, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble);
    const __m256i c = _mm256_add_epi8(_mm256_shuffle_epi8(table, lo), _mm256_shuffle_epi8(table, hi));
    return _mm256_sad_epu8(c, _mm256_setzero_si256());
}

/* the 32 keys of a half in lane order (byte 8 i + v holds item 4 v + i) put in gallery order:
 * the 32-bit quarters of the lanes (VPERMD: v = 0..3 of each lane, then v = 4..7), then a 4 x 4
 * byte transpose in each 128-bit half (VPSHUFB) */
RC_AVX2 static inline __attribute__((always_inline)) __m256i gallery_order(__m256i keys)
{
    const __m256i quarters = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256i transpose = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                               0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(keys, quarters), transpose);
}

/* The keys of the 32 items of src from item j (all 32 readable): the distance d (record), or
 * 2 d + relevant (histogram); in gallery order where ordered, else in lane order.  *rel gets
 * the relevance bits in gallery order (bit p: item j + p) under record. */
RC_AVX2 static inline __attribute__((always_inline)) __m256i
half_keys(const int kind, const int record, const int ordered, const blocksrc *src, int64_t j, __m256i qv,
          __m256i key, __m256i table, uint32_t *rel)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i acc = zero, keys;
    uint32_t bits = 0;
    int v;
    for (v = 0; v < 8; v++) {
        const __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src->codes + j + 4 * v)), qv);
        __m256i k = popcount_lanes(x, table);
        if (kind != REL4_MATRIX) {
            /* -1 in the lanes of the relevant items (ids) / of the others (labels) */
            const __m256i m = kind == REL4_IDS
                                  ? _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(src->ids + j + 4 * v)), key)
                                  : _mm256_cmpeq_epi64(
                                        _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(src->labels + j + 4 * v)), key),
                                        zero);
            if (record) {
                const uint32_t b = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(m));
                bits |= (kind == REL4_IDS ? b : b ^ 0xFu) << (4 * v);
            } else {  /* 2 d + relevant (ids), 2 d + 1 - relevant (labels: flipped below) */
                k = _mm256_sub_epi64(k, m);
            }
        }
        acc = _mm256_or_si256(acc, _mm256_sll_epi64(k, _mm_cvtsi32_si128(8 * v)));
    }
    keys = ordered ? gallery_order(acc) : acc;
    if (kind == REL4_MATRIX) {  /* the row's bytes are in gallery order already */
        const __m256i none = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(src->row + j)), zero);
        if (record) bits = ~(uint32_t)_mm256_movemask_epi8(none);
        else keys = _mm256_add_epi8(keys, _mm256_add_epi8(none, _mm256_set1_epi8(1)));
    } else if (kind == REL4_MULTI && !record) {
        keys = _mm256_xor_si256(keys, _mm256_set1_epi8(1));
    }
    *rel = bits;
    return keys;
}

/* one increment per item of counter key[p], in copy p mod 4 (stride H: h2[2 d + relevant]), as
 * rc_codes_avx512.c's count_words; a base pointer per copy keeps the address one register plus
 * the key */
RC_AVX2 static inline __attribute__((always_inline)) void count_keys(uint32_t *h, int64_t H, const uint8_t *key, int64_t n)
{
    uint32_t *const h1 = h + H, *const h2 = h + 2 * H, *const h3 = h + 3 * H;
    int64_t p = 0;
    for (; p + 8 <= n; p += 8) {
        h[key[p]]++;
        h1[key[p + 1]]++;
        h2[key[p + 2]]++;
        h3[key[p + 3]]++;
        h[key[p + 4]]++;
        h1[key[p + 5]]++;
        h2[key[p + 6]]++;
        h3[key[p + 7]]++;
    }
    for (; p < n; p++) h[(p & 3) * H + key[p]]++;
}

/* the same in copy p mod 2 (the running counts per distance under record: a relevant item's
 * count reads 2 counters, not 4), as rc_codes_avx512.c's count_bytes */
RC_AVX2 static inline __attribute__((always_inline)) void count_keys2(uint32_t *h, int64_t H, const uint8_t *key, int64_t n)
{
    uint32_t *const h1 = h + H;
    int64_t p = 0;
    for (; p + 8 <= n; p += 8) {
        h[key[p]]++;
        h1[key[p + 1]]++;
        h[key[p + 2]]++;
        h1[key[p + 3]]++;
        h[key[p + 4]]++;
        h1[key[p + 5]]++;
        h[key[p + 6]]++;
        h1[key[p + 7]]++;
    }
    for (; p < n; p++) h[(p & 1) * H + key[p]]++;
}

/* One block of n items of src (all 64 readable: a partial block comes padded, ordered);
 * returns the relevant items recorded so far, -1 when out of memory. */
RC_AVX2 static inline __attribute__((always_inline)) int64_t
pass_block(const int kind, const int record, const int ordered, const blocksrc *src, int64_t n, __m256i qv,
           __m256i key, workspace *w, int64_t nr, int64_t D)
{
    const __m256i table = record ? _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                                    0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4)
                                 : _mm256_setr_epi8(0, 2, 2, 4, 2, 4, 4, 6, 2, 4, 4, 6, 4, 6, 6, 8,
                                                    0, 2, 2, 4, 2, 4, 4, 6, 2, 4, 4, 6, 4, 6, 6, 8);
    __attribute__((aligned(32))) uint8_t k[RC_BLOCK];
    uint32_t rel0, rel1;
    const __m256i k0 = half_keys(kind, record, ordered || record, src, 0, qv, key, table, &rel0);
    const __m256i k1 = half_keys(kind, record, ordered || record, src, RC_HALF, qv, key, table, &rel1);
    uint32_t *h = w->h2;
    _mm256_store_si256((__m256i *)k, k0);
    _mm256_store_si256((__m256i *)(k + RC_HALF), k1);
    if (!record) {  /* h2[2 d + relevant] */
        count_keys(h, 2 * D, k, n);
        return nr;
    }
    if (n < RC_BLOCK) {  /* the padding is never relevant */
        rel0 &= n >= RC_HALF ? ~0u : (1u << n) - 1u;
        rel1 &= n <= RC_HALF ? 0u : (1u << (n - RC_HALF)) - 1u;
    }
    if (rel0 | rel1) {
        uint64_t *rinfo;
        if (nr + RC_BLOCK > w->rinfo_cap &&
            grow((void **)&w->rinfo, &w->rinfo_cap, max64(2 * (nr + RC_BLOCK), 1024), sizeof(uint64_t)))
            return -1;
        rinfo = w->rinfo;
        /* relevant items in gallery order, counted before this block's increments: the running
         * count at the block's start plus the items of its distance before it in the block (in
         * the first half only for one of the first half) */
        while (rel0) {
            const unsigned p = (unsigned)__builtin_ctz(rel0);
            const uint32_t d = k[p];
            const uint32_t same = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(k0, _mm256_set1_epi8((char)d)));
            const uint64_t s = (uint64_t)h[d] + h[D + d] + (uint64_t)__builtin_popcount(same & ((1u << p) - 1u));
            rinfo[nr++] = (uint64_t)d << RC_RINFO_SHIFT | s;
            rel0 &= rel0 - 1;
        }
        while (rel1) {
            const unsigned p = (unsigned)__builtin_ctz(rel1);
            const uint32_t d = k[RC_HALF + p];
            const __m256i dv = _mm256_set1_epi8((char)d);
            const uint32_t first = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(k0, dv));
            const uint32_t second = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(k1, dv));
            const uint64_t s = (uint64_t)h[d] + h[D + d] + (uint64_t)__builtin_popcount(first) +
                               (uint64_t)__builtin_popcount(second & ((1u << p) - 1u));
            rinfo[nr++] = (uint64_t)d << RC_RINFO_SHIFT | s;
            rel1 &= rel1 - 1;
        }
    }
    count_keys2(h, D, k, n);
    return nr;
}

RC_AVX2 static inline __attribute__((always_inline)) int64_t
pass_kind(const int kind, const int record, const rc_input *in, int64_t q, workspace *w)
{
    const int64_t N = in->n_gallery, D = rc_codes_distances(in->n_bits);
    const __m256i qv = _mm256_set1_epi64x((long long)in->query_codes[q]);
    const __m256i key = _mm256_set1_epi64x(kind == REL4_IDS ? (long long)in->query_ids[q]
                                           : kind == REL4_MULTI ? (long long)in->query_label_bits[q] : 0);
    const uint8_t *row = kind == REL4_MATRIX ? in->relevance + q * N : NULL;
    blocksrc src;
    int64_t j0 = 0, nr = 0;
    for (; j0 + RC_BLOCK <= N; j0 += RC_BLOCK) {
        src.codes = in->db_codes + j0;
        src.labels = kind == REL4_MULTI ? in->db_label_bits + j0 : NULL;
        src.ids = kind == REL4_IDS ? in->db_ids + j0 : NULL;
        src.row = row ? row + j0 : NULL;
        nr = pass_block(kind, record, kind == REL4_MATRIX, &src, RC_BLOCK, qv, key, w, nr, D);
        if (nr < 0) return -1;
    }
    if (j0 < N) {   /* the last items, copied into a block padded with zeros (read, never counted) */
        const int64_t n = N - j0;
        uint64_t codes[RC_BLOCK], labels[RC_BLOCK];
        int64_t ids[RC_BLOCK];
        uint8_t rows[RC_BLOCK];
        memset(codes, 0, sizeof(codes));
        memset(labels, 0, sizeof(labels));
        memset(ids, 0, sizeof(ids));
        memset(rows, 0, sizeof(rows));
        memcpy(codes, in->db_codes + j0, (size_t)n * sizeof(uint64_t));
        if (kind == REL4_MULTI) memcpy(labels, in->db_label_bits + j0, (size_t)n * sizeof(uint64_t));
        if (kind == REL4_IDS) memcpy(ids, in->db_ids + j0, (size_t)n * sizeof(int64_t));
        if (kind == REL4_MATRIX) memcpy(rows, row + j0, (size_t)n);
        src.codes = codes;
        src.labels = labels;
        src.ids = ids;
        src.row = rows;
        nr = pass_block(kind, record, 1, &src, n, qv, key, w, nr, D);
    }
    return nr;
}

/* one specialised copy per (relevance kind, record) */
RC_AVX2 static int64_t pass_multi(const rc_input *in, int64_t q, workspace *w, int record)
{
    return record ? pass_kind(REL4_MULTI, 1, in, q, w) : pass_kind(REL4_MULTI, 0, in, q, w);
}

RC_AVX2 static int64_t pass_ids(const rc_input *in, int64_t q, workspace *w, int record)
{
    return record ? pass_kind(REL4_IDS, 1, in, q, w) : pass_kind(REL4_IDS, 0, in, q, w);
}

RC_AVX2 static int64_t pass_matrix(const rc_input *in, int64_t q, workspace *w, int record)
{
    return record ? pass_kind(REL4_MATRIX, 1, in, q, w) : pass_kind(REL4_MATRIX, 0, in, q, w);
}

int64_t rc_codes_pass_avx2(const rc_input *in, int64_t q, workspace *w, int record)
{
    if (in->rel_kind == REL_IDS) return pass_ids(in, q, w, record);
    if (in->rel_kind == REL_MATRIX) return pass_matrix(in, q, w, record);
    return pass_multi(in, q, w, record);
}

#else
typedef int rc_codes_avx2_unused; /* ISO C: a translation unit is not empty */
#endif
