/* Two graphcore libraries against each other, and against raw CUDA, in one
 * process: graph_perf_scaling's host-side rows (capture, build, instantiate,
 * launch) on chains of empty kernels, with raw CUDA, library A and library B
 * interleaved round by round (the side that goes first rotates).
 *
 *   host_ab [LIB_A LIB_B [LENGTH ...]]    (lengths default to 1 2 5 10 100)
 *
 * Without libraries, A and B are both libgraphcore.so.0 as the loader finds
 * it: one library against itself, which shows how far B / A strays from 1
 * by noise alone. To compare revisions, stage their libraries with
 * `perf/gpu-ab main=HEAD new=. -- true` and run, on the GPU machine,
 * `stage/bin/host_ab stage/ab/main.so stage/ab/new.so`; perf/c/host_ab_runs.py
 * merges several runs (both orders, and a library against a copy of
 * itself) by library.
 *
 * graph_perf_scaling compares libraries only across runs, one process
 * each, and a host whose speed drifts between runs (a shared VM: raw
 * CUDA's own instantiate of one node took 4-18 us across the runs of one
 * device call, h100/instantiate_mark_*.json) hides a change of a few
 * percent. Here each round times the three sides back to back, so the
 * per-round ratio B / A is taken between neighbours in time; its median
 * over the rounds is what this prints last.
 *
 * Each library is opened with dlopen (RTLD_LOCAL: two copies, each with its
 * own handle tables and locks) and called through a table of its exports;
 * each makes its own context (the device's primary context, shared), stream
 * and empty kernel. The raw side uses library A's stream and kernel
 * through their raw handles. Writes $OUT/host_ab.json (or ./). Needs
 * libcuda.so.1; the no-op driver (perf/noop_driver) runs it without a
 * GPU, for its mechanics only. */
#define _POSIX_C_SOURCE 200809L
#include "graphcore.h"

/* The exports the benchmark (and bench.h's helpers) call, by name after
 * "gc_". */
#define GC_EXPORTS(X)                                                                         \
    X(context_create) X(context_destroy) X(context_info) X(status_name) X(last_error)          \
    X(stream_create) X(stream_destroy) X(stream_raw) X(stream_synchronize) X(module_load)      \
    X(module_destroy) X(module_function) X(function_raw) X(function_destroy) X(capture_begin)  \
    X(capture_end) X(launch) X(graph_create) X(graph_add_kernel) X(graph_destroy)              \
    X(graph_instantiate) X(exec_launch) X(exec_destroy)

/* One library's exports. */
struct gc_api {
#define GC_FIELD(name) __typeof__(gc_##name) *name;
    GC_EXPORTS(GC_FIELD)
#undef GC_FIELD
};

/* The library the next gc_* call goes to. */
static const struct gc_api *GC;

/* Every call below, bench.h's included, goes through GC. */
#define gc_context_create (GC->context_create)
#define gc_context_destroy (GC->context_destroy)
#define gc_context_info (GC->context_info)
#define gc_status_name (GC->status_name)
#define gc_last_error (GC->last_error)
#define gc_stream_create (GC->stream_create)
#define gc_stream_destroy (GC->stream_destroy)
#define gc_stream_raw (GC->stream_raw)
#define gc_stream_synchronize (GC->stream_synchronize)
#define gc_module_load (GC->module_load)
#define gc_module_destroy (GC->module_destroy)
#define gc_module_function (GC->module_function)
#define gc_function_raw (GC->function_raw)
#define gc_function_destroy (GC->function_destroy)
#define gc_capture_begin (GC->capture_begin)
#define gc_capture_end (GC->capture_end)
#define gc_launch (GC->launch)
#define gc_graph_create (GC->graph_create)
#define gc_graph_add_kernel (GC->graph_add_kernel)
#define gc_graph_destroy (GC->graph_destroy)
#define gc_graph_instantiate (GC->graph_instantiate)
#define gc_exec_launch (GC->exec_launch)
#define gc_exec_destroy (GC->exec_destroy)

#include "bench.h"

#define WARMUP 3
#define ROUNDS 101
#define MAX_LENGTHS 16

enum row { CAPTURE, BUILD, INSTANTIATE, LAUNCH, ROWS };
static const char *const row_names[ROWS] = {"capture", "build", "instantiate", "launch"};

