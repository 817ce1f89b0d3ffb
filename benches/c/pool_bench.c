/* Pool allocation through the C ABI vs the CUDA driver's allocators, side
 * by side in one run on one GPU: gc_pool_alloc + gc_pool_free of a cached
 * block, cuMemAllocAsync + cuMemFreeAsync (the stream-ordered pool), and
 * cuMemAlloc + cuMemFree. Median nanoseconds per pair over many batches.
 * Prints a table and writes JSON to $OUT/pool_bench.json (or ./).
 *
 * libcuda is opened with dlopen, so this builds without the CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
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

#define TRY(call)                                                                    \
    do {                                                                             \
        gc_status st_ = (call);                                                      \
        if (st_ != GC_SUCCESS) {                                                     \
            fprintf(stderr, "%s: %s\n", #call, gc_last_error());                     \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

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
                    bytes, a, b, c, s == 0 ? "," : "");
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
