/* rc_float_gaps.c -- the float path's bookkeeping around the sorted relevant distances: the
 * bucket table that gives an item its gap without a search, the placing pass's counters, the
 * concrete tie policies, and the arrays sized by the number of relevant items. */
#include "rc_float.h"

/* the number of buckets for G relevant items among N: about RC_BUCKETS_PER_RELEVANT per
 * relevant item (a power of two), at most RC_BUCKETS_MAX and about N */
int64_t rc_bucket_count(int64_t G, int64_t N)
{
    int64_t nb = 1;
    while (nb < RC_BUCKETS_PER_RELEVANT * G && nb < N && nb < RC_BUCKETS_MAX) nb <<= 1;
    return nb;
}

/* bucket map over rd[0 .. G-1] (sorted, G >= 1) into t[0 .. nb + 2]: t[b].first = relevant
 * distances in buckets below b; t[b].value = the one relevant distance in bucket b, +inf for
 * none (every distance is below it), NaN for several different ones.  One entry holds both,
 * so an item reads one cache line (two at a line's end) */
void rc_bucket_setup(const double *rd, int64_t G, int64_t nb, bucketent *t, bucketmap *m)
{
    const double range = rd[G - 1] - rd[0];
    int64_t i, b;
    m->lo = rd[0];
    m->hi = rd[G - 1];
    m->nb = nb;
    m->top = (double)(nb - 1);
    m->scale = range > 0 && range <= DBL_MAX ? (double)(nb - 1) / range : 0.0;
    if (!(m->scale <= DBL_MAX)) m->scale = 0.0;  /* a subnormal range: one bucket */
    for (b = 0; b < nb + 3; b++) t[b].first = 0;
    for (i = 0; i < G; i++) t[bucket_of(m, rd[i]) + 1].first++;
    for (b = 1; b < nb + 3; b++) t[b].first += t[b - 1].first;
    for (b = 0; b < nb + 2; b++) {
        const int64_t lo = t[b].first, hi = t[b + 1].first;
        t[b].value = lo == hi ? HUGE_VAL : rd[lo] == rd[hi - 1] ? rd[lo] : NAN;
    }
    t[nb + 2].value = HUGE_VAL;
}


void rc_fold_counts(uint32_t *cnt, int64_t nc, int64_t G, int64_t *before, int64_t *eq)
{
    const int64_t S = 2 * (G + 1);
    int64_t g, c;
    for (c = 0; c < nc; c++) {
        for (g = 0; g <= G; g++) {
            before[g] += cnt[c * S + 2 * g];
            eq[g] += cnt[c * S + 2 * g + 1];
        }
    }
    memset(cnt, 0, (size_t)(nc * S) * sizeof(uint32_t));
}

/* stable / reverse: the pass reached a relevant item of the run rel[lo .. hi); the tied items
 * seen since the run's previous relevant item stand between the two (in the policy's order).
 * counted: tied items counted elsewhere so far (the AVX2 pass's sides[], rc_float_place.c) */
void rc_tie_snapshot(int64_t lo, int64_t hi, int64_t ties, const int64_t *eq, const uint32_t *cnt, int64_t nc,
                     int64_t G, int64_t counted, int64_t *seen, int64_t *last, int64_t *before)
{
    int64_t now = eq[lo] + counted, c2;
    const int64_t c = seen[lo]++;  /* relevant items of the run before this one, by index */
    for (c2 = 0; c2 < nc; c2++) now += cnt[c2 * 2 * (G + 1) + 2 * lo + 1];
    before[ties == T_STABLE ? lo + c : hi - c] += now - last[lo];
    last[lo] = now;
}

/* the concrete policies: the items tied with each run (eq[run start]) into before[]:
 * pessimistic before the run, optimistic after it, stable/reverse those not yet placed by
 * tie_snapshot after (stable) or before (reverse) every relevant item of the run */
void rc_ties_to_before(int64_t ties, const double *rd, int64_t G, const int64_t *eq, const int64_t *last,
                       int64_t *before)
{
    int64_t lo = 0, hi;
    for (; lo < G; lo = hi) {
        for (hi = lo + 1; hi < G && rd[hi] == rd[lo]; hi++) continue;
        if (ties == T_PESSIMISTIC) before[lo] += eq[lo];
        else if (ties == T_OPTIMISTIC) before[hi] += eq[lo];
        else before[ties == T_STABLE ? hi : lo] += eq[lo] - last[lo];
    }
}



/* room for G relevant items in every G-sized array of the float path (0, or -1: no memory) */
int rc_grow_relevant(workspace *w, int64_t G, int graded)
{
    const size_t n = (size_t)G + 1;
    if (G + 1 <= w->g_cap) return 0;
    /* one capacity for all of them: each is resized to n elements (realloc keeps the old one
     * on failure, and the capacity stays the old one until every array has grown) */
    if (resize((void **)&w->rd, n * sizeof(double)) || resize((void **)&w->ranks, n * sizeof(int64_t)) ||
        resize((void **)&w->groups, n * sizeof(group)) || resize((void **)&w->tie_seen, n * sizeof(int64_t)) ||
        resize((void **)&w->tie_last, n * sizeof(int64_t)) || resize((void **)&w->before, n * sizeof(int64_t)) ||
        resize((void **)&w->eq, n * sizeof(int64_t)) || resize((void **)&w->runs, 2 * n * sizeof(int64_t)) ||
        (graded && resize((void **)&w->gr, n)) ||
        resize((void **)&w->cnt, RC_INTERLEAVE * 2 * n * sizeof(uint32_t)))
        return -1;
    w->g_cap = G + 1;
    return 0;
}

/* The prefix path under a concrete tie policy: rel[0 .. G) (gallery order) split into those
 * at distance <= tau, kept in order in rel[0 .. Gp), and those beyond, after them; returns Gp
 * (G, nothing moved, when none is <= tau: every item is then placed as before).  *far: the
 * one ranked last, as the stable sort by distance would rank it (index ascending within a
 * distance; descending under "reverse"), and how many relevant items share its distance. */
int64_t rc_split_far(relitem *rel, int64_t G, double tau, int64_t ties, relitem *tmp, relfar *far)
{
    int64_t i, near = 0, nf = 0;
    for (i = 0; i < G; i++) {  /* no branch: which side an item falls is a coin flip */
        const relitem x = rel[i];
        const int64_t keep = x.d <= tau;
        rel[near] = x;  /* near <= i: never ahead of the read */
        tmp[nf] = x;
        near += keep;
        nf += 1 - keep;
    }
    if (near == 0 || near == G) {
        if (near == 0) memcpy(rel, tmp, (size_t)G * sizeof(relitem));
        return G;
    }
    far->d = tmp[0].d;
    far->j = tmp[0].j;
    far->m = 1;
    for (i = 1; i < nf; i++) {
        const double d = tmp[i].d;
        if (d > far->d || (d == far->d && ties != T_REVERSE)) {  /* reverse: the first of the ties */
            far->m = d > far->d ? 1 : far->m + 1;
            far->d = d;
            far->j = tmp[i].j;
        } else {
            far->m += d == far->d;
        }
    }
    memcpy(rel + near, tmp, (size_t)nf * sizeof(relitem));
    return near;
}