/* A library under test: its exports and its objects. */
struct lib {
    const char *path;
    struct gc_api api;
    gc_context *ctx;
    gc_stream *stream;
    gc_function *fn;
    gc_module *module;
};

enum { RAW, A, B, SIDES };
static struct lib libs[2];
static CUstream raw_stream;
static CUfunction raw_fn;

/* Samples (ns) of one length: [side][row][round]. */
static double samples[SIDES][ROWS][ROUNDS];

static void open_lib(struct lib *l, const char *path) {
    l->path = path;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "host_ab: cannot open %s: %s\n", path, dlerror());
        exit(2);
    }
#define GC_LOAD(name)                                                                  \
    if (!(*(void **)&l->api.name = dlsym(h, "gc_" #name))) {                           \
        fprintf(stderr, "host_ab: %s exports no gc_" #name "\n", path);                 \
        exit(2);                                                                       \
    }
    GC_EXPORTS(GC_LOAD)
#undef GC_LOAD
}

/* A chain of `len` empty kernels, captured by side `s`; a CUgraph for the
 * raw side, a gc_graph otherwise. */
static void *capture(int s, int len) {
    uint32_t tag = 1;
    void *args[] = {&tag};
    if (s == RAW) {
        CUgraph g;
        CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
        for (int i = 0; i < len; i++) CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, NULL));
        CU(cu.StreamEndCapture(raw_stream, &g));
        return g;
    }
    struct lib *l = &libs[s - A];
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    TRY(gc_capture_begin(l->stream, NULL, GC_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) TRY(gc_launch(l->fn, l->stream, one, one, 0, args));
    TRY(gc_capture_end(l->stream, &g));
    return g;
}

/* The same chain built node by node, then destroyed. */
static void build(int s, int len) {
    uint32_t tag = 1;
    void *args[] = {&tag};
    if (s == RAW) {
        CU(cu.GraphDestroy(bench_raw_chain(raw_fn, args, len)));
        return;
    }
    struct lib *l = &libs[s - A];
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    gc_node prev, node;
    TRY(gc_graph_create(l->ctx, &g));
    for (int i = 0; i < len; i++) {
        TRY(gc_graph_add_kernel(g, l->fn, one, one, 0, args, i ? &prev : NULL, i ? 1 : 0, &node));
        prev = node;
    }
    TRY(gc_graph_destroy(g));
}

/* One round of side `s` at length `len`, recorded in round `r` unless
 * negative (a warm-up round). */
static void round_of(int s, int len, int r) {
    GC = s == RAW ? &libs[0].api : &libs[s - A].api;
    double t0 = bench_now_ns();
    void *g = capture(s, len);
    double t1 = bench_now_ns();
    build(s, len);
    double t2 = bench_now_ns();
    void *e;
    if (s == RAW)
        CU(cu.GraphInstantiateWithFlags((CUgraphExec *)&e, g, 0));
    else
        TRY(gc_graph_instantiate(g, 0, (gc_exec **)&e));
    double t3 = bench_now_ns();
    /* Launch (CPU time) of an exec already run once. */
    if (s == RAW) {
        CU(cu.GraphLaunch(e, raw_stream));
        CU(cu.StreamSynchronize(raw_stream));
    } else {
        TRY(gc_exec_launch(e, libs[s - A].stream));
        TRY(gc_stream_synchronize(libs[s - A].stream));
    }
    double t4 = bench_now_ns();
    if (s == RAW)
        CU(cu.GraphLaunch(e, raw_stream));
    else
        TRY(gc_exec_launch(e, libs[s - A].stream));
    double t5 = bench_now_ns();
    if (s == RAW) {
        CU(cu.StreamSynchronize(raw_stream));
        CU(cu.GraphExecDestroy(e));
        CU(cu.GraphDestroy(g));
    } else {
        TRY(gc_stream_synchronize(libs[s - A].stream));
        TRY(gc_exec_destroy(e));
        TRY(gc_graph_destroy(g));
    }
    if (r >= 0) {
        samples[s][CAPTURE][r] = t1 - t0;
        samples[s][BUILD][r] = t2 - t1;
        samples[s][INSTANTIATE][r] = t3 - t2;
        samples[s][LAUNCH][r] = t5 - t4;
    }
}

/* Median of x[i] / y[i] over the rounds. */
static double paired_median(const double *x, const double *y) {
    double v[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) v[i] = x[i] / y[i];
    return bench_median(v, ROUNDS);
}

static double median_us(const double *x) {
    double v[ROUNDS];
    memcpy(v, x, sizeof v);
    return bench_median(v, ROUNDS) / 1e3;
}

int main(int argc, char **argv) {
    if (argc == 2) {
        fprintf(stderr, "usage: host_ab [LIB_A LIB_B [LENGTH ...]]\n");
        return 2;
    }
    const char *paths[2] = {"libgraphcore.so.0", "libgraphcore.so.0"};
    if (argc > 2) paths[0] = argv[1], paths[1] = argv[2];
    int lengths[MAX_LENGTHS] = {1, 2, 5, 10, 100}, nlen = 5;
    if (argc > 3) {
        nlen = 0;
        for (int i = 3; i < argc && nlen < MAX_LENGTHS; i++) lengths[nlen++] = atoi(argv[i]);
    }
    for (int k = 0; k < 2; k++) {
        open_lib(&libs[k], paths[k]);
        GC = &libs[k].api;
        if (k == 0)
            libs[k].ctx = bench_start("host_ab");
        else
            TRY(gc_context_create(0, &libs[k].ctx));
        CUstream s;
        CUfunction f;
        libs[k].module = bench_empty_kernel(libs[k].ctx, &libs[k].stream, &libs[k].fn, &s, &f);
        if (k == 0) raw_stream = s, raw_fn = f;
    }
    GC = &libs[0].api;
    FILE *json = bench_json_open(libs[0].ctx, "host_ab.json", "host_ab");
    if (json) {
        fprintf(json, "  \"libraries\": {\"A\": \"%s\", \"B\": \"%s\"},\n", libs[0].path, libs[1].path);
        fprintf(json, "  \"method\": \"graph_perf_scaling's capture, build, instantiate (of the captured chain) and "
                      "launch (CPU time, the exec run once before) of chains of empty kernels; raw CUDA, library A "
                      "and library B in one process, interleaved round by round (the first side rotates), %d "
                      "rounds after %d warm-up rounds; medians of the rounds, and the median of the per-round "
                      "ratios\",\n  \"units\": \"us\",\n  \"rows\": [\n",
                ROUNDS, WARMUP);
    }
    printf("host_ab: raw CUDA, A = %s, B = %s; median of %d rounds\n", libs[0].path, libs[1].path, ROUNDS);
    printf("%-12s %6s %9s %9s %9s %8s %8s %8s\n", "row", "nodes", "raw us", "A us", "B us", "A/raw", "B/raw",
           "B/A");
    int first = 1;
    for (int li = 0; li < nlen; li++) {
        int len = lengths[li];
        for (int r = -WARMUP; r < ROUNDS; r++)
            for (int k = 0; k < SIDES; k++) round_of((r + WARMUP + k) % SIDES, len, r);
        for (int row = 0; row < ROWS; row++) {
            double us[SIDES];
            for (int s = 0; s < SIDES; s++) us[s] = median_us(samples[s][row]);
            double a_raw = paired_median(samples[A][row], samples[RAW][row]);
            double b_raw = paired_median(samples[B][row], samples[RAW][row]);
            double b_a = paired_median(samples[B][row], samples[A][row]);
            printf("%-12s %6d %9.3f %9.3f %9.3f %8.3f %8.3f %8.3f\n", row_names[row], len, us[RAW], us[A], us[B],
                   a_raw, b_raw, b_a);
            if (json) {
                fprintf(json,
                        "%s    {\"row\": \"%s\", \"nodes\": %d, \"raw_us\": %.4f, \"A_us\": %.4f, \"B_us\": %.4f, "
                        "\"A_raw_ratio\": %.4f, \"B_raw_ratio\": %.4f, \"B_A_ratio\": %.4f}",
                        first ? "" : ",\n", row_names[row], len, us[RAW], us[A], us[B], a_raw, b_raw, b_a);
                first = 0;
            }
        }
        fflush(stdout);
    }
    if (json) {
        fprintf(json, "\n  ]\n}\n");
        fclose(json);
    }
    for (int k = 1; k >= 0; k--) {
        GC = &libs[k].api;
        TRY(gc_stream_destroy(libs[k].stream));
        TRY(gc_function_destroy(libs[k].fn));
        TRY(gc_module_destroy(libs[k].module));
        TRY(gc_context_destroy(libs[k].ctx));
    }
    return 0;
}
