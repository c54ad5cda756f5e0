/* rc_curves.c -- per-query curves (rc.curves) from the tie groups' counts. Hamming codes: one
 * XOR + popcount pass counts the items and relevant items at every distance (the tie groups), no
 * sort; float distances: the kept items sorted by distance (stable radix sort), runs of equal
 * distances being the groups.
 *
 * Every value is a ratio of integers below 2^53 divided once in double, so it is the exact
 * rational correctly rounded (as the reference's Fraction converted to float):
 *   radius r:      precision H_r / W_r (0 when W_r is empty), recall H_r / R;
 *   interpolated:  max {P@k : H(k) >= r R}, from the rank of every relevant item (concrete
 *                  orders) or from the groups' end points (grouped) or their two end points
 *                  (expected: within a group E[H(k)] / k is monotone in k);
 *   P@N:           H(min(N, N')) as num / scale (expected: scale = group size); the caller divides
 *                  num / (scale N) with Python integers.
 * Levels r = num / den are compared exactly in 128-bit integers. */
#include "rc_core.h"

enum { CURVE_INTERPOLATED = 0, CURVE_RADIUS = 1, CURVE_PRECISION_AT_N = 2 };
enum { TIES_STABLE = 0, TIES_REVERSE = 1, TIES_OPTIMISTIC = 2, TIES_PESSIMISTIC = 3, TIES_EXPECTED = 4,
       TIES_GROUPED = 5 };
enum { CURVES_OK = 0, CURVES_GROUPED_N = 1, CURVES_NOMEM = 2, CURVES_ARGS = 3 };
enum { CURVE_REL_STATE = 0, CURVE_REL_IDS = 1, CURVE_REL_MULTI = 2 };
enum { CURVE_CODES = 0, CURVE_F64 = 1, CURVE_F32 = 2 };

typedef struct {
    int64_t dist_kind;            /* CURVE_CODES, CURVE_F64, CURVE_F32 */
    const double *dist64;         /* (queries, n_db) float distances, */
    const float *dist32;          /* or their float32 */
    const uint64_t *q_words, *db_words;
    int64_t n_db, words, bits;
    int64_t rel_mode;     /* CURVE_REL_*: where relevance (and junk) come from */
    const uint8_t *state; /* CURVE_REL_STATE: (queries, n_db): 0 other, 1 relevant, 2 junk */
    const int64_t *q_ids, *db_ids;                 /* CURVE_REL_IDS: relevant iff equal */
    const uint64_t *q_labels, *db_labels;          /* CURVE_REL_MULTI: packed multi-hot labels, */
    int64_t label_words;                           /* relevant iff they share one */
    int64_t kind, ties;
    const int64_t *level_num, *level_den;
    int64_t n_levels;
    const double *radii;
    int64_t n_radii;
    const int64_t *ns;
    int64_t n_ns;
    double *out_a, *out_b;      /* (queries, points): precision; recall (radius) */
    int64_t *out_num, *out_scale; /* (queries, n_ns): P@N as num / (scale N) */
    int64_t *n_relevant;
} curve_args;

typedef struct {
    int64_t *rel_group; /* per relevant item, in gallery order: its tie group (codes: distance) */
    int64_t *rel_place; /* and the items of that group before it in gallery order */
    int64_t n_rel;
    int64_t groups, stride; /* tie groups of this query; room for them in each array of cnt */
    double *group_key;      /* float distances: the distance of each group, ascending */
    uint64_t *keys, *keys_tmp;   /* float distances: sort keys of the kept items, */
    int64_t *items, *items_tmp;  /* and their gallery index (bit 62: relevant) */
    int64_t *rank;  /* rank[h]: 1-based rank of the (h+1)-th relevant item */
    double *best;   /* suffix maxima */
    int64_t *cnt;   /* n, g, before, rb, seen: per tie group, stride apart */
    rc_input in;    /* codes with ids or labels: the input of rc_codes.c's pass, */
    workspace pw;   /* and the part of a workspace it reads (h2) and grows (rinfo) */
} curve_work;

