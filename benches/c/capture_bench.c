/* Capture through the C ABI vs the CUDA driver, side by side in one run on
 * one GPU: gc_capture_begin + N gc_launch + gc_capture_end (+ destroy) vs
 * cuStreamBeginCapture + N cuLaunchKernel + cuStreamEndCapture (+ destroy),
 * for chains of N = 1, 10, 100, 1000 launches of one small built-in kernel
 * (gc_fill_f32 over 256 floats). Median microseconds per whole capture over
 * ROUNDS rounds, the two interleaved round by round. Prints a table and
 * writes JSON to $OUT/capture_bench.json (or ./).
 *
 * libcuda is opened with dlopen, so this builds without the CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "graphcore.h"

typedef int (*begin_capture_t)(void *, int);
typedef int (*end_capture_t)(void *, void **);
typedef int (*graph_destroy_t)(void *);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void *, void **, void **);

#define ROUNDS 41
/* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */
#define RAW_THREAD_LOCAL 1

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
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
        fprintf(stderr, "capture_bench: %s not found in libcuda\n", name);
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

#define TRY_CU(call)                                                                 \
    do {                                                                             \
        int r_ = (call);                                                             \
        if (r_ != 0) {                                                               \
            fprintf(stderr, "%s: CUresult %d\n", #call, r_);                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

int main(void) {
    gc_context *ctx;
    gc_stream *stream;
    gc_pool *pool;
    gc_function *fill;
    TRY(gc_context_create(0, &ctx));
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_kernel_builtin(ctx, "gc_fill_f32", &fill));
    void *raw_stream, *raw_fn, *y;
    TRY(gc_stream_raw(stream, &raw_stream));
    TRY(gc_function_raw(fill, &raw_fn));
    TRY(gc_pool_alloc(pool, 256 * sizeof(float), &y));
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) {
        fprintf(stderr, "capture_bench: no libcuda.so.1\n");
        return 1;
    }
    begin_capture_t begin;
    end_capture_t end;
    graph_destroy_t destroy;
    launch_t launch;
    *(void **)&begin = sym(cuda, "cuStreamBeginCapture_v2");
    *(void **)&end = sym(cuda, "cuStreamEndCapture");
    *(void **)&destroy = sym(cuda, "cuGraphDestroy");
    *(void **)&launch = sym(cuda, "cuLaunchKernel");

    uint64_t n = 256;
    float value = 1.0f;
    void *args[] = {&y, &n, &value};
    gc_dim3 grid = {1, 1, 1}, block = {256, 1, 1};
    int lengths[] = {1, 10, 100, 1000};
    static double gc_us[ROUNDS], raw_us[ROUNDS];
    char path[4096];
    const char *out = getenv("OUT");
    snprintf(path, sizeof path, "%s/capture_bench.json", out ? out : ".");
    FILE *json = fopen(path, "w");
    if (json) fprintf(json, "[\n");
    printf("capture of a chain of N launches (median of %d, us per capture)\n", ROUNDS);
    printf("%8s %14s %14s %8s\n", "N", "gc_capture", "raw capture", "ratio");
    for (int l = 0; l < 4; l++) {
        int len = lengths[l];
        for (int r = -3; r < ROUNDS; r++) { /* three warm-up rounds */
            double t0 = now_us();
            gc_graph *g;
            TRY(gc_capture_begin(stream, pool, GC_CAPTURE_THREAD_LOCAL));
            for (int i = 0; i < len; i++) TRY(gc_launch(fill, stream, grid, block, 0, args));
            TRY(gc_capture_end(stream, &g));
            TRY(gc_graph_destroy(g));
            double t1 = now_us();
            void *raw_graph;
            TRY_CU(begin(raw_stream, RAW_THREAD_LOCAL));
            for (int i = 0; i < len; i++)
                TRY_CU(launch(raw_fn, 1, 1, 1, 256, 1, 1, 0, raw_stream, args, NULL));
            TRY_CU(end(raw_stream, &raw_graph));
            TRY_CU(destroy(raw_graph));
            double t2 = now_us();
            if (r >= 0) {
                gc_us[r] = t1 - t0;
                raw_us[r] = t2 - t1;
            }
        }
        double a = median(gc_us), b = median(raw_us);
        printf("%8d %11.1f us %11.1f us %7.3fx\n", len, a, b, a / b);
        if (json)
            fprintf(json, "  {\"nodes\": %d, \"gc_capture_us\": %.2f, \"raw_capture_us\": %.2f}%s\n", len,
                    a, b, l == 3 ? "" : ",");
    }
    if (json) {
        fprintf(json, "]\n");
        fclose(json);
    }
    TRY(gc_pool_free(pool, y));
    TRY(gc_function_destroy(fill));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
