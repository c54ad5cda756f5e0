/*
 * rc_core.h -- shared declarations of the C accelerator (the units in this folder are built
 * into one plain C99 library, retrieval_conformance.implementations._rc_core, loaded with
 * ctypes by implementations/c_backend.py; no Python.h).
 *
 * Every array is validated (dtype, shape, C-contiguity) in Python before it reaches this code.
 *
 * Semantics (the reference, reference/per_query.py, is the yardstick): per query, junk
 * items are removed first; the remaining N' items are ranked by distance; items at exactly
 * equal distance form a tie group (c items before it, h of them relevant; n items, m
 * relevant).  A tie policy either orders every group (stable / reverse / optimistic /
 * pessimistic: concrete ranks r_1 < ... < r_R of the relevant items) or acts on whole groups
 * (expected: exact expectation over uniformly random orders; grouped: every item takes the
 * group's end rank c + n).
 *
 * Nothing here sorts a whole gallery:
 *   - Hamming codes (rc_codes.c): one XOR + popcount pass per query fills per-distance
 *     histograms of total and relevant items; concrete ranks come from a counting sort done
 *     in the same pass (each relevant item remembers how many items of its distance came
 *     before it); `expected` and `grouped` need only the histograms.
 *   - Float distances (rc_float.c; similarity scores are read as they are and negated, exactly):
 *     the G relevant distances are sorted (a radix sort, rc_order.c) and every other item is
 *     placed among them in one pass, through a monotone bucket table (a search only inside a
 *     bucket holding several relevant distances), counting per gap; the tie policy decides
 *     where an item at a relevant item's exact distance goes.  With a cut-off, only the items
 *     up to the L-th smallest distance are placed (the prefix path: L = max(k, R, max_rank),
 *     found by sampling and one vectorised filter pass) and the last relevant item's rank
 *     comes from counts over the row.  Without a cut-off (or when the prefix path does not
 *     apply), only the items up to the farthest relevant distance are placed when they are
 *     at most 1/8 of the row (the bounded pass: a farther item changes no rank; ReID and
 *     landmark queries place well under 1%).  The filter compares with AVX2 where the CPU
 *     has it.  A row is first checked for NaN/inf (vectorised).
 *   - `grouped` with a cut-off k: is k strictly inside a tie group?  Hamming: from the
 *     histogram; floats: the k+1 smallest distances in a heap (small k) or a three-way
 *     quickselect.
 *
 * Relevance and junk come one query at a time from whatever was given, never as a Q x N
 * matrix built here: a boolean row, single ids (the items of the query's id are a slice of
 * the gallery sorted by id, computed once in Python), or multi-hot labels packed into uint64
 * words (relevant iff the AND is non-zero); junk from a boolean row, same id and camera, and
 * a gallery-wide mask (junk ids) (rc_input.c).
 *
 * Arithmetic: metric values are accumulated in double-double (about 106 bits), so that the
 * final rounding to double is correct whenever the exact value is a double (and otherwise far
 * inside 1e-12).  Concrete ranks and `grouped`: rc_metrics.c; `expected`: rc_expected.c.
 * Queries are independent: threads take chunks of queries (rc_threads.c) with no reduction
 * across queries, so results are identical for any thread count (rc_evaluate.c).
 *
 * nDCG, RR, AP@R and the hit rate (recall = "hit") come from the same ranks or groups (spec §7):
 * DCG reads the float64 discount table d(1..N) passed from Python (never a log2 computed here),
 * graded relevance reads one uint8 grade row per query (the grades of the relevant items are
 * put in rank order, and a tie group sorted by grade under optimistic / pessimistic), IDCG
 * counts the grades (at most RC_MAX_GRADE) and sums from the highest (rc_rank.c).
 *
 * Units: rc_input.c, rc_metrics.c, rc_expected.c, rc_rank.c, rc_order.c, rc_float.c (with
 * rc_float_gaps.c, rc_float_select.c and rc_float.h), rc_codes.c (with rc_codes_avx512.c and
 * rc_codes_avx2.c, its vector passes), rc_threads.c, rc_evaluate.c,
 * rc_curves.c, rc_shard.c (gallery shards' counts); rc_bench.c holds benchmark-only entry points.
 * Functions shared between units are declared below with RC_INTERNAL (hidden visibility):
 * the library exports only the entry points of rc_evaluate.c, declared at the end.
 */
#ifndef RC_CORE_H
#define RC_CORE_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RC_ABI_VERSION 11 /* must equal ABI_VERSION in c_library.py */

/* internal functions shared between units stay out of the library's exported symbols */
#if defined(__GNUC__) && !defined(_WIN32)
#define RC_INTERNAL __attribute__((visibility("hidden")))
#else
#define RC_INTERNAL
#endif

