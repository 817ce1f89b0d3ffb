/* Where graphcore's time over raw CUDA goes, call by call (issue 15).
 *
 * Run against a library built with the cargo feature `call-timing`
 * (scripts/gpu-check stages one in stage/lib-timing/): the library then
 * times spans inside its calls (core/src/timing.rs: the driver call alone,
 * the process-wide graph-call lock around it, the whole core call) and
 * writes them at exit. This program times the same work from outside, raw
 * CUDA call by raw CUDA call and graphcore entry point by entry point, with
 * raw and graphcore rounds alternating (graph_perf_scaling's chains of empty
 * kernels). Each length runs in a child process, so that the library's
 * table holds that length only; the parent writes both tables into
 * $OUT/call_breakdown.json.
 *
 *   call_breakdown [lengths...]      (default 1 10 100 1000)
 *
 * Times are in ns per call, from the CPU's time-stamp counter on x86-64
 * (calibrated against CLOCK_MONOTONIC). Rows named `gc.*` include
 * graphcore's whole entry point (handle lookups, checks, bookkeeping);
 * `spans` are the library's own table for that length. */
#include "bench.h"
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ticks(void) { return (uint64_t)bench_now_ns(); }
#endif

/* The rows timed from outside: raw driver calls and graphcore entry points. */
enum row {
    RAW_ADD_KERNEL, GC_ADD_KERNEL, RAW_LAUNCH, GC_LAUNCH, RAW_BEGIN, GC_BEGIN, RAW_END, GC_END,
    RAW_INSTANTIATE, GC_INSTANTIATE, RAW_UPDATE, GC_UPDATE, RAW_GRAPH_LAUNCH, GC_GRAPH_LAUNCH,
    RAW_BUILD, GC_BUILD, RAW_CAPTURE, GC_CAPTURE, ROWS
};
static const char *const row_key[ROWS] = {
    "raw.cuGraphAddKernelNode", "gc.gc_graph_add_kernel", "raw.cuLaunchKernel (capturing)",
    "gc.gc_launch (capturing)", "raw.cuStreamBeginCapture", "gc.gc_capture_begin", "raw.cuStreamEndCapture",
    "gc.gc_capture_end", "raw.cuGraphInstantiateWithFlags", "gc.gc_graph_instantiate",
    "raw.cuGraphExecUpdate", "gc.gc_exec_update", "raw.cuGraphLaunch", "gc.gc_exec_launch",
    "raw.build (create + nodes)", "gc.build (create + nodes)", "raw.capture (begin, launches, end)",
    "gc.capture (begin, launches, end)",
};
static uint64_t sum[ROWS], calls[ROWS];

#define TIMED(r, stmt)                     \
    do {                                   \
        uint64_t t0_ = ticks();            \
        stmt;                              \
        sum[r] += ticks() - t0_;           \
        calls[r]++;                        \
    } while (0)

static gc_context *ctx;
static gc_stream *stream;
static gc_function *fn;
static CUstream raw_stream;
static CUfunction raw_fn;

static CUgraph raw_capture(int len, uint32_t tag) {
    void *args[] = {&tag};
    CUgraph g;
    uint64_t t0 = ticks();
    TIMED(RAW_BEGIN, CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL)));
    for (int i = 0; i < len; i++)
        TIMED(RAW_LAUNCH, CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, NULL)));
    TIMED(RAW_END, CU(cu.StreamEndCapture(raw_stream, &g)));
    sum[RAW_CAPTURE] += ticks() - t0, calls[RAW_CAPTURE]++;
    return g;
}

static CUgraph raw_build(int len, uint32_t tag) {
    void *args[] = {&tag};
    bench_kernel_node_params p = {raw_fn, 1, 1, 1, 1, 1, 1, 0, args, NULL, NULL, NULL};
    CUgraph g;
    CUgraphNode prev = NULL, node;
    uint64_t t0 = ticks();
    CU(cu.GraphCreate(&g, 0));
    for (int i = 0; i < len; i++) {
        TIMED(RAW_ADD_KERNEL, CU(cu.GraphAddKernelNode(&node, g, i ? &prev : NULL, i ? 1 : 0, &p)));
        prev = node;
    }
    sum[RAW_BUILD] += ticks() - t0, calls[RAW_BUILD]++;
    return g;
}

