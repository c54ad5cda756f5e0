/* rc_codes.c -- one query of Hamming codes (packed uint64 words): one XOR + popcount pass fills
 * per-distance histograms, or a counting sort for the concrete tie policies. */
#include "rc_core.h"

#if RC_INTERLEAVE != 4
#error "the unrolled pass below has one step per copy of the counters: RC_INTERLEAVE must be 4"
#endif

/* ---- Hamming codes: one query --------------------------------------------------------------- */
/* distance and common-label tests over W packed words */
static inline __attribute__((always_inline)) int64_t
popcount_words(const uint64_t *a, const uint64_t *b, int64_t W)
{
    int64_t u, d = 0;
    for (u = 0; u < W; u++) d += __builtin_popcountll(a[u] ^ b[u]);
    return d;
}

static inline __attribute__((always_inline)) int
any_common(const uint64_t *a, const uint64_t *b, int64_t W)
{
    uint64_t any = 0;
    int64_t u;
    for (u = 0; u < W; u++) any |= a[u] & b[u];
    return any != 0;
}

/* One item j of the pass, counted in copy C of the counters (C = j mod RC_INTERLEAVE, a
 * constant in the unrolled loop below, so no index arithmetic).  record: a relevant item
 * first records its distance and the items of that distance before it (the sum of the copies),
 * then every item counts in its copy; otherwise h2[2 d + relevant] with no branch but junk. */
#define RC_CODES_STEP(C, J, DIST, REL, JUNK)                                            \
    do {                                                                                \
        const int64_t j = (J);                                                          \
        if (!(JUNK)) {                                                                  \
            const uint32_t d_ = (uint32_t)(DIST);                                       \
            if (!record) {                                                              \
                h2[(C) * H2 + 2 * d_ + ((REL) ? 1 : 0)]++;                              \
            } else {                                                                    \
                if (REL) {                                                              \
                    uint64_t s_ = (uint64_t)h2[d_] + h2[H1 + d_] + h2[2 * H1 + d_] + h2[3 * H1 + d_]; \
                    if (nr == rinfo_cap) {                                              \
                        if (grow((void **)&w->rinfo, &w->rinfo_cap, max64(2 * nr, 1024), sizeof(uint64_t))) \
                            return -1;                                                  \
                        rinfo = w->rinfo;                                               \
                        rinfo_cap = w->rinfo_cap;                                       \
                    }                                                                   \
                    /* s < 2^32 (N < 2^32) */                                           \
                    rinfo[nr++] = (uint64_t)d_ << RC_RINFO_SHIFT | s_;                  \
                }                                                                       \
                h2[(C) * H1 + d_]++;                                                    \
            }                                                                           \
        }                                                                               \
    } while (0)

/* the pass unrolled by RC_INTERLEAVE (one step per copy of the counters), then the tail;
 * record is a constant in each specialised copy (codes_pass is inlined per value) */
#define RC_CODES_LOOP1(DIST, REL, JUNK)                                                 \
    do {                                                                                \
        int64_t j0 = 0;                                                                 \
        for (; j0 + RC_INTERLEAVE <= N; j0 += RC_INTERLEAVE) {                          \
            RC_CODES_STEP(0, j0, DIST, REL, JUNK);                                      \
            RC_CODES_STEP(1, j0 + 1, DIST, REL, JUNK);                                  \
            RC_CODES_STEP(2, j0 + 2, DIST, REL, JUNK);                                  \
            RC_CODES_STEP(3, j0 + 3, DIST, REL, JUNK);                                  \
        }                                                                               \
        for (; j0 < N; j0++) RC_CODES_STEP(j0 & (RC_INTERLEAVE - 1), j0, DIST, REL, JUNK); \
    } while (0)

#define RC_CODES_LOOP(DIST, REL)                                                        \
    do {                                                                                \
        if (jk) RC_CODES_LOOP1(DIST, REL, jk[j]);                                       \
        else RC_CODES_LOOP1(DIST, REL, 0);                                              \
    } while (0)

#define RC_CODES_REL(DIST)                                                              \
    do {                                                                                \
        if (in->rel_kind == REL_IDS) {                                                  \
            const int64_t id = in->query_ids[q], *dbi = in->db_ids;                     \
            RC_CODES_LOOP(DIST, dbi[j] == id);                                          \
        } else if (in->rel_kind == REL_MATRIX) {                                        \
            const uint8_t *row = in->relevance + q * N;                                 \
            RC_CODES_LOOP(DIST, row[j] != 0);                                           \
        } else if (in->label_words == 1) {                                              \
            const uint64_t l0 = in->query_label_bits[q], *dbl = in->db_label_bits;      \
            RC_CODES_LOOP(DIST, (l0 & dbl[j]) != 0);                                    \
        } else {                                                                        \
            const int64_t LW = in->label_words;                                         \
            const uint64_t *ql = in->query_label_bits + q * LW, *dbl = in->db_label_bits; \
            RC_CODES_LOOP(DIST, any_common(ql, dbl + j * LW, LW));                      \
        }                                                                               \
    } while (0)