/* ---- named constants --------------------------------------------------------------------- */
/* Dekker's splitter 2^27 + 1: splits a 53-bit significand into two 26-bit halves */
#define RC_DD_SPLIT 134217729.0
/* pmf weights below this (relative to the largest, which is 1) are dropped from sums: far
 * below the 2^-106 relative precision of a double-double */
#define RC_TINY 1e-40
/* m 2^e with m < 1 and e below this is under 2^-1074, the smallest subnormal: it is zero
 * (the margin also keeps e well inside an int for ldexp) */
#define RC_UNSCALE_MIN_EXP (-1100)
/* copies of a hot counter array, item j updating copy j mod 4: most items hit the same few
 * slots, and one copy would serialise the increments through memory (a power of two) */
#define RC_INTERLEAVE 4
/* ... while the copies fit in this many bytes (an L1 cache): a larger table spreads the items
 * over many slots, and four copies would only quadruple its cache misses */
#define RC_INTERLEAVE_BYTES 32768
/* float path: an item's gap among the sorted relevant distances is read from a table of
 * buckets over [smallest, largest relevant distance]: about this many buckets per relevant
 * item (a power of two), at most ~N and at most RC_BUCKETS_MAX: 4 MiB of 16-byte buckets,
 * beyond L2 but in L3.  With tens of thousands of relevant items (a 4M gallery), a smaller
 * table leaves several relevant distances in most buckets, and the search among them costs
 * more than the table's cache misses (measured on 100 x 4M float32 scores, one thread:
 * 64k buckets 5.1 s, 256k 4.0 s, 512k and 1M no better) */
#define RC_BUCKETS_PER_RELEVANT 4
#define RC_BUCKETS_MAX 262144
/* float path, AVX2 pass (rc_float_place.c): the per-bucket side counters in up to
 * RC_SIDE_COPIES copies (lane l of a step updates copy l mod copies) while they fit in
 * RC_SIDE_BYTES; taken where the skipped items (junk, relevant) are at most 1/RC_SIDE_SPARSE
 * of the row, since a step of eight holding one goes to the scalar code */
#define RC_SIDE_COPIES 4  /* rc_place_avx2 reads at most four */
#define RC_SIDE_BYTES 32768
#define RC_SIDE_SPARSE 32
/* float path, AVX2 threshold pass (rc_float_thresh.c): taken instead of the bucket pass above
 * where the relevant distances take at most RC_THRESH_MAX_RUNS distinct values (one or two
 * comparisons of every item per value); the row in blocks of at most RC_THRESH_BLOCK items,
 * read again from L1 for each eight thresholds */
#define RC_THRESH_MAX_RUNS 32
#define RC_THRESH_BLOCK 2048
/* multipliers tried for the threshold pass's hash of the relevant distances (rc_thresh_setup) */
#define RC_THRESH_HASH_TRIES 256
/* the most relevant distances hashed: by the birthday bound, 28 values in 64 slots come apart
 * within 256 tries about one time in four, 24 about five times in six, 16 all but always */
#define RC_THRESH_HASH_MAX_RUNS 28
/* the float path's skip[] marks junk 1 and the query's relevant items RC_SKIP_RELEVANT */
#define RC_SKIP_RELEVANT 2
/* float `grouped` with a cut-off: a max-heap of the k+1 smallest while k+1 <= N'/16 (most
 * items then fail one comparison with the top); larger k: a quickselect over all N' items */
#define RC_HEAP_SELECT_DIVISOR 16
/* float path with a cut-off (the prefix path, rc_float.c): used when the L ranks the metrics
 * read are at most 1/RC_PREFIX_DIVISOR of the N' items and N >= RC_PREFIX_MIN_N; its streaming
 * selection keeps up to RC_PREFIX_ROOM x L + RC_PREFIX_ROOM_EXTRA items between compactions
 * (small: the threshold follows the L-th smallest closely, so few blocks hold a candidate) */
#define RC_PREFIX_DIVISOR 8
/* items sampled to guess that the bounded pass would give up (rc_float.c reaches_far; at most
 * RC_PREFIX_MIN_N) */
#define RC_FAR_SAMPLE 512
#define RC_PREFIX_MIN_N 1024
#define RC_PREFIX_ROOM 2
#define RC_PREFIX_ROOM_EXTRA 64
/* items per block of the prefix path's filter: a block with no item below the pivot costs
 * one vectorised comparison per item */
#define RC_PREFIX_BLOCK 32
/* float32 with AVX2 and no junk: the two-level filter (rc_float_filter.c: each block's best
 * value, then only the blocks whose best reaches the L-th best block) when the row has at
 * least RC_PREFIX_TOPS_PER_L blocks per rank read; else the streaming selection */
