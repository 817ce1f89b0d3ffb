/* Helpers shared by the C examples: error checks, timing, a seeded PRNG
 * (splitmix64), PyTorch-style initialisation, and pool statistics. */
#ifndef GC_EXAMPLES_COMMON_H
#define GC_EXAMPLES_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "graphcore.h"

#define TRY(call)                                                                   \
    do {                                                                            \
        gc_status st_ = (call);                                                     \
        if (st_ != GC_SUCCESS) {                                                    \
            fprintf(stderr, "%s failed: %s\n  %s\n", #call, gc_status_name((int)st_), \
                    gc_last_error());                                               \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

/* Exits with graphcore's own message (exit code 2) when there is no usable
 * driver or device; otherwise makes the context, a stream and a pool. */
static inline void open_gpu(const char *program, gc_context **ctx, gc_stream **s, gc_pool **pool) {
    int devices = 0;
    gc_status st = gc_device_count(&devices);
    if (st != GC_SUCCESS) {
        fprintf(stderr, "%s: %s\n  %s\n", program, gc_status_name((int)st), gc_last_error());
        exit(2);
    }
    TRY(gc_context_create(0, ctx));
    TRY(gc_stream_create(*ctx, s));
    TRY(gc_pool_create(*ctx, NULL, pool));
}

/* A runner's statistics. */
static inline gc_runner_statistics runner_stats(gc_runner *r) {
    gc_runner_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TRY(gc_runner_stats(r, &st));
    return st;
}

static inline double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* splitmix64: a uniform float in [-1, 1). */
static inline float uniform(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* Fills v with uniform values in [-scale, scale): torch.nn.Linear's
 * initialisation when scale = 1/sqrt(fan_in). */
static inline void fill_uniform(float *v, size_t n, float scale, uint64_t *state) {
    for (size_t i = 0; i < n; i++) v[i] = uniform(state) * scale;
}

/* Reads n floats from f, or exits with a message. */
static inline void read_floats(FILE *f, float *v, size_t n, const char *what) {
    if (fread(v, sizeof(float), n, f) != n) {
        fprintf(stderr, "data file too short (reading %s)\n", what);
        exit(1);
    }
}

/* Prints a pool's statistics as the PyTorch notes print memory. */
static inline void print_memory(gc_pool *pool, const char *when) {
    gc_pool_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TRY(gc_pool_stats(pool, &st));
    printf("  %-24s memory_allocated %8.3f MB, memory_reserved %8.3f MB, "
           "max_allocated %8.3f MB, max_reserved %8.3f MB\n",
           when, st.allocated_bytes / 1048576.0, st.reserved_bytes / 1048576.0,
           st.peak_allocated_bytes / 1048576.0, st.peak_reserved_bytes / 1048576.0);
}

/* Writes n floats from device memory to host memory through pinned staging. */
static inline void download(gc_context *ctx, gc_stream *s, float *host, const float *dev, size_t n) {
    float *pinned;
    TRY(gc_host_alloc(ctx, n * sizeof(float), (void **)&pinned));
    TRY(gc_memcpy_async(s, pinned, dev, n * sizeof(float)));
    TRY(gc_stream_synchronize(s));
    memcpy(host, pinned, n * sizeof(float));
    TRY(gc_host_free(ctx, pinned));
}

/* Copies n floats from host memory to device memory. */
static inline void upload(gc_context *ctx, gc_stream *s, float *dev, const float *host, size_t n) {
    float *pinned;
    TRY(gc_host_alloc(ctx, n * sizeof(float), (void **)&pinned));
    memcpy(pinned, host, n * sizeof(float));
    TRY(gc_memcpy_async(s, dev, pinned, n * sizeof(float)));
    TRY(gc_stream_synchronize(s));
    TRY(gc_host_free(ctx, pinned));
}

#endif
