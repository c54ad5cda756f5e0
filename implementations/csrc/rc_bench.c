/* rc_bench.c -- benchmark-only entry points (conformance/bench/hashing_pass.py), never called
 * by an evaluation.
 *
 * rc_bench_hamming_histograms is the physical anchor of the Hamming pass: a bare loop doing
 * only the work every evaluation of codes must do -- per (query, item) one XOR, one popcount,
 * one label AND and one counter increment into a per-distance histogram of all and of
 * relevant items -- with nothing of the library around it (no junk, no tie policy, no counting
 * sort, no metric).  Its time is the floor the real pass (rc_codes.c) is measured against.
 *
 * rc_bench_codes_pass runs that real pass, the very function rc_evaluate calls, over the same
 * input and leaves out the rest of the evaluation (ranks and metrics), so the two times
 * compare like with like.  Both take 64-bit codes (one uint64 word per item) and multi-hot
 * labels in one uint64 word, write per query the histogram hist[2 d + relevant] of the items
 * at Hamming distance d, run on one thread, and return 0, or -1 for arguments they do not
 * take (or no memory). */
#include "rc_core.h"
#if defined(RC_HAVE_AVX512_DISPATCH) || defined(RC_HAVE_AVX2_DISPATCH)
#include <immintrin.h>
#endif

/* one item of the anchor: counter copy C (4 copies: consecutive items at the same distance do
 * not chain through one counter in memory) */
#define RC_ANCHOR_STEP(C, J) \
    h[(C) * H2 + 2 * __builtin_popcountll(qw ^ db[J]) + ((ql & dl[J]) != 0)]++

static inline __attribute__((always_inline)) void
anchor_query(uint64_t qw, uint64_t ql, const uint64_t *db, const uint64_t *dl, int64_t N, int64_t H2,
             uint32_t *h, int64_t *out)
{
    int64_t j = 0, v;
    memset(h, 0, (size_t)(RC_INTERLEAVE * H2) * sizeof(uint32_t));
    for (; j + RC_INTERLEAVE <= N; j += RC_INTERLEAVE) {
        RC_ANCHOR_STEP(0, j);
        RC_ANCHOR_STEP(1, j + 1);
        RC_ANCHOR_STEP(2, j + 2);
        RC_ANCHOR_STEP(3, j + 3);
    }
    for (; j < N; j++) RC_ANCHOR_STEP(0, j);
    for (v = 0; v < H2; v++) out[v] = (int64_t)h[v] + h[H2 + v] + h[2 * H2 + v] + h[3 * H2 + v];
}

#ifdef RC_HAVE_POPCNT_DISPATCH
__attribute__((target("popcnt"))) static void
anchor_popcnt(uint64_t qw, uint64_t ql, const uint64_t *db, const uint64_t *dl, int64_t N, int64_t H2,
              uint32_t *h, int64_t *out)
{
    anchor_query(qw, ql, db, dl, N, H2, h, out);
}
#endif

static void anchor_generic(uint64_t qw, uint64_t ql, const uint64_t *db, const uint64_t *dl, int64_t N,
                           int64_t H2, uint32_t *h, int64_t *out)
{
    anchor_query(qw, ql, db, dl, N, H2, h, out);
}

#ifdef RC_HAVE_AVX512_DISPATCH
/* The anchor in AVX-512, where the CPU has it (the instruction set of the library's pass, so
 * that the anchor stays the floor): per 8 items one XOR, VPOPCNTQ and label test, their keys
 * 2 d + relevant narrowed to bytes and moved to a general register, then one increment per
 * item as above. */
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vpopcntdq"))) static inline uint64_t
anchor_keys8(__m512i qv, __m512i lv, const uint64_t *db, const uint64_t *dl, __mmask8 valid)
{
    const __m512i d = _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(valid, db), qv));
    const __mmask8 rel = _mm512_mask_test_epi64_mask(valid, _mm512_maskz_loadu_epi64(valid, dl), lv);
    const __m512i d2 = _mm512_add_epi64(d, d);
    return (uint64_t)_mm_cvtsi128_si64(_mm512_cvtepi64_epi8(_mm512_mask_add_epi64(d2, rel, d2, _mm512_set1_epi64(1))));
}

