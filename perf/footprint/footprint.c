/* The calls perf/footprint/footprint.py measures, in loops: over the
 * no-op driver built with -DNOOP_EVICT, each driver call evicts the L1
 * caches, so under callgrind's cache simulation graphcore's L1 misses per
 * call count the cache lines its own code and data touch.
 *
 *   footprint build|build10|capture|capture1|launch|instantiate|instantiate_captured|update|cache_hit|cache_lookup|launch_cycle ITERATIONS
 *
 * build: a graph of 100 kernel nodes in a chain (create, add, destroy);
 * build10: the same with 10 nodes; capture: begin, 100 launches, end,
 * destroy; capture1: the same with one launch; launch: 100 launches of a
 * one-node exec; instantiate: that one-node graph instantiated (and the
 * exec destroyed); instantiate_captured: the same for a captured one-node
 * graph, as graph_perf_scaling's instantiate row; update: an exec of a captured one-node graph updated
 * to another captured one and back, as graph_perf_scaling's update row.
 * cache_hit: 100 gc_cache_launch hits, each on another of a cache's 1000
 * entries (12-byte keys, one captured kernel node each, as perf/c/cache_bench's
 * a); cache_lookup: the same with gc_cache_entry_info; launch_cycle: 100
 * gc_exec_launch, each on another of 1000 execs of one captured graph (in
 * the hits' order). */
#include "../c/bench.h"

#define ENTRIES 1000

static gc_function *record_fn;

/* A cache entry's work: one launch of the empty kernel. */
static gc_status record_one(gc_stream *s, const void *key, size_t len, void *user) {
    (void)key, (void)len, (void)user;
    uint32_t t = 1;
    void *a[] = {&t};
    gc_dim3 one = {1, 1, 1};
    return gc_launch(record_fn, s, one, one, 0, a);
}

static const char PTX[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                          ".visible .entry e(.param .u32 t)\n{\n ret;\n}\n";

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: footprint build|build10|capture|capture1|launch|instantiate|instantiate_captured|update|"
                        "cache_hit|cache_lookup|launch_cycle ITERATIONS\n");
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
    /* For cache_*: a cache of 1000 entries; for launch_cycle: 1000 execs. */
    static uint8_t keys[ENTRIES][12];
    static gc_exec *cycle[ENTRIES];
    gc_cache *cache = NULL;
    int cycled = !strcmp(what, "launch_cycle"), cached = !strncmp(what, "cache_", 6);
    if (cached) {
        gc_cache_options o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.max_entries = ENTRIES;
        o.max_bytes = 1ull << 34;
        record_fn = fn;
        TRY(gc_cache_create(ctx, &o, &cache));
        for (uint32_t k = 0; k < ENTRIES; k++) {
            memcpy(keys[k], "shape:\0\0\0\0\0\0", 12);
            memcpy(keys[k] + 6, &k, 4);
            TRY(gc_cache_launch(cache, keys[k], 12, s, NULL, 0, record_one, NULL, NULL));
        }
    }
    for (int k = 0; cycled && k < ENTRIES; k++) TRY(gc_graph_instantiate(c[0], 0, &cycle[k]));
    gc_cache_entry info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
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
        } else if (cycled || cached) {
            for (int i = 0; i < len; i++) {
                int k = ((it * len + i) * 13) % ENTRIES;
                if (cycled)
                    TRY(gc_exec_launch(cycle[k], s));
                else if (!strcmp(what, "cache_hit"))
                    TRY(gc_cache_launch(cache, keys[k], 12, s, NULL, 0, NULL, NULL, NULL));
                else
                    TRY(gc_cache_entry_info(cache, keys[k], 12, &info));
            }
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
    if (cache) TRY(gc_cache_destroy(cache));
    for (int k = 0; cycled && k < ENTRIES; k++) TRY(gc_exec_destroy(cycle[k]));
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
