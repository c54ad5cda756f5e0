/* rc_shard.c -- pass 2 of an evaluation over gallery shards (implementations/dask/shards.py,
 * the torch.distributed accumulator): per query row of one shard, the shard's non-junk items
 * counted against the row's points (the merged relevant items, or their distinct distances).
 *
 * Distances are compared as int64 order keys, the same keys the numpy side builds
 * (dask/shards.py order_keys): float32 as its bits (negative ones with the magnitude bits
 * flipped), float64 likewise, Hamming distances as they are; -0.0 ties with 0.0.  For a
 * point p of key x_p and item i of key k_i (shard-local index j_i):
 *   below / at (group policies):  below_p = #{i : k_i < x_p},  at_p = #{i : k_i <= x_p};
 *   stable:   ahead_p = #{i : k_i < x_p} + #{i : k_i = x_p, j_i < b_p},      b_p = x_local;
 *   reverse:  ahead_p = #{i : k_i < x_p} + #{i : k_i = x_p, j_i > x_local}
 *                     = below_p + tied_p - #{i : k_i = x_p, j_i < b_p},       b_p = x_local + 1;
 * with x_local the point's global index minus the shard's offset, b_p clipped to [0, n].
 *
 * One pass over the row, no sort of the items: the row's points are sorted by (key, bound)
 * (a few dozen per row), each item finds its key among the distinct point keys by a
 * branch-free binary search (an item beyond the largest point key, most of a row, is dropped
 * after one comparison of its distance as read with that key's distance), a histogram of
 * those places gives below and at, and a cursor per distinct key walks its points in bound
 * order as the items arrive in index order, so that each point reads the tied items before its
 * bound.  Rows run through rc_threads.c; every count is an integer: the result is the same for
 * any thread count. */
#include "rc_core.h"

enum { SHARD_F64 = 0, SHARD_F32 = 1, SHARD_I64 = 2 };            /* the distances' type */
enum { SHARD_BELOW_AT = 0, SHARD_STABLE = 1, SHARD_REVERSE = 2 }; /* what is counted */
enum { SHARD_OK = 0, SHARD_NOMEM = 2, SHARD_ARGS = 3 };

typedef struct { int64_t key, bound, point; } shard_point;

typedef struct {
    shard_point *pts;   /* the row's points, sorted by (key, bound) */
    int64_t *key;       /* distinct point keys, ascending */
    int64_t *first;     /* first[t]: index in pts of the first point of key t; first[T] = m */
    int64_t *hist;      /* items whose key falls at place t (key[t-1] < k <= key[t]) */
    int64_t *tied;      /* items whose key equals key[t] */
    int64_t *cursor;    /* the next point of key t still waiting for its bound */
    int64_t *before;    /* per point (in pts order): tied items before its bound */
    int64_t cap;
} shard_work;

/* the int64 order key of item i of a row: equal keys <=> equal distances, in their order */
static inline int64_t shard_key(int64_t kind, const void *row, int64_t i)
{
    if (kind == SHARD_F32) {
        float f = ((const float *)row)[i] + 0.0f;  /* -0.0 + 0.0 = +0.0 */
        int32_t b;
        memcpy(&b, &f, sizeof b);
        return (int64_t)(b < 0 ? b ^ INT32_C(0x7FFFFFFF) : b);
    }
    if (kind == SHARD_F64) {
        double d = ((const double *)row)[i] + 0.0;
        int64_t b;
        memcpy(&b, &d, sizeof b);
        return b < 0 ? b ^ INT64_C(0x7FFFFFFFFFFFFFFF) : b;
    }
    return ((const int64_t *)row)[i];
}

/* the largest distance of a key (the key's inverse; for a key between two floats' keys, the
 * float below it, so that a distance above it has a larger key): finite distances only */
static float shard_value32(int64_t key)
{
    int32_t b;
    float f;
    if (key > INT32_MAX) return FLT_MAX;
    if (key < INT32_MIN) return -FLT_MAX;
    b = (int32_t)key;
    b = b < 0 ? b ^ INT32_C(0x7FFFFFFF) : b;
    memcpy(&f, &b, sizeof f);
    return f;
}