#define RC_PREFIX_TOPS_PER_L 4
/* float path: a checked row (rc_input.finite) without a cut-off skips the up-front read of the
 * row when its relevant non-junk items (from ids or a relevance row) are at most
 * 1/RC_FEW_RELEVANT of it */
#define RC_FEW_RELEVANT 256
/* Hamming counting sort: an entry is distance << 32 | items before it at that distance;
 * the count is < N < 2^32 and fits the low 32 bits */
#define RC_RINFO_SHIFT 32
#define RC_RINFO_COUNT_MASK 0xffffffffu  /* the low RC_RINFO_SHIFT bits: the count */
/* bits of one packed code / label word (uint64_t) */
#define RC_CODE_WORD_BITS 64
/* the codes pass's counters per copy (rc_codes.c): one per distance 0 .. B, at least this many,
 * so that codes of one word have a constant stride (the four copies are then constant offsets
 * from one register, and the hot loop keeps its variables in registers) */
#define RC_WORD_DISTANCES (RC_CODE_WORD_BITS + 1)
/* NaN/inf test on the bits: adding one unit of the exponent field's lowest bit carries into
 * the sign bit exactly when the exponent is all ones (inf or NaN) */
#define RC_F32_EXP_MASK 0x7f800000u            /* the 8 exponent bits of a float */
#define RC_F32_EXP_ONE 0x00800000u             /* the lowest exponent bit of a float */
#define RC_F32_SIGN 0x80000000u                /* the sign bit of a float */
#define RC_F64_EXP_MASK 0x7ff0000000000000ull  /* the 11 exponent bits of a double */
#define RC_F64_EXP_ONE 0x0010000000000000ull   /* the lowest exponent bit of a double */
#define RC_F64_SIGN 0x8000000000000000ull      /* the sign bit of a double */
/* threads take queries in chunks of about this many (query, item) pairs (at least one
 * query): ~0.2 ms of work, so claiming a chunk (an atomic add and a lock) and the cache lines of
 * the output arrays shared with the neighbouring chunks cost under 1%, while a thread slowed
 * while it holds one delays the end by about one chunk at its pace */
#define RC_CHUNK_ITEMS 262144
/* ... and each thread gets at least this many chunks on average (small problems: one query per
 * chunk), so the last chunks can go to whichever thread is free */
#define RC_CHUNKS_PER_THREAD 8
/* CPU features (bits of rc_set_features' mask and result, as c_backend.cpu_features) */
#define RC_FEATURE_POPCNT 1  /* bit 0: hardware popcount for Hamming distances */
#define RC_FEATURE_FMA 2     /* bit 1: fused multiply-add for exact division remainders */
#define RC_FEATURE_PREFIX 4  /* bit 2: the float prefix path (not a CPU feature: tests turn it off) */
#define RC_FEATURE_AVX2 8    /* bit 3: AVX2 compares in the float path's filter, AVX2 Hamming pass */
#define RC_FEATURE_AVX512 16 /* bit 4: AVX-512 (F, DQ, BW, VL, VPOPCNTDQ) Hamming pass and AP terms */
#define RC_FEATURE_THRESH 32 /* bit 5: the float path's AVX2 threshold pass (not a CPU feature: tests turn it off) */
#define RC_FEATURE_ALL \
    (RC_FEATURE_POPCNT | RC_FEATURE_FMA | RC_FEATURE_PREFIX | RC_FEATURE_AVX2 | RC_FEATURE_AVX512 | RC_FEATURE_THRESH)
/* AP terms are summed in this many interleaved compensated sums (rc_metrics.c): the AVX-512
 * width in doubles, and the order every code path sums in */
#define RC_AP_LANES 8
/* the codes path's counting sort of the relevant items (stable / reverse ties) goes through
 * this many contiguous segments of them side by side (rc_codes.c) */
#define RC_SEGMENTS 4
/* the highest relevance grade (validation.MAX_GRADE): 2^52 - 1, its exponential gain, and any
 * sum of up to 2^53 such gains are exact in a double-double */
#define RC_MAX_GRADE 52
/* runs of grades up to this long are sorted by insertion, longer ones by counting */
#define RC_SMALL_RUN 32

/* accelerated variants compiled where the compiler can target them (runtime dispatch) */
#if defined(__GNUC__) && defined(__x86_64__)
#define RC_HAVE_FMA_DISPATCH 1
#define RC_HAVE_AVX2_DISPATCH 1
#if defined(__clang__) || __GNUC__ >= 8  /* target("avx512vpopcntdq") */
#define RC_HAVE_AVX512_DISPATCH 1
#endif
#endif
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define RC_HAVE_POPCNT_DISPATCH 1
#endif

