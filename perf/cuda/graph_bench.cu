// graphcore's graph path vs raw CUDA driver calls, side by side in one run:
//   1. replay overhead: CPU time of gc_exec_launch vs cuGraphLaunch of the
//      same exec, graphs of 1, 10, 100, 1000 kernel nodes;
//   2. device time of a graph built node by node vs the same work captured;
//   3. instantiate: gc_graph_instantiate vs cuGraphInstantiateWithFlags;
//      gc_exec_update on a 1000-node graph vs re-instantiating it;
//   4. the 100-pair forward/backward chain: graph replay vs eager launches.
// Medians; a table on stdout and JSON in $OUT/graph_bench.json.
// Built with nvcc on the GPU machine (scripts/bench-gpu):
//   nvcc -O2 -Iinclude perf/cuda/graph_bench.cu -lcuda -lgraphcore
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "graphcore.h"

#define TRY(call)                                                                  \
    do {                                                                           \
        gc_status st_ = (call);                                                    \
        if (st_ != GC_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s: %s\n", #call, gc_last_error());              \
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)
#define CU(call)                                                                   \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS) {                                                  \
            const char *s_;                                                        \
            cuGetErrorName(r_, &s_);                                               \
            std::fprintf(stderr, "%s: %s\n", #call, s_);                           \
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)

using clk = std::chrono::steady_clock;
static double ns_since(clk::time_point t) {
    return std::chrono::duration<double, std::nano>(clk::now() - t).count();
}
static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static gc_stream *stream;
static CUstream raw_stream;
static float *buf;
static const uint64_t N = 256;

// A graph of `nodes` dependent scale kernels, by capture; `last` (if not 0)
// replaces the last node's factor.
static gc_graph *captured_chain(int nodes, float alpha, float last = 0.0f) {
    gc_graph *g;
    TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < nodes; i++) {
        float a = i % 2 ? 1.0f / alpha : alpha;
        if (last != 0.0f && i == nodes - 1) a = last;
        TRY(gc_op_scale(stream, buf, buf, N, a));
    }
    TRY(gc_capture_end(stream, &g));
    return g;
}

// The same graph built node by node with the built-in kernel.
static gc_graph *built_chain(gc_context *ctx, gc_function *scale, int nodes, float alpha) {
    gc_graph *g;
    TRY(gc_graph_create(ctx, &g));
    gc_node prev{};
    for (int i = 0; i < nodes; i++) {
        float a = i % 2 ? 1.0f / alpha : alpha;
        uint64_t n = N;
        float *p = buf;
        void *args[] = {&p, &p, &n, &a};
        gc_node node;
        gc_dim3 grid = {1, 1, 1}, block = {256, 1, 1};
        TRY(gc_graph_add_kernel(g, scale, grid, block, 0, args, i ? &prev : NULL, i ? 1 : 0, &node));
        prev = node;
    }
    return g;
}

// GPU time of one replay of `e`, by events around many replays.
static double device_us(gc_exec *e, int reps) {
    CUevent a, b;
    CU(cuEventCreate(&a, 0));
    CU(cuEventCreate(&b, 0));
    std::vector<double> t;
    for (int r = 0; r < 7; r++) {
        CU(cuEventRecord(a, raw_stream));
        for (int i = 0; i < reps; i++) TRY(gc_exec_launch(e, stream));
        CU(cuEventRecord(b, raw_stream));
        CU(cuEventSynchronize(b));
        float ms;
        CU(cuEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0 / reps);
    }
    cuEventDestroy(a);
    cuEventDestroy(b);
    return median(t);
}

int main() {
    gc_context *ctx;
    gc_pool *pool;
    TRY(gc_context_create(0, &ctx));
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_stream_raw(stream, (void **)&raw_stream));
    TRY(gc_pool_alloc(pool, N * sizeof(float), (void **)&buf));
    TRY(gc_op_fill(stream, buf, N, 1.0f));
    gc_function *scale;
    TRY(gc_kernel_builtin(ctx, "gc_scale_f32", &scale));
    std::string json = "{\n";
    char line[512];

    // 1. Replay overhead: the CPU time of the launch call itself.
    std::printf("replay overhead (CPU time of one launch call, median of 2000)\n");
    std::printf("%8s %14s %14s %8s\n", "nodes", "gc_exec_launch", "cuGraphLaunch", "ratio");
    json += "  \"launch_overhead\": [\n";
    int sizes[] = {1, 10, 100, 1000};
    for (int si = 0; si < 4; si++) {
        int nodes = sizes[si];
        gc_graph *g = captured_chain(nodes, 2.0f);
        gc_exec *e;
        TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &e));
        CUgraphExec raw;
        TRY(gc_exec_raw(e, (void **)&raw));
        std::vector<double> ours, theirs;
        for (int i = 0; i < 2100; i++) {
            auto t = clk::now();
            TRY(gc_exec_launch(e, stream));
            double a = ns_since(t);
            CU(cuStreamSynchronize(raw_stream));
            t = clk::now();
            CU(cuGraphLaunch(raw, raw_stream));
            double b = ns_since(t);
            CU(cuStreamSynchronize(raw_stream));
            if (i >= 100) {
                ours.push_back(a);
                theirs.push_back(b);
            }
        }
        double a = median(ours), b = median(theirs);
        std::printf("%8d %11.0f ns %11.0f ns %7.3fx\n", nodes, a, b, a / b);
        std::snprintf(line, sizeof line, "    {\"nodes\": %d, \"gc_exec_launch_ns\": %.0f, \"cuGraphLaunch_ns\": %.0f}%s\n",
                      nodes, a, b, si < 3 ? "," : "");
        json += line;
        TRY(gc_exec_destroy(e));
        TRY(gc_graph_destroy(g));
    }
    json += "  ],\n";

    // 2. Device time: built vs captured (100 nodes).
    {
        gc_graph *gb = built_chain(ctx, scale, 100, 2.0f), *gcap = captured_chain(100, 2.0f);
        gc_exec *eb, *ec;
        TRY(gc_graph_instantiate(gb, GC_INSTANTIATE_UPLOAD, &eb));
        TRY(gc_graph_instantiate(gcap, GC_INSTANTIATE_UPLOAD, &ec));
        double b1 = device_us(eb, 50), c1 = device_us(ec, 50), b2 = device_us(eb, 50), c2 = device_us(ec, 50);
        double b = std::min(b1, b2), c = std::min(c1, c2);
        std::printf("\ndevice time of a 100-kernel graph: built %.1f us, captured %.1f us (ratio %.3f; spread %.1f%%)\n",
                    b, c, b / c, 100.0 * std::abs(b1 - b2) / b);
        std::snprintf(line, sizeof line, "  \"device_time_us\": {\"built\": %.2f, \"captured\": %.2f},\n", b, c);
        json += line;
        TRY(gc_exec_destroy(eb));
        TRY(gc_exec_destroy(ec));
        TRY(gc_graph_destroy(gb));
        TRY(gc_graph_destroy(gcap));
    }

    // 3. Instantiate and update, 1000 nodes: every node's factor changes
    //    (g -> g2), or only the last node's (g -> g3).
    {
        gc_graph *g = captured_chain(1000, 2.0f), *g2 = captured_chain(1000, 4.0f),
                 *g3 = captured_chain(1000, 2.0f, 3.0f);
        CUgraph rawg, rawg2;
        TRY(gc_graph_raw(g, (void **)&rawg));
        TRY(gc_graph_raw(g2, (void **)&rawg2));
        std::vector<double> ours, theirs, all, one, raw_update;
        for (int i = 0; i < 21; i++) {
            auto t = clk::now();
            gc_exec *e;
            TRY(gc_graph_instantiate(g, 0, &e));
            ours.push_back(ns_since(t));
            t = clk::now();
            CUgraphExec re;
            CU(cuGraphInstantiateWithFlags(&re, rawg, 0));
            theirs.push_back(ns_since(t));
            CUgraphExecUpdateResultInfo info;
            t = clk::now();
            CU(cuGraphExecUpdate(re, rawg2, &info));
            raw_update.push_back(ns_since(t));
            CU(cuGraphExecDestroy(re));
            t = clk::now();
            TRY(gc_exec_update(e, g2));
            all.push_back(ns_since(t));
            TRY(gc_exec_update(e, g));
            t = clk::now();
            TRY(gc_exec_update(e, g3));
            one.push_back(ns_since(t));
            TRY(gc_exec_destroy(e));
        }
        double a = median(ours), b = median(theirs), u = median(all), o = median(one), r = median(raw_update);
        std::printf("\ninstantiate 1000 nodes: gc %.0f us, cuGraphInstantiateWithFlags %.0f us (ratio %.3f)\n",
                    a / 1e3, b / 1e3, a / b);
        std::printf("update 1000 nodes, all changed: gc_exec_update %.0f us (%.1fx faster than re-instantiating), "
                    "raw cuGraphExecUpdate %.0f us\n", u / 1e3, a / u, r / 1e3);
        std::printf("update 1000 nodes, one changed: gc_exec_update %.1f us (%.1fx faster than re-instantiating)\n",
                    o / 1e3, a / o);
        std::snprintf(line, sizeof line,
                      "  \"instantiate_1000_us\": {\"gc\": %.1f, \"raw\": %.1f},\n"
                      "  \"update_1000_us\": {\"all_changed\": %.1f, \"one_changed\": %.1f, \"raw_cuGraphExecUpdate\": %.1f},\n",
                      a / 1e3, b / 1e3, u / 1e3, o / 1e3, r / 1e3);
        json += line;
        TRY(gc_graph_destroy(g));
        TRY(gc_graph_destroy(g2));
        TRY(gc_graph_destroy(g3));
    }

    // 4. The 100-pair forward/backward chain over 1024 floats.
    {
        float *d;
        TRY(gc_pool_alloc(pool, 1024 * sizeof(float), (void **)&d));
        TRY(gc_op_fill(stream, d, 1024, 1.0f));
        gc_graph *g;
        TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
        for (int i = 0; i < 100; i++) {
            TRY(gc_op_scale(stream, d, d, 1024, 2.0f));
            TRY(gc_op_scale(stream, d, d, 1024, 0.5f));
        }
        TRY(gc_capture_end(stream, &g));
        gc_exec *e;
        TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &e));
        std::vector<double> eager, replay;
        for (int r = 0; r < 300; r++) {
            auto t = clk::now();
            for (int i = 0; i < 100; i++) {
                TRY(gc_op_scale(stream, d, d, 1024, 2.0f));
                TRY(gc_op_scale(stream, d, d, 1024, 0.5f));
            }
            TRY(gc_stream_synchronize(stream));
            eager.push_back(ns_since(t) / 1e3);
            t = clk::now();
            TRY(gc_exec_launch(e, stream));
            TRY(gc_stream_synchronize(stream));
            replay.push_back(ns_since(t) / 1e3);
        }
        double a = median(eager), b = median(replay);
        std::printf("\n100 forward/backward pairs, 1024 floats: eager %.1f us, graph %.1f us: %.1fx faster\n", a, b, a / b);
        std::snprintf(line, sizeof line, "  \"chain_100_pairs_us\": {\"eager\": %.1f, \"graph\": %.1f}", a, b);
        json += line;
        TRY(gc_exec_destroy(e));
        TRY(gc_graph_destroy(g));
    }
    // 5. Fusion: the 100-pair chain over 1024 floats and over 64 Mi floats,
    //    fused graph vs unfused graph vs eager, GPU time by events.
    {
        json += ",\n  \"fusion\": [\n";
        std::printf("\nfusion, 100 forward/backward pairs (GPU time per chain, median):\n");
        std::printf("%12s %12s %12s %12s %10s %14s\n", "floats", "eager", "graph", "fused", "fused/graph",
                    "fused BW/copy");
        uint64_t counts[] = {1024, 64ull << 20};
        for (int ci = 0; ci < 2; ci++) {
            uint64_t n = counts[ci];
            float *d;
            TRY(gc_pool_alloc(pool, n * sizeof(float), (void **)&d));
            TRY(gc_op_fill(stream, d, n, 1.0f));
            gc_graph *g;
            TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
            for (int i = 0; i < 100; i++) {
                TRY(gc_op_scale(stream, d, d, n, 2.0f));
                TRY(gc_op_scale(stream, d, d, n, 0.5f));
            }
            TRY(gc_capture_end(stream, &g));
            gc_exec *plain, *fused;
            TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &plain));
            TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD | GC_INSTANTIATE_FUSE_ELEMENTWISE, &fused));
            int reps = n > 4096 ? 3 : 50;
            double t_plain = device_us(plain, reps), t_fused = device_us(fused, reps);
            // Eager: the same 200 launches, timed with events.
            CUevent a, b;
            CU(cuEventCreate(&a, 0));
            CU(cuEventCreate(&b, 0));
            std::vector<double> te;
            for (int r = 0; r < 5; r++) {
                CU(cuEventRecord(a, raw_stream));
                for (int i = 0; i < 100; i++) {
                    TRY(gc_op_scale(stream, d, d, n, 2.0f));
                    TRY(gc_op_scale(stream, d, d, n, 0.5f));
                }
                CU(cuEventRecord(b, raw_stream));
                CU(cuEventSynchronize(b));
                float ms;
                CU(cuEventElapsedTime(&ms, a, b));
                te.push_back(ms * 1000.0);
            }
            // One device-to-device copy of the same buffer: the bandwidth bar.
            float *d2;
            TRY(gc_pool_alloc(pool, n * sizeof(float), (void **)&d2));
            std::vector<double> tc;
            for (int r = 0; r < 5; r++) {
                CU(cuEventRecord(a, raw_stream));
                CU(cuMemcpyDtoDAsync((CUdeviceptr)d2, (CUdeviceptr)d, n * sizeof(float), raw_stream));
                CU(cuEventRecord(b, raw_stream));
                CU(cuEventSynchronize(b));
                float ms;
                CU(cuEventElapsedTime(&ms, a, b));
                tc.push_back(ms * 1000.0);
            }
            double t_eager = median(te), t_copy = median(tc);
            std::printf("%12llu %9.1f us %9.1f us %9.1f us %9.1fx %13.2f\n", (unsigned long long)n, t_eager, t_plain,
                        t_fused, t_plain / t_fused, t_copy / t_fused);
            std::snprintf(line, sizeof line,
                          "    {\"floats\": %llu, \"eager_us\": %.2f, \"graph_us\": %.2f, \"fused_us\": %.2f, "
                          "\"copy_us\": %.2f}%s\n",
                          (unsigned long long)n, t_eager, t_plain, t_fused, t_copy, ci == 0 ? "," : "");
            json += line;
            cuEventDestroy(a);
            cuEventDestroy(b);
            TRY(gc_exec_destroy(plain));
            TRY(gc_exec_destroy(fused));
            TRY(gc_graph_destroy(g));
            TRY(gc_pool_free(pool, d));
            TRY(gc_pool_free(pool, d2));
        }
        json += "  ]\n";
    }
    json += "}\n";
    const char *out = std::getenv("OUT");
    std::string path = std::string(out ? out : ".") + "/graph_bench.json";
    if (FILE *f = std::fopen(path.c_str(), "w")) {
        std::fputs(json.c_str(), f);
        std::fclose(f);
    }
    TRY(gc_function_destroy(scale));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