/* (in blocks of 64 items: the keys of a block first, then its increments, which measured
 * fastest here) */
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vpopcntdq"))) static void
anchor_avx512(uint64_t qw, uint64_t ql, const uint64_t *db, const uint64_t *dl, int64_t N, int64_t H2,
              uint32_t *h, int64_t *out)
{
    const __m512i qv = _mm512_set1_epi64((long long)qw), lv = _mm512_set1_epi64((long long)ql);
    uint64_t k[8];
    int64_t j = 0, v, t;
    memset(h, 0, (size_t)(RC_INTERLEAVE * H2) * sizeof(uint32_t));
    for (; j + 64 <= N; j += 64) {
        for (v = 0; v < 8; v++) k[v] = anchor_keys8(qv, lv, db + j + 8 * v, dl + j + 8 * v, 0xFF);
        for (v = 0; v < 8; v++)
            for (t = 0; t < 8; t++) h[(t & 3) * H2 + (k[v] >> (8 * t) & 0xff)]++;
    }
    for (; j < N; j += 8) {
        const int64_t left = N - j < 8 ? N - j : 8;
        const uint64_t kk = anchor_keys8(qv, lv, db + j, dl + j, (__mmask8)((1u << left) - 1u));
        for (t = 0; t < left; t++) h[(t & 3) * H2 + (kk >> (8 * t) & 0xff)]++;
    }
    for (v = 0; v < H2; v++) out[v] = (int64_t)h[v] + h[H2 + v] + h[2 * H2 + v] + h[3 * H2 + v];
}
#endif

#ifdef RC_HAVE_AVX2_DISPATCH
/* The anchor in AVX2 (the instruction set of the library's AVX2 pass, rc_codes_avx2.c): per 4
 * items one XOR, a nibble-table popcount per 64-bit lane (VPSHUFB, VPSADBW; the table holds
 * twice the counts, so 2 d costs nothing) and one label test; each lane's key 2 d + 1 -
 * relevant shifted into its own byte, so 32 keys fill one register (in lane order, which a
 * histogram does not care about), the low bit flipped, then one increment per item as above. */
__attribute__((target("avx2,popcnt"))) static void
anchor_avx2(uint64_t qw, uint64_t ql, const uint64_t *db, const uint64_t *dl, int64_t N, int64_t H2,
            uint32_t *h, int64_t *out)
{
    const __m256i qv = _mm256_set1_epi64x((long long)qw), lv = _mm256_set1_epi64x((long long)ql);
    const __m256i twice = _mm256_setr_epi8(0, 2, 2, 4, 2, 4, 4, 6, 2, 4, 4, 6, 4, 6, 6, 8,
                                           0, 2, 2, 4, 2, 4, 4, 6, 2, 4, 4, 6, 4, 6, 6, 8);
    const __m256i nibble = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256(), one = _mm256_set1_epi8(1);
    __attribute__((aligned(32))) uint8_t k[32];
    int64_t j = 0, v, t;
    memset(h, 0, (size_t)(RC_INTERLEAVE * H2) * sizeof(uint32_t));
    for (; j + 32 <= N; j += 32) {
        __m256i acc = zero;
        for (v = 0; v < 8; v++) {
            const __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(db + j + 4 * v)), qv);
            const __m256i c = _mm256_add_epi8(
                _mm256_shuffle_epi8(twice, _mm256_and_si256(x, nibble)),
                _mm256_shuffle_epi8(twice, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble)));
            const __m256i other = _mm256_cmpeq_epi64(
                _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(dl + j + 4 * v)), lv), zero);
            const __m256i key = _mm256_sub_epi64(_mm256_sad_epu8(c, zero), other);
            acc = _mm256_or_si256(acc, _mm256_sll_epi64(key, _mm_cvtsi32_si128((int)(8 * v))));
        }
        _mm256_store_si256((__m256i *)k, _mm256_xor_si256(acc, one));
        for (t = 0; t < 32; t += 4) {
            h[k[t]]++;
            h[H2 + k[t + 1]]++;
            h[2 * H2 + k[t + 2]]++;
            h[3 * H2 + k[t + 3]]++;
        }
    }
    for (; j < N; j++) RC_ANCHOR_STEP(0, j);
    for (v = 0; v < H2; v++) out[v] = (int64_t)h[v] + h[H2 + v] + h[2 * H2 + v] + h[3 * H2 + v];
}
#endif

static int bench_args(const uint64_t *qc, const uint64_t *dc, const uint64_t *ql, const uint64_t *dl,
                      int64_t Q, int64_t N, int64_t n_bits, const int64_t *hist)
{
    return !qc || !dc || !ql || !dl || !hist || Q < 0 || N < 0 || N > (int64_t)UINT32_MAX || n_bits < 1 ||
           n_bits > RC_CODE_WORD_BITS;
}

