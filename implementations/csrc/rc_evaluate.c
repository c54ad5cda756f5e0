/* rc_evaluate.c -- the exported entry points (bound by name with ctypes in c_backend.py):
 * argument checks, CPU feature dispatch, per-thread workspaces and the loop over queries (on
 * the threads of rc_threads.c).  Builds with and without OpenMP (-fopenmp: only its default
 * thread count, OMP_NUM_THREADS, is read here). */
#include "rc_core.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- per-thread workspace ---------------------------------------------------------------- */
static void ws_free(workspace *w)
{
    free(w->skip); free(w->ranks); free(w->groups); free(w->rel); free(w->rd); free(w->bucket); free(w->tie_seen); free(w->tie_last);
    free(w->before); free(w->eq); free(w->sel); free(w->cand); free(w->rtmp); free(w->cnt); free(w->ideal1); free(w->runs); free(w->h2); free(w->ht); free(w->hr);
    free(w->clt); free(w->rlt); free(w->run); free(w->rinfo); free(w->gr); free(w->seg);
    free(w->sides); free(w->bval);
    memset(w, 0, sizeof(*w));
}

/* the arrays whose size does not depend on the query: the junk / skip mask (N bytes) and
 * fixed tables; the arrays of relevant items grow per query (grow()) */
static int ws_alloc(workspace *w, const rc_input *in)
{
    memset(w, 0, sizeof(*w));
    w->skip = (uint8_t *)malloc((size_t)in->n_gallery + 1);
    if (!w->skip) return -1;
    if (in->dist_kind == D_CODES) {
        size_t B = (size_t)in->n_bits + 1;
        w->h2 = (uint32_t *)malloc(RC_INTERLEAVE * 2 * (size_t)rc_codes_distances(in->n_bits) * sizeof(uint32_t));
        w->ht = (int64_t *)malloc(B * sizeof(int64_t));
        w->hr = (int64_t *)malloc(B * sizeof(int64_t));
        w->clt = (int64_t *)malloc(B * sizeof(int64_t));
        w->rlt = (int64_t *)malloc(B * sizeof(int64_t));
        w->run = (int64_t *)malloc(B * sizeof(int64_t));
        w->seg = (int64_t *)malloc(RC_SEGMENTS * B * sizeof(int64_t));
        if (!w->h2 || !w->ht || !w->hr || !w->clt || !w->rlt || !w->run || !w->seg) return -1;
    }  /* the float path's arrays all grow per query */
    return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */
int64_t rc_abi_version(void) { return RC_ABI_VERSION; }

/* how many scalar per-query values rc_output.values holds (c_library.py checks it at load) */
int64_t rc_n_values(void) { return RC_N_VALUES; }

/* CPU features used when present: bit 0 popcnt, bit 1 fma, bit 3 avx2, bit 4 avx512 (RC_FEATURE_*;
 * bits 2 and 5, the float prefix path and threshold pass, are always there).  rc_set_features(mask) limits
 * them to mask (tests compare the generic and the accelerated code paths); returns the
 * features this CPU has. */
static int64_t rc_feature_mask = RC_FEATURE_ALL;

int64_t rc_set_features(int64_t mask)
{
    int64_t have = 0;
    rc_feature_mask = mask;
#if defined(RC_HAVE_POPCNT_DISPATCH) || defined(RC_HAVE_FMA_DISPATCH)
    __builtin_cpu_init();
#endif
#ifdef RC_HAVE_POPCNT_DISPATCH
    if (__builtin_cpu_supports("popcnt")) have |= RC_FEATURE_POPCNT;
#endif
#ifdef RC_HAVE_FMA_DISPATCH
    if (__builtin_cpu_supports("fma")) have |= RC_FEATURE_FMA;
#endif
#ifdef RC_HAVE_AVX2_DISPATCH
    if (__builtin_cpu_supports("avx2")) have |= RC_FEATURE_AVX2;
#endif
#ifdef RC_HAVE_AVX512_DISPATCH
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("bmi2"))
        have |= RC_FEATURE_AVX512;
#endif
    return have | RC_FEATURE_PREFIX | RC_FEATURE_THRESH;  /* not CPU features: always there */
}