/* one loop per relevance source keeps the hot loop free of invariant tests */
#define CURVE_COUNT_LOOP(REL, JUNK)                                                       \
    for (j = 0; j < N; j++) {                                                             \
        int64_t d = 0, r;                                                                 \
        if (JUNK) continue;                                                               \
        for (u = 0; u < W; u++) d += __builtin_popcountll(qw[u] ^ a->db_words[j * W + u]); \
        r = (REL);                                                                        \
        if (r) { /* its place among the items at its distance, in gallery order */       \
            w->rel_group[nrel] = d;                                                       \
            w->rel_place[nrel++] = n[d];                                                  \
        }                                                                                 \
        n[d]++;                                                                           \
        g[d] += r;                                                                        \
    }

static inline __attribute__((always_inline)) int
share_label(const uint64_t *a, const uint64_t *b, int64_t L)
{
    uint64_t any = 0;
    int64_t u;
    for (u = 0; u < L; u++) any |= a[u] & b[u];
    return any != 0;
}

static inline __attribute__((always_inline)) int64_t
count_pass_body(const curve_args *a, int64_t q, curve_work *w)
{
    const int64_t W = a->words, N = a->n_db, L = a->label_words;
    const uint64_t *qw = a->q_words + q * W;
    int64_t *n = w->cnt, *g = w->cnt + w->stride, j, u, nrel = 0;
    if (a->rel_mode == CURVE_REL_IDS) {
        const int64_t id = a->q_ids[q];
        CURVE_COUNT_LOOP(a->db_ids[j] == id, 0)
    } else if (a->rel_mode == CURVE_REL_MULTI) {
        const uint64_t *ql = a->q_labels + q * L;
        CURVE_COUNT_LOOP(share_label(ql, a->db_labels + j * L, L), 0)
    } else {
        const uint8_t *st = a->state + q * N;
        CURVE_COUNT_LOOP(st[j] == 1, st[j] == 2)
    }
    w->n_rel = nrel;
    return 0;
}

__attribute__((target("popcnt"))) static int64_t count_pass_popcnt(const curve_args *a, int64_t q, curve_work *w)
{
    return count_pass_body(a, q, w);
}

static int64_t count_pass_plain(const curve_args *a, int64_t q, curve_work *w)
{
    return count_pass_body(a, q, w);
}

/* Codes with ids or labels (no junk): the library's pass (rc_codes.c, in AVX-512 where the CPU
 * has it), which gives the same counts per distance and, under record, the same places of the
 * relevant items in gallery order as the loop above. */
static int library_pass(const curve_args *a, int64_t q, curve_work *w, int features)
{
    const int record = a->kind != CURVE_RADIUS && (a->ties == TIES_STABLE || a->ties == TIES_REVERSE);
    const int64_t B1 = w->groups, D = rc_codes_distances(a->bits), S = w->stride;
    int64_t *n = w->cnt, *g = n + S, d, c, i;
    const uint32_t *h2;
    const int64_t nr = rc_codes_pass(&w->in, q, &w->pw, NULL, record, features);
    if (nr < 0) return CURVES_NOMEM;
    h2 = w->pw.h2;
    for (d = 0; d < B1; d++) {
        for (c = 0; c < RC_INTERLEAVE; c++) {
            if (record) {
                n[d] += h2[c * D + d];
            } else {
                n[d] += h2[c * 2 * D + 2 * d] + h2[c * 2 * D + 2 * d + 1];
                g[d] += h2[c * 2 * D + 2 * d + 1];
            }
        }
    }
    for (i = 0; record && i < nr; i++) {
        d = (int64_t)(w->pw.rinfo[i] >> RC_RINFO_SHIFT);
        w->rel_group[i] = d;
        w->rel_place[i] = (int64_t)(w->pw.rinfo[i] & RC_RINFO_COUNT_MASK);
        g[d]++;
    }
    w->n_rel = record ? nr : 0;
    return CURVES_OK;
}

