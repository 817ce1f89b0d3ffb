/* Leak check through the C ABI (needs a GPU): every kind of object is
 * created and destroyed N times (argv[1], default 10,000), after a warm-up
 * of WARMUP cycles; host memory (resident set, /proc/self/statm) and
 * device memory (free bytes, cuMemGetInfo via gc_context_info) must come
 * back to their level after the warm-up, within HOST_TOLERANCE and
 * DEVICE_TOLERANCE per kind (so a leak of ~100 bytes or more per cycle on
 * the host, or of one pool page on the device, fails). Built without
 * sanitizers (ASan's quarantine would hide the resident set) by
 * tests/gpu/leaks.rs; prints a table and "leaks: N passed, M failed". */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

#define WARMUP 200
#define HOST_TOLERANCE (1u << 20)   /* 1 MiB of resident set per kind */
#define DEVICE_TOLERANCE (2u << 20) /* one 2 MiB pool page per kind */

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry noop()\n{\n ret;\n}\n";

static gc_context *ctx;
static gc_stream *s;
static gc_pool *pool;
static gc_module *mod;
static gc_function *noop, *fill;
static void *buf;

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f == NULL) return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static uint64_t device_free(void) {
    gc_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (gc_context_info(ctx, &info) != GC_SUCCESS) return 0;
    return info.free_bytes;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One create/destroy cycle of a kind; returns 0 on success. */
typedef int (*cycle_fn)(int i);

#define TRY(call)                                                                \
    do {                                                                         \
        gc_status st_ = (call);                                                  \
        if (st_ != GC_SUCCESS) {                                                 \
            fprintf(stderr, "%s: %s (%s)\n", #call, gc_status_name((int)st_), gc_last_error()); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

static int cycle_context(int i) {
    (void)i;
    gc_context *c;
    TRY(gc_context_create(0, &c));
    TRY(gc_context_destroy(c));
    return 0;
}

static int cycle_stream(int i) {
    gc_stream *t, *w;
    void *raw;
    TRY(gc_stream_create(ctx, &t));
    if (i % 2) TRY(gc_memset_async(t, buf, 0, 256));
    TRY(gc_stream_raw(t, &raw));
    TRY(gc_stream_wrap(ctx, raw, &w));
    TRY(gc_stream_wait_stream(w, s));
    TRY(gc_stream_destroy(w));
    TRY(gc_stream_destroy(t));
    return 0;
}

static int cycle_event(int i) {
    gc_event *e, *w;
    void *raw;
    int done;
    TRY(gc_event_create(ctx, (i % 2) ? GC_EVENT_DISABLE_TIMING : 0, &e));
    TRY(gc_event_record(e, s, 0));
    TRY(gc_event_raw(e, &raw));
    TRY(gc_event_wrap(ctx, raw, &w));
    TRY(gc_stream_wait_event(s, w, 0));
    TRY(gc_event_query(w, &done));
    TRY(gc_event_destroy(w));
    TRY(gc_event_destroy(e));
    if (i % 100 == 99) TRY(gc_stream_synchronize(s));
    return 0;
}

static int cycle_pool(int i) {
    gc_pool *p;
    gc_pool_options o;
    void *a;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.initial_bytes = (i % 2) ? (2u << 20) : 0; /* every other pool maps a page */
    TRY(gc_pool_create(ctx, &o, &p));
    TRY(gc_pool_alloc(p, 4096, &a));
    TRY(gc_pool_free(p, a));
    TRY(gc_pool_destroy(p));
    return 0;
}

static int cycle_block(int i) {
    void *a;
    TRY(gc_pool_alloc(pool, 256u << (i % 12), &a));
    TRY(gc_pool_free(pool, a));
    if (i % 1000 == 999) TRY(gc_pool_trim(pool));
    return 0;
}

static int cycle_host(int i) {
    void *h;
    TRY(gc_host_alloc(ctx, 4096u << (i % 4), &h));
    TRY(gc_host_free(ctx, h));
    return 0;
}

static int cycle_module(int i) {
    (void)i;
    gc_module *m;
    gc_function *f;
    TRY(gc_module_load(ctx, PTX, strlen(PTX), &m));
    TRY(gc_module_function(m, "noop", &f));
    TRY(gc_module_destroy(m));
    TRY(gc_function_destroy(f));
    return 0;
}

static int cycle_function(int i) {
    gc_function *f, *w;
    void *raw;
    TRY(gc_kernel_builtin(ctx, (i % 2) ? "gc_fill_f32" : "gc_scale_f32", &f));
    TRY(gc_function_raw(f, &raw));
    TRY(gc_function_wrap(ctx, raw, "wrapped", &w));
    TRY(gc_function_destroy(w));
    TRY(gc_function_destroy(f));
    TRY(gc_module_function(mod, "noop", &f));
    TRY(gc_function_destroy(f));
    return 0;
}

static int cycle_graph(int i) {
    (void)i;
    gc_graph *g, *child;
    gc_node a, b;
    gc_dim3 one = {1, 1, 1};
    uint64_t y = (uint64_t)(uintptr_t)buf, n = 64;
    float v = 1.0f;
    void *args[3] = {&y, &n, &v};
    TRY(gc_graph_create(ctx, &g));
    TRY(gc_graph_create(ctx, &child));
    TRY(gc_graph_add_kernel(child, noop, one, one, 0, NULL, NULL, 0, NULL));
    TRY(gc_graph_add_kernel(g, fill, one, one, 0, args, NULL, 0, &a));
    TRY(gc_graph_add_memset(g, buf, 0, 256, &a, 1, &b));
    TRY(gc_graph_add_child(g, child, &b, 1, NULL));
    TRY(gc_graph_add_empty(g, NULL, 0, &a));
    TRY(gc_graph_add_dependency(g, b, a));
    TRY(gc_graph_add_memset_elem(g, buf, 0, 4, 64, &b, 1, NULL));
    gc_graph *copy, *view;
    void *raw;
    TRY(gc_graph_clone(g, &copy));
    TRY(gc_graph_raw(copy, &raw));
    TRY(gc_graph_wrap(ctx, raw, GC_GRAPH_WRAP_BORROW, &view));
    TRY(gc_graph_destroy(view));
    TRY(gc_graph_destroy(copy));
    TRY(gc_graph_destroy(child));
    TRY(gc_graph_destroy(g));
    return 0;
}

static void host_noop(void *user) {
    (void)user;
}

static int cycle_capture(int i) {
    gc_graph *g;
    gc_event *e;
    void *a;
    TRY(gc_event_create(ctx, GC_EVENT_DISABLE_TIMING, &e));
    TRY(gc_capture_begin(s, pool, GC_CAPTURE_THREAD_LOCAL));
    TRY(gc_pool_alloc(pool, 4096u << (i % 4), &a));
    TRY(gc_op_fill(s, a, 256, 1.0f));
    TRY(gc_event_record(e, s, GC_EVENT_EXTERNAL)); /* the graph keeps e */
    TRY(gc_launch_host_func(s, host_noop, NULL));
    TRY(gc_memset_async_elem(s, a, 0, 2, 128));
    TRY(gc_capture_end(s, &g));
    TRY(gc_event_destroy(e));
    TRY(gc_graph_destroy(g));
    TRY(gc_pool_free(pool, a));
    return 0;
}

static gc_graph *exec_source;
static int cycle_exec(int i) {
    gc_exec *e;
    TRY(gc_graph_instantiate(exec_source, (i % 2) ? GC_INSTANTIATE_UPLOAD : 0, &e));
    TRY(gc_exec_launch(e, s));
    TRY(gc_exec_update(e, exec_source));
    TRY(gc_exec_destroy(e));
    if (i % 100 == 99) TRY(gc_stream_synchronize(s));
    return 0;
}

static gc_status record(gc_stream *st, uint32_t batch, void *user) {
    (void)user;
    return gc_op_fill(st, buf, batch * 64u, 2.0f);
}

static int cycle_runner(int i) {
    gc_runner *r;
    uint32_t bucket, sizes[1] = {4};
    gc_runner_statistics rs;
    memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    TRY(gc_runner_create(ctx, (i % 2) ? pool : NULL, &r));
    TRY(gc_runner_capture(r, sizes, 1, record, NULL, 0));
    TRY(gc_runner_replay(r, 3, s, &bucket));
    TRY(gc_runner_stats(r, &rs));
    TRY(gc_runner_destroy(r));
    if (i % 100 == 99) TRY(gc_stream_synchronize(s));
    return 0;
}

static void measure(const char *kind, cycle_fn fn, int cycles) {
    check_case = kind;
    for (int i = 0; i < WARMUP; i++) {
        if (fn(i) != 0) {
            CHECK(0 == "every warm-up cycle succeeds"[0]);
            return;
        }
    }
    EXPECT_OK(gc_stream_synchronize(s));
    EXPECT_OK(gc_context_synchronize(ctx));
    long rss0 = rss_bytes();
    uint64_t dev0 = device_free();
    double t0 = now();
    int done = 0;
    for (int i = 0; i < cycles; i++, done++) {
        if (fn(i) != 0) {
            CHECK(0 == "every cycle succeeds"[0]);
            break;
        }
    }
    EXPECT_OK(gc_stream_synchronize(s));
    EXPECT_OK(gc_context_synchronize(ctx));
    double secs = now() - t0;
    long rss1 = rss_bytes();
    uint64_t dev1 = device_free();
    long host_growth = rss1 - rss0;
    long long dev_loss = (long long)dev0 - (long long)dev1;
    printf("%-9s %6d cycles %7.2f s  host %+8ld KiB  device %+8lld KiB\n", kind, done, secs,
           host_growth / 1024, -dev_loss / 1024);
    CHECK(done == cycles);
    CHECK(host_growth <= (long)HOST_TOLERANCE);
    CHECK(dev_loss <= (long long)DEVICE_TOLERANCE);
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 10000;
    gc_dim3 one = {1, 1, 1};
    if (gc_context_create(0, &ctx) != GC_SUCCESS || gc_stream_create(ctx, &s) != GC_SUCCESS ||
        gc_pool_create(ctx, NULL, &pool) != GC_SUCCESS || gc_pool_alloc(pool, 4096, &buf) != GC_SUCCESS ||
        gc_module_load(ctx, PTX, strlen(PTX), &mod) != GC_SUCCESS ||
        gc_module_function(mod, "noop", &noop) != GC_SUCCESS ||
        gc_kernel_builtin(ctx, "gc_fill_f32", &fill) != GC_SUCCESS ||
        gc_graph_create(ctx, &exec_source) != GC_SUCCESS ||
        gc_graph_add_kernel(exec_source, noop, one, one, 0, NULL, NULL, 0, NULL) != GC_SUCCESS) {
        fprintf(stderr, "leaks: setup failed: %s\n", gc_last_error());
        return 2;
    }
    long rss_start = rss_bytes();
    uint64_t dev_start = device_free();
    printf("leaks: %d cycles per kind after %d warm-up cycles; tolerance %u KiB host, %u KiB device\n", cycles,
           WARMUP, HOST_TOLERANCE / 1024, DEVICE_TOLERANCE / 1024);
    measure("context", cycle_context, cycles);
    measure("stream", cycle_stream, cycles);
    measure("event", cycle_event, cycles);
    measure("pool", cycle_pool, cycles);
    measure("block", cycle_block, cycles);
    measure("host", cycle_host, cycles);
    measure("module", cycle_module, cycles);
    measure("function", cycle_function, cycles);
    measure("graph", cycle_graph, cycles);
    measure("capture", cycle_capture, cycles);
    measure("exec", cycle_exec, cycles);
    measure("runner", cycle_runner, cycles);
    EXPECT_OK(gc_pool_trim(pool));
    printf("all kinds: host %+ld KiB, device %+lld KiB since setup\n", (rss_bytes() - rss_start) / 1024,
           ((long long)device_free() - (long long)dev_start) / 1024);
    gc_graph_destroy(exec_source);
    gc_function_destroy(fill);
    gc_function_destroy(noop);
    gc_module_destroy(mod);
    gc_pool_destroy(pool);
    gc_stream_destroy(s);
    gc_context_destroy(ctx);
    return check_summary("leaks");
}