/* The distance pass over the gallery; returns the relevant items found (-1: no memory).
 * record = 0: histogram h2[2 d + relevant] (all the expected / grouped / optimistic /
 *   pessimistic policies need), with no data-dependent branch except junk.
 * record = 1 (stable, reverse): a counting sort in one pass: every relevant item records its
 *   distance d and s = the number of non-junk items at distance d before it in gallery order
 *   (running counts per distance, in RC_INTERLEAVE copies by j mod 4: distances cluster, and
 *   one counter would chain consecutive items through memory; a relevant item sums them).
 * The counters are uint32_t (N < 2^32, checked by rc_evaluate): half the cache lines of int64. */
static inline __attribute__((always_inline)) int64_t
codes_pass(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, const int record)
{
    const int64_t N = in->n_gallery, W = in->code_words;
    const uint64_t *qc = in->query_codes + q * W, *db = in->db_codes;
    uint32_t *h2 = w->h2;
    /* in registers: a store through rinfo could otherwise alias rinfo_cap (int64_t) */
    uint64_t *rinfo = w->rinfo;
    int64_t nr = 0, rinfo_cap = w->rinfo_cap;
    if (W == 1) {   /* 64-bit codes and shorter: one word in a register, a constant stride */
        const uint64_t q0 = qc[0];
        const int64_t H1 = RC_WORD_DISTANCES, H2 = 2 * RC_WORD_DISTANCES;
        RC_CODES_REL(__builtin_popcountll(q0 ^ db[j]));
    } else {
        const int64_t H1 = rc_codes_distances(in->n_bits), H2 = 2 * H1;
        RC_CODES_REL(popcount_words(qc, db + j * W, W));
    }
    return nr;
}

/* one copy of the pass per (CPU feature, record): record is a constant in each, so its test
 * leaves the inner loop */
#ifdef RC_HAVE_POPCNT_DISPATCH
__attribute__((target("popcnt"))) static int64_t
codes_pass_popcnt(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int record)
{
    return record ? codes_pass(in, q, w, jk, 1) : codes_pass(in, q, w, jk, 0);
}
#endif

static int64_t codes_pass_generic(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk,
                                  int record)
{
    return record ? codes_pass(in, q, w, jk, 1) : codes_pass(in, q, w, jk, 0);
}

int64_t rc_codes_pass(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int record,
                      int features)
{
    memset(w->h2, 0, (size_t)(RC_INTERLEAVE * 2 * rc_codes_distances(in->n_bits)) * sizeof(uint32_t));
#ifdef RC_HAVE_AVX512_DISPATCH
    if ((features & RC_FEATURE_AVX512) && rc_codes_vector_takes(in, jk)) return rc_codes_pass_avx512(in, q, w, record);
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
    if ((features & RC_FEATURE_AVX2) && (features & RC_FEATURE_POPCNT) && rc_codes_vector_takes(in, jk))
        return rc_codes_pass_avx2(in, q, w, record);
#endif
#ifdef RC_HAVE_POPCNT_DISPATCH
    if (features & RC_FEATURE_POPCNT) return codes_pass_popcnt(in, q, w, jk, record);
#else
    (void)features;
#endif
    return codes_pass_generic(in, q, w, jk, record);
}

/* Graded relevance (a relevance matrix): the grades of the relevant items in rank order,
 * gr[rlt[d] ..] for distance d.  The relevant non-junk items are visited in gallery order, the
 * order of the counting sort (rinfo, stable / reverse) or of a distance computed again. */