/* ceil(num R / den) for a level num / den */
static int64_t needed_hits(int64_t num, int64_t den, int64_t R)
{
    __int128 x = (__int128)num * R;
    return (int64_t)((x + den - 1) / den);
}

/* the ranks of the relevant items under a concrete order: stable and reverse from each relevant
 * item's place among the items at its distance (recorded by the counting pass, in gallery
 * order); optimistic and pessimistic from the counts alone */
static void relevant_ranks(const curve_args *a, curve_work *w)
{
    const int64_t B1 = w->groups, S = w->stride;
    int64_t *n = w->cnt, *g = n + S, *before = g + S, *rb = before + S, *seen = rb + S;
    int64_t d, i;
    if (a->ties == TIES_OPTIMISTIC || a->ties == TIES_PESSIMISTIC) {
        for (d = 0; d < B1; d++) {
            int64_t first = before[d] + 1 + (a->ties == TIES_PESSIMISTIC ? n[d] - g[d] : 0);
            for (i = 0; i < g[d]; i++) w->rank[rb[d] + i] = first + i;
        }
        return;
    }
    memset(seen, 0, (size_t)B1 * sizeof(int64_t));
    for (i = 0; i < w->n_rel; i++) {
        d = w->rel_group[i];
        if (a->ties == TIES_STABLE) {
            w->rank[rb[d] + seen[d]] = before[d] + w->rel_place[i] + 1;
        } else { /* reverse: the group read backwards, its last relevant item first */
            w->rank[rb[d] + g[d] - 1 - seen[d]] = before[d] + n[d] - w->rel_place[i];
        }
        seen[d]++;
    }
}

static double ratio(int64_t num, int64_t den) { return (double)num / (double)den; }

static void interpolated(const curve_args *a, int64_t q, curve_work *w, int64_t R)
{
    const int64_t B1 = w->groups, S = w->stride;
    int64_t *n = w->cnt, *g = n + S, *before = g + S, *rb = before + S;
    double *out = a->out_a + q * a->n_levels;
    int64_t h, d, i;
    if (a->ties <= TIES_PESSIMISTIC) {  /* concrete: the precision at each relevant item */
        relevant_ranks(a, w);
        for (h = R - 1; h >= 0; h--) {
            double p = ratio(h + 1, w->rank[h]);
            w->best[h] = (h == R - 1 || p > w->best[h + 1]) ? p : w->best[h + 1];
        }
        for (i = 0; i < a->n_levels; i++) {
            int64_t need = needed_hits(a->level_num[i], a->level_den[i], R);
            out[i] = w->best[(need < 1 ? 1 : need) - 1];
        }
        return;
    }
    /* grouped and expected: best[d] = the largest precision at a point of a group after d */
    {
        double after = -1.0;
        for (d = B1 - 1; d >= 0; d--) {
            w->best[d] = after;
            if (n[d] == 0) continue;
            {
                double end = ratio(rb[d] + g[d], before[d] + n[d]);
                double p = end;
                if (a->ties == TIES_EXPECTED) {
                    double one = ratio(rb[d] * n[d] + g[d], n[d] * (before[d] + 1));
                    p = one > end ? one : end;
                }
                after = p > after ? p : after;
            }
        }
    }
    for (i = 0; i < a->n_levels; i++) {
        int64_t need = needed_hits(a->level_num[i], a->level_den[i], R);
        double value;
        for (d = 0; d < B1 && (n[d] == 0 || rb[d] + g[d] < need); d++) {
        }
        value = ratio(rb[d] + g[d], before[d] + n[d]);  /* the group's end point */
        if (a->ties == TIES_EXPECTED) {
            /* the first position t of the group with rb + t g / n >= r R */
            __int128 x = (__int128)a->level_num[i] * R - (__int128)a->level_den[i] * rb[d];
            int64_t t = 1;
            double p;
            if (x > 0) {
                __int128 den = (__int128)a->level_den[i] * g[d];
                t = (int64_t)((x * n[d] + den - 1) / den);
            }
            p = ratio(rb[d] * n[d] + t * g[d], n[d] * (before[d] + t));
            value = p > value ? p : value;
        }
        out[i] = w->best[d] > value ? w->best[d] : value;
    }
}