/* ---- enums shared with c_backend.py ----------------------------------------------------- */
enum { T_STABLE = 0, T_REVERSE, T_OPTIMISTIC, T_PESSIMISTIC, T_EXPECTED, T_GROUPED };
enum { AP_PS = 0, AP_TRAP = 1 };
enum { K_HITS = 0, K_R, K_MINKR, K_DCMH };
enum { D_F64 = 0, D_F32 = 1, D_CODES = 2 };
enum { REL_MATRIX = 0, REL_IDS = 1, REL_MULTI = 2 };
enum { G_LINEAR = 0, G_EXPONENTIAL = 1 };
enum { RECALL_FRACTION = 0, RECALL_HIT = 1 };
/* return codes of rc_evaluate */
enum { RC_OK = 0, RC_ERR_QUERY = 1, RC_ERR_NOMEM = 2, RC_ERR_ARGS = 3 };
/* per-query status codes */
enum { Q_OK = 0, Q_GROUPED_K = 1, Q_NONFINITE = 2, Q_NOMEM = 3 };
/* The scalar per-query values, in the order of the contract's VALUE_FIELDS
 * (reference/contract/problem.py; a test compares the names, c_library.py the count at load).
 * They index qres.v and rc_output.values, which rc_evaluate.c checks, zeroes and copies in
 * loops: a new metric is one entry here (before RC_N_VALUES) plus the kernel that sets it. */
enum {
    RC_V_AP = 0, RC_V_HITS_AT_K, RC_V_PRECISION_AT_K, RC_V_RECALL_AT_K, RC_V_INP, RC_V_R_PRECISION,
    RC_V_NDCG, RC_V_RR, RC_V_AP_AT_R,
    RC_N_VALUES
};

/* ---- the structures passed from Python (int64 / double / pointers only: no padding) ----- */
typedef struct {
    int64_t n_queries, n_gallery;
    int64_t dist_kind;                      /* D_F64, D_F32 or D_CODES */
    const void *distances;                  /* (Q, N) float64 or float32 */
    int64_t negated;                        /* 1: distances holds similarity scores; the
                                             * distance is their negation (exact) */
    int64_t finite;                         /* 1: the caller checked distances for NaN/inf
                                             * (Problem.finite): the row check is skipped
                                             * where it would only read the row again */
    const uint64_t *query_codes;            /* (Q, code_words) packed bits */
    const uint64_t *db_codes;               /* (N, code_words) */
    int64_t code_words, n_bits;
    int64_t rel_kind;                       /* REL_MATRIX, REL_IDS or REL_MULTI */
    const uint8_t *relevance;               /* (Q, N) 0/1 */
    const int64_t *query_ids, *db_ids;      /* (Q,), (N,) single ids */
    const uint64_t *query_label_bits;       /* (Q, label_words) multi-hot, packed */
    const uint64_t *db_label_bits;          /* (N, label_words) */
    int64_t label_words;
    const uint8_t *junk;                    /* (Q, N) 0/1 or NULL */
    const int64_t *query_cams, *db_cams;    /* (Q,), (N,) or NULL; needs single ids */
    const uint8_t *gallery_junk;            /* (N,) 0/1 or NULL (junk ids) */
    /* single ids only (and with codes only for camera junk): the gallery indices sorted by
     * id (stably), and per query the slice [id_start, id_stop) of db_order holding the items
     * with the query's id */
    const int64_t *db_order, *id_start, *id_stop;
    const uint8_t *grades;                  /* (Q, N) grades 0 .. RC_MAX_GRADE (REL_MATRIX), or
                                             * NULL: binary relevance (every relevant grade 1) */
    const double *discounts;                /* d(1) .. d(n_discounts), n_discounts >= N */
    int64_t n_discounts;
} rc_input;

typedef struct {
    int64_t ties, ap_rule, k, ap_at_k, max_rank, has_radius; /* k < 0: no cut-off */
    int64_t gain, recall;                                     /* G_*, RECALL_* */
    int64_t wanted;  /* the values to compute: bit RC_V_* each, bit RC_WANT_CMC the CMC;
                      * RC_V_HITS_AT_K is always computed (the empty-query policy reads it).
                      * A value not wanted is left as the kernels found it (0), never read. */
    double radius;
} rc_options;

/* bit of rc_options.wanted for the CMC row (after the RC_V_* bits) */
#define RC_WANT_CMC RC_N_VALUES
#define RC_WANT_ALL ((INT64_C(1) << (RC_N_VALUES + 1)) - 1)
/* is value v (RC_V_* or RC_WANT_CMC) asked for */
#define RC_WANTS(o, v) (((o)->wanted >> (v)) & 1)