static void codes_grades(const rc_input *in, int64_t q, workspace *w, const uint8_t *jk, int64_t ties)
{
    const int64_t N = in->n_gallery, W = in->code_words, B = in->n_bits;
    const uint8_t *row = in->relevance + q * N, *grades_row = in->grades + q * N;
    const uint64_t *qc = in->query_codes + q * W, *db = in->db_codes;
    const int record = ties == T_STABLE || ties == T_REVERSE;
    int64_t *run = w->run, j, i = 0, d;
    for (d = 0; d <= B; d++) run[d] = ties == T_REVERSE ? w->rlt[d] + w->hr[d] - 1 : w->rlt[d];
    for (j = 0; j < N; j++) {
        if (!row[j] || (jk && jk[j])) continue;
        d = record ? (int64_t)(w->rinfo[i++] >> RC_RINFO_SHIFT) : popcount_words(qc, db + j * W, W);
        if (ties == T_REVERSE) w->gr[run[d]--] = grades_row[j];
        else w->gr[run[d]++] = grades_row[j];
    }
    if (ties == T_OPTIMISTIC || ties == T_PESSIMISTIC)
        for (d = 0; d <= B; d++)
            if (w->hr[d] > 1) rc_sort_grades(w->gr + w->rlt[d], w->hr[d], ties == T_OPTIMISTIC);
}

/* The counting sort of the relevant items' entries ri[0..R) (gallery order) by distance, in
 * RC_SEGMENTS contiguous segments side by side, each with its own counters and cursors:
 * consecutive items of one distance (the usual case) then do not all wait on one counter in
 * memory.  segment_counts: seg[k (B + 1) + d] = the relevant items of distance d in segment k,
 * and their sums hr[d]. */
#define RC_SEG_D(i) ((int64_t)(ri[i] >> RC_RINFO_SHIFT))
#define RC_SEG_EACH(BODY)                                                               \
    do {                                                                                \
        int64_t t_, k_, lo_[RC_SEGMENTS];                                               \
        const int64_t len_ = R / RC_SEGMENTS, extra_ = R % RC_SEGMENTS;                 \
        for (k_ = 0; k_ < RC_SEGMENTS; k_++) lo_[k_] = k_ * len_ + min64(k_, extra_);   \
        for (t_ = 0; t_ < len_; t_++)                                                   \
            for (k_ = 0; k_ < RC_SEGMENTS; k_++) {                                      \
                const int64_t i = lo_[k_] + t_, k = k_;                                 \
                BODY;                                                                   \
            }                                                                           \
        for (k_ = 0; k_ < extra_; k_++) {  /* segments 0 .. extra - 1 hold one more */  \
            const int64_t i = lo_[k_] + len_, k = k_;                                   \
            BODY;                                                                       \
        }                                                                               \
    } while (0)

static void segment_counts(const uint64_t *ri, int64_t R, int64_t B, int64_t *seg, int64_t *hr)
{
    int64_t d, k;
    memset(seg, 0, (size_t)(RC_SEGMENTS * (B + 1)) * sizeof(int64_t));
    RC_SEG_EACH(seg[k * (B + 1) + RC_SEG_D(i)]++);
    for (d = 0; d <= B; d++) {
        hr[d] = 0;
        for (k = 0; k < RC_SEGMENTS; k++) hr[d] += seg[k * (B + 1) + d];
    }
}

/* The 1-based ranks rk (in rank order) from the entries and segment_counts' seg (turned into
 * cursors): stable ties keep gallery order within a distance, reverse ties the opposite. */
static void place_ranks(const uint64_t *ri, int64_t R, int64_t B, int64_t *seg, const int64_t *ht,
                        const int64_t *hr, const int64_t *clt, const int64_t *rlt, int reverse, int64_t *rk)
{
    int64_t d, k;
    for (d = 0; d <= B; d++) {  /* segment k starts after the items of the segments before it */
        int64_t at = reverse ? rlt[d] + hr[d] - 1 : rlt[d];
        for (k = 0; k < RC_SEGMENTS; k++) {
            const int64_t n = seg[k * (B + 1) + d];
            seg[k * (B + 1) + d] = at;
            at = reverse ? at - n : at + n;
        }
    }
    if (reverse)
        RC_SEG_EACH({
            const int64_t d_ = RC_SEG_D(i);
            rk[seg[k * (B + 1) + d_]--] = clt[d_] + ht[d_] - (int64_t)(ri[i] & RC_RINFO_COUNT_MASK);
        });
    else
        RC_SEG_EACH({
            const int64_t d_ = RC_SEG_D(i);
            rk[seg[k * (B + 1) + d_]++] = clt[d_] + (int64_t)(ri[i] & RC_RINFO_COUNT_MASK) + 1;
        });
}