/* the default thread count: OpenMP's (OMP_NUM_THREADS where set), else the online CPUs */
int64_t rc_max_threads(void)
{
#ifdef _OPENMP
    return (int64_t)omp_get_max_threads();
#else
    return rc_cpu_count();
#endif
}

static int check_args(const rc_input *in, const rc_options *o, const rc_output *out)
{
    int v;
    if (!in || !o || !out) return -1;
    if (in->n_queries < 0 || in->n_gallery < 0 || o->max_rank < 0) return -1;
    if (o->ties < T_STABLE || o->ties > T_GROUPED) return -1;
    if (o->ap_rule != AP_PS && o->ap_rule != AP_TRAP) return -1;
    if (o->ap_at_k < K_HITS || o->ap_at_k > K_DCMH || o->k == 0) return -1;
    if (o->has_radius && !(o->radius >= 0.0)) return -1;
    if (o->gain != G_LINEAR && o->gain != G_EXPONENTIAL) return -1;
    if (o->recall != RECALL_FRACTION && o->recall != RECALL_HIT) return -1;
    for (v = 0; v < RC_N_VALUES; v++)
        if (!out->values[v]) return -1;
    if (!out->n_relevant || !out->status || !out->err_a || !out->err_b || (o->max_rank > 0 && !out->cmc))
        return -1;
    /* DCG reads d(r) for ranks r <= N: the table must hold them */
    if (in->n_discounts < in->n_gallery || (in->n_gallery > 0 && !in->discounts)) return -1;
    if (in->grades && in->rel_kind != REL_MATRIX) return -1;
    if (o->has_radius && (!out->precision_at_radius || !out->recall_at_radius)) return -1;
    if (in->dist_kind == D_CODES) {
        /* the pass's uint32 counters and the counting sort's 32-bit counts: N < 2^32 */
        if (!in->query_codes || !in->db_codes || in->code_words < 1 || in->n_bits < 1 ||
            in->n_bits > RC_CODE_WORD_BITS * in->code_words || in->n_gallery > (int64_t)UINT32_MAX)
            return -1;
    } else if (in->dist_kind == D_F32 || in->dist_kind == D_F64) {
        if (!in->distances) return -1;
    } else {
        return -1;
    }
    if (in->rel_kind == REL_MATRIX) {
        if (!in->relevance) return -1;
    } else if (in->rel_kind == REL_IDS) {
        if (!in->query_ids || !in->db_ids) return -1;
    } else if (in->rel_kind == REL_MULTI) {
        if (!in->query_label_bits || !in->db_label_bits || in->label_words < 1) return -1;
    } else {
        return -1;
    }
    /* the id index: the float path's relevant items, camera junk's same-id items */
    if (in->rel_kind == REL_IDS && (in->dist_kind != D_CODES || in->query_cams) &&
        (!in->db_order || !in->id_start || !in->id_stop))
        return -1;
    if (in->query_cams && (!in->db_cams || in->rel_kind != REL_IDS)) return -1;
    return 0;
}

/* ---- the loop over queries (rc_threads.c runs it) ------------------------------------------ */
/* flags a query returns to rc_run_queries */
#define RC_FLAG_STATUS 1  /* a non-zero out->status */
#define RC_FLAG_NOMEM 2   /* ... and it is Q_NOMEM (a workspace that could not grow or be made) */

typedef struct {
    const rc_input *in;
    const rc_options *o;
    rc_output *out;
    const dd *Hh;
    int codes_features, use_prefix, use_thresh;  /* RC_FEATURE_POPCNT / _AVX2 / _AVX512 bits for the codes pass */
} eval_ctx;

static void *eval_thread_init(void *arg)
{
    const eval_ctx *c = (const eval_ctx *)arg;
    workspace *w = (workspace *)malloc(sizeof(workspace));
    if (!w) return NULL;
    if (ws_alloc(w, c->in)) {
        ws_free(w);
        free(w);
        return NULL;
    }
    w->prefix = c->use_prefix;
    w->thresh = c->use_thresh;
    return w;
}

static void eval_thread_fini(void *state)
{
    ws_free((workspace *)state);
    free(state);
}

