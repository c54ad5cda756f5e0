/* rc_threads.c -- the loop over queries on several threads, with no wait for a thread that
 * has no work.
 *
 * Queries are handed out in chunks from one atomic counter, as threads become free, so a
 * thread slowed by another process on its core takes fewer chunks.  The caller's thread works
 * too and returns as soon as every query is done: it waits for a chunk a worker holds (at most
 * one per worker: that worker's share) but never for a worker that has not yet started or
 * has nothing left to do.  Such a worker may start after the call returned (on a busy machine
 * the scheduler can hold a new thread back for tens of milliseconds); it then finds the
 * counter past the end and leaves without reading the caller's data.  What it reads -- the
 * counter, the loop's functions -- lives in a job record freed by the last thread to leave.
 * Waiting is a condition variable, never a spin: a thread waiting on a busy machine takes no
 * CPU from the thread it waits for.
 *
 * Without POSIX threads the loop runs on the caller's thread. */
#include "rc_core.h"

#if defined(__unix__) || defined(__APPLE__)
#define RC_HAVE_PTHREADS 1
#include <pthread.h>
#include <unistd.h>
#endif

typedef struct {
    rc_query_loop loop;   /* a copy: the caller's may be gone when a late worker reads it */
    int64_t n, chunk;
    int64_t next;         /* first query of the next chunk (atomic) */
    int64_t done;         /* queries finished (under mu) */
    int flags;            /* OR of the queries' flags (under mu) */
    int refs;             /* threads that still hold the job (atomic) */
#ifdef RC_HAVE_PTHREADS
    pthread_mutex_t mu;
    pthread_cond_t all_done;
#endif
} rc_job;

static void job_release(rc_job *job)
{
    if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
#ifdef RC_HAVE_PTHREADS
    pthread_mutex_destroy(&job->mu);
    pthread_cond_destroy(&job->all_done);
#endif
    free(job);
}

/* claim chunks until none is left; the per-thread state is made on the first chunk claimed
 * (so a thread that claims none never reads the caller's data) */
static void job_work(rc_job *job)
{
    const rc_query_loop *loop = &job->loop;
    void *state = NULL;
    int no_state = 0;
    for (;;) {
        const int64_t start = __atomic_fetch_add(&job->next, job->chunk, __ATOMIC_RELAXED);
        int64_t q, stop;
        int flags = 0;
        if (start >= job->n) break;
        stop = min64(job->n, start + job->chunk);
        if (!state && !no_state) {
            state = loop->thread_init(loop->ctx);
            no_state = state == NULL;
        }
        for (q = start; q < stop; q++)
            flags |= state ? loop->query(loop->ctx, state, q) : loop->no_memory(loop->ctx, q);
#ifdef RC_HAVE_PTHREADS
        pthread_mutex_lock(&job->mu);
#endif
        job->flags |= flags;
        job->done += stop - start;
#ifdef RC_HAVE_PTHREADS
        if (job->done == job->n) pthread_cond_signal(&job->all_done);
        pthread_mutex_unlock(&job->mu);  /* the chunk's writes are published to the caller */
#endif
    }
    if (state) loop->thread_fini(state);
}

#ifdef RC_HAVE_PTHREADS
static void *job_worker(void *arg)
{
    rc_job *job = (rc_job *)arg;
    job_work(job);
    job_release(job);
    return NULL;
}
#endif

int64_t rc_cpu_count(void)
{
#if defined(RC_HAVE_PTHREADS) && defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int64_t)n : 1;
#else
    return 1;
#endif
}

int rc_run_queries(const rc_query_loop *loop, int64_t n, int64_t chunk, int64_t threads)
{
    rc_job *job;
    int flags;
    if (n <= 0) return 0;
    job = (rc_job *)malloc(sizeof(*job));
    if (!job) return -1;
    job->loop = *loop;
    job->n = n;
    job->chunk = chunk < 1 ? 1 : chunk;
    job->next = 0;
    job->done = 0;
    job->flags = 0;
    job->refs = 1;
#ifdef RC_HAVE_PTHREADS
    if (pthread_mutex_init(&job->mu, NULL)) {
        free(job);
        return -1;
    }
    if (pthread_cond_init(&job->all_done, NULL)) {
        pthread_mutex_destroy(&job->mu);
        free(job);
        return -1;
    }
    if (threads > n) threads = n;
    {
        pthread_attr_t attr;
        int64_t t;
        if (threads > 1 && pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            for (t = 1; t < threads; t++) {
                pthread_t id;
                __atomic_add_fetch(&job->refs, 1, __ATOMIC_RELAXED);
                if (pthread_create(&id, &attr, job_worker, job)) {  /* fewer threads, same work */
                    __atomic_sub_fetch(&job->refs, 1, __ATOMIC_RELAXED);
                    break;
                }
            }
            pthread_attr_destroy(&attr);
        }
    }
#else
    (void)threads;
#endif
    job_work(job);
#ifdef RC_HAVE_PTHREADS
    pthread_mutex_lock(&job->mu);
    while (job->done < job->n) pthread_cond_wait(&job->all_done, &job->mu);
    flags = job->flags;
    pthread_mutex_unlock(&job->mu);
#else
    flags = job->flags;
#endif
    job_release(job);
    return flags;
}