void rc_query_codes(const rc_input *in, const rc_options *o, const dd *Hh,
                    int64_t q, workspace *w, qres *res, rc_output *out, int features)
{
    const int64_t B = in->n_bits, D = rc_codes_distances(B), ties = o->ties;
    int64_t *ht = w->ht, *hr = w->hr, *clt = w->clt, *rlt = w->rlt;
    const uint32_t *h2 = w->h2;
    const uint64_t *ri;
    int64_t *rk;
    const int record = ties == T_STABLE || ties == T_REVERSE;
    const uint8_t *jk = NULL;
    int64_t d, R = 0, Np = 0, Rb = 0;
    rankin rin;

    if (rc_has_junk(in)) {
        rc_build_junk(in, q, w->skip);
        jk = w->skip;
    }
    R = rc_codes_pass(in, q, w, jk, record, features);
    if (R < 0) {
        out->status[q] = Q_NOMEM;
        return;
    }
    ri = w->rinfo;
    if (record) {
        for (d = 0; d <= B; d++) {
            int64_t c;
            ht[d] = 0;
            for (c = 0; c < RC_INTERLEAVE; c++) ht[d] += h2[c * D + d];
        }
        segment_counts(ri, R, B, w->seg, hr);
    } else {
        const int64_t H2 = 2 * D;
        for (d = 0; d <= B; d++) {
            int64_t c, other = 0, relevant = 0;
            for (c = 0; c < RC_INTERLEAVE; c++) {
                other += h2[c * H2 + 2 * d];
                relevant += h2[c * H2 + 2 * d + 1];
            }
            ht[d] = other + relevant;
            hr[d] = relevant;
            R += relevant;
        }
    }
    for (d = 0; d <= B; d++) {
        clt[d] = Np;
        rlt[d] = Rb;
        Np += ht[d];
        Rb += hr[d];
    }
    out->n_relevant[q] = R;
    if (o->has_radius) {
        int64_t rn = 0, rr = 0;
        for (d = 0; d <= B && (double)d <= o->radius; d++) {
            rn += ht[d];
            rr += hr[d];
        }
        out->precision_at_radius[q] = rn ? (double)rr / (double)rn : 0.0;
        out->recall_at_radius[q] = R ? (double)rr / (double)R : 0.0;
    }
    if (ties == T_GROUPED && o->k >= 0) {
        for (d = 0; d <= B; d++) {
            if (ht[d] && clt[d] < o->k && o->k < clt[d] + ht[d]) {
                out->status[q] = Q_GROUPED_K;
                out->err_a[q] = clt[d];
                out->err_b[q] = clt[d] + ht[d];
                return;
            }
        }
    }
    if (R == 0) {
        rc_metrics_zero(o, res);
        return;
    }
    {   /* room for the R relevant items: ranks or groups, and grades (the same in every query
         * of a call, so one capacity serves them) */
        const int by_group = ties == T_EXPECTED || ties == T_GROUPED;
        if (R > w->g_cap) {
            if ((by_group ? resize((void **)&w->groups, (size_t)R * sizeof(group))
                          : resize((void **)&w->ranks, (size_t)R * sizeof(int64_t))) ||
                (in->grades && resize((void **)&w->gr, (size_t)R))) {
                out->status[q] = Q_NOMEM;
                return;
            }
            w->g_cap = R;
        }
        rk = w->ranks;
    }
    if (rc_rankin_init(&rin, w, in, o, R)) {
        out->status[q] = Q_NOMEM;
        return;
    }
    if (in->grades) {
        codes_grades(in, q, w, jk, ties);
        rin.gr = w->gr;
    }
    switch (ties) {
    case T_STABLE:   /* relevant items of one distance come in gallery order */
    case T_REVERSE:  /* within a distance, larger gallery index first */
        place_ranks(ri, R, B, w->seg, ht, hr, clt, rlt, ties == T_REVERSE, rk);
        break;
    case T_OPTIMISTIC:
    case T_PESSIMISTIC:
        for (d = 0; d <= B; d++) {
            int64_t u, first = clt[d] + (ties == T_OPTIMISTIC ? 0 : ht[d] - hr[d]) + 1;
            for (u = 0; u < hr[d]; u++) rk[rlt[d] + u] = first + u;
        }
        break;
    default: {
        group *g = w->groups;
        int64_t ng = 0;
        for (d = 0; d <= B; d++) {
            if (!hr[d]) continue;
            g[ng].c = clt[d];
            g[ng].n = ht[d];
            g[ng].m = hr[d];
            g[ng].h = rlt[d];
            ng++;
        }
        if (ties == T_EXPECTED) rc_metrics_expected(g, ng, R, Np, o, &rin, Hh, res);
        else rc_metrics_grouped(g, ng, R, Np, o, &rin, res);
        return;
    }
    }
    rc_metrics_ranks(rk, R, Np, o, &rin, res);
}