/* P@N as num / (scale N); CURVES_GROUPED_N (and *bad = the N's index) for an N inside a tie group */
static int precision_at_n(const curve_args *a, int64_t q, curve_work *w, int64_t R, int64_t kept, int64_t *bad)
{
    const int64_t B1 = w->groups, S = w->stride;
    int64_t *n = w->cnt, *g = n + S, *before = g + S, *rb = before + S;
    int64_t i, d;
    if (a->ties <= TIES_PESSIMISTIC) relevant_ranks(a, w);
    for (i = 0; i < a->n_ns; i++) {
        int64_t depth = a->ns[i] < kept ? a->ns[i] : kept, num = 0, scale = 1;
        if (depth > 0 && a->ties <= TIES_PESSIMISTIC) {
            int64_t lo = 0, hi = R;  /* relevant items ranked within depth: ranks ascend */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (w->rank[mid] <= depth) lo = mid + 1; else hi = mid;
            }
            num = lo;
        } else if (depth > 0) {
            for (d = 0; d < B1 && (n[d] == 0 || before[d] + n[d] < depth); d++) {
            }
            if (a->ties == TIES_GROUPED) {
                if (before[d] + n[d] != depth && depth < kept) {
                    *bad = i;
                    return CURVES_GROUPED_N;
                }
                num = rb[d] + g[d];
            } else {
                num = rb[d] * n[d] + (depth - before[d]) * g[d];
                scale = n[d];
            }
        }
        a->out_num[q * a->n_ns + i] = num;
        a->out_scale[q * a->n_ns + i] = scale;
    }
    return CURVES_OK;
}

static void radius(const curve_args *a, int64_t q, curve_work *w, int64_t R)
{
    const int64_t B1 = w->groups, S = w->stride;
    int64_t *n = w->cnt, *g = n + S, i, d;
    for (d = 1; d < B1; d++) {  /* cumulative counts up to each group */
        n[d] += n[d - 1];
        g[d] += g[d - 1];
    }
    for (i = 0; i < a->n_radii; i++) {
        double r = a->radii[i];
        int64_t c;  /* the last group within r, or -1 */
        if (a->dist_kind == CURVE_CODES) {
            c = r >= (double)a->bits ? a->bits : (int64_t)floor(r);
        } else {
            int64_t lo = 0, hi = B1;  /* groups with a distance <= r: ascending distances */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (w->group_key[mid] <= r) lo = mid + 1; else hi = mid;
            }
            c = lo - 1;
        }
        a->out_a[q * a->n_radii + i] = c >= 0 && n[c] ? ratio(g[c], n[c]) : 0.0;
        a->out_b[q * a->n_radii + i] = c >= 0 && R ? ratio(g[c], R) : 0.0;
    }
}

/* ---- float distances: the kept items sorted by distance, stably (LSD radix, 8 bits a pass) -- */
static uint64_t order_key(double x)
{
    uint64_t u;
    x += 0.0;  /* -0.0 ties with 0.0 */
    memcpy(&u, &x, sizeof u);
    return (u >> 63) ? ~u : (u | ((uint64_t)1 << 63));
}

static void radix_sort(curve_work *w, int64_t m)
{
    int64_t count[8][256], pass, i;
    memset(count, 0, sizeof count);
    for (i = 0; i < m; i++)
        for (pass = 0; pass < 8; pass++) count[pass][(w->keys[i] >> (8 * pass)) & 255]++;
    for (pass = 0; pass < 8; pass++) {
        int64_t pos = 0, b, *c = count[pass];
        uint64_t *kt;
        int64_t *it;
        if (m == 0 || c[(w->keys[0] >> (8 * pass)) & 255] == m) continue;  /* one digit: nothing moves */
        for (b = 0; b < 256; b++) {
            int64_t k = c[b];
            c[b] = pos;
            pos += k;
        }
        for (i = 0; i < m; i++) {
            int64_t to = c[(w->keys[i] >> (8 * pass)) & 255]++;
            w->keys_tmp[to] = w->keys[i];
            w->items_tmp[to] = w->items[i];
        }
        kt = w->keys; w->keys = w->keys_tmp; w->keys_tmp = kt;
        it = w->items; w->items = w->items_tmp; w->items_tmp = it;
    }
}

