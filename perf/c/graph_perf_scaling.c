/* graphcore vs the CUDA driver on the method of NVIDIA's cudaGraphsPerfScaling
 * sample: a straight chain of N empty kernels (N = 1 ... 1000), and for each
 * N the time to
 *   capture     begin capture, N launches, end capture;
 *   build       create a graph and add N kernel nodes, each after the last;
 *   instantiate the captured graph (flags 0);
 *   first       launch of the fresh exec, with the stream synchronize;
 *   launch      the launch call alone (CPU time), the exec already run once;
 *   launch+sync a launch and the synchronize after it;
 *   device      GPU time per graph launch (events around many launches);
 *   update      the exec updated from a graph in which every node's
 *               argument changed.
 * Raw CUDA (cuStreamBeginCapture_v2, cuGraphAddKernelNode_v2,
 * cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecUpdate_v2) and
 * graphcore (gc_capture_*, gc_graph_add_kernel, gc_graph_instantiate,
 * gc_exec_launch, gc_exec_update) run the same kernel on the same stream,
 * interleaved round by round (the side that goes first rotates), and
 * each figure is the median over all rounds.
 *
 * A third side, "checked", prices what any library keeping graphcore's
 * contract must add to the raw calls: the raw calls plus, for each handle
 * the graphcore call takes, one checked lookup through the C ABI (the
 * cheapest exports that look a handle up: gc_stream_raw, gc_function_raw,
 * gc_graph_raw, which also takes the graph's lock as adding a node does,
 * and gc_exec_raw, on handles made for this), plus the context bind the
 * driver needs where graphcore binds (a cuCtxGetCurrent before each node
 * added, an instantiate and an update) and a process-wide mutex around the
 * driver calls that change or instantiate graphs (graphcore's serialization
 * of them, docs/architecture.md). Not in it: making the new graph's or
 * exec's handle, and the context lookup of gc_graph_create.
 *
 * Prints the table, ratios graphcore / raw and checked / raw, and the
 * issue's target per row, last; writes $OUT/graph_perf_scaling.json (or
 * ./). */
#include "bench.h"
#include <pthread.h>

#define WARMUP 2 /* rounds per length not counted */
#define ROUNDS 51 /* rounds per length counted */
#define REPEATS 10 /* repeat launches per round */
#define MAX_SAMPLES (ROUNDS * REPEATS)

enum row { CAPTURE, BUILD, INSTANTIATE, FIRST, LAUNCH, LAUNCH_SYNC, DEVICE, UPDATE, ROWS };

/* Each row's JSON key, label, and target ratio (graphcore / raw) from
 * issue 15; 0 where it sets none. */
static const struct {
    const char *key, *label;
    double target;
} rows[ROWS] = {
    {"capture", "capture", 1.10},
    {"build", "explicit build", 1.10},
    {"instantiate", "instantiate", 1.05},
    {"first_launch", "first launch+sync", 0},
    {"launch", "launch (CPU)", 1.02},
    {"launch_sync", "launch+sync", 0},
    {"device", "device (per graph)", 0},
    {"update", "update, all changed", 1.05},
};

