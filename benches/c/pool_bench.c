/* Pool allocation through the C ABI vs the CUDA driver's allocators, side
 * by side in one run on one GPU: gc_pool_alloc + gc_pool_free of a cached
 * block, cuMemAllocAsync + cuMemFreeAsync (the stream-ordered pool), and
 * cuMemAlloc + cuMemFree. Median nanoseconds per pair over many batches.
 * Then thread scaling: 1, 2, 4, 8 and 16 threads, each with its own pool,
 * all timing 4 KiB pairs at once; ns per pair per thread should stay flat
 * (pools never contend). Prints tables and writes JSON to
 * $OUT/pool_bench.json (or ./): one row per size ("bytes", "gc_pool_ns",
 * ...) and one per thread count ("threads", "gc_pool_ns": the mean over
 * the threads of each one's median, "gc_pool_ns_max": the slowest one's).
 *
 * libcuda is opened with dlopen, so this builds without the CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "graphcore.h"

typedef int (*alloc_async_t)(unsigned long long *, size_t, void *);
typedef int (*free_async_t)(unsigned long long, void *);
typedef int (*alloc_t)(unsigned long long *, size_t);
typedef int (*free_t)(unsigned long long);
typedef int (*sync_t)(void *);

#define BATCH 1000
#define ROUNDS 101

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v) {
    qsort(v, ROUNDS, sizeof *v, cmp);
    return v[ROUNDS / 2];
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "pool_bench: %s not found in libcuda\n", name);
        exit(1);
    }
    return p;
}

#define MAX_THREADS 16

#define TRY(call)                                                                    \
    do {                                                                             \
        gc_status st_ = (call);                                                      \
        if (st_ != GC_SUCCESS) {                                                     \
            fprintf(stderr, "%s: %s\n", #call, gc_last_error());                     \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* One thread of the scaling run: its own pool, timed between barriers. */
struct worker {
    gc_pool *pool;
    pthread_barrier_t *start;
    double ns[ROUNDS];
    double median_ns;
};

static void *scaling_worker(void *arg) {
    struct worker *w = arg;
    void *p;
    TRY(gc_pool_alloc(w->pool, 4096, &p)); /* grows the pool: not timed */
    TRY(gc_pool_free(w->pool, p));
    pthread_barrier_wait(w->start);
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            gc_pool_alloc(w->pool, 4096, &p);
            gc_pool_free(w->pool, p);
        }
        w->ns[r] = (now_ns() - t0) / BATCH;
    }
    w->median_ns = median(w->ns);
    return NULL;
}

/* Runs `threads` workers on pools of their own; returns the mean of their
 * medians and stores the slowest one's in *max. */
static double scaling(gc_context *ctx, int threads, double *max) {
    static struct worker w[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        TRY(gc_pool_create(ctx, NULL, &w[i].pool));
        w[i].start = &start;
    }
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], NULL, scaling_worker, &w[i]) != 0) {
            fprintf(stderr, "pool_bench: pthread_create failed\n");
            exit(1);
        }
    }
    double sum = 0;
    *max = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sum += w[i].median_ns;
        if (w[i].median_ns > *max) *max = w[i].median_ns;
        TRY(gc_pool_destroy(w[i].pool));
    }
    pthread_barrier_destroy(&start);
    return sum / threads;
}

int main(void) {
    gc_context *ctx;
    gc_stream *stream;
    gc_pool *pool;
    TRY(gc_context_create(0, &ctx));
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_pool_create(ctx, NULL, &pool));
    void *raw_stream;
    TRY(gc_stream_raw(stream, &raw_stream));
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) {
        fprintf(stderr, "pool_bench: no libcuda.so.1\n");
        return 1;
    }
    alloc_async_t alloc_async;
    free_async_t free_async;
    alloc_t alloc;
    free_t mfree;
    sync_t sync;
    /* POSIX's way to turn dlsym's result into a function pointer. */
    *(void **)&alloc_async = sym(cuda, "cuMemAllocAsync");
    *(void **)&free_async = sym(cuda, "cuMemFreeAsync");
    *(void **)&alloc = sym(cuda, "cuMemAlloc_v2");
    *(void **)&mfree = sym(cuda, "cuMemFree_v2");
    *(void **)&sync = sym(cuda, "cuStreamSynchronize");

    size_t sizes[] = {4096, 1 << 20};
    static double pool_ns[ROUNDS], async_ns[ROUNDS], plain_ns[ROUNDS];
    FILE *json;
    char path[4096];
    const char *out = getenv("OUT");
    snprintf(path, sizeof path, "%s/pool_bench.json", out ? out : ".");
    json = fopen(path, "w");
    if (json) fprintf(json, "[\n");
    printf("%10s %14s %18s %14s %12s %12s\n", "bytes", "gc_pool ns", "cuMemAllocAsync ns",
           "cuMemAlloc ns", "vs async", "vs plain");
    for (int s = 0; s < 2; s++) {
        size_t bytes = sizes[s];
        void *p;
        unsigned long long d;
        /* Warm up every path (the first allocation grows each pool). */
        TRY(gc_pool_alloc(pool, bytes, &p));
        TRY(gc_pool_free(pool, p));
        alloc_async(&d, bytes, raw_stream);
        free_async(d, raw_stream);
        sync(raw_stream);
        for (int r = 0; r < ROUNDS; r++) {
            double t0 = now_ns();
            for (int i = 0; i < BATCH; i++) {
                gc_pool_alloc(pool, bytes, &p);
                gc_pool_free(pool, p);
            }
            pool_ns[r] = (now_ns() - t0) / BATCH;
            t0 = now_ns();
            for (int i = 0; i < BATCH; i++) {
                alloc_async(&d, bytes, raw_stream);
                free_async(d, raw_stream);
            }
            async_ns[r] = (now_ns() - t0) / BATCH;
            sync(raw_stream);
            t0 = now_ns();
            for (int i = 0; i < BATCH / 10; i++) {
                alloc(&d, bytes);
                mfree(d);
            }
            plain_ns[r] = (now_ns() - t0) / (BATCH / 10);
        }
        double a = median(pool_ns), b = median(async_ns), c = median(plain_ns);
        printf("%10zu %14.1f %18.1f %14.1f %11.1fx %11.1fx\n", bytes, a, b, c, b / a, c / a);
        if (json)
            fprintf(json,
                    "  {\"bytes\": %zu, \"gc_pool_ns\": %.1f, \"cuMemAllocAsync_ns\": %.1f, "
                    "\"cuMemAlloc_ns\": %.1f}%s\n",
                    bytes, a, b, c, ",");
    }
    printf("\nthread scaling: 4096-byte pairs, one pool per thread, all threads at once\n");
    printf("%8s %22s %22s %12s\n", "threads", "ns/pair/thread (mean)", "ns/pair/thread (max)",
           "vs 1 thread");
    int counts[] = {1, 2, 4, 8, MAX_THREADS};
    double one = 0;
    for (int k = 0; k < 5; k++) {
        double max, mean = scaling(ctx, counts[k], &max);
        if (k == 0) one = mean;
        printf("%8d %22.1f %22.1f %11.2fx\n", counts[k], mean, max, mean / one);
        if (json)
            fprintf(json, "  {\"threads\": %d, \"bytes\": 4096, \"gc_pool_ns\": %.1f, \"gc_pool_ns_max\": %.1f}%s\n",
                    counts[k], mean, max, k < 4 ? "," : "");
    }
    if (json) {
        fprintf(json, "]\n");
        fclose(json);
    }
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
