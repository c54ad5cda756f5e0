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
    int64_t j, n = 0;
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
    for (j = 0; j < N; j++) n += jk[j];  /* the masks hold 0/1 bytes */
    return n;
}