#define CURVE_REL_BIT ((int64_t)1 << 62)

static void float_pass(const curve_args *a, int64_t q, curve_work *w)
{
    const int64_t N = a->n_db, S = w->stride;
    int64_t *n = w->cnt, *g = n + S, j, m = 0, p, nrel = 0, G = -1, start = 0;
    const uint8_t *st = a->rel_mode == CURVE_REL_STATE ? a->state + q * N : NULL;
    const uint64_t *ql = a->rel_mode == CURVE_REL_MULTI ? a->q_labels + q * a->label_words : NULL;
    for (j = 0; j < N; j++) {
        double d = a->dist_kind == CURVE_F64 ? a->dist64[q * N + j] : (double)a->dist32[q * N + j];
        int r;
        if (st) {
            if (st[j] == 2) continue;
            r = st[j] == 1;
        } else if (ql) {
            r = share_label(ql, a->db_labels + j * a->label_words, a->label_words);
        } else {
            r = a->db_ids[j] == a->q_ids[q];
        }
        w->keys[m] = order_key(d);
        w->items[m++] = j | (r ? CURVE_REL_BIT : 0);
    }
    radix_sort(w, m);
    for (p = 0; p < m; p++) {  /* runs of equal keys are the tie groups, each in gallery order */
        int r = (w->items[p] & CURVE_REL_BIT) != 0;
        if (p == 0 || w->keys[p] != w->keys[p - 1]) {
            G++;
            start = p;
            n[G] = g[G] = 0;
            j = w->items[p] & ~CURVE_REL_BIT;
            w->group_key[G] = a->dist_kind == CURVE_F64 ? a->dist64[q * N + j] : (double)a->dist32[q * N + j];
        }
        n[G]++;
        if (r) {
            g[G]++;
            w->rel_group[nrel] = G;
            w->rel_place[nrel++] = p - start;
        }
    }
    w->groups = G + 1;
    w->n_rel = nrel;
}

static int curve_query(const curve_args *a, int64_t q, curve_work *w, int features, int64_t *bad)
{
    const int64_t S = w->stride;
    int64_t *n = w->cnt, *g = n + S, *before = g + S, *rb = before + S, d, R = 0, kept = 0;
    if (a->dist_kind == CURVE_CODES) {
        w->groups = a->bits + 1;
        memset(w->cnt, 0, (size_t)(2 * S) * sizeof(int64_t));
        if (w->pw.h2) {
            if (library_pass(a, q, w, features) != CURVES_OK) return CURVES_NOMEM;
        } else if (features & RC_FEATURE_POPCNT) {
            count_pass_popcnt(a, q, w);
        } else {
            count_pass_plain(a, q, w);
        }
    } else {
        float_pass(a, q, w);
    }
    for (d = 0; d < w->groups; d++) {
        before[d] = kept;
        rb[d] = R;
        kept += n[d];
        R += g[d];
    }
    a->n_relevant[q] = R;
    if (a->kind == CURVE_RADIUS) {
        radius(a, q, w, R);
        return CURVES_OK;
    }
    if (a->kind == CURVE_PRECISION_AT_N) return precision_at_n(a, q, w, R, kept, bad);
    if (R > 0) interpolated(a, q, w, R);
    return CURVES_OK;
}

/* ---- the loop over queries (rc_threads.c runs it) ------------------------------------------ */
#define CURVE_FLAG_BAD 1    /* an N inside a tie group (grouped): bad_at[q] holds the index */
#define CURVE_FLAG_NOMEM 2  /* a thread without its arrays */