/* the per-query arrays: the values (RC_V_*), then the contract's other arrays in its order
 * (c_library.py builds the ctypes structure from the same two lists) and the status words */
typedef struct {
    double *values[RC_N_VALUES];                     /* (Q,) each, indexed by RC_V_* */
    int64_t *n_relevant;                             /* (Q,) */
    double *cmc;                                     /* (Q, max_rank) */
    double *precision_at_radius, *recall_at_radius;  /* (Q,); NULL unless has_radius */
    int64_t *status, *err_a, *err_b;                 /* (Q,) */
} rc_output;

/* ---- double-double arithmetic ---------------------------------------------------------- */
/* Error-free transformations (Dekker / Knuth); needs round-to-nearest double arithmetic
 * without contraction into FMA, which is what -std=c99 on x86-64 SSE2 gives.  Inline here:
 * every unit's inner loops use them. */
typedef struct { double hi, lo; } dd;

#define DD_ZERO ((dd){0.0, 0.0})

static inline dd dd_make(double a) { dd r; r.hi = a; r.lo = 0.0; return r; }

static inline dd two_sum(double a, double b)
{
    dd r;
    double s = a + b, bb = s - a;
    r.hi = s;
    r.lo = (a - (s - bb)) + (b - bb);
    return r;
}

static inline dd quick_two_sum(double a, double b)
{
    dd r;
    double s = a + b;
    r.hi = s;
    r.lo = b - (s - a);
    return r;
}

static inline dd two_prod(double a, double b)
{
    dd r;
    double p = a * b;
    double t = RC_DD_SPLIT * a, ah = t - (t - a), al = a - ah;
    double u = RC_DD_SPLIT * b, bh = u - (u - b), bl = b - bh;
    r.hi = p;
    r.lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return r;
}

static inline dd dd_add(dd a, dd b)
{
    dd s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = quick_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return quick_two_sum(s.hi, s.lo);
}

static inline dd dd_neg(dd a) { a.hi = -a.hi; a.lo = -a.lo; return a; }
static inline dd dd_sub(dd a, dd b) { return dd_add(a, dd_neg(b)); }
static inline dd dd_half(dd a) { a.hi *= 0.5; a.lo *= 0.5; return a; }

static inline dd dd_mul(dd a, dd b)
{
    dd p = two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return quick_two_sum(p.hi, p.lo);
}

static inline dd dd_mul_d(dd a, double b)
{
    dd p = two_prod(a.hi, b);
    p.lo += a.lo * b;
    return quick_two_sum(p.hi, p.lo);
}

static inline dd dd_div(dd a, dd b)
{
    double q1 = a.hi / b.hi;
    dd r = dd_sub(a, dd_mul_d(b, q1));
    double q2 = r.hi / b.hi;
    r = dd_sub(r, dd_mul_d(b, q2));
    double q3 = r.hi / b.hi;
    return dd_add(quick_two_sum(q1, q2), dd_make(q3));
}

/* a / b for a double b: one exact product for the remainder, two divisions */
static inline dd dd_div_d(dd a, double b)
{
    double q1 = a.hi / b;
    dd p = two_prod(q1, b);
    dd r = two_sum(a.hi, -p.hi);
    r.lo -= p.lo;
    r.lo += a.lo;
    return quick_two_sum(q1, (r.hi + r.lo) / b);
}

/* a / b for integers a, b < 2^53 held in doubles: the remainder a - q*b is exact. */
static inline dd dd_ratio(double a, double b)
{
    double q = a / b;
    dd p = two_prod(q, b);
    double rem = (a - p.hi) - p.lo;
    return quick_two_sum(q, rem / b);
}

/* the double nearest to a normalised double-double */
static inline double dd_round(dd a) { return a.hi + a.lo; }

/* Sum of terms kept as s + c: two_sum keeps the rounding error of every addition and the
 * errors are added up in c, so the critical path is one addition per term (a plain
 * double-double sum serialises about fifteen).  Error ~ n^2 eps^2: far below half an ulp. */
typedef struct { double s, c; } ddacc;

static inline void acc_add(ddacc *a, dd t)
{
    dd u = two_sum(a->s, t.hi);
    a->s = u.hi;
    a->c += u.lo + t.lo;
}

static inline dd acc_get(ddacc a) { return two_sum(a.s, a.c); }

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* distances per copy of the codes pass's counters: max(n_bits + 1, RC_WORD_DISTANCES) */
static inline int64_t rc_codes_distances(int64_t n_bits) { return max64(n_bits + 1, RC_WORD_DISTANCES); }

