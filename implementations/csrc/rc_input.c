/* rc_input.c -- the junk items of one query, from whichever junk inputs were given. */
#include "rc_core.h"

int rc_has_junk(const rc_input *in)
{
    return in->junk != NULL || in->query_cams != NULL || in->gallery_junk != NULL;
}

/* ---- junk of one query: jk[j] = 1 for junk items; returns how many ------------------------ */
int64_t rc_build_junk(const rc_input *in, int64_t q, uint8_t *jk)
{
    const int64_t N = in->n_gallery;
    int64_t j;
    if (in->gallery_junk && in->junk) {
        const uint8_t *gj = in->gallery_junk, *row = in->junk + q * N;
        for (j = 0; j < N; j++) jk[j] = (uint8_t)(gj[j] | row[j]);
    } else if (in->gallery_junk) {
        memcpy(jk, in->gallery_junk, (size_t)N);
    } else if (in->junk) {
        memcpy(jk, in->junk + q * N, (size_t)N);
    } else {
        memset(jk, 0, (size_t)N);
    }
    if (in->query_cams) {  /* ReID: same id (the query's id slice) and same camera */
        const int64_t cam = in->query_cams[q], *dbc = in->db_cams, *ord = in->db_order;
        int64_t t;
        for (t = in->id_start[q]; t < in->id_stop[q]; t++)
            if (dbc[ord[t]] == cam) jk[ord[t]] = 1;
    }
    return rc_count_bytes(jk, N);
}

/* the number of 1 bytes in p[0 .. n), a mask of 0/1 bytes: eight at a time, each word's bytes
 * summed by one multiplication (a byte-at-a-time loop cost as much as the rest of a ReID query) */
int64_t rc_count_bytes(const uint8_t *p, int64_t n)
{
    int64_t j, total = 0;
    for (j = 0; j + 8 <= n; j += 8) {
        uint64_t word;
        memcpy(&word, p + j, sizeof(word));
        total += (int64_t)((word * UINT64_C(0x0101010101010101)) >> 56);  /* at most 8: no carry out */
    }
    for (; j < n; j++) total += p[j];
    return total;
}
