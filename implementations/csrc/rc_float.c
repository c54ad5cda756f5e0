/* rc_float.c -- one query of float32 / float64 distances (or similarity scores, read negated):
 * the relevant distances sorted, every other item placed among them through a bucket table
 * (binary-searched only inside a bucket that holds a relevant distance); with a cut-off, only
 * the items up to the L-th smallest distance are placed (the prefix path), else, when they are
 * few, only the items up to the farthest relevant distance (the bounded pass); `grouped` with
 * a cut-off by a heap or quickselect (rc_float_select.c, with the filters; the bucket table,
 * counters and tie policies in rc_float_gaps.c). */
#include "rc_float.h"

/* ---- the prefix path: a cut-off whose metrics read only the first L ranks ---------------- */
/* With a cut-off k (any AP@k denominator but dcmh, which reads the first min(k, R) relevant
 * items wherever they are), every metric reads ranks up to L = max(k, R, max_rank) and, for
 * INP, the rank of the last relevant item: AP@k, P@k, R@k, nDCG@k, RR@k and the CMC read ranks
 * <= max(k, max_rank), R-precision and AP@R ranks <= R (spec §7).  So only the items at
 * distance <= tau, the L-th smallest distance, need to be placed among the relevant ones:
 * every item tied with a relevant item at distance <= tau is among them, so those relevant
 * items get their exact ranks (or groups).  A relevant item beyond tau gets a rank (or group
 * start) that counts only those items: too small, but past L, where no metric reads it; the
 * last relevant item's exact rank (or group) is then set from three counts over the row.
 * The items up to tau come from one streaming read of the row (rc_row_filter), which also
 * checks it for NaN/inf. */

/* whether the bounded pass would give up: more than 1/4 of the RC_FAR_SAMPLE items in the middle
 * of the row lie at distance <= dmax, where it gives up past 1/RC_PREFIX_DIVISOR of the row (a
 * guess that only saves time: the whole pass gives the same numbers).  One contiguous run: items
 * spread over the row would each miss the cache; the middle, not the start, so that a row
 * sorted by distance is not mistaken for one whose relevant items reach far */
static inline __attribute__((always_inline)) int
reaches_far(const float *D32, const double *D64, const int is32, const int neg, int64_t N, double dmax)
{
    const int64_t start = (N - RC_FAR_SAMPLE) / 2;
    int64_t s, near = 0;
    for (s = start; s < start + RC_FAR_SAMPLE; s++) near += row_dist(D32, D64, is32, neg, s) <= dmax;
    return near * 4 > RC_FAR_SAMPLE;
}

