/* The driver calls graphcore makes on top of the raw chain, priced alone:
 * graph_perf_scaling's capture and build of a chain of N empty kernels
 * (N = 1 ... 1000) in raw CUDA, against the same raw calls plus only the
 * extra driver calls graphcore's gc_capture_* / gc_launch and
 * gc_graph_add_kernel made or make (counted over the no-op driver):
 *   capture  "extra": a cuCtxGetCurrent before begin and before end, and
 *            cuGraphGetNodes for the node count after end (what a capture
 *            made until captures stopped binding a context and reading the
 *            count: since, it makes none); "extra + launch binds": also a
 *            cuCtxGetCurrent before each launch (what gc_launch made until
 *            launches stopped binding a context);
 *   build    "extra": a cuCtxGetCurrent before each node added.
 * Also the price of the two ways to ask a captured graph about its nodes:
 * its count (cuGraphGetNodes with NULL) and whether it has any (the same
 * call with room for one node), per call.
 * No graphcore call is timed: what this measures is the floor that these
 * calls alone put under graphcore's capture and build ratios. The sides
 * are interleaved round by round (which goes first rotates), medians of
 * all rounds. Prints the table; writes $OUT/driver_floor.json (or ./). */
#include "bench.h"

#define WARMUP 2
#define ROUNDS 51

static const int lengths[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
#define LENGTHS ((int)(sizeof lengths / sizeof lengths[0]))

static CUstream raw_stream;
static CUfunction raw_fn;
static CUresult (*graph_get_nodes)(CUgraph, CUgraphNode *, size_t *);

/* cuCtxGetCurrent, as graphcore's context bind calls it. */
static void ctx_check(void) {
    CUcontext c;
    CU(cu.CtxGetCurrent(&c));
}

/* Sides: raw, raw + graphcore's extra calls, and those + a bind a launch. */
enum { RAW, EXTRA, LAUNCH_BINDS, SIDES };

static double capture(int len, int side) {
    uint32_t tag = 1;
    void *args[] = {&tag};
    CUgraph g;
    double t0 = bench_now_ns();
    if (side != RAW) ctx_check();
    CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) {
        if (side == LAUNCH_BINDS) ctx_check();
        CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, NULL));
    }
    if (side != RAW) ctx_check();
    CU(cu.StreamEndCapture(raw_stream, &g));
    if (side != RAW) {
        size_t n = 0;
        CU(graph_get_nodes(g, NULL, &n));
        if (n != (size_t)len) {
            fprintf(stderr, "driver_floor: captured %zu nodes, not %d\n", n, len);
            exit(1);
        }
    }
    double t1 = bench_now_ns();
    CU(cu.GraphDestroy(g));
    return t1 - t0;
}

static double build(int len, int side) {
    uint32_t tag = 1;
    void *args[] = {&tag};
    bench_kernel_node_params p = {raw_fn, 1, 1, 1, 1, 1, 1, 0, args, NULL, NULL, NULL};
    CUgraph g;
    CUgraphNode prev = NULL, node;
    double t0 = bench_now_ns();
    CU(cu.GraphCreate(&g, 0));
    for (int i = 0; i < len; i++) {
        if (side != RAW) ctx_check();
        CU(cu.GraphAddKernelNode(&node, g, i ? &prev : NULL, i ? 1 : 0, &p));
        prev = node;
    }
    double t1 = bench_now_ns();
    CU(cu.GraphDestroy(g));
    return t1 - t0;
}

/* [op][side][round] samples (ns), op 0 capture, 1 build (whose
 * LAUNCH_BINDS side is its EXTRA side again). */
static double samples[2][SIDES][ROUNDS];

/* Per call (ns, mean of 10 calls) on a captured chain of `len` nodes: the
 * node count (cuGraphGetNodes with NULL) into *all, whether it has a node
 * (room for one) into *first. */
static void node_queries(int len, double *all, double *first) {
    uint32_t tag = 1;
    void *args[] = {&tag};
    CUgraph g;
    CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, NULL));
    CU(cu.StreamEndCapture(raw_stream, &g));
    size_t n = 0;
    CUgraphNode one[1];
    double t0 = bench_now_ns();
    for (int i = 0; i < 10; i++) CU(graph_get_nodes(g, NULL, &n));
    double t1 = bench_now_ns();
    for (int i = 0; i < 10; i++) {
        n = 1;
        CU(graph_get_nodes(g, one, &n));
    }
    double t2 = bench_now_ns();
    if (n != 1) {
        fprintf(stderr, "driver_floor: a %d-node graph gave %zu of 1 node asked\n", len, n);
        exit(1);
    }
    *all = (t1 - t0) / 10;
    *first = (t2 - t1) / 10;
    CU(cu.GraphDestroy(g));
}
static double queries[2][ROUNDS];