static gc_graph *gc_capture(int len, uint32_t tag) {
    void *args[] = {&tag};
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    uint64_t t0 = ticks();
    TIMED(GC_BEGIN, TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL)));
    for (int i = 0; i < len; i++) TIMED(GC_LAUNCH, TRY(gc_launch(fn, stream, one, one, 0, args)));
    TIMED(GC_END, TRY(gc_capture_end(stream, &g)));
    sum[GC_CAPTURE] += ticks() - t0, calls[GC_CAPTURE]++;
    return g;
}

static gc_graph *gc_build(int len, uint32_t tag) {
    void *args[] = {&tag};
    gc_dim3 one = {1, 1, 1};
    gc_graph *g;
    gc_node prev, node;
    uint64_t t0 = ticks();
    TRY(gc_graph_create(ctx, &g));
    for (int i = 0; i < len; i++) {
        TIMED(GC_ADD_KERNEL, TRY(gc_graph_add_kernel(g, fn, one, one, 0, args, i ? &prev : NULL, i ? 1 : 0, &node)));
        prev = node;
    }
    sum[GC_BUILD] += ticks() - t0, calls[GC_BUILD]++;
    return g;
}

static void raw_round(int len) {
    CUgraph g = raw_capture(len, 1), b = raw_build(len, 1);
    CU(cu.GraphDestroy(b));
    CUgraphExec e;
    TIMED(RAW_INSTANTIATE, CU(cu.GraphInstantiateWithFlags(&e, g, 0)));
    for (int i = 0; i < 10; i++) TIMED(RAW_GRAPH_LAUNCH, CU(cu.GraphLaunch(e, raw_stream)));
    CU(cu.StreamSynchronize(raw_stream));
    CUgraph g2 = raw_capture(len, 2);
    bench_update_info info;
    TIMED(RAW_UPDATE, CU(cu.GraphExecUpdate(e, g2, &info)));
    TIMED(RAW_UPDATE, CU(cu.GraphExecUpdate(e, g, &info)));
    CU(cu.StreamSynchronize(raw_stream));
    CU(cu.GraphDestroy(g2));
    CU(cu.GraphExecDestroy(e));
    CU(cu.GraphDestroy(g));
}

static void gc_round(int len) {
    gc_graph *g = gc_capture(len, 1), *b = gc_build(len, 1);
    TRY(gc_graph_destroy(b));
    gc_exec *e;
    TIMED(GC_INSTANTIATE, TRY(gc_graph_instantiate(g, 0, &e)));
    for (int i = 0; i < 10; i++) TIMED(GC_GRAPH_LAUNCH, TRY(gc_exec_launch(e, stream)));
    TRY(gc_stream_synchronize(stream));
    gc_graph *g2 = gc_capture(len, 2);
    TIMED(GC_UPDATE, TRY(gc_exec_update(e, g2)));
    TIMED(GC_UPDATE, TRY(gc_exec_update(e, g)));
    TRY(gc_stream_synchronize(stream));
    TRY(gc_graph_destroy(g2));
    TRY(gc_exec_destroy(e));
    TRY(gc_graph_destroy(g));
}

/* The child for one length: alternating rounds, then its rows as a JSON
 * object in `rows_path` (the library writes its spans at exit). */
