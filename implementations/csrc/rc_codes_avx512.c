/* rc_codes_avx512.c -- rc_codes.c's Hamming pass for codes of one 64-bit word, in AVX-512.
 *
 * The gallery goes by blocks of 64 items.  Per block, vector code computes the 64 distances
 * (XOR, VPOPCNTQ, narrowed to bytes) and the 64 relevance bits (one label AND, id compare or
 * row byte test per 8 items); the scalar part is left with one counter increment per item.
 * Under record (stable / reverse ties) a relevant item's count of the items of its distance
 * before it is the running count at the block's start plus the items of that distance before
 * it in the block (one byte compare of the block's distances, a popcount of the mask below
 * it).  What the pass leaves is exactly what rc_codes.c's plain pass leaves: the same counts
 * per distance (summed over the RC_INTERLEAVE copies, how rc_query_codes reads them) and the
 * same rinfo entries in gallery order.  No junk, one word (rc_codes_vector_takes). */
#include "rc_core.h"

#ifdef RC_HAVE_AVX512_DISPATCH
#include <immintrin.h>

#define RC_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vpopcntdq,popcnt,bmi,bmi2")))
#define RC_BLOCK 64

enum { REL8_MULTI, REL8_IDS, REL8_MATRIX };

/* where query q's relevance comes from (one of them, by kind) */
typedef struct {
    const uint64_t *labels;  /* REL8_MULTI: the gallery's label words */
    const int64_t *ids;      /* REL8_IDS */
    const uint8_t *row;      /* REL8_MATRIX: query q's row */
    uint64_t key;            /* the query's label word or id */
} relsrc;

/* The relevance bits of items j0 .. j0 + n - 1 (n <= 64; 0 at lanes >= n), and their keys, 8
 * bytes to a word (byte t of word v: item j0 + 8 v + t, lanes >= n undefined): the distance d,
 * or (histogram) 2 d + relevant; under record also the 64 distances as bytes of one vector.
 * Masked loads read nothing past the end. */
RC_AVX512 static inline __attribute__((always_inline)) uint64_t
block_keys(const int kind, const int record, const uint64_t *db, __m512i qv, const relsrc *r, int64_t j0,
           int64_t n, uint64_t *words, __m512i *dist)
{
    const __m512i key = _mm512_set1_epi64((long long)r->key);
    __m128i b[8];
    uint64_t rel = 0;
    int v;
    if (kind == REL8_MATRIX) {
        const __mmask64 valid = n >= RC_BLOCK ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
        const __m512i x = _mm512_maskz_loadu_epi8(valid, r->row + j0);
        rel = (uint64_t)_mm512_test_epi8_mask(x, x);
    }
    for (v = 0; v < 8; v++) {
        const int64_t left = n - 8 * v;
        const __mmask8 valid = left >= 8 ? (__mmask8)0xFF : left <= 0 ? (__mmask8)0 : (__mmask8)((1u << left) - 1u);
        const __m512i d = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(valid, db + j0 + 8 * v), qv));
        __mmask8 m;
        if (kind == REL8_MULTI)
            m = _mm512_mask_test_epi64_mask(valid, _mm512_maskz_loadu_epi64(valid, r->labels + j0 + 8 * v), key);
        else if (kind == REL8_IDS)
            m = _mm512_mask_cmpeq_epi64_mask(valid, _mm512_maskz_loadu_epi64(valid, r->ids + j0 + 8 * v), key);
        else
            m = (__mmask8)(rel >> (8 * v));
        if (kind != REL8_MATRIX) rel |= (uint64_t)m << (8 * v);
        if (record) {
            b[v] = _mm512_cvtepi64_epi8(d);
        } else {
            const __m512i d2 = _mm512_add_epi64(d, d);
            words[v] = (uint64_t)_mm_cvtsi128_si64(
                _mm512_cvtepi64_epi8(_mm512_mask_add_epi64(d2, m, d2, _mm512_set1_epi64(1))));
        }
    }
    if (record) {
        __m512i z = _mm512_castsi128_si512(_mm_unpacklo_epi64(b[0], b[1]));
        z = _mm512_inserti32x4(z, _mm_unpacklo_epi64(b[2], b[3]), 1);
        z = _mm512_inserti32x4(z, _mm_unpacklo_epi64(b[4], b[5]), 2);
        *dist = _mm512_inserti32x4(z, _mm_unpacklo_epi64(b[6], b[7]), 3);
    }
    return rel;
}

/* One increment per item of counter key, in copy p mod 4 or mod 2 (stride H).  The histogram
 * h2[2 d + relevant] takes its keys from the words in registers, in 4 copies; the running
 * counts per distance under record from the keys stored as bytes (which the relevant items
 * read too), in 2 copies: each measured fastest here (1 copy makes consecutive items of one
 * distance wait on each other; 4 cost each relevant item's sum more loads).  rc_query_codes
 * sums all RC_INTERLEAVE copies; the others stay 0. */