/* ---- per-thread workspace and per-query results ----------------------------------------- */
typedef struct { double d; int64_t j; } relitem;
typedef struct { double value; int64_t first; } bucketent;  /* float path: rc_float.c bucket_setup */
typedef struct { int64_t c, n, m, h; } group;   /* before, size, relevant, relevant before */

/* Arrays of the relevant items are sized by G (or R), the query's relevant items: grown on
 * demand, never shrunk, so memory follows the largest G seen, not the gallery. */
typedef struct {
    uint8_t *skip;           /* N: junk (and, in the float pass, relevant) items */
    int64_t *ranks;          /* G: 1-based ranks of the relevant items, ascending */
    group *groups;           /* G: groups holding relevant items */
    relitem *rel;            /* G + 1 (float path) */
    double *rd;              /* G: sorted relevant distances (float path) */
    bucketent *bucket;       /* nb + 3 <= RC_BUCKETS_MAX + 3 (float path): the bucket table */
    int64_t bucket_cap;
    int64_t *tie_seen;       /* G + 1 (float path, stable/reverse): relevant items of a run passed */
    int64_t *tie_last;       /* G + 1 (float path, stable/reverse): its tied items placed so far */
    int64_t *before, *eq;    /* G + 1 each (float path): items in each gap / tied with each run */
    int64_t *runs;           /* 2 (G + 1) (float path): the run [lo, hi) of the k-th relevant item */
    uint32_t *cnt;           /* RC_INTERLEAVE x 2 (G + 1) (float path): the pass's counters */
    int64_t rel_cap, g_cap;  /* float path: capacity of rel; of the other G-sized arrays */
    double *sel;             /* grown on demand (float path): grouped-k selection, prefix pivot */
    relitem *cand;           /* grown on demand (float path): the prefix path's items */
    relitem *rtmp;           /* grown on demand (float path): the radix sort's other buffer */
    int64_t sel_cap, cand_cap, rtmp_cap;
    uint32_t *sides;         /* grown on demand (float path, AVX2 pass): 3 counters per bucket,
                              * in up to RC_SIDE_COPIES copies (rc_float_place.c) */
    float *bval;             /* grown on demand (float path, AVX2 pass): each bucket's value */
    int64_t sides_cap, bval_cap;
    int prefix;              /* the prefix path is enabled (RC_FEATURE_PREFIX) */
    int thresh;              /* the threshold pass is enabled (RC_FEATURE_THRESH) */
    uint32_t *h2;            /* RC_INTERLEAVE x 2 D (codes path, D = rc_codes_distances(B)): per
                              * (distance, relevant), or (stable / reverse) RC_INTERLEAVE running
                              * counts per distance, D apart */
    int64_t *ht, *hr;        /* B + 1: totals and relevant per distance */
    int64_t *clt, *rlt;      /* B + 1: items / relevant items at smaller distance */
    int64_t *run;            /* B + 1: counting-sort cursors */
    int64_t *seg;            /* RC_SEGMENTS x (B + 1) (codes path): the counting sort's counts and
                              * cursors per segment (rc_codes.c) */
    uint64_t *rinfo;         /* R (codes path, grown on demand): distance << 32 | items before it */
    int64_t rinfo_cap;
    uint8_t *gr;             /* G (graded relevance): the relevant items' grades, rank order */
    dd *ideal1;              /* binary relevance: IDCG of L items, L = 0 .. ideal_n - 1 (rc_rank.c) */
    int64_t ideal_n, ideal_cap;
    ddacc ideal_acc;         /* the sum d(1) + ... + d(ideal_n - 1), continued on demand */
} workspace;

typedef struct {
    double v[RC_N_VALUES];   /* indexed by RC_V_*; zeroed by rc_evaluate before each query */
    double *cmc;             /* the query's row of rc_output.cmc */
} qres;

/* what the rank metrics read besides ranks or groups: the discount table d(1..), the
 * relevant items' grades in rank order (NULL: binary relevance) and, for binary relevance,
 * the IDCG of L relevant items, ideal1[L] = d(1) + ... + d(L) for L <= R (rc_ideal_upto) */
typedef struct {
    const double *disc;
    const uint8_t *gr;
    const dd *ideal1;
} rankin;

/* *arr resized to bytes (0), or left as it was (-1: no memory) */
static inline int resize(void **arr, size_t bytes)
{
    void *p = realloc(*arr, bytes);
    if (!p) return -1;
    *arr = p;
    return 0;
}

/* grow a workspace array to hold n elements (never shrinks); 0 when it holds them, -1 when
 * there is no memory (the array is then unchanged) */