int64_t rc_bench_hamming_histograms(const uint64_t *query_codes, const uint64_t *db_codes,
                                    const uint64_t *query_labels, const uint64_t *db_labels, int64_t n_queries,
                                    int64_t n_gallery, int64_t n_bits, int64_t features, int64_t *hist)
{
    const int64_t H2 = 2 * n_bits + 2;
    uint32_t *h;
    int64_t q;
    if (bench_args(query_codes, db_codes, query_labels, db_labels, n_queries, n_gallery, n_bits, hist))
        return -1;
    h = (uint32_t *)malloc((size_t)(RC_INTERLEAVE * H2) * sizeof(uint32_t));
    if (!h) return -1;
    for (q = 0; q < n_queries; q++) {
#ifdef RC_HAVE_AVX512_DISPATCH
        if (features & RC_FEATURE_AVX512) {
            anchor_avx512(query_codes[q], query_labels[q], db_codes, db_labels, n_gallery, H2, h, hist + q * H2);
            continue;
        }
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
        if ((features & RC_FEATURE_AVX2) && (features & RC_FEATURE_POPCNT)) {
            anchor_avx2(query_codes[q], query_labels[q], db_codes, db_labels, n_gallery, H2, h, hist + q * H2);
            continue;
        }
#endif
#ifdef RC_HAVE_POPCNT_DISPATCH
        if (features & RC_FEATURE_POPCNT) {
            anchor_popcnt(query_codes[q], query_labels[q], db_codes, db_labels, n_gallery, H2, h, hist + q * H2);
            continue;
        }
#endif
        anchor_generic(query_codes[q], query_labels[q], db_codes, db_labels, n_gallery, H2, h, hist + q * H2);
    }
    (void)features;
    free(h);
    return 0;
}

int64_t rc_bench_codes_pass(const uint64_t *query_codes, const uint64_t *db_codes, const uint64_t *query_labels,
                            const uint64_t *db_labels, int64_t n_queries, int64_t n_gallery, int64_t n_bits,
                            int64_t features, int64_t record, int64_t *hist)
{
    const int64_t H1 = n_bits + 1, H2 = 2 * H1, D = rc_codes_distances(n_bits);
    rc_input in;
    workspace w;
    int64_t q, d, c, i, nr, fail = 0;
    if (bench_args(query_codes, db_codes, query_labels, db_labels, n_queries, n_gallery, n_bits, hist))
        return -1;
    memset(&in, 0, sizeof(in));
    in.n_queries = n_queries;
    in.n_gallery = n_gallery;
    in.dist_kind = D_CODES;
    in.query_codes = query_codes;
    in.db_codes = db_codes;
    in.code_words = 1;
    in.n_bits = n_bits;
    in.rel_kind = REL_MULTI;
    in.query_label_bits = query_labels;
    in.db_label_bits = db_labels;
    in.label_words = 1;
    memset(&w, 0, sizeof(w));  /* the pass reads h2 and grows rinfo, nothing else */
    w.h2 = (uint32_t *)malloc((size_t)(RC_INTERLEAVE * 2 * D) * sizeof(uint32_t));
    if (!w.h2) return -1;
    for (q = 0; q < n_queries && !fail; q++) {
        int64_t *out = hist + q * H2;
        nr = rc_codes_pass(&in, q, &w, NULL, (int)(record != 0), (int)features);
        if (nr < 0) {
            fail = 1;
            break;
        }
        /* the same histogram as the anchor's, from what the pass leaves */
        if (record) {   /* running totals per distance, and the relevant items' entries */
            for (d = 0; d < H1; d++) {
                out[2 * d] = 0;
                for (c = 0; c < RC_INTERLEAVE; c++) out[2 * d] += w.h2[c * D + d];
                out[2 * d + 1] = 0;
            }
            for (i = 0; i < nr; i++) {
                d = (int64_t)(w.rinfo[i] >> RC_RINFO_SHIFT);
                out[2 * d]--;
                out[2 * d + 1]++;
            }
        } else {
            for (d = 0; d < H2; d++) {
                out[d] = 0;
                for (c = 0; c < RC_INTERLEAVE; c++) out[d] += w.h2[c * 2 * D + d];
            }
        }
    }
    free(w.h2);
    free(w.rinfo);
    return fail ? -1 : 0;
}