typedef struct {
    const curve_args *a;
    int features;  /* RC_FEATURE_POPCNT / RC_FEATURE_AVX512 bits */
    int64_t *bad_at;  /* per query: -1, or the index of the failing N (the first query wins) */
} curve_ctx;

static void curve_work_free(curve_work *w)
{
    free(w->rel_group);
    free(w->group_key);
    free(w->keys);
    free(w->keys_tmp);
    free(w->items);
    free(w->items_tmp);
    free(w->rel_place);
    free(w->rank);
    free(w->best);
    free(w->cnt);
    free(w->pw.h2);
    free(w->pw.rinfo);
    free(w);
}

static void curve_thread_fini(void *state) { curve_work_free((curve_work *)state); }

static void *curve_thread_init(void *arg)
{
    const curve_args *a = ((const curve_ctx *)arg)->a;
    const int64_t n_db = a->n_db;
    const int64_t groups = a->dist_kind == CURVE_CODES ? a->bits + 1 : n_db;
    const int64_t sorted = a->dist_kind == CURVE_CODES ? 0 : n_db;  /* float distances sort */
    curve_work *w = (curve_work *)calloc(1, sizeof(curve_work));
    if (!w) return NULL;
    w->stride = groups;
    w->rel_group = (int64_t *)malloc((size_t)n_db * sizeof(int64_t));
    w->rel_place = (int64_t *)malloc((size_t)n_db * sizeof(int64_t));
    w->group_key = (double *)malloc((size_t)(sorted + 1) * sizeof(double));
    w->keys = (uint64_t *)malloc((size_t)(sorted + 1) * sizeof(uint64_t));
    w->keys_tmp = (uint64_t *)malloc((size_t)(sorted + 1) * sizeof(uint64_t));
    w->items = (int64_t *)malloc((size_t)(sorted + 1) * sizeof(int64_t));
    w->items_tmp = (int64_t *)malloc((size_t)(sorted + 1) * sizeof(int64_t));
    w->rank = (int64_t *)malloc((size_t)n_db * sizeof(int64_t));
    w->best = (double *)malloc((size_t)(n_db > groups ? n_db : groups) * sizeof(double));
    w->cnt = (int64_t *)calloc((size_t)(5 * groups), sizeof(int64_t));
    if (!(w->rel_group && w->rel_place && w->rank && w->best && w->cnt && w->group_key && w->keys &&
          w->keys_tmp && w->items && w->items_tmp)) {
        curve_work_free(w);
        return NULL;
    }
    if (a->dist_kind == CURVE_CODES && a->rel_mode != CURVE_REL_STATE) {  /* the library's pass */
        rc_input *in = &w->in;
        in->n_gallery = n_db;
        in->dist_kind = D_CODES;
        in->query_codes = a->q_words;
        in->db_codes = a->db_words;
        in->code_words = a->words;
        in->n_bits = a->bits;
        if (a->rel_mode == CURVE_REL_IDS) {
            in->rel_kind = REL_IDS;
            in->query_ids = a->q_ids;
            in->db_ids = a->db_ids;
        } else {
            in->rel_kind = REL_MULTI;
            in->query_label_bits = a->q_labels;
            in->db_label_bits = a->db_labels;
            in->label_words = a->label_words;
        }
        w->pw.h2 = (uint32_t *)malloc(RC_INTERLEAVE * 2 * (size_t)rc_codes_distances(a->bits) * sizeof(uint32_t));
        if (!w->pw.h2) {
            curve_work_free(w);
            return NULL;
        }
    }
    return w;
}

static int curve_one(void *arg, void *state, int64_t q)
{
    const curve_ctx *c = (const curve_ctx *)arg;
    int64_t bad = 0;
    const int status = curve_query(c->a, q, (curve_work *)state, c->features, &bad);
    if (status == CURVES_OK) return 0;
    if (status == CURVES_NOMEM) return CURVE_FLAG_NOMEM;
    c->bad_at[q] = bad;
    return CURVE_FLAG_BAD;
}

static int curve_no_memory(void *arg, int64_t q)
{
    (void)arg;
    (void)q;
    return CURVE_FLAG_NOMEM;
}