static double shard_value64(int64_t key)
{
    int64_t b = key < 0 ? key ^ INT64_C(0x7FFFFFFFFFFFFFFF) : key;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static int by_key_then_bound(const void *x, const void *y)
{
    const shard_point *a = (const shard_point *)x, *b = (const shard_point *)y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->bound != b->bound) return a->bound < b->bound ? -1 : 1;
    return (a->point > b->point) - (a->point < b->point);
}

/* room for m points (and one more entry of first and hist) in every array; -1: no memory */
static int work_grow(shard_work *w, int64_t m)
{
    void **grown[] = {(void **)&w->key, (void **)&w->first, (void **)&w->hist, (void **)&w->tied,
                      (void **)&w->cursor, (void **)&w->before};
    const int64_t need = m + 1;
    size_t i;
    if (need <= w->cap) return 0;
    if (resize((void **)&w->pts, (size_t)need * sizeof(shard_point))) return -1;
    for (i = 0; i < sizeof grown / sizeof grown[0]; i++)
        if (resize(grown[i], (size_t)need * sizeof(int64_t))) return -1;
    w->cap = need;
    return 0;
}

static void work_free(shard_work *w)
{
    free(w->pts); free(w->key); free(w->first); free(w->hist); free(w->tied); free(w->cursor); free(w->before);
}

/* the counts of one row's m points (their keys, global indices) against its n items */
static int shard_row(int64_t kind, const void *row, const uint8_t *junk, int64_t n, int64_t offset,
                     int64_t count, const int64_t *pkey, const int64_t *pindex, int64_t m,
                     int64_t *out_a, int64_t *out_b, shard_work *w)
{
    int64_t i, j, t, T = 0, top;
    float top32 = 0.0f;
    double top64 = 0.0;
    if (m == 0) return 0;
    if (work_grow(w, m)) return -1;
    for (i = 0; i < m; i++) {
        int64_t b = 0;
        if (count != SHARD_BELOW_AT) b = min64(max64(pindex[i] - offset + (count == SHARD_REVERSE), 0), n);
        w->pts[i].key = pkey[i];
        w->pts[i].bound = b;
        w->pts[i].point = i;
    }
    qsort(w->pts, (size_t)m, sizeof(shard_point), by_key_then_bound);
    for (i = 0; i < m; i++) {
        if (i == 0 || w->pts[i].key != w->pts[i - 1].key) {
            w->key[T] = w->pts[i].key;
            w->first[T] = w->cursor[T] = i;
            w->hist[T] = w->tied[T] = 0;
            T++;
        }
    }
    w->first[T] = m;
    top = w->key[T - 1];
    if (kind == SHARD_F32) top32 = shard_value32(top);
    if (kind == SHARD_F64) top64 = shard_value64(top);
    for (j = 0; j < n; j++) {
        int64_t k, lo, len = T;
        const int64_t *base = w->key;
        if (junk && junk[j]) continue;
        /* beyond every point (most items): counts for none; floats compared as read */
        if (kind == SHARD_F32 ? ((const float *)row)[j] > top32 : kind == SHARD_F64 && ((const double *)row)[j] > top64)
            continue;
        k = shard_key(kind, row, j);
        if (k > top) continue;
        /* the first distinct key >= k, without branches (a select per step): as k <= the largest
         * key, it lies in [base, base + len) throughout */
        while (len > 1) {
            int64_t half = len / 2;
            base = base[half - 1] < k ? base + half : base;
            len -= half;
        }
        lo = base - w->key;
        w->hist[lo]++;
        if (w->key[lo] != k) continue;
        if (count != SHARD_BELOW_AT) {  /* points whose bound is reached read the tied items so far */
            int64_t c = w->cursor[lo], end = w->first[lo + 1];
            while (c < end && w->pts[c].bound <= j) w->before[c++] = w->tied[lo];
            w->cursor[lo] = c;
        }
        w->tied[lo]++;
    }
    {
        int64_t le = 0;  /* items at a key <= key[t] */
        for (t = 0; t < T; t++) {
            int64_t below;
            le += w->hist[t];
            below = le - w->tied[t];
            for (i = w->first[t]; i < w->first[t + 1]; i++) {
                int64_t p = w->pts[i].point, tied_before = i < w->cursor[t] ? w->before[i] : w->tied[t];
                if (count == SHARD_BELOW_AT) {
                    out_a[p] = below;
                    out_b[p] = le;
                } else {
                    out_a[p] = below + (count == SHARD_STABLE ? tied_before : w->tied[t] - tied_before);
                }
            }
        }
    }
    return 0;
}