int main(void) {
    gc_context *ctx = bench_start("driver_floor");
    gc_stream *stream;
    gc_function *fn;
    gc_module *module = bench_empty_kernel(ctx, &stream, &fn, &raw_stream, &raw_fn);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    *(void **)&graph_get_nodes = lib ? dlsym(lib, "cuGraphGetNodes") : NULL;
    if (!graph_get_nodes) {
        fprintf(stderr, "driver_floor: libcuda exports no cuGraphGetNodes\n");
        return 1;
    }
    /* graphcore's own calls leave its context current; so does this. */
    ctx_check();

    static const char *ops[2] = {"capture", "build"};
    double med[LENGTHS][2][SIDES], query_med[LENGTHS][2];
    printf("driver_floor: raw chains vs raw + graphcore's extra driver calls, median of %d rounds\n", ROUNDS);
    for (int l = 0; l < LENGTHS; l++) {
        int len = lengths[l];
        for (int r = -WARMUP; r < ROUNDS; r++) {
            for (int k = 0; k < SIDES; k++) {
                int side = (k + r + WARMUP) % SIDES;
                double c = capture(len, side), b = build(len, side == LAUNCH_BINDS ? EXTRA : side);
                if (r >= 0) {
                    samples[0][side][r] = c;
                    samples[1][side][r] = b;
                }
            }
            double all, first;
            node_queries(len, &all, &first);
            if (r >= 0) {
                queries[0][r] = all;
                queries[1][r] = first;
            }
        }
        for (int q = 0; q < 2; q++) query_med[l][q] = bench_median(queries[q], ROUNDS);
        for (int o = 0; o < 2; o++)
            for (int s = 0; s < SIDES; s++) med[l][o][s] = bench_median(samples[o][s], ROUNDS) / 1e3;
        printf("  %4d nodes: capture %.2f / %.2f / %.2f us (raw / + extra / + launch binds), build %.2f / %.2f us "
               "(raw / + extra), node count %.0f ns / has a node %.0f ns\n",
               len, med[l][0][RAW], med[l][0][EXTRA], med[l][0][LAUNCH_BINDS], med[l][1][RAW], med[l][1][EXTRA],
               query_med[l][0], query_med[l][1]);
        fflush(stdout);
    }
    FILE *json = bench_json_open(ctx, "driver_floor.json", "driver_floor");
    if (json) {
        fprintf(json,
                "  \"method\": \"graph_perf_scaling's raw capture and build of a chain of empty kernels, against the "
                "same plus the extra driver calls graphcore makes (capture: cuCtxGetCurrent at begin and end, "
                "cuGraphGetNodes at end; launch_binds: also cuCtxGetCurrent per launch, as gc_launch did before; "
                "build: cuCtxGetCurrent per node); interleaved, median of %d rounds; node_queries rows: per call "
                "on a captured chain, cuGraphGetNodes with NULL (the count) and with room for one node (whether it "
                "has any), mean of 10 calls, median of the rounds\",\n"
                "  \"units\": \"us\",\n  \"rows\": [\n",
                ROUNDS);
        for (int o = 0; o < 2; o++)
            for (int l = 0; l < LENGTHS; l++) {
                const double *m = med[l][o];
                fprintf(json,
                        "    {\"row\": \"%s\", \"nodes\": %d, \"raw_us\": %.3f, \"raw_plus_extra_us\": %.3f, "
                        "\"ratio\": %.4f",
                        ops[o], lengths[l], m[RAW], m[EXTRA], m[EXTRA] / m[RAW]);
                if (o == 0)
                    fprintf(json, ", \"raw_plus_launch_binds_us\": %.3f, \"launch_binds_ratio\": %.4f",
                            m[LAUNCH_BINDS], m[LAUNCH_BINDS] / m[RAW]);
                fprintf(json, "},\n");
            }
        for (int l = 0; l < LENGTHS; l++)
            fprintf(json, "    {\"row\": \"node_queries\", \"nodes\": %d, \"count_ns\": %.1f, \"has_node_ns\": %.1f}%s\n",
                    lengths[l], query_med[l][0], query_med[l][1], l == LENGTHS - 1 ? "" : ",");
        fprintf(json, "  ]\n}\n");
        fclose(json);
    }
    TRY(gc_function_destroy(fn));
    TRY(gc_module_destroy(module));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
