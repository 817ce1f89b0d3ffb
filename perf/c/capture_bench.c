/* Capture through the C ABI vs the CUDA driver, side by side in one run on
 * one GPU: gc_capture_begin + N gc_launch + gc_capture_end (+ destroy) vs
 * cuStreamBeginCapture + N cuLaunchKernel + cuStreamEndCapture (+ destroy),
 * for chains of N = 1, 10, 100, 1000 launches of one small built-in kernel
 * (gc_fill_f32 over 256 floats). Median microseconds per whole capture over
 * ROUNDS rounds, the two interleaved round by round. Prints a table and
 * writes JSON to $OUT/capture_bench.json (or ./).
 *
 * libcuda is opened with dlopen (bench.h), so this builds without the CUDA
 * toolkit. */
#include "bench.h"

#define ROUNDS 41

int main(void) {
    gc_context *ctx = bench_start("capture_bench");
    gc_stream *stream;
    gc_pool *pool;
    gc_function *fill;
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_kernel_builtin(ctx, "gc_fill_f32", &fill));
    CUstream raw_stream;
    CUfunction raw_fn;
    void *y;
    TRY(gc_stream_raw(stream, (void **)&raw_stream));
    TRY(gc_function_raw(fill, (void **)&raw_fn));
    TRY(gc_pool_alloc(pool, 256 * sizeof(float), &y));

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
            double t0 = bench_now_ns() / 1e3;
            gc_graph *g;
            TRY(gc_capture_begin(stream, pool, GC_CAPTURE_THREAD_LOCAL));
            for (int i = 0; i < len; i++) TRY(gc_launch(fill, stream, grid, block, 0, args));
            TRY(gc_capture_end(stream, &g));
            TRY(gc_graph_destroy(g));
            double t1 = bench_now_ns() / 1e3;
            CUgraph raw_graph;
            CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
            for (int i = 0; i < len; i++)
                CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 256, 1, 1, 0, raw_stream, args, NULL));
            CU(cu.StreamEndCapture(raw_stream, &raw_graph));
            CU(cu.GraphDestroy(raw_graph));
            double t2 = bench_now_ns() / 1e3;
            if (r >= 0) {
                gc_us[r] = t1 - t0;
                raw_us[r] = t2 - t1;
            }
        }
        double a = bench_median(gc_us, ROUNDS), b = bench_median(raw_us, ROUNDS);
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