/* ---- the loop over rows (rc_threads.c runs it) ------------------------------------------- */
#define SHARD_FLAG_NOMEM 1  /* a thread without its arrays, or arrays that could not grow */

typedef struct {
    int64_t kind, n_items, offset, count;
    const char *distances;
    size_t row_bytes;
    const uint8_t *junk;
    const int64_t *point_start, *point_key, *point_index;
    int64_t *out_a, *out_b;
} shard_ctx;

static void *shard_thread_init(void *arg)
{
    (void)arg;
    return calloc(1, sizeof(shard_work));
}

static void shard_thread_fini(void *state)
{
    work_free((shard_work *)state);
    free(state);
}

static int shard_one(void *arg, void *state, int64_t r)
{
    const shard_ctx *c = (const shard_ctx *)arg;
    const int64_t a = c->point_start[r];
    return shard_row(c->kind, c->distances + (size_t)r * c->row_bytes, c->junk ? c->junk + r * c->n_items : NULL,
                     c->n_items, c->offset, c->count, c->point_key + a, c->point_index ? c->point_index + a : NULL,
                     c->point_start[r + 1] - a, c->out_a + a, c->out_b ? c->out_b + a : NULL, (shard_work *)state)
               ? SHARD_FLAG_NOMEM : 0;
}

static int shard_no_memory(void *arg, int64_t r)
{
    (void)arg;
    (void)r;
    return SHARD_FLAG_NOMEM;
}

/* Rows 0 .. n_rows-1 of a shard's (n_rows, n_items) distances (dist_kind SHARD_*; junk: the
 * same shape, 1 = junk, or NULL), each against its points point_start[r] .. point_start[r+1]
 * (keys and global indices; point_index is read for the index orders only).  count:
 * SHARD_BELOW_AT writes out_a = below, out_b = at; SHARD_STABLE / SHARD_REVERSE write out_a =
 * the items ahead.  num_threads <= 0: the library's default.  Returns SHARD_OK, SHARD_NOMEM or
 * SHARD_ARGS. */
int64_t rc_shard_counts(int64_t dist_kind, const void *distances, const uint8_t *junk, int64_t n_rows,
                        int64_t n_items, int64_t offset, int64_t count, const int64_t *point_start,
                        const int64_t *point_key, const int64_t *point_index, int64_t *out_a, int64_t *out_b,
                        int64_t num_threads)
{
    shard_ctx ctx;
    rc_query_loop loop;
    int64_t chunk;
    int flags;
    if (dist_kind < SHARD_F64 || dist_kind > SHARD_I64 || count < SHARD_BELOW_AT || count > SHARD_REVERSE ||
        n_rows < 0 || n_items < 0 || !point_start || !out_a || (count == SHARD_BELOW_AT && !out_b) ||
        (count != SHARD_BELOW_AT && !point_index) || (n_rows > 0 && n_items > 0 && !distances))
        return SHARD_ARGS;
    if (n_rows == 0) return SHARD_OK;
    if (num_threads <= 0) num_threads = rc_max_threads();
    ctx.kind = dist_kind;
    ctx.n_items = n_items;
    ctx.offset = offset;
    ctx.count = count;
    ctx.distances = (const char *)distances;
    ctx.row_bytes = (size_t)n_items * (dist_kind == SHARD_F32 ? sizeof(float) : sizeof(double));  /* int64 too */
    ctx.junk = junk;
    ctx.point_start = point_start;
    ctx.point_key = point_key;
    ctx.point_index = point_index;
    ctx.out_a = out_a;
    ctx.out_b = out_b;
    loop.ctx = &ctx;
    loop.thread_init = shard_thread_init;
    loop.thread_fini = shard_thread_fini;
    loop.query = shard_one;
    loop.no_memory = shard_no_memory;
    /* rows per chunk: about RC_CHUNK_ITEMS items, RC_CHUNKS_PER_THREAD chunks per thread */
    chunk = max64(1, min64(RC_CHUNK_ITEMS / (n_items > 0 ? n_items : 1) + 1,
                           n_rows / (RC_CHUNKS_PER_THREAD * max64(num_threads, 1))));
    flags = rc_run_queries(&loop, n_rows, chunk, num_threads);
    return flags < 0 || (flags & SHARD_FLAG_NOMEM) ? SHARD_NOMEM : SHARD_OK;
}