static inline int grow(void **arr, int64_t *cap, int64_t n, size_t size)
{
    if (n <= *cap) return 0;
    if (resize(arr, (size_t)n * size)) return -1;
    *cap = n;
    return 0;
}

/* an unsigned key in the order of the doubles (-0.0 as +0.0: they are equal distances, so
 * they must keep their index order, as the comparison sort kept it) */
static inline uint64_t rc_order_key(double d)
{
    uint64_t b;
    d += 0.0;  /* -0.0 + 0.0 = +0.0 (round to nearest); kept under IEEE semantics */
    memcpy(&b, &d, sizeof(b));
    return b ^ ((b >> 63) ? ~UINT64_C(0) : UINT64_C(1) << 63);
}

/* ---- internal functions shared between units -------------------------------------------- */
/* rc_input.c: is there any junk input; the junk of query q (jk[j] = 1), returns how many */
RC_INTERNAL int rc_has_junk(const rc_input *in);
RC_INTERNAL int64_t rc_build_junk(const rc_input *in, int64_t q, uint8_t *jk);
RC_INTERNAL int64_t rc_count_bytes(const uint8_t *p, int64_t n);

/* rc_metrics.c: every metric from concrete ranks, from `grouped` tie groups, or all zero */
RC_INTERNAL extern int rc_use_fma;  /* set once by rc_evaluate before the parallel region */
RC_INTERNAL extern int rc_use_avx2; /* likewise (rc_float_select.c's filters) */
RC_INTERNAL extern int rc_use_avx512; /* likewise (rc_metrics.c's AP terms) */
RC_INTERNAL void rc_metrics_ranks(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                                  const rankin *ri, qres *res);
RC_INTERNAL void rc_metrics_grouped(const group *g, int64_t ng, int64_t R, int64_t Np,
                                    const rc_options *o, const rankin *ri, qres *res);
RC_INTERNAL void rc_metrics_zero(const rc_options *o, qres *res);

/* rc_expected.c: every metric under ties = "expected" (Hh: harmonic numbers H_0 .. H_{N+1}) */
RC_INTERNAL void rc_metrics_expected(const group *g, int64_t ng, int64_t R, int64_t Np,
                                     const rc_options *o, const rankin *ri, const dd *Hh, qres *res);

/* rc_rank.c: nDCG, RR and the hit rate (recall = "hit" replaces RC_V_RECALL_AT_K) from concrete
 * ranks, `grouped` groups or `expected` groups (R >= 1); the grades of a float / codes query
 * put in rank order (gr[i] for the relevant item of rank index i) and sorted within ties */
RC_INTERNAL void rc_rank_concrete(const int64_t *rk, int64_t R, int64_t Np, const rc_options *o,
                                  const rankin *ri, qres *res);
RC_INTERNAL void rc_rank_grouped(const group *g, int64_t ng, int64_t R, int64_t Np,
                                 const rc_options *o, const rankin *ri, qres *res);
RC_INTERNAL void rc_rank_expected(const group *g, int64_t ng, int64_t R, int64_t Np,
                                  const rc_options *o, const rankin *ri, qres *res);
RC_INTERNAL void rc_sort_grades(uint8_t *a, int64_t n, int descending);
RC_INTERNAL int rc_ideal_upto(workspace *w, const double *disc, int64_t n);
RC_INTERNAL int rc_rankin_init(rankin *ri, workspace *w, const rc_input *in, const rc_options *o, int64_t R);

/* rc_order.c: relevant items a[0..n) sorted by distance, stably (tmp: n more); the k-th
 * smallest (1-based) of a[0..n) (permuted); the same with the counts below and equal to it */
RC_INTERNAL void rc_sort_by_distance(relitem *a, relitem *tmp, int64_t n);
RC_INTERNAL double rc_kth_smallest(double *a, int64_t n, int64_t k);
RC_INTERNAL void rc_kth_counts(double *a, int64_t n, int64_t k, int64_t *lt, int64_t *eq);

/* rc_float.c and rc_codes.c: one query of float distances / of Hamming codes */
RC_INTERNAL void rc_query_float(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                                workspace *w, qres *res, rc_output *out);
/* the vector passes' inputs: codes of one word, no junk, labels (if any) in one word */
static inline int rc_codes_vector_takes(const rc_input *in, const uint8_t *jk)
{
    return in->code_words == 1 && !jk && (in->rel_kind != REL_MULTI || in->label_words == 1);
}
/* rc_codes_avx512.c: the same pass in AVX-512 (feature bit RC_FEATURE_AVX512), for what
 * rc_codes_vector_takes; the same counts and rinfo entries as the plain pass */