/* queries per chunk: about RC_CHUNK_ITEMS pairs, RC_CHUNKS_PER_THREAD chunks per thread */
static int64_t curve_chunk(int64_t n_q, int64_t n_db, int64_t threads)
{
    int64_t chunk = RC_CHUNK_ITEMS / (n_db > 0 ? n_db : 1) + 1;
    return max64(1, min64(chunk, n_q / (RC_CHUNKS_PER_THREAD * max64(threads, 1))));
}

int64_t rc_curves(int64_t dist_kind, const void *distances, const uint64_t *q_words, const uint64_t *db_words,
                  int64_t n_q, int64_t n_db, int64_t words, int64_t bits, int64_t rel_mode, const uint8_t *state,
                        const int64_t *q_ids, const int64_t *db_ids, const uint64_t *q_labels,
                        const uint64_t *db_labels, int64_t label_words, int64_t kind, int64_t ties,
                        const int64_t *level_num, const int64_t *level_den, int64_t n_levels,
                        const double *radii, int64_t n_radii, const int64_t *ns, int64_t n_ns,
                        double *out_a, double *out_b, int64_t *out_num, int64_t *out_scale,
                        int64_t *n_relevant, int64_t *failure, int64_t features, int64_t num_threads)
{
    curve_args a;
    curve_ctx ctx;
    rc_query_loop loop;
    int64_t q, first_bad = n_q, bad_index = 0;
    int nomem, flags;
    if (bits < 0 || rel_mode < CURVE_REL_STATE || rel_mode > CURVE_REL_MULTI ||
        n_db < 1 || words < 1 || ties < 0 || ties > TIES_GROUPED)
        return CURVES_ARGS;
    if (dist_kind < CURVE_CODES || dist_kind > CURVE_F32) return CURVES_ARGS;
    a.dist_kind = dist_kind;
    a.dist64 = (const double *)distances;
    a.dist32 = (const float *)distances;
    a.q_words = q_words; a.db_words = db_words; a.n_db = n_db; a.words = words; a.bits = bits;
    a.rel_mode = rel_mode; a.state = state; a.q_ids = q_ids; a.db_ids = db_ids; a.q_labels = q_labels;
    a.db_labels = db_labels; a.label_words = label_words; a.kind = kind; a.ties = ties; a.level_num = level_num; a.level_den = level_den;
    a.n_levels = n_levels; a.radii = radii; a.n_radii = n_radii; a.ns = ns; a.n_ns = n_ns;
    a.out_a = out_a; a.out_b = out_b; a.out_num = out_num; a.out_scale = out_scale; a.n_relevant = n_relevant;
    if (num_threads <= 0) num_threads = rc_max_threads();
    ctx.a = &a;
    ctx.features = (int)features;
    ctx.bad_at = (int64_t *)malloc((size_t)(n_q > 0 ? n_q : 1) * sizeof(int64_t));
    if (!ctx.bad_at) return CURVES_NOMEM;
    for (q = 0; q < n_q; q++) ctx.bad_at[q] = -1;
    loop.ctx = &ctx;
    loop.thread_init = curve_thread_init;
    loop.thread_fini = curve_thread_fini;
    loop.query = curve_one;
    loop.no_memory = curve_no_memory;
    flags = rc_run_queries(&loop, n_q, curve_chunk(n_q, n_db, num_threads), num_threads);
    nomem = flags < 0 || (flags & CURVE_FLAG_NOMEM);
    if (!nomem && (flags & CURVE_FLAG_BAD)) {  /* the first query in order, whatever the threads */
        for (q = 0; q < n_q && ctx.bad_at[q] < 0; q++) continue;
        first_bad = q;
        bad_index = ctx.bad_at[q];
    }
    free(ctx.bad_at);
    if (nomem) return CURVES_NOMEM;
    if (first_bad < n_q) {
        failure[0] = first_bad;
        failure[1] = bad_index;
        return CURVES_GROUPED_N;
    }
    return CURVES_OK;
}