RC_AVX512 static inline __attribute__((always_inline)) void
count_words(uint32_t *h, int64_t H, const uint64_t *words, int64_t n)
{
    int64_t p;
    if (n == RC_BLOCK) {
        int v, t;
        for (v = 0; v < 8; v++)
            for (t = 0; t < 8; t++) h[(t & 3) * H + (words[v] >> (8 * t) & 0xff)]++;
        return;
    }
    for (p = 0; p < n; p++) h[(p & 3) * H + (words[p >> 3] >> (8 * (p & 7)) & 0xff)]++;
}

RC_AVX512 static inline __attribute__((always_inline)) void
count_bytes(uint32_t *h, int64_t H, const uint8_t *key, int64_t n)
{
    int64_t p = 0;
    for (; p + 4 <= n; p += 4) {
        h[key[p]]++;
        h[H + key[p + 1]]++;
        h[key[p + 2]]++;
        h[H + key[p + 3]]++;
    }
    for (; p < n; p++) h[(p & 1) * H + key[p]]++;
}

/* One block of n items; returns the relevant items recorded so far, -1 when out of memory. */
RC_AVX512 static inline __attribute__((always_inline)) int64_t
pass_block(const int kind, const int record, const uint64_t *db, __m512i qv, const relsrc *r, int64_t j0,
           int64_t n, workspace *w, int64_t nr, int64_t D)
{
    __attribute__((aligned(64))) uint8_t key[RC_BLOCK];
    uint64_t words[8];
    __m512i dist = _mm512_setzero_si512();
    uint64_t rel = block_keys(kind, record, db, qv, r, j0, n, words, &dist);
    uint32_t *h = w->h2;
    if (!record) {  /* h2[2 d + relevant] */
        count_words(h, 2 * D, words, n);
        return nr;
    }
    _mm512_store_si512((void *)key, dist);
    if (rel) {
        uint64_t *rinfo;
        if (nr + RC_BLOCK > w->rinfo_cap &&
            grow((void **)&w->rinfo, &w->rinfo_cap, max64(2 * (nr + RC_BLOCK), 1024), sizeof(uint64_t)))
            return -1;
        rinfo = w->rinfo;
        do {   /* relevant items in gallery order, counted before this block's increments: the
                * running count at the block's start plus the items of its distance before it
                * in the block */
            const unsigned p = (unsigned)__builtin_ctzll(rel);
            const uint32_t d = key[p];
            const uint64_t same = _bzhi_u64((uint64_t)_mm512_cmpeq_epi8_mask(dist, _mm512_set1_epi8((char)d)), p);
            const uint64_t s = (uint64_t)h[d] + h[D + d] + (uint64_t)__builtin_popcountll(same);
            rinfo[nr++] = (uint64_t)d << RC_RINFO_SHIFT | s;
            rel &= rel - 1;
        } while (rel);
    }
    count_bytes(h, D, key, n);
    return nr;
}

RC_AVX512 static inline __attribute__((always_inline)) int64_t
pass_kind(const int kind, const int record, const rc_input *in, int64_t q, workspace *w, const relsrc *r)
{
    const int64_t N = in->n_gallery, D = rc_codes_distances(in->n_bits);
    const uint64_t *db = in->db_codes;
    const __m512i qv = _mm512_set1_epi64((long long)in->query_codes[q]);
    int64_t j0 = 0, nr = 0;
    for (; j0 + RC_BLOCK <= N; j0 += RC_BLOCK) {
        nr = pass_block(kind, record, db, qv, r, j0, RC_BLOCK, w, nr, D);
        if (nr < 0) return -1;
    }
    if (j0 < N) nr = pass_block(kind, record, db, qv, r, j0, N - j0, w, nr, D);
    return nr;
}

/* one specialised copy per (relevance kind, record) */
RC_AVX512 static int64_t pass_multi(const rc_input *in, int64_t q, workspace *w, const relsrc *r, int record)
{
    return record ? pass_kind(REL8_MULTI, 1, in, q, w, r) : pass_kind(REL8_MULTI, 0, in, q, w, r);
}

RC_AVX512 static int64_t pass_ids(const rc_input *in, int64_t q, workspace *w, const relsrc *r, int record)
{
    return record ? pass_kind(REL8_IDS, 1, in, q, w, r) : pass_kind(REL8_IDS, 0, in, q, w, r);
}

RC_AVX512 static int64_t pass_matrix(const rc_input *in, int64_t q, workspace *w, const relsrc *r, int record)
{
    return record ? pass_kind(REL8_MATRIX, 1, in, q, w, r) : pass_kind(REL8_MATRIX, 0, in, q, w, r);
}

int64_t rc_codes_pass_avx512(const rc_input *in, int64_t q, workspace *w, int record)
{
    relsrc r;
    memset(&r, 0, sizeof(r));
    if (in->rel_kind == REL_IDS) {
        r.ids = in->db_ids;
        r.key = (uint64_t)in->query_ids[q];
        return pass_ids(in, q, w, &r, record);
    }
    if (in->rel_kind == REL_MATRIX) {
        r.row = in->relevance + q * in->n_gallery;
        return pass_matrix(in, q, w, &r, record);
    }
    r.labels = in->db_label_bits;
    r.key = in->query_label_bits[q];
    return pass_multi(in, q, w, &r, record);
}

#else
typedef int rc_codes_avx512_unused; /* ISO C: a translation unit is not empty */
#endif
