/* The calls perf/footprint/footprint.py measures, in loops: over the
 * no-op driver built with -DNOOP_EVICT, each driver call evicts the L1
 * caches, so under callgrind's cache simulation graphcore's L1 misses per
 * call count the cache lines its own code and data touch.
 *
 *   footprint build|build10|capture|capture1|launch|instantiate|instantiate_captured|update ITERATIONS
 *
 * build: a graph of 100 kernel nodes in a chain (create, add, destroy);
 * build10: the same with 10 nodes; capture: begin, 100 launches, end,
 * destroy; capture1: the same with one launch; launch: 100 launches of a
 * one-node exec; instantiate: that one-node graph instantiated (and the
 * exec destroyed); instantiate_captured: the same for a captured one-node
 * graph, as graph_perf_scaling's instantiate row; update: an exec of a captured one-node graph updated
 * to another captured one and back, as graph_perf_scaling's update row. */
#include "../c/bench.h"

static const char PTX[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                          ".visible .entry e(.param .u32 t)\n{\n ret;\n}\n";

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: footprint build|build10|capture|capture1|launch|instantiate|instantiate_captured|update ITERATIONS\n");
        return 2;
    }
    const char *what = argv[1];
    int n = atoi(argv[2]), len = 100;
    gc_context *ctx = bench_start("footprint");
    gc_module *m;
    gc_function *fn;
    gc_stream *s;
    TRY(gc_module_load(ctx, PTX, sizeof PTX, &m));
    TRY(gc_module_function(m, "e", &fn));
    TRY(gc_stream_create(ctx, &s));
    uint32_t tag = 1;
    void *args[] = {&tag};
    gc_dim3 one = {1, 1, 1};
    gc_graph *g0;
    gc_exec *e0;
    TRY(gc_graph_create(ctx, &g0));
    TRY(gc_graph_add_kernel(g0, fn, one, one, 0, args, NULL, 0, NULL));
    TRY(gc_graph_instantiate(g0, 0, &e0));
    /* Two captured one-node graphs whose node differs, and an exec of the first. */
    gc_graph *c[2];
    gc_exec *ec;
    for (int k = 0; k < 2; k++) {
        uint32_t t = 1 + (uint32_t)k;
        void *a[] = {&t};
        TRY(gc_capture_begin(s, NULL, GC_CAPTURE_THREAD_LOCAL));
        TRY(gc_launch(fn, s, one, one, 0, a));
        TRY(gc_capture_end(s, &c[k]));
    }
    TRY(gc_graph_instantiate(c[0], 0, &ec));
    for (int it = 0; it < n; it++) {
        gc_graph *g;
        gc_node prev, node;
        if (!strcmp(what, "build") || !strcmp(what, "build10")) {
            int nodes = strcmp(what, "build") ? 10 : len;
            TRY(gc_graph_create(ctx, &g));
            for (int i = 0; i < nodes; i++) {
                TRY(gc_graph_add_kernel(g, fn, one, one, 0, args, i ? &prev : NULL, i ? 1 : 0, &node));
                prev = node;
            }
            TRY(gc_graph_destroy(g));
        } else if (!strcmp(what, "capture") || !strcmp(what, "capture1")) {
            int launches = strcmp(what, "capture") ? 1 : len;
            TRY(gc_capture_begin(s, NULL, GC_CAPTURE_THREAD_LOCAL));
            for (int i = 0; i < launches; i++) TRY(gc_launch(fn, s, one, one, 0, args));
            TRY(gc_capture_end(s, &g));
            TRY(gc_graph_destroy(g));
        } else if (!strcmp(what, "checked_build")) {
            for (int i = 0; i < len; i++) {
                void *raw;
                TRY(gc_graph_raw(g0, &raw));
                TRY(gc_function_raw(fn, &raw));
                CU(cu.CtxGetCurrent((CUcontext *)&raw));
                CU(cu.GraphLaunch(NULL, NULL)); /* evicts, as the driver's add would */
            }
        } else if (!strcmp(what, "launch")) {
            for (int i = 0; i < len; i++) TRY(gc_exec_launch(e0, s));
        } else if (!strcmp(what, "instantiate") || !strcmp(what, "instantiate_captured")) {
            gc_exec *e;
            TRY(gc_graph_instantiate(strcmp(what, "instantiate") ? c[0] : g0, 0, &e));
            TRY(gc_exec_destroy(e));
        } else if (!strcmp(what, "update")) {
            TRY(gc_exec_update(ec, c[1]));
            TRY(gc_exec_update(ec, c[0]));
        } else {
            fprintf(stderr, "footprint: unknown operation '%s'\n", what);
            return 2;
        }
    }
    TRY(gc_exec_destroy(ec));
    TRY(gc_graph_destroy(c[0]));
    TRY(gc_graph_destroy(c[1]));
    TRY(gc_exec_destroy(e0));
    TRY(gc_graph_destroy(g0));
    TRY(gc_stream_destroy(s));
    TRY(gc_function_destroy(fn));
    TRY(gc_module_destroy(m));
    TRY(gc_context_destroy(ctx));
    return 0;
}
