/* graphcore's graph calls alone, each in a tight loop on the real driver:
 * what one call costs when nothing else runs between calls (warm caches),
 * next to graph_perf_scaling's interleaved rounds (cold caches after the
 * other side's work). ns per capture (begin, N launches, end; the graph's
 * destroy not counted), per build (create and N kernel nodes in a chain;
 * destroy not counted), per instantiate, update, pool alloc+free pair.
 *
 *   graph_calls [iterations [length]]
 *
 * Iterations default to 20000 (captures and builds of length N run
 * iterations / N times); the lengths are 1 and 100 unless one is given. */
#include "bench.h"

/* An empty kernel taking one 32-bit argument (PTX ISA 8.0, sm_75 on). */
static const char PTX[] =
    ".version 8.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry gc_calls_empty(.param .u32 gc_calls_empty_tag)\n"
    "{\n"
    "    ret;\n"
    "}\n";

static gc_context *ctx;
static gc_stream *stream;
static gc_function *fn;

/* ns per capture of `len` launches, over `n` captures. */
static double capture_ns(int len, int n) {
    double untimed = 0, t0 = bench_now_ns();
    for (int i = 0; i < n; i++) {
        gc_graph *g = bench_capture_chain(stream, fn, len, 1);
        double a = bench_now_ns();
        TRY(gc_graph_destroy(g));
        untimed += bench_now_ns() - a;
    }
    return (bench_now_ns() - t0 - untimed) / n;
}

/* ns per build of a chain of `len` kernel nodes, over `n` builds. */
static double build_ns(int len, int n) {
    double untimed = 0, t0 = bench_now_ns();
    for (int i = 0; i < n; i++) {
        gc_graph *g = bench_build_chain(ctx, fn, len, 1);
        double a = bench_now_ns();
        TRY(gc_graph_destroy(g));
        untimed += bench_now_ns() - a;
    }
    return (bench_now_ns() - t0 - untimed) / n;
}

/* A captured one-kernel graph whose argument is `tag`. */
static gc_graph *one_kernel(uint32_t tag) { return bench_capture_chain(stream, fn, 1, tag); }

int main(int argc, char **argv) {
    ctx = bench_start("graph_calls");
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int only = argc > 2 ? atoi(argv[2]) : 0;
    if (iters < 100) iters = 100;
    gc_module *module;
    gc_pool *pool;
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_module_load(ctx, PTX, sizeof PTX - 1, &module));
    TRY(gc_module_function(module, "gc_calls_empty", &fn));
    TRY(gc_pool_create(ctx, NULL, &pool));

    const int lengths[] = {1, 100};
    for (int l = 0; l < 2; l++) {
        int len = only > 0 ? only : lengths[l];
        printf("capture of %d launches: %.1f ns\n", len, capture_ns(len, iters / len > 0 ? iters / len : 1));
        printf("build of %d nodes: %.1f ns\n", len, build_ns(len, iters / len > 0 ? iters / len : 1));
        if (only > 0) break;
    }

    gc_graph *g = one_kernel(1), *g2 = one_kernel(2);
    gc_exec *e;
    int n = iters / 10;
    double untimed = 0, t0 = bench_now_ns();
    for (int i = 0; i < n; i++) {
        TRY(gc_graph_instantiate(g, 0, &e));
        double a = bench_now_ns();
        TRY(gc_exec_destroy(e));
        untimed += bench_now_ns() - a;
    }
    printf("instantiate (1 node): %.1f ns\n", (bench_now_ns() - t0 - untimed) / n);
    TRY(gc_graph_instantiate(g, 0, &e));
    t0 = bench_now_ns();
    for (int i = 0; i < iters / 2; i++) {
        TRY(gc_exec_update(e, g2));
        TRY(gc_exec_update(e, g));
    }
    printf("update (1 node): %.1f ns\n", (bench_now_ns() - t0) / (iters / 2 * 2));

    void *p;
    TRY(gc_pool_alloc(pool, 4096, &p));
    TRY(gc_pool_free(pool, p));
    t0 = bench_now_ns();
    for (int i = 0; i < iters; i++) {
        TRY(gc_pool_alloc(pool, 4096, &p));
        TRY(gc_pool_free(pool, p));
    }
    printf("pool alloc+free, 4096 bytes: %.1f ns\n", (bench_now_ns() - t0) / iters);

    TRY(gc_stream_synchronize(stream));
    TRY(gc_exec_destroy(e));
    TRY(gc_graph_destroy(g));
    TRY(gc_graph_destroy(g2));
    TRY(gc_pool_destroy(pool));
    TRY(gc_function_destroy(fn));
    TRY(gc_module_destroy(module));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