static inline __attribute__((always_inline)) void
query_float_body(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                 workspace *w, qres *res, rc_output *out, const float *D32, const double *D64,
                 const int is32, const int neg)
{
    const int64_t N = in->n_gallery, ties = o->ties;
    /* stable / reverse: tied items are placed among a run's relevant items by gallery index */
    const int snapshots = ties == T_STABLE || ties == T_REVERSE;
    uint8_t *skip = w->skip;
    relitem *rel;
    double *rd;
    int64_t *before, *eq;
    uint32_t *cnt;
    int64_t nc;  /* copies of the pass's counters: RC_INTERLEAVE while they fit in L1, else 1 */
    int64_t j, G = 0, Np, i, bad;
    const bucketent *tab;
    bucketmap bm;
    rankin rin;
    int64_t n_red = -1;  /* the prefix path: items cand[0 .. n_red) placed; -1: every item */
    int64_t Gp;          /* relevant items placed: rel[0 .. Gp); G but in the prefix path */
    relfar far = {0.0, 0, 0}; /* the prefix path: the relevant item ranked last */
    double tau = HUGE_VAL;    /* the prefix path: the L-th smallest distance */
    int64_t last[3] = {0, 0, 0}; /* the prefix path: last_counts() of the last relevant item */
    int last_beyond = 0; /* the prefix path: the last relevant item lies beyond tau */
    const int junk_in = rc_has_junk(in);

#define RC_D(jj) row_dist(D32, D64, is32, neg, (jj))
    if (is32) D32 += q * N; else D64 += q * N;
    /* NaN or inf: every row is checked here unless the front end did (in->finite), each
     * exactly once, before any value of the query is final.  Where a filter will read the row
     * through (a cut-off: the top-L filter; without one, the bounded pass), the check rides on
     * that read and the row is read once; should the filter give up, or a query end early (no
     * relevant item), the row is checked then.  Else the row is checked (or, when checked by
     * the front end, read into the cache at full bandwidth) up front where what follows reads
     * it at scattered places: many relevant items (from ids, a relevance row, labels).  A
     * checked row without a cut-off and with few relevant items (ReID, landmarks) goes
     * without: the bounded pass streams it itself (Market-1501: 45 -> 39 ms).  With ids, the
     * query's id slice says how many; a relevance row gives the relevant items' indices first
     * and their distances after that decision; labels are compared item by item. */
    const int filters = w->prefix && N >= RC_PREFIX_MIN_N && !o->has_radius && !(ties == T_GROUPED && o->k >= 0);
    const int top_l = filters && o->k >= 0 && o->ap_at_k != K_DCMH;
    /* row_read: the row has been read through (a check, or a read ahead); checked: for NaN/inf */
    int row_read = !top_l && (o->k >= 0 || in->rel_kind == REL_MULTI || (!in->finite && !filters) ||
                              (in->rel_kind == REL_IDS && (in->id_stop[q] - in->id_start[q]) * RC_FEW_RELEVANT > N));
    int checked = (int)in->finite;
    /* a relevance row under a concrete policy, no junk, grades or INP: the relevant items up
     * to tau are the placed items whose flag is set, the others rank past L (see rc_split_far),
     * so the row is only counted; should the prefix path not be taken, the items are read */
    int count_only = top_l && in->rel_kind == REL_MATRIX && !junk_in && ties != T_EXPECTED && ties != T_GROUPED &&
                     !in->grades && !RC_WANTS(o, RC_V_INP);
#define RC_CHECK_ROW()                                                                             \
    do {                                                                                           \
        bad = rc_first_nonfinite(is32 ? D32 : NULL, D64, N);                                       \
        if (bad >= 0) {                                                                            \
            out->status[q] = Q_NONFINITE;                                                          \
            out->err_a[q] = bad;                                                                   \
            return;                                                                                \
        }                                                                                          \
        checked = row_read = 1;                                                                    \
    } while (0)
    if (row_read) RC_CHECK_ROW();
    Np = N - (junk_in ? rc_build_junk(in, q, skip) : (memset(skip, 0, (size_t)N), 0));

    /* the relevant non-junk items, in gallery order (rel grows as they are found) */
#define RC_NOMEM() do { out->status[q] = Q_NOMEM; return; } while (0)
    if (rc_rel_room(w, 0)) RC_NOMEM();
    rel = w->rel;
    if (in->rel_kind == REL_IDS) {
        const int64_t *ord = in->db_order;
        int64_t t;
        if (rc_rel_room(w, in->id_stop[q] - in->id_start[q])) RC_NOMEM();
        rel = w->rel;
        for (t = in->id_start[q]; t < in->id_stop[q]; t++) {
            j = ord[t];
            if (!skip[j]) rel[G++].j = j;  /* the distances below */
        }
    } else if (in->rel_kind == REL_MATRIX) {
        /* a row of 0/1 flags, mostly 0 (rc_float_rel.c); only counted where the prefix path
         * finds the relevant items it needs among those it places (count_only) */
        if (count_only) G = rc_count_flags(in->relevance + q * N, N);
        else if (rc_relevant_from_flags(in->relevance + q * N, N, skip, w, &G)) RC_NOMEM();
        rel = w->rel;
    } else {
        relsrc src;
        relsrc_init(&src, in, q);
        for (j = 0; j < N; j++) {  /* branch-free filter: write always, advance if kept */
            if (G + 1 >= w->rel_cap) {
                if (rc_rel_room(w, G + 1)) RC_NOMEM();
                rel = w->rel;
            }
            rel[G].d = RC_D(j);
            rel[G].j = j;
            G += relsrc_get(&src, j) & !skip[j];
        }
    }
    /* read ahead, but not for the AVX2 pass (rc_float_place.c), which checks the row on its
     * own read: a row read twice costs more than the relevant distances' scattered reads */
    if (in->rel_kind == REL_MATRIX && !row_read && !top_l && G * RC_FEW_RELEVANT > N &&
        !rc_place_fast_ok(is32, N, Np, G))
        RC_CHECK_ROW();
    if (in->rel_kind != REL_MULTI && !top_l)
        for (i = 0; i < G; i++) rel[i].d = RC_D(rel[i].j);
    out->n_relevant[q] = G;
    Gp = G;
    if (o->has_radius) {
        const double r = o->radius;
        int64_t rad_n = 0, rad_r = 0;
        for (j = 0; j < N; j++) rad_n += !skip[j] && RC_D(j) <= r;
        for (i = 0; i < G; i++) rad_r += rel[i].d <= r;
        out->precision_at_radius[q] = rad_n ? (double)rad_r / (double)rad_n : 0.0;
        out->recall_at_radius[q] = G ? (double)rad_r / (double)G : 0.0;
    }
    if (ties == T_GROUPED && o->k >= 0 && o->k < Np) {
        int64_t lt, ne;
        if (rc_cutoff_group(D32, D64, is32, neg, N, skip, Np, o->k, w, &lt, &ne)) RC_NOMEM();
        if (lt < o->k && o->k < lt + ne) {
            out->status[q] = Q_GROUPED_K;
            out->err_a[q] = lt;
            out->err_b[q] = lt + ne;
            return;
        }
    }
    if (G == 0) {
        if (!checked) RC_CHECK_ROW();
        rc_metrics_zero(o, res);
        return;
    }
    /* the prefix path: the items at distance <= tau, the L-th smallest; L counts only the ranks
     * the wanted metrics read (R-precision and AP@R: up to R; the CMC: up to max_rank; the rest,
     * and H_k, which is always wanted: up to k).  Its filter reads the row first, so that the
     * relevant items' distances (top_l: read only now) come from the cache. */
    const int reads_r = RC_WANTS(o, RC_V_R_PRECISION) || RC_WANTS(o, RC_V_AP_AT_R);
    const int64_t L = max64(max64(o->k, reads_r ? G : 0), RC_WANTS(o, RC_WANT_CMC) ? o->max_rank : 0);
    int64_t n_top = -1;  /* the prefix path: the filter's items in w->cand; -1: not taken */
    if (w->prefix && o->k >= 0 && o->ap_at_k != K_DCMH && N >= RC_PREFIX_MIN_N && L * RC_PREFIX_DIVISOR <= Np) {
        const int64_t cap = RC_PREFIX_ROOM * L + RC_PREFIX_ROOM_EXTRA;
        /* w->sel: the filter's scratch (cap doubles), then each block's best value (floats) */
        const int64_t n_tops = N / RC_PREFIX_BLOCK / 2 + 1;
        if (grow((void **)&w->cand, &w->cand_cap, cap, sizeof(relitem)) ||
            grow((void **)&w->sel, &w->sel_cap, cap + n_tops, sizeof(double)))
            RC_NOMEM();
        n_top = rc_row_filter(D32, D64, is32, neg, N, HUGE_VAL, L, junk_in ? skip : NULL, w->cand, cap, w->sel,
                              (float *)(w->sel + cap), &bad);
        if (n_top >= 0) {  /* the row was read through, and checked */
            if (bad >= 0) RC_CHECK_ROW();
            checked = 1;
        }
    }
    if (in->rel_kind != REL_MULTI && top_l && !count_only)
        for (i = 0; i < G; i++) rel[i].d = RC_D(rel[i].j);
    if (n_top >= L) {  /* else not taken, or (-1) ties filled the filter's room: every item */
        int64_t t;
        for (t = 0; t < n_top; t++) w->sel[t] = w->cand[t].d;
        tau = rc_kth_smallest(w->sel, n_top, L);
        for (t = n_red = 0; t < n_top; t++) {  /* keep those at most tau, in order */
            const relitem c = w->cand[t];
            w->cand[n_red] = c;
            n_red += c.d <= tau;
        }
        /* the concrete policies place only the relevant items up to tau (rc_split_far): one
         * beyond it has a rank past L whatever the others' order, i + 1 + the items placed
         * ahead of it, exactly the rank the whole sort gives it */
        if (count_only) {  /* the placed items whose flag is set, in gallery order */
            const uint8_t *row = in->relevance + q * N;
            if (rc_rel_room(w, n_red)) RC_NOMEM();
            rel = w->rel;
            for (t = Gp = 0; t < n_red; t++) {
                rel[Gp] = w->cand[t];
                Gp += row[w->cand[t].j] != 0;
            }
        } else if (ties != T_EXPECTED && ties != T_GROUPED && !in->grades) {
            if (grow((void **)&w->rtmp, &w->rtmp_cap, G, sizeof(relitem))) RC_NOMEM();
            Gp = rc_split_far(rel, G, tau, ties, w->rtmp, &far);
        }
    }
    if (count_only && (n_top < L || Gp == 0)) {  /* every relevant item after all */
        G = 0;
        if (rc_relevant_from_flags(in->relevance + q * N, N, skip, w, &G)) RC_NOMEM();
        rel = w->rel;
        for (i = 0; i < G; i++) rel[i].d = RC_D(rel[i].j);
        Gp = G;
    }
    if (rc_grow_relevant(w, G, in->grades != NULL)) RC_NOMEM();
    rd = w->rd;
    before = w->before;
    eq = w->eq;
    cnt = w->cnt;
    for (i = 0; i < Gp; i++) skip[rel[i].j] = RC_SKIP_RELEVANT;
    /* relevant items by (distance, index): index descending under "reverse" (they were
     * gathered in index order; a stable sort by distance keeps it, or its reverse).  The sort
     * carries each item's place k in gallery order (in .j; the indices wait in ranks[], unused
     * until the end), so that the pass, which meets the relevant items in that order, finds
     * the run of the k-th in runs[2 k], runs[2 k + 1] without a search (stable / reverse:
     * the only policies that look a run up during the pass). */
    if (snapshots) {
        for (i = 0; i < Gp; i++) {
            w->ranks[i] = rel[i].j;
            rel[i].j = i;
        }
    }
    if (ties == T_REVERSE)
        for (i = 0; i < Gp / 2; i++) { relitem t = rel[i]; rel[i] = rel[Gp - 1 - i]; rel[Gp - 1 - i] = t; }
    if (Gp > 1) {
        if (grow((void **)&w->rtmp, &w->rtmp_cap, Gp, sizeof(relitem))) RC_NOMEM();
        rc_sort_by_distance(rel, w->rtmp, Gp);
    }
    if (snapshots) {
        int64_t lo = 0, hi;
        for (; lo < Gp; lo = hi) {
            for (hi = lo + 1; hi < Gp && rel[hi].d == rel[lo].d; hi++) continue;
            for (i = lo; i < hi; i++) {
                const int64_t k = rel[i].j;
                w->runs[2 * k] = lo;
                w->runs[2 * k + 1] = hi;
                rel[i].j = w->ranks[k];
            }
        }
    }
    for (i = 0; i < Gp; i++) rd[i] = rel[i].d;
    if (n_red >= 0) {
        /* INP reads the last relevant item's rank; without INP it stays too small */
        if (Gp == G) {  /* every relevant item placed: the last one is rel[G - 1] */
            far.d = rd[G - 1];
            far.j = rel[G - 1].j;
        }
        last_beyond = far.d > tau && RC_WANTS(o, RC_V_INP);
        if (last_beyond) rc_last_counts(D32, D64, is32, neg, N, far.d, far.j, junk_in ? skip : NULL, last);
    }
    if (w->prefix && n_red < 0 && N >= RC_PREFIX_MIN_N && !reaches_far(D32, D64, is32, neg, N, rd[Gp - 1])) {
        /* the bounded pass: an item farther than the farthest relevant item stands behind every
         * relevant item under every tie policy, so it changes no rank, group or metric (it
         * counts only in Np).  Only the items at distance <= rd[G - 1] are placed, when they
         * are at most 1/RC_PREFIX_DIVISOR of the row; the filter gives up as soon as they are
         * more, so a row whose relevant items reach far costs a fraction of a SIMD pass. */
        const int64_t cap = Np / RC_PREFIX_DIVISOR;
        int64_t n_c;
        if (grow((void **)&w->cand, &w->cand_cap, cap + 1, sizeof(relitem))) RC_NOMEM();
        n_c = rc_row_filter(D32, D64, is32, neg, N, rd[G - 1], 0, junk_in ? skip : NULL, w->cand, cap, NULL, NULL,
                            &bad);
        if (n_c >= 0) {  /* the row was read through, and checked */
            if (bad >= 0) RC_CHECK_ROW();
            checked = 1;
            n_red = n_c;
        }
    }
    /* every item of a float32 row, few of them skipped: the AVX2 pass (rc_float_place.c), which
     * checks the row for NaN / inf on its own read */
    const int fast = n_red < 0 && rc_place_fast_ok(is32, N, Np, Gp);
    /* few distinct relevant distances: the threshold pass (rc_float_thresh.c) instead, its
     * thresholds in bval[] and their counters in sides[] */
    const int thresh = fast && w->thresh && rc_thresh_runs(rd, Gp, RC_THRESH_MAX_RUNS) > 0;
    int64_t copies = 1, stride = 0;  /* the AVX2 pass's sides[] */
    rc_thresh th;                    /* the threshold pass's thresholds and counters */
    int64_t placed = 0;              /* the threshold pass: items counted */
    if (!fast && (!checked || (n_red < 0 && !row_read))) RC_CHECK_ROW();  /* unchecked, or to be read: read ahead */
    const int64_t nb = rc_bucket_count(Gp, n_red < 0 ? N : n_red);  /* no more buckets than items placed */
    if (grow((void **)&w->bucket, &w->bucket_cap, nb + 3, sizeof(bucketent))) RC_NOMEM();
    rc_bucket_setup(rd, Gp, nb, w->bucket, &bm);
    tab = w->bucket;
    if (thresh) {
        const int64_t room = RC_THRESH_MAX_RUNS + 4;  /* any K <= RC_THRESH_MAX_RUNS, padded */
        if (grow((void **)&w->sides, &w->sides_cap, 16 * room, sizeof(uint32_t)) ||
            grow((void **)&w->bval, &w->bval_cap, 8 * room, sizeof(float)))
            RC_NOMEM();
        rc_thresh_setup(rd, Gp, w->bval, w->sides, &th);
    } else if (fast) {
        copies = rc_side_copies(nb);
        stride = rc_side_stride(nb);
        if (grow((void **)&w->sides, &w->sides_cap, copies * stride, sizeof(uint32_t)) ||
            grow((void **)&w->bval, &w->bval_cap, nb + 3, sizeof(float)))
            RC_NOMEM();
        memset(w->sides, 0, (size_t)(copies * stride) * sizeof(uint32_t));
        rc_side_values(tab, nb, w->bval);
    }
    if (rc_rankin_init(&rin, w, in, o, G)) RC_NOMEM();
    if (in->grades) {  /* the grades in rank order; a tie run by grade under opt./pess. */
        const uint8_t *grades_row = in->grades + q * N;
        for (i = 0; i < Gp; i++) w->gr[i] = grades_row[rel[i].j];
        if (ties == T_OPTIMISTIC || ties == T_PESSIMISTIC) {
            int64_t lo = 0, hi;
            for (; lo < Gp; lo = hi) {
                for (hi = lo + 1; hi < Gp && rel[hi].d == rel[lo].d; hi++) continue;
                if (hi - lo > 1) rc_sort_grades(w->gr + lo, hi - lo, ties == T_OPTIMISTIC);
            }
        }
        rin.gr = w->gr;
    }
    /* before[g]: items in gap g (preceding relevant items g, g+1, ... but not g-1); counted
     * in RC_INTERLEAVE copies (by j mod 4) while G is small: most items then land in the same
     * few slots (often slot 2 G, past every relevant item), and one counter would serialise
     * them through memory */
    memset(before, 0, (size_t)(Gp + 1) * sizeof(int64_t));
    memset(eq, 0, (size_t)(Gp + 1) * sizeof(int64_t));
    nc = RC_INTERLEAVE * 2 * (Gp + 1) * (int64_t)sizeof(uint32_t) <= RC_INTERLEAVE_BYTES ? RC_INTERLEAVE : 1;
    memset(cnt, 0, (size_t)(nc * 2 * (Gp + 1)) * sizeof(uint32_t));
    if (snapshots) {
        memset(w->tie_seen, 0, (size_t)(Gp + 1) * sizeof(int64_t));
        memset(w->tie_last, 0, (size_t)(Gp + 1) * sizeof(int64_t));
    }
    /* One pass in gallery order.  An item below or above every relevant distance of its run
     * counts in before[]; an item tied with a run counts in eq[run start], whatever the tie
     * policy (no branch on the data: ties are common and unpredictable); the concrete
     * policies move eq[] into before[] afterwards.  stable/reverse need to know where a tied
     * item stands among the run's relevant items by gallery index: the pass meets the run's
     * relevant items in index order, so at each one the tied items seen since the previous
     * one (eq now minus eq then) go to the gap between the two. */
#define RC_PLACE(jj, dd_)                                                                          \
    do {                                                                                           \
        const int64_t j_ = (jj);                                                                   \
        const double d = (dd_);                                                                    \
        double v;                                                                                  \
        int64_t lo, hi, b, tie;                                                                    \
        if (skip[j_]) {                                                                            \
            if (skip[j_] == RC_SKIP_RELEVANT && snapshots) {                                       \
                int64_t rlo, rhi;                                                                  \
                if (n_red < 0) { /* every item: the relevant ones come in gallery order */         \
                    rlo = w->runs[2 * kk];                                                         \
                    rhi = w->runs[2 * kk + 1];                                                     \
                    kk++;                                                                          \
                } else {                                                                           \
                    rlo = run_of(&bm, tab, rd, rel, d, &rhi);                                      \
                }                                                                                  \
                rc_tie_snapshot(rlo, rhi, ties, eq, cnt, nc, Gp,                                   \
                                thresh ? rc_thresh_ties(&th, rd[rlo])                              \
                                : fast ? rc_side_ties(w->sides, copies, stride, &bm, rd[rlo]) : 0, \
                                w->tie_seen, w->tie_last, before);                                 \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        b = bucket_of(&bm, d);                                                                     \
        lo = tab[b].first;                                                                         \
        hi = tab[b + 1].first;                                                                     \
        v = tab[b].value;                                                                          \
        if (v != v) { /* several relevant distances share the bucket: search among them */        \
            lo += lower_bound_bf(rd + lo, hi - lo, d);                                             \
            tie = lo < hi && rd[lo] == d;                                                          \
            hi = lo;                                                                               \
        } else { /* one (v) or none (v = +inf): below v gap lo, above v gap hi */                  \
            tie = d == v;                                                                          \
        }                                                                                          \
        /* a tied item has d == v, so d > v is false: slot 2 lo + 1 */                          \
        cnt[(j_ & (nc - 1)) * 2 * (Gp + 1) + 2 * (d > v ? hi : lo) + tie]++;                    \
    } while (0)
    {
        const int64_t n_items = n_red < 0 ? N : n_red;
        int64_t kk = 0;  /* relevant items met so far (the whole pass) */
        const relitem *cand = w->cand;
        int64_t c0;
        for (c0 = 0; c0 < n_items; c0 += RC_COUNT_CHUNK) {
            const int64_t c1 = n_items - c0 > RC_COUNT_CHUNK ? c0 + RC_COUNT_CHUNK : n_items;
            if (fast) {
#ifdef RC_HAVE_AVX2_DISPATCH
                int nonfinite = 0;
                for (j = c0; j < c1;) {  /* eight a step; here a skipped item, or the short tail */
                    int64_t e;
                    if (thresh)
                        j = rc_thresh_avx2(D32, neg, skip, j, c1, &th, &placed, &nonfinite);
                    else
                        j = rc_place_avx2(D32, neg, skip, j, c1, &bm, tab, w->bval, rd, w->sides, copies, stride,
                                          cnt, nc, Gp, &nonfinite);
                    for (e = j + 8 <= c1 ? j + 1 : c1; j < e; j++) {
                        const double dj = RC_D(j);
                        nonfinite |= !(fabs(dj) <= DBL_MAX);
                        RC_PLACE(j, dj);
                    }
                }
                if (thresh) rc_fold_thresh(&th, rd, Gp, placed, before, eq);
                else rc_fold_sides(w->sides, copies, stride, tab, nb, before, eq);
                placed = 0;
                if (nonfinite && !checked) RC_CHECK_ROW();
#endif
            } else if (n_red < 0) {
                for (j = c0; j < c1; j++) RC_PLACE(j, RC_D(j));
            } else {
                for (i = c0; i < c1; i++) RC_PLACE(cand[i].j, cand[i].d);
            }
            rc_fold_counts(cnt, nc, Gp, before, eq);
        }
    }
#undef RC_PLACE
#undef RC_D
#undef RC_NOMEM
#undef RC_CHECK_ROW
    if (ties != T_EXPECTED && ties != T_GROUPED) rc_ties_to_before(ties, rd, Gp, eq, w->tie_last, before);
    if (ties == T_EXPECTED || ties == T_GROUPED) {
        int64_t acc = 0, eqacc = 0, t = 0, ng = 0, lo = 0, hi;
        group *g = w->groups;
        while (lo < G) {
            hi = lo + 1;
            while (hi < G && rel[hi].d == rel[lo].d) hi++;
            while (t <= lo) acc += before[t++];
            g[ng].c = lo + acc + eqacc;
            g[ng].m = hi - lo;
            g[ng].n = (hi - lo) + eq[lo];
            g[ng].h = lo;
            eqacc += eq[lo];
            ng++;
            lo = hi;
        }
        if (last_beyond) {  /* the last group, from the counts over the whole row */
            g[ng - 1].c = last[0];
            g[ng - 1].n = last[2];
        }
        if (ties == T_EXPECTED) rc_metrics_expected(g, ng, G, Np, o, &rin, Hh, res);
        else rc_metrics_grouped(g, ng, G, Np, o, &rin, res);
    } else {
        int64_t acc = 0;
        for (i = 0; i < Gp; i++) {
            acc += before[i];
            w->ranks[i] = i + 1 + acc;
        }
        acc += before[Gp];  /* the items placed after every relevant item placed */
        for (; i < G; i++) w->ranks[i] = i + 1 + acc;
        if (last_beyond) {  /* the last relevant item's rank, from the counts over the whole row */
            int64_t m = far.m;  /* relevant items of its run (0: count them here) */
            if (!m)
                for (m = 1; m < G && rd[G - 1 - m] == rd[G - 1]; m++) continue;
            w->ranks[G - 1] = ties == T_STABLE ? last[0] + last[1] + 1
                            : ties == T_REVERSE ? last[0] + (last[2] - last[1] - 1) + 1
                            : ties == T_PESSIMISTIC ? last[0] + last[2]
                            : last[0] + m;  /* optimistic: the run's relevant items come first */
        }
        rc_metrics_ranks(w->ranks, G, Np, o, &rin, res);
    }
}

void rc_query_float(const rc_input *in, const rc_options *o, const dd *Hh, int64_t q,
                    workspace *w, qres *res, rc_output *out)
{
    /* one copy of the body per input type and sign: the inner loops branch on neither */
    const float *D32 = (const float *)in->distances;
    const double *D64 = (const double *)in->distances;
    if (in->dist_kind == D_F32) {
        if (in->negated) query_float_body(in, o, Hh, q, w, res, out, D32, NULL, 1, 1);
        else query_float_body(in, o, Hh, q, w, res, out, D32, NULL, 1, 0);
    } else {
        if (in->negated) query_float_body(in, o, Hh, q, w, res, out, NULL, D64, 0, 1);
        else query_float_body(in, o, Hh, q, w, res, out, NULL, D64, 0, 0);
    }
}