static const int lengths[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
#define LENGTHS ((int)(sizeof lengths / sizeof lengths[0]))

/* What both sides share. */
static gc_context *ctx;
static gc_stream *stream;
static gc_function *fn;
static CUstream raw_stream;
static CUfunction raw_fn;
static CUevent ev_start, ev_end;

/* What the checked side is, for the JSON. */
#define CHECKED_WHAT                                                                                      \
    "the raw calls plus, made on their own through the C ABI, a checked lookup for each handle the "    \
    "graphcore call takes, a cuCtxGetCurrent where graphcore binds and a process-wide mutex around the " \
    "driver calls graphcore serializes: what keeping graphcore's contract adds to raw CUDA when each "   \
    "check is a call of its own (checks made inside one call can cost less); not in it: making the new " \
    "graph's or exec's handle, and gc_graph_create's context lookup"

/* The checked side: set while it runs (it runs the raw calls, which then
 * also make its lookups), the handles its lookups read, and its mutex. */
static int checking;
static gc_graph *probe_graph;
static gc_exec *probe_exec;
static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;

/* One checked lookup of `h` through `raw_of` (a gc_*_raw export), on the
 * checked side only. */
#define LOOK(raw_of, h)                   \
    do {                                  \
        if (checking) {                   \
            void *unused_;                \
            TRY(raw_of((h), &unused_));   \
        }                                 \
    } while (0)

/* The driver call `call` (a CUresult expression), preceded on the checked
 * side only by the context bind and made there under the mutex: the raw
 * side makes the call itself, directly. */
#define SERIALIZED(call)                  \
    do {                                  \
        if (checking) {                   \
            CUcontext ctx_;               \
            CU(cu.CtxGetCurrent(&ctx_));  \
            pthread_mutex_lock(&serial);  \
        }                                 \
        CU(call);                         \
        if (checking) pthread_mutex_unlock(&serial); \
    } while (0)

/* One side of the comparison: the graph calls of raw CUDA or of graphcore,
 * behind one interface so that both are timed by the same code. Graphs and
 * execs are opaque pointers (CUgraph / gc_graph, CUgraphExec / gc_exec). */
struct side {
    const char *name;
    void *(*capture)(int len, uint32_t tag);
    void *(*build)(int len, uint32_t tag);
    void *(*instantiate)(void *graph);
    void (*launch)(void *exec);
    void (*sync)(void);
    void (*update)(void *exec, void *graph);
    void (*destroy)(void *graph, void *exec);
};

static void *raw_capture(int len, uint32_t tag) {
    void *args[] = {&tag};
    CUgraph g;
    LOOK(gc_stream_raw, stream);
    CU(cu.StreamBeginCapture(raw_stream, BENCH_CU_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < len; i++) {
        LOOK(gc_function_raw, fn);
        LOOK(gc_stream_raw, stream);
        CU(cu.LaunchKernel(raw_fn, 1, 1, 1, 1, 1, 1, 0, raw_stream, args, NULL));
    }
    LOOK(gc_stream_raw, stream);
    CU(cu.StreamEndCapture(raw_stream, &g));
    return g;
}

static void *raw_build(int len, uint32_t tag) {
    void *args[] = {&tag};
    bench_kernel_node_params p = {raw_fn, 1, 1, 1, 1, 1, 1, 0, args, NULL, NULL, NULL};
    CUgraph g;
    CUgraphNode prev = NULL, node;
    CU(cu.GraphCreate(&g, 0));
    for (int i = 0; i < len; i++) {
        LOOK(gc_graph_raw, probe_graph);
        LOOK(gc_function_raw, fn);
        SERIALIZED(cu.GraphAddKernelNode(&node, g, i ? &prev : NULL, i ? 1 : 0, &p));
        prev = node;
    }
    return g;
}

static void *raw_instantiate(void *graph) {
    CUgraphExec e;
    LOOK(gc_graph_raw, probe_graph);
    SERIALIZED(cu.GraphInstantiateWithFlags(&e, graph, 0));
    return e;
}

static void raw_launch(void *exec) {
    LOOK(gc_exec_raw, probe_exec);
    LOOK(gc_stream_raw, stream);
    CU(cu.GraphLaunch(exec, raw_stream));
}

static void raw_sync(void) { CU(cu.StreamSynchronize(raw_stream)); }

static void raw_update(void *exec, void *graph) {
    bench_update_info info;
    LOOK(gc_exec_raw, probe_exec);
    LOOK(gc_graph_raw, probe_graph);
    SERIALIZED(cu.GraphExecUpdate(exec, graph, &info));
}

static void raw_destroy(void *graph, void *exec) {
    if (exec) CU(cu.GraphExecDestroy(exec));
    if (graph) CU(cu.GraphDestroy(graph));
}

static void *gc_capture(int len, uint32_t tag) { return bench_capture_chain(stream, fn, len, tag); }

static void *gc_build(int len, uint32_t tag) { return bench_build_chain(ctx, fn, len, tag); }

static void *gc_instantiate(void *graph) {
    gc_exec *e;
    TRY(gc_graph_instantiate(graph, 0, &e));
    return e;
}

static void gc_launch_exec(void *exec) { TRY(gc_exec_launch(exec, stream)); }

static void gc_sync(void) { TRY(gc_stream_synchronize(stream)); }

static void gc_update(void *exec, void *graph) { TRY(gc_exec_update(exec, graph)); }

static void gc_destroy(void *graph, void *exec) {
    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(graph));
}

/* The sides: raw CUDA, graphcore, and the checked floor (the raw calls
 * with `checking` set). */
enum { RAW, GC, CHECKED, SIDES };
static const struct side sides[SIDES] = {
    {"raw", raw_capture, raw_build, raw_instantiate, raw_launch, raw_sync, raw_update, raw_destroy},
    {"graphcore", gc_capture, gc_build, gc_instantiate, gc_launch_exec, gc_sync, gc_update, gc_destroy},
    {"checked", raw_capture, raw_build, raw_instantiate, raw_launch, raw_sync, raw_update, raw_destroy},
};

/* The samples (ns) of one length: [side][row]. */
static double samples[SIDES][ROWS][MAX_SAMPLES];
static size_t counts[SIDES][ROWS];

static void push(int side, enum row r, double ns) {
    if (counts[side][r] < MAX_SAMPLES) samples[side][r][counts[side][r]++] = ns;
}

/* Graph launches per device-time sample: about 2000 nodes' worth. */
static int device_reps(int len) { return len >= 400 ? 5 : 2000 / len; }

/* One round of every measurement for one side and length; counted unless
 * a warm-up round. */
static void round_of(int s, int len, int counted) {
    const struct side *sd = &sides[s];
    checking = s == CHECKED;
    double t0 = bench_now_ns();
    void *g = sd->capture(len, 1);
    double t1 = bench_now_ns();
    void *b = sd->build(len, 1);
    double t2 = bench_now_ns();
    sd->destroy(b, NULL);
    double t3 = bench_now_ns();
    void *e = sd->instantiate(g);
    double t4 = bench_now_ns();
    sd->launch(e);
    sd->sync();
    double t5 = bench_now_ns();
    if (counted) {
        push(s, CAPTURE, t1 - t0);
        push(s, BUILD, t2 - t1);
        push(s, INSTANTIATE, t4 - t3);
        push(s, FIRST, t5 - t4);
    }
    for (int i = 0; i < REPEATS; i++) {
        double a = bench_now_ns();
        sd->launch(e);
        double c = bench_now_ns();
        sd->sync();
        double d = bench_now_ns();
        if (counted) {
            push(s, LAUNCH, c - a);
            push(s, LAUNCH_SYNC, d - a);
        }
    }
    int reps = device_reps(len);
    CU(cu.EventRecord(ev_start, raw_stream));
    for (int i = 0; i < reps; i++) sd->launch(e);
    CU(cu.EventRecord(ev_end, raw_stream));
    CU(cu.EventSynchronize(ev_end));
    float ms;
    CU(cu.EventElapsedTime(&ms, ev_start, ev_end));
    if (counted) push(s, DEVICE, ms * 1e6 / reps);
    /* Update to a graph whose every node has another tag, and back. */
    void *g2 = sd->capture(len, 2);
    t0 = bench_now_ns();
    sd->update(e, g2);
    t1 = bench_now_ns();
    sd->update(e, g);
    t2 = bench_now_ns();
    if (counted) {
        push(s, UPDATE, t1 - t0);
        push(s, UPDATE, t2 - t1);
    }
    sd->sync();
    sd->destroy(g2, NULL);
    sd->destroy(g, e);
}

/* Medians in microseconds: [length][side][row]. */
static double result[LENGTHS][SIDES][ROWS];

int main(void) {
    ctx = bench_start("graph_perf_scaling");
    gc_module *module = bench_empty_kernel(ctx, &stream, &fn, &raw_stream, &raw_fn);
    CU(cu.EventCreate(&ev_start, 0));
    CU(cu.EventCreate(&ev_end, 0));
    /* What the checked side's lookups read: a graph and an exec of its own. */
    probe_graph = gc_build(1, 0);
    probe_exec = gc_instantiate(probe_graph);

    printf("graph_perf_scaling: chains of empty kernels, raw CUDA vs graphcore vs checked, median of %d rounds\n",
           ROUNDS);
    for (int l = 0; l < LENGTHS; l++) {
        memset(counts, 0, sizeof counts);
        for (int r = -WARMUP; r < ROUNDS; r++)
            for (int k = 0; k < SIDES; k++) /* the side that goes first rotates */
                round_of((r + WARMUP + k) % SIDES, lengths[l], r >= 0);
        for (int s = 0; s < SIDES; s++)
            for (int r = 0; r < ROWS; r++)
                result[l][s][r] = bench_median(samples[s][r], counts[s][r]) / 1e3;
        printf("  %4d nodes: capture %.1f / %.1f / %.1f us, launch %.2f / %.2f / %.2f us (raw / graphcore / "
               "checked)\n",
               lengths[l], result[l][RAW][CAPTURE], result[l][GC][CAPTURE], result[l][CHECKED][CAPTURE],
               result[l][RAW][LAUNCH], result[l][GC][LAUNCH], result[l][CHECKED][LAUNCH]);
        fflush(stdout);
    }

    FILE *json = bench_json_open(ctx, "graph_perf_scaling.json", "graph_perf_scaling");
    if (json)
        fprintf(json,
                "  \"method\": \"cudaGraphsPerfScaling: chain of empty kernels, raw, graphcore and checked "
                "interleaved, median of %d rounds (%d launches per round for launch rows)\",\n"
                "  \"checked\": \"%s\",\n"
                "  \"units\": \"us\",\n  \"rows\": [\n",
                ROUNDS, REPEATS, CHECKED_WHAT);
    printf("\n%-20s %6s %12s %12s %8s %12s %8s %8s\n", "what", "nodes", "raw us", "graphcore us", "ratio",
           "checked us", "ratio", "target");
    for (int r = 0; r < ROWS; r++) {
        for (int l = 0; l < LENGTHS; l++) {
            double raw = result[l][RAW][r], ours = result[l][GC][r], ratio = raw > 0 ? ours / raw : 0;
            double floor_us = result[l][CHECKED][r], floor_ratio = raw > 0 ? floor_us / raw : 0;
            char target[16] = "-";
            if (rows[r].target > 0)
                snprintf(target, sizeof target, "%.2f%s", rows[r].target, ratio <= rows[r].target ? "" : " !");
            printf("%-20s %6d %12.2f %12.2f %7.3fx %12.2f %7.3fx %8s\n", rows[r].label, lengths[l], raw, ours,
                   ratio, floor_us, floor_ratio, target);
            if (!json) continue;
            fprintf(json,
                    "    {\"row\": \"%s\", \"nodes\": %d, \"raw_us\": %.3f, \"graphcore_us\": %.3f, "
                    "\"raw_us_per_node\": %.4f, \"graphcore_us_per_node\": %.4f, \"ratio\": %.4f, "
                    "\"checked_us\": %.3f, \"checked_ratio\": %.4f, ",
                    rows[r].key, lengths[l], raw, ours, raw / lengths[l], ours / lengths[l], ratio, floor_us,
                    floor_ratio);
            if (rows[r].target > 0)
                fprintf(json, "\"target\": %.2f, \"met\": %s}", rows[r].target,
                        ratio <= rows[r].target ? "true" : "false");
            else
                fprintf(json, "\"target\": null, \"met\": null}");
            fprintf(json, "%s\n", r == ROWS - 1 && l == LENGTHS - 1 ? "" : ",");
        }
    }
    printf("(ratios: graphcore / raw and checked / raw; target from issue 15, \"!\" where graphcore missed it)\n");
    if (json) {
        fprintf(json, "  ]\n}\n");
        fclose(json);
    }
    CU(cu.EventDestroy(ev_start));
    CU(cu.EventDestroy(ev_end));
    gc_destroy(probe_graph, probe_exec);
    TRY(gc_function_destroy(fn));
    TRY(gc_module_destroy(module));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