static int eval_query(void *arg, void *state, int64_t q)
{
    const eval_ctx *c = (const eval_ctx *)arg;
    rc_output *out = c->out;
    qres res;
    int v;
    out->status[q] = Q_OK;
    out->err_a[q] = out->err_b[q] = 0;
    /* a value no kernel sets on some path is 0, never stack garbage */
    memset(res.v, 0, sizeof(res.v));
    res.cmc = out->cmc + q * c->o->max_rank;
    if (c->in->dist_kind == D_CODES) rc_query_codes(c->in, c->o, c->Hh, q, (workspace *)state, &res, out, c->codes_features);
    else rc_query_float(c->in, c->o, c->Hh, q, (workspace *)state, &res, out);
    if (out->status[q] != Q_OK) return RC_FLAG_STATUS | (out->status[q] == Q_NOMEM ? RC_FLAG_NOMEM : 0);
    for (v = 0; v < RC_N_VALUES; v++) out->values[v][q] = res.v[v];
    return 0;
}

static int eval_no_memory(void *arg, int64_t q)
{
    ((eval_ctx *)arg)->out->status[q] = Q_NOMEM;
    return RC_FLAG_STATUS | RC_FLAG_NOMEM;
}

/* queries per chunk: about RC_CHUNK_ITEMS pairs, and RC_CHUNKS_PER_THREAD chunks per thread */
static int64_t chunk_queries(int64_t Q, int64_t N, int64_t threads)
{
    int64_t chunk = RC_CHUNK_ITEMS / max64(N, 1) + 1;
    return max64(1, min64(chunk, Q / (RC_CHUNKS_PER_THREAD * max64(threads, 1))));
}

/* Evaluate queries 0 .. n_queries-1.  Returns RC_OK, RC_ERR_QUERY (see out->status: the
 * caller raises for the first query with a non-zero status), RC_ERR_NOMEM or RC_ERR_ARGS.
 * num_threads <= 0: rc_max_threads().  Results do not depend on the thread count. */
int64_t rc_evaluate(const rc_input *in, const rc_options *o, rc_output *out, int64_t num_threads)
{
    const int64_t Q = in ? in->n_queries : 0, N = in ? in->n_gallery : 0;
    dd *Hh = NULL;
    eval_ctx ctx;
    rc_query_loop loop;
    int flags;
    if (check_args(in, o, out)) return RC_ERR_ARGS;
    if (Q == 0) return RC_OK;
    if (o->ties == T_EXPECTED) {  /* harmonic numbers H_0 .. H_{N+1} */
        int64_t j;
        Hh = (dd *)malloc((size_t)(N + 2) * sizeof(dd));
        if (!Hh) return RC_ERR_NOMEM;
        Hh[0] = DD_ZERO;
        for (j = 1; j <= N + 1; j++) Hh[j] = dd_add(Hh[j - 1], dd_ratio(1.0, (double)j));
    }
    ctx.in = in;
    ctx.o = o;
    ctx.out = out;
    ctx.Hh = Hh;
    {
        int64_t have = rc_set_features(rc_feature_mask) & rc_feature_mask;
        ctx.codes_features = (int)(have & (RC_FEATURE_POPCNT | RC_FEATURE_AVX2 | RC_FEATURE_AVX512));
        rc_use_fma = (int)((have & RC_FEATURE_FMA) != 0);
        rc_use_avx2 = (int)((have & RC_FEATURE_AVX2) != 0);
        rc_use_avx512 = (int)((have & RC_FEATURE_AVX512) != 0);
        ctx.use_prefix = (int)((have & RC_FEATURE_PREFIX) != 0);
        ctx.use_thresh = (int)((have & RC_FEATURE_THRESH) != 0);
    }
    if (num_threads <= 0) num_threads = rc_max_threads();
    loop.ctx = &ctx;
    loop.thread_init = eval_thread_init;
    loop.thread_fini = eval_thread_fini;
    loop.query = eval_query;
    loop.no_memory = eval_no_memory;
    flags = rc_run_queries(&loop, Q, chunk_queries(Q, N, num_threads), num_threads);
    free(Hh);
    if (flags < 0 || (flags & RC_FLAG_NOMEM)) return RC_ERR_NOMEM;
    return (flags & RC_FLAG_STATUS) ? RC_ERR_QUERY : RC_OK;
}