#ifdef RC_HAVE_AVX512_DISPATCH
RC_INTERNAL int64_t rc_codes_pass_avx512(const rc_input *in, int64_t q, workspace *w, int record);
#endif
/* rc_codes_avx2.c: likewise in AVX2 (feature bits RC_FEATURE_AVX2 and RC_FEATURE_POPCNT), where
 * AVX-512 is absent or masked off */
#ifdef RC_HAVE_AVX2_DISPATCH
RC_INTERNAL int64_t rc_codes_pass_avx2(const rc_input *in, int64_t q, workspace *w, int record);
#endif
/* rc_codes.c: the XOR + popcount pass of query q over the gallery (counts in w->h2; record:
 * the relevant items' entries in w->rinfo), returns the relevant items recorded or -1 (no
 * memory); rc_query_codes runs it, and the benchmark entry point rc_bench_codes_pass alone */
RC_INTERNAL int64_t rc_codes_pass(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int record,
                                  int features);
RC_INTERNAL void rc_query_codes(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                                workspace *w, qres *res, rc_output *out, int features);

/* rc_threads.c: queries 0 .. n-1 on up to `threads` threads (the caller's among them), in
 * chunks of `chunk` handed out as threads become free; returns the OR of query()'s flags
 * (no_memory() stands in for query() on a thread whose thread_init() returned NULL), or -1
 * when the loop cannot start (no memory).  A thread calls thread_init, query and no_memory
 * only for a chunk it has claimed; thread_fini must not read ctx (the call may have returned) */
typedef struct {
    void *ctx;
    void *(*thread_init)(void *ctx);
    void (*thread_fini)(void *state);
    int (*query)(void *ctx, void *state, int64_t q);
    int (*no_memory)(void *ctx, int64_t q);
} rc_query_loop;
RC_INTERNAL int rc_run_queries(const rc_query_loop *loop, int64_t n, int64_t chunk, int64_t threads);
RC_INTERNAL int64_t rc_cpu_count(void);  /* online CPUs (1 where unknown) */

/* ---- the exported entry points (rc_evaluate.c; c_backend.py binds them by name) ---------- */
int64_t rc_abi_version(void);
int64_t rc_n_values(void);
int64_t rc_set_features(int64_t mask);
int64_t rc_max_threads(void);
int64_t rc_evaluate(const rc_input *in, const rc_options *o, rc_output *out, int64_t num_threads);
/* rc_curves.c: per-query curves (rc.curves) of Hamming codes or float distances */
int64_t rc_curves(int64_t dist_kind, const void *distances, const uint64_t *q_words, const uint64_t *db_words,
                  int64_t n_q, int64_t n_db, int64_t words, int64_t bits, int64_t rel_mode, const uint8_t *state,
                        const int64_t *q_ids, const int64_t *db_ids, const uint64_t *q_labels,
                        const uint64_t *db_labels, int64_t label_words, int64_t kind, int64_t ties,
                        const int64_t *level_num, const int64_t *level_den, int64_t n_levels,
                        const double *radii, int64_t n_radii, const int64_t *ns, int64_t n_ns,
                        double *out_a, double *out_b, int64_t *out_num, int64_t *out_scale,
                        int64_t *n_relevant, int64_t *failure, int64_t features, int64_t num_threads);
/* rc_shard.c: pass 2 of an evaluation over gallery shards: per row, a shard's items counted
 * against the row's points (c_shards.py binds it, when present, apart from the load checks) */
int64_t rc_shard_counts(int64_t dist_kind, const void *distances, const uint8_t *junk, int64_t n_rows,
                        int64_t n_items, int64_t offset, int64_t count, const int64_t *point_start,
                        const int64_t *point_key, const int64_t *point_index, int64_t *out_a, int64_t *out_b,
                        int64_t num_threads);

/* rc_bench.c: benchmark-only (conformance/bench/hashing_pass.py): the bare Hamming histogram
 * loop (the anchor) and the real pass of rc_codes.c alone, on 64-bit codes with one label word;
 * hist is (n_queries, 2 (n_bits + 1)); 0, or -1 for arguments they do not take */
int64_t rc_bench_hamming_histograms(const uint64_t *query_codes, const uint64_t *db_codes,
                                    const uint64_t *query_labels, const uint64_t *db_labels, int64_t n_queries,
                                    int64_t n_gallery, int64_t n_bits, int64_t features, int64_t *hist);
int64_t rc_bench_codes_pass(const uint64_t *query_codes, const uint64_t *db_codes, const uint64_t *query_labels,
                            const uint64_t *db_labels, int64_t n_queries, int64_t n_gallery, int64_t n_bits,
                            int64_t features, int64_t record, int64_t *hist);

#endif /* RC_CORE_H */