static void measure(int len, const char *rows_path) {
    ctx = bench_start("call_breakdown");
    gc_module *module = bench_empty_kernel(ctx, &stream, &fn, &raw_stream, &raw_fn);
    int rounds = 20000 / len;
    rounds = rounds > 2000 ? 2000 : rounds < 20 ? 20 : rounds;
    double n0 = bench_now_ns();
    uint64_t c0 = ticks();
    /* No warm-up rounds: the library's table cannot be reset, and both
     * tables must cover the same calls. */
    for (int r = 0; r < rounds; r++) {
        if (r & 1) raw_round(len), gc_round(len);
        else gc_round(len), raw_round(len);
    }
    double per_ns = (double)(ticks() - c0) / (bench_now_ns() - n0);
    FILE *f = fopen(rows_path, "w");
    if (!f) {
        fprintf(stderr, "call_breakdown: cannot write %s\n", rows_path);
        exit(1);
    }
    fprintf(f, "{\"nodes\": %d, \"rounds\": %d, \"ns_per_call\": {", len, rounds);
    for (int r = 0; r < ROWS; r++)
        fprintf(f, "%s\n      \"%s\": %.1f", r ? "," : "", row_key[r], calls[r] ? sum[r] / per_ns / calls[r] : 0.0);
    fprintf(f, "}}");
    fclose(f);
    printf("  %4d nodes: add_kernel %.0f / %.0f ns, launch under capture %.0f / %.0f ns (raw / graphcore)\n", len,
           sum[RAW_ADD_KERNEL] / per_ns / calls[RAW_ADD_KERNEL], sum[GC_ADD_KERNEL] / per_ns / calls[GC_ADD_KERNEL],
           sum[RAW_LAUNCH] / per_ns / calls[RAW_LAUNCH], sum[GC_LAUNCH] / per_ns / calls[GC_LAUNCH]);
    fflush(stdout);
    TRY(gc_function_destroy(fn));
    TRY(gc_module_destroy(module));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
}

/* Appends the file at `path` to `out` (empty object if it is missing). */
static void append_file(FILE *out, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(out, "{}");
        return;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, out);
    fclose(f);
    remove(path);
}

int main(int argc, char **argv) {
    int lengths[16] = {1, 10, 100, 1000}, count = 4;
    if (argc > 1) {
        count = argc - 1 > 16 ? 16 : argc - 1;
        for (int i = 0; i < count; i++) lengths[i] = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
    }
    const char *out = getenv("OUT") ? getenv("OUT") : ".";
    printf("call_breakdown: ns per call, raw CUDA vs graphcore, one process per length\n");
    fflush(stdout);
    char rows[4096], spans[4096];
    for (int i = 0; i < count; i++) {
        snprintf(rows, sizeof rows, "%s/.call_breakdown.%d.rows", out, lengths[i]);
        snprintf(spans, sizeof spans, "%s/.call_breakdown.%d.spans", out, lengths[i]);
        pid_t pid = fork();
        if (pid < 0) {
            perror("call_breakdown: fork");
            return 1;
        }
        if (pid == 0) {
            setenv("GC_CALL_TIMING", spans, 1);
            measure(lengths[i], rows);
            exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "call_breakdown: the run for %d nodes failed\n", lengths[i]);
            return 1;
        }
    }
    /* CUDA starts in the parent only now, after the children are done;
     * the parent's own spans are not wanted. */
    setenv("GC_CALL_TIMING", "/dev/null", 1);
    ctx = bench_start("call_breakdown");
    FILE *json = bench_json_open(ctx, "call_breakdown.json", "call_breakdown");
    if (!json) return 1;
    fprintf(json,
            "  \"method\": \"chains of empty kernels; raw and graphcore rounds alternate in one process per length; "
            "outside rows time each raw call and each graphcore entry point, spans are the library's own table "
            "(cargo feature call-timing); ns per call from the time-stamp counter\",\n  \"lengths\": [\n");
    for (int i = 0; i < count; i++) {
        snprintf(rows, sizeof rows, "%s/.call_breakdown.%d.rows", out, lengths[i]);
        snprintf(spans, sizeof spans, "%s/.call_breakdown.%d.spans", out, lengths[i]);
        fprintf(json, "    {\"outside\": ");
        append_file(json, rows);
        fprintf(json, ",\n     \"spans\": ");
        append_file(json, spans);
        fprintf(json, "}%s\n", i + 1 < count ? "," : "");
    }
    fprintf(json, "  ]\n}\n");
    fclose(json);
    TRY(gc_context_destroy(ctx));
    return 0;
}
