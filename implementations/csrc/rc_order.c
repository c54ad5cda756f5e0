/* rc_order.c -- ordering doubles without a comparison sort: the relevant items sorted by
 * distance (a stable LSD radix sort on rc_order_key), the k-th smallest of an array (a radix
 * selection, and a three-way quickselect that also counts the ties) (used by rc_float.c). */
#include "rc_core.h"

/* a[0..n) by distance, stably (equal distances keep their order); tmp holds n items.  A pass
 * of one byte for each byte in which some keys differ (one scan finds them: float32 values
 * have 29 zero low bits in a double, and distances of one scale share their top bits). */
void rc_sort_by_distance(relitem *a, relitem *tmp, int64_t n)
{
    int64_t cnt[256], i, pass;
    uint64_t differ = 0, first;
    relitem *src = a, *dst = tmp;
    if (n <= RC_SMALL_RUN) {  /* insertion sort */
        for (i = 1; i < n; i++) {
            const relitem v = a[i];
            int64_t j = i;
            for (; j > 0 && a[j - 1].d > v.d; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    first = rc_order_key(a[0].d);
    for (i = 1; i < n; i++) differ |= rc_order_key(a[i].d) ^ first;
    for (pass = 0; pass < 8; pass++) {
        const int shift = 8 * (int)pass;
        int64_t b, sum = 0;
        if (!((differ >> shift) & 0xff)) continue;  /* one byte value: nothing to order */
        memset(cnt, 0, sizeof(cnt));
        for (i = 0; i < n; i++) cnt[(rc_order_key(src[i].d) >> shift) & 0xff]++;
        for (b = 0; b < 256; b++) {
            const int64_t c = cnt[b];
            cnt[b] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) dst[cnt[(rc_order_key(src[i].d) >> shift) & 0xff]++] = src[i];
        { relitem *t = src; src = dst; dst = t; }
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof(relitem));
}

/* the k-th smallest (1-based) of a[0 .. n) (permuted): a radix selection on rc_order_key(),
 * 2^RC_SELECT_BITS buckets over the keys' range per round (2^RC_SELECT_BITS_FEW for fewer
 * than RC_SELECT_FEW values, where clearing and scanning 2,048 counters would cost more than
 * the values), so the loops have no data-dependent branch (a quickselect's comparisons are
 * coin flips for the branch predictor) */
#define RC_SELECT_BITS 11
#define RC_SELECT_BITS_FEW 8
#define RC_SELECT_FEW 8192
double rc_kth_smallest(double *a, int64_t n, int64_t k)
{
    int64_t cnt[1 << RC_SELECT_BITS];
    for (;;) {
        const int bits = n < RC_SELECT_FEW ? RC_SELECT_BITS_FEW : RC_SELECT_BITS;
        uint64_t lo = UINT64_MAX, hi = 0, span;
        int64_t i, b, m, shift = 0;
        for (i = 0; i < n; i++) {
            const uint64_t key = rc_order_key(a[i]);
            lo = key < lo ? key : lo;
            hi = key > hi ? key : hi;
        }
        if (lo == hi) return a[0];  /* all equal (as distances) */
        for (span = (hi - lo) >> bits; span; span >>= 1) shift++;
        memset(cnt, 0, sizeof(int64_t) << bits);
        for (i = 0; i < n; i++) cnt[(rc_order_key(a[i]) - lo) >> shift]++;
        for (b = 0; k > cnt[b]; b++) k -= cnt[b];
        for (i = m = 0; i < n; i++) {  /* keep bucket b's values */
            const double x = a[i];
            a[m] = x;
            m += (int64_t)((rc_order_key(x) - lo) >> shift) == b;
        }
        n = m;
    }
}

/* Three-way quickselect: the k-th smallest (1-based) of a[0..n-1] (permuted); returns how
 * many values are below it and equal to it.  Values outside the active range are strictly
 * below or above every value inside it, so the counts are those of the whole array. */
void rc_kth_counts(double *a, int64_t n, int64_t k, int64_t *lt, int64_t *eq)
{
    int64_t lo = 0, hi = n;
    const int64_t target = k - 1;
    for (;;) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1], p, tmp;
        int64_t i = lo, l = lo, g = hi;
        p = (x < y) ? ((y < z) ? y : ((x < z) ? z : x)) : ((x < z) ? x : ((y < z) ? z : y));
        while (i < g) {
            if (a[i] < p) {
                tmp = a[i]; a[i] = a[l]; a[l] = tmp;
                i++; l++;
            } else if (a[i] > p) {
                g--;
                tmp = a[i]; a[i] = a[g]; a[g] = tmp;
            } else {
                i++;
            }
        }
        if (target < l) {
            hi = l;
        } else if (target >= g) {
            lo = g;
        } else {
            *lt = l;
            *eq = g - l;
            return;
        }
    }
}
