/* The bad-input suite: every function of graphcore.h, called with what a
 * careless or hostile caller passes — NULL for each pointer argument, a
 * destroyed handle, a handle of another kind, a pointer that is not a
 * handle at all, zero, huge and overflowing sizes, pointers the pool did
 * not hand out, copies that overrun their pool block, launch geometry with
 * a zero or over-limit dimension, unknown names, malformed images, and
 * misuse sequences (end without begin, launch after destroy, update with
 * another topology, destroying a pool with live graphs...). Each case
 * checks the status, that out-parameters stay unwritten, and that the
 * objects involved still work afterwards.
 *
 * Without a driver (CI) the argument paths run: handles are stand-ins that
 * were never issued, and everything that needs the driver must say
 * GC_ERROR_NO_DRIVER. With one (the GPU machine, GC_GPU=1) every case runs
 * on real objects.
 *
 * Usage: bad_input --list | bad_input SECTION | bad_input (all sections).
 * tests/c_abi.rs runs each section in its own process (a crash in one is
 * reported as that section's failure) and checks that the "covers gc_..."
 * lines name every function of the header. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

enum kind { K_CONTEXT = 1, K_STREAM, K_POOL, K_MODULE, K_FUNCTION, K_GRAPH, K_EXEC, K_RUNNER, K_EVENT, K_CACHE };
static const char *const KIND_NAME[] = {"", "gc_context", "gc_stream", "gc_pool", "gc_module",
                                        "gc_function", "gc_graph", "gc_exec", "gc_runner", "gc_event",
                                        "gc_cache"};

/* A handle value with `kind` in its top byte, as graphcore encodes them. */
static void *forged(int kind, uint32_t index, uint32_t generation) {
    return (void *)(uintptr_t)(((uint64_t)kind << 56) | ((uint64_t)index << 32) | generation);
}

static const char *GOOD_PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry noop()\n{\n ret;\n}\n"
    ".visible .entry add_one(.param .u64 p, .param .u32 n)\n{\n"
    " .reg .pred %p;\n .reg .b32 %r<6>;\n .reg .f32 %f<3>;\n .reg .b64 %rd<4>;\n"
    " ld.param.u64 %rd1, [p];\n ld.param.u32 %r1, [n];\n"
    " mov.u32 %r2, %ctaid.x;\n mov.u32 %r3, %ntid.x;\n mov.u32 %r4, %tid.x;\n"
    " mad.lo.s32 %r5, %r2, %r3, %r4;\n setp.ge.u32 %p, %r5, %r1;\n @%p bra DONE;\n"
    " cvta.to.global.u64 %rd2, %rd1;\n mul.wide.u32 %rd3, %r5, 4;\n add.s64 %rd2, %rd2, %rd3;\n"
    " ld.global.f32 %f1, [%rd2];\n add.f32 %f2, %f1, 0f3F800000;\n st.global.f32 [%rd2], %f2;\n"
    "DONE:\n ret;\n}\n";

#define BUF_BYTES 4096u
#define SMALL 16u /* floats used by the ops cases */

/* What the cases run against: real objects with a driver, stand-ins (never
 * issued handles, fake addresses) without. */
static struct fixture {
    int gpu;
    gc_context *ctx;
    gc_stream *s, *s2;
    gc_pool *pool;
    void *buf, *buf2; /* BUF_BYTES each, from `pool` */
    void *host;       /* 2 * BUF_BYTES of pinned host memory */
    gc_module *mod;
    gc_function *noop, *add_one, *fill;
    gc_graph *graph; /* one noop kernel node */
    gc_node node;
    gc_exec *exec; /* from `graph` */
    gc_runner *runner;
    gc_event *ev;    /* an event that records times */
    gc_cache *cache; /* one entry, key "fill" (record_cache_fill on buf2) */
    void *dead[11];  /* a destroyed handle of each kind */
    void *alive[11]; /* a live handle of each kind */
} fx;

static gc_status record_fill(gc_stream *s, uint32_t batch, void *user) {
    return gc_op_fill(s, (float *)user, (uint64_t)batch * 64u, 1.0f);
}

static gc_status record_cache_fill(gc_stream *s, const void *key, size_t len, void *user) {
    (void)key;
    return gc_op_fill(s, (float *)user, (uint64_t)len * 16u, 2.0f);
}

static void fixture_gpu(void) {
    gc_pool_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.initial_bytes = 4u << 20;
    o.max_bytes = 64u << 20;
    int ok = gc_context_create(0, &fx.ctx) == GC_SUCCESS && gc_stream_create(fx.ctx, &fx.s) == GC_SUCCESS &&
             gc_stream_create(fx.ctx, &fx.s2) == GC_SUCCESS && gc_pool_create(fx.ctx, &o, &fx.pool) == GC_SUCCESS &&
             gc_pool_alloc(fx.pool, BUF_BYTES, &fx.buf) == GC_SUCCESS &&
             gc_pool_alloc(fx.pool, BUF_BYTES, &fx.buf2) == GC_SUCCESS &&
             gc_host_alloc(fx.ctx, 2 * BUF_BYTES, &fx.host) == GC_SUCCESS &&
             gc_module_load(fx.ctx, GOOD_PTX, strlen(GOOD_PTX), &fx.mod) == GC_SUCCESS &&
             gc_module_function(fx.mod, "noop", &fx.noop) == GC_SUCCESS &&
             gc_module_function(fx.mod, "add_one", &fx.add_one) == GC_SUCCESS &&
             gc_kernel_builtin(fx.ctx, "gc_fill_f32", &fx.fill) == GC_SUCCESS &&
             gc_graph_create(fx.ctx, &fx.graph) == GC_SUCCESS && gc_event_create(fx.ctx, 0, &fx.ev) == GC_SUCCESS;
    gc_dim3 one = {1, 1, 1};
    ok = ok && gc_graph_add_kernel(fx.graph, fx.noop, one, one, 0, NULL, NULL, 0, &fx.node) == GC_SUCCESS &&
         gc_graph_instantiate(fx.graph, 0, &fx.exec) == GC_SUCCESS &&
         gc_runner_create(fx.ctx, NULL, &fx.runner) == GC_SUCCESS;
    uint32_t buckets[2] = {1, 4};
    ok = ok && gc_runner_capture(fx.runner, buckets, 2, record_fill, fx.buf2, 1) == GC_SUCCESS &&
         gc_memset_async(fx.s, fx.buf, 0, BUF_BYTES) == GC_SUCCESS && gc_stream_synchronize(fx.s) == GC_SUCCESS;
    ok = ok && gc_cache_create(fx.ctx, NULL, &fx.cache) == GC_SUCCESS &&
         gc_cache_launch(fx.cache, "fill", 4, fx.s, NULL, 0, record_cache_fill, fx.buf2, NULL) == GC_SUCCESS &&
         gc_stream_synchronize(fx.s) == GC_SUCCESS;
    if (!ok) {
        fprintf(stderr, "fixture: %s\n", gc_last_error());
        exit(2);
    }
    fx.alive[K_CONTEXT] = fx.ctx;
    fx.alive[K_STREAM] = fx.s;
    fx.alive[K_POOL] = fx.pool;
    fx.alive[K_MODULE] = fx.mod;
    fx.alive[K_FUNCTION] = fx.noop;
    fx.alive[K_GRAPH] = fx.graph;
    fx.alive[K_EXEC] = fx.exec;
    fx.alive[K_RUNNER] = fx.runner;
    fx.alive[K_EVENT] = fx.ev;
    fx.alive[K_CACHE] = fx.cache;
    /* One destroyed handle of each kind. */
    gc_context *c;
    gc_stream *s;
    gc_pool *p;
    gc_module *m;
    gc_function *f;
    gc_graph *g;
    gc_exec *e;
    gc_runner *r;
    gc_event *ev;
    gc_cache *ca;
    ok = gc_context_create(0, &c) == GC_SUCCESS && gc_context_destroy(c) == GC_SUCCESS &&
         gc_stream_create(fx.ctx, &s) == GC_SUCCESS && gc_stream_destroy(s) == GC_SUCCESS &&
         gc_pool_create(fx.ctx, NULL, &p) == GC_SUCCESS && gc_pool_destroy(p) == GC_SUCCESS &&
         gc_module_load(fx.ctx, GOOD_PTX, strlen(GOOD_PTX), &m) == GC_SUCCESS && gc_module_destroy(m) == GC_SUCCESS &&
         gc_module_function(fx.mod, "noop", &f) == GC_SUCCESS && gc_function_destroy(f) == GC_SUCCESS &&
         gc_graph_create(fx.ctx, &g) == GC_SUCCESS && gc_graph_destroy(g) == GC_SUCCESS &&
         gc_graph_instantiate(fx.graph, 0, &e) == GC_SUCCESS && gc_exec_destroy(e) == GC_SUCCESS &&
         gc_runner_create(fx.ctx, fx.pool, &r) == GC_SUCCESS && gc_runner_destroy(r) == GC_SUCCESS &&
         gc_event_create(fx.ctx, 0, &ev) == GC_SUCCESS && gc_event_destroy(ev) == GC_SUCCESS &&
         gc_cache_create(fx.ctx, NULL, &ca) == GC_SUCCESS && gc_cache_destroy(ca) == GC_SUCCESS;
    if (!ok) {
        fprintf(stderr, "fixture (destroyed handles): %s\n", gc_last_error());
        exit(2);
    }
    fx.dead[K_CONTEXT] = c;
    fx.dead[K_STREAM] = s;
    fx.dead[K_POOL] = p;
    fx.dead[K_MODULE] = m;
    fx.dead[K_FUNCTION] = f;
    fx.dead[K_GRAPH] = g;
    fx.dead[K_EXEC] = e;
    fx.dead[K_RUNNER] = r;
    fx.dead[K_EVENT] = ev;
    fx.dead[K_CACHE] = ca;
}

static void fixture_no_driver(void) {
    /* Stand-ins: handles of the right kind that were never issued, and
     * addresses that are never dereferenced (every call fails earlier). */
    for (int k = K_CONTEXT; k <= K_CACHE; k++) fx.alive[k] = forged(k, 0xABCDE, 1);
    fx.ctx = fx.alive[K_CONTEXT];
    fx.s = fx.s2 = fx.alive[K_STREAM];
    fx.pool = fx.alive[K_POOL];
    fx.mod = fx.alive[K_MODULE];
    fx.noop = fx.add_one = fx.fill = fx.alive[K_FUNCTION];
    fx.graph = fx.alive[K_GRAPH];
    fx.exec = fx.alive[K_EXEC];
    fx.runner = fx.alive[K_RUNNER];
    fx.ev = fx.alive[K_EVENT];
    fx.cache = fx.alive[K_CACHE];
    fx.buf = (void *)(uintptr_t)0x10000;
    fx.buf2 = (void *)(uintptr_t)0x20000;
    fx.host = (void *)(uintptr_t)0x30000;
}

/* The status a call must give: `on_gpu` with a driver, `no_driver` without. */
#define EXPECT2(call, on_gpu, no_driver) EXPECT_STATUS(call, fx.gpu ? (on_gpu) : (no_driver))

/* Bad values for a handle of `kind`, with what each is. */
static int host_word;
static void *bad_h[8];
static const char *bad_what[8];
static int bad_handles(int kind) {
    int n = 0;
    static char what[8][96];
    bad_h[n] = forged(kind, 0xABCDF, 1);
    bad_what[n++] = "a never-issued handle of the right kind";
    bad_h[n] = forged(kind, 0, 0x7fffffff);
    bad_what[n++] = "a handle of the right kind with a stale generation";
    int other = kind == K_CONTEXT ? K_STREAM : K_CONTEXT;
    bad_h[n] = fx.gpu ? fx.alive[kind == K_POOL ? K_STREAM : (kind == K_STREAM ? K_POOL : other)]
                      : forged(other, 0, 1);
    snprintf(what[n], sizeof what[n], "a %s handle where a %s is expected",
             fx.gpu ? KIND_NAME[kind == K_POOL ? K_STREAM : (kind == K_STREAM ? K_POOL : other)]
                    : KIND_NAME[other],
             KIND_NAME[kind]);
    bad_what[n] = what[n];
    n++;
    bad_h[n] = &host_word;
    bad_what[n++] = "a host pointer, not a handle";
    bad_h[n] = (void *)(uintptr_t)0x7f00000100000001ull;
    bad_what[n++] = "garbage";
    if (fx.gpu) {
        bad_h[n] = fx.dead[kind];
        bad_what[n++] = "a destroyed handle";
    }
    return n;
}

/* Runs `stmt` once per bad handle of `kind`, bound to `h`. */
#define EACH_BAD(kind, h, stmt)                                                  \
    do {                                                                         \
        int bn_ = bad_handles(kind);                                             \
        for (int bi_ = 0; bi_ < bn_; bi_++) {                                    \
            void *h = bad_h[bi_];                                                \
            check_case = bad_what[bi_];                                          \
            stmt;                                                                \
        }                                                                        \
        check_case = "";                                                         \
    } while (0)

/* A handle argument of `kind`: NULL, then every bad value. */
#define BAD_HANDLE_ARG(kind, h, call, null_status)                               \
    do {                                                                         \
        {                                                                        \
            void *h = NULL;                                                      \
            check_case = "NULL handle";                                          \
            EXPECT_STATUS(call, null_status);                                    \
        }                                                                        \
        EACH_BAD(kind, h, EXPECT_STATUS(call, GC_ERROR_INVALID_HANDLE));         \
    } while (0)

static const char *section = "";
static void cover(const char *fn) {
    printf("covers %s\n", fn);
    check_case = fn;
}
#define COVER(fn) cover(#fn)

/* The fixture's objects still work (a driver), or the library still
 * answers (none). Called after each function's cases. */
static void objects_work(void) {
    const char *was = check_case;
    check_case = "the objects still work afterwards";
    if (!fx.gpu) {
        int n = -1;
        EXPECT_STATUS(gc_device_count(&n), GC_ERROR_NO_DRIVER);
        CHECK(n == -1);
        CHECK(gc_version() == GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH);
        check_case = was;
        return;
    }
    gc_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(gc_context_info(fx.ctx, &info));
    gc_pool_statistics a, b;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    b = a;
    EXPECT_OK(gc_pool_stats(fx.pool, &a));
    void *p = NULL;
    EXPECT_OK(gc_pool_alloc(fx.pool, 1000, &p));
    EXPECT_OK(gc_memset_async(fx.s, p, 0x5a, 1000));
    EXPECT_OK(gc_memcpy_async(fx.s, fx.host, p, 1000));
    EXPECT_OK(gc_stream_synchronize(fx.s));
    CHECK(((unsigned char *)fx.host)[999] == 0x5a);
    EXPECT_OK(gc_pool_free(fx.pool, p));
    EXPECT_OK(gc_pool_stats(fx.pool, &b));
    CHECK(b.allocated_bytes == a.allocated_bytes && b.block_count == a.block_count);
    gc_dim3 one = {1, 1, 1};
    EXPECT_OK(gc_launch(fx.noop, fx.s2, one, one, 0, NULL));
    size_t nodes = 0;
    EXPECT_OK(gc_graph_node_count(fx.graph, &nodes));
    CHECK(nodes == 1);
    EXPECT_OK(gc_exec_launch(fx.exec, fx.s));
    uint32_t bucket = 0;
    EXPECT_OK(gc_runner_replay(fx.runner, 3, fx.s2, &bucket));
    CHECK(bucket == 4);
    EXPECT_OK(gc_stream_synchronize(fx.s));
    EXPECT_OK(gc_stream_synchronize(fx.s2));
    int capturing = 7;
    EXPECT_OK(gc_stream_is_capturing(fx.s, &capturing));
    CHECK(capturing == 0);
    check_case = was;
}

/* ------------------------------------------------------------------ */
static void status_functions(void) {
    COVER(gc_status_name);
    static const char *const names[] = {
        "GC_SUCCESS", "GC_ERROR_INVALID_ARGUMENT", "GC_ERROR_INVALID_HANDLE", "GC_ERROR_OUT_OF_MEMORY",
        "GC_ERROR_NO_DRIVER", "GC_ERROR_NO_DEVICE", "GC_ERROR_NOT_SUPPORTED", "GC_ERROR_CUDA",
        "GC_ERROR_CAPTURE", "GC_ERROR_INVALID_STATE", "GC_ERROR_NOT_FOUND", "GC_ERROR_UPDATE_MISMATCH",
        "GC_ERROR_NO_BUCKET", "GC_ERROR_DEVICE_FAULT", "GC_ERROR_PANIC"};
    for (int i = 0; i < 15; i++) CHECK(strcmp(gc_status_name(i), names[i]) == 0);
    const int unknown[] = {-1, 15, 16, 1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK(strcmp(gc_status_name(unknown[i]), "GC_UNKNOWN_STATUS") == 0);

    COVER(gc_last_error);
    CHECK(gc_last_error() != NULL);
    EXPECT_STATUS(gc_device_count(NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_ERROR_MENTIONS("gc_device_count");
    /* A success leaves the last error alone. */
    CHECK(gc_version() > 0);
    EXPECT_ERROR_MENTIONS("gc_device_count");

    COVER(gc_last_cuda_result);
    CHECK(gc_last_cuda_result() == 0); /* the last failure was not CUDA's */

    COVER(gc_version);
    CHECK(gc_version() == GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH);
    objects_work();
}

/* ------------------------------------------------------------------ */
static void context_functions(void) {
    COVER(gc_device_count);
    EXPECT_STATUS(gc_device_count(NULL), GC_ERROR_INVALID_ARGUMENT);
    int n = -1;
    EXPECT2(gc_device_count(&n), GC_SUCCESS, GC_ERROR_NO_DRIVER);
    CHECK(fx.gpu ? n >= 1 : n == -1);
    objects_work();

    COVER(gc_context_create);
    EXPECT_STATUS(gc_context_create(0, NULL), GC_ERROR_INVALID_ARGUMENT);
    const int ordinals[] = {-1, 4096, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof ordinals / sizeof ordinals[0]; i++) {
        gc_context *c = NULL;
        check_case = "an ordinal out of range";
        EXPECT2(gc_context_create(ordinals[i], &c), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_NO_DRIVER);
        CHECK(c == NULL);
    }
    if (fx.gpu) {
        gc_context *c = NULL;
        EXPECT_OK(gc_context_create(0, &c));
        EXPECT_OK(gc_context_destroy(c));
    }
    objects_work();

    COVER(gc_context_info);
    gc_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_context_info(h, &info), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_context_info(fx.ctx, NULL), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    info.struct_size = 0;
    EXPECT_STATUS(gc_context_info(fx.ctx, &info), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    info.struct_size = 8;
    EXPECT_STATUS(gc_context_info(fx.ctx, &info), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    CHECK(info.name[0] == 0); /* nothing written on failure */
    if (fx.gpu) {
        /* A newer caller's larger struct: the fields we know are filled. */
        struct {
            gc_device_info info;
            char more[64];
        } big;
        memset(&big, 0, sizeof big);
        big.info.struct_size = sizeof big;
        EXPECT_OK(gc_context_info(fx.ctx, &big.info));
        CHECK(big.info.sm_count > 0 && big.info.driver_version >= 12000);
        CHECK(big.info.struct_size == sizeof big);
    }
    objects_work();

    COVER(gc_context_synchronize);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_context_synchronize(h), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_context_synchronize(fx.ctx), GC_SUCCESS, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        /* A device-wide synchronize would invalidate an open capture: it is
         * refused, and the capture survives. */
        EXPECT_OK(gc_capture_begin(fx.s2, NULL, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_STATUS(gc_context_synchronize(fx.ctx), GC_ERROR_INVALID_STATE);
        EXPECT_ERROR_MENTIONS("capture");
        gc_dim3 one = {1, 1, 1};
        EXPECT_OK(gc_launch(fx.noop, fx.s2, one, one, 0, NULL));
        gc_graph *g = NULL;
        EXPECT_OK(gc_capture_end(fx.s2, &g));
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_OK(gc_context_synchronize(fx.ctx));
    }
    objects_work();

    COVER(gc_context_destroy);
    EXPECT_OK(gc_context_destroy(NULL));
    EACH_BAD(K_CONTEXT, h, EXPECT_STATUS(gc_context_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        gc_context *c = NULL;
        EXPECT_OK(gc_context_create(0, &c));
        EXPECT_OK(gc_context_destroy(c));
        EXPECT_STATUS(gc_context_destroy(c), GC_ERROR_INVALID_HANDLE); /* twice */
        EXPECT_ERROR_MENTIONS("destroyed");
    }
    objects_work();
}

/* A host function that counts its calls in *user. */
static void host_count(void *user) {
    ++*(int *)user;
}

/* ------------------------------------------------------------------ */
static void stream_functions(void) {
    COVER(gc_stream_create);
    gc_stream *s = NULL;
    EXPECT2(gc_stream_create(fx.ctx, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_stream_create(h, &s), GC_ERROR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    objects_work();

    COVER(gc_stream_priority_range);
    int least = 7, greatest = 7;
    EXPECT2(gc_stream_priority_range(fx.ctx, NULL, &greatest), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_stream_priority_range(fx.ctx, &least, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_stream_priority_range(h, &least, &greatest), GC_ERROR_INVALID_ARGUMENT);
    CHECK(least == 7 && greatest == 7);
    if (fx.gpu) {
        EXPECT_OK(gc_stream_priority_range(fx.ctx, &least, &greatest));
        CHECK(greatest <= least);
    }
    objects_work();

    COVER(gc_stream_create_with_priority);
    EXPECT2(gc_stream_create_with_priority(fx.ctx, 0, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_stream_create_with_priority(h, 0, &s), GC_ERROR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    if (fx.gpu) {
        check_case = "a priority below the greatest, then above the least";
        EXPECT_STATUS(gc_stream_create_with_priority(fx.ctx, greatest - 1, &s), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_stream_create_with_priority(fx.ctx, least + 1, &s), GC_ERROR_INVALID_ARGUMENT);
        CHECK(s == NULL);
        EXPECT_OK(gc_stream_create_with_priority(fx.ctx, greatest, &s));
        EXPECT_OK(gc_memset_async(s, fx.buf, 0, BUF_BYTES));
        EXPECT_OK(gc_stream_synchronize(s));
        EXPECT_OK(gc_stream_destroy(s));
        s = NULL;
    }
    objects_work();

    COVER(gc_stream_wrap);
    EXPECT_STATUS(gc_stream_wrap(fx.ctx, NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_stream_wrap(h, NULL, &s), GC_ERROR_INVALID_ARGUMENT);
    check_case = "CU_STREAM_PER_THREAD (cudaStreamPerThread)";
    EXPECT_STATUS(gc_stream_wrap(fx.ctx, (void *)(uintptr_t)0x2, &s), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_ERROR_MENTIONS("CU_STREAM_PER_THREAD");
    CHECK(s == NULL);
    if (fx.gpu) {
        gc_stream *legacy1 = NULL;
        check_case = "CU_STREAM_LEGACY: the legacy default stream, as NULL";
        EXPECT_OK(gc_stream_wrap(fx.ctx, (void *)(uintptr_t)0x1, &legacy1));
        void *got = (void *)(uintptr_t)0x77;
        EXPECT_OK(gc_stream_raw(legacy1, &got));
        CHECK(got == NULL);
        EXPECT_OK(gc_stream_destroy(legacy1));
        void *raw = NULL;
        EXPECT_OK(gc_stream_raw(fx.s, &raw));
        EXPECT_OK(gc_stream_wrap(fx.ctx, raw, &s)); /* borrowed: never destroyed by us */
        EXPECT_OK(gc_stream_destroy(s));
        EXPECT_OK(gc_stream_synchronize(fx.s)); /* the owner's stream lives on */
        gc_stream *legacy = NULL;
        EXPECT_OK(gc_stream_wrap(fx.ctx, NULL, &legacy)); /* NULL: the legacy default stream */
        EXPECT_OK(gc_memset_async(legacy, fx.buf, 0, BUF_BYTES));
        EXPECT_OK(gc_stream_synchronize(legacy));
        EXPECT_OK(gc_stream_destroy(legacy));
    }
    objects_work();

    COVER(gc_stream_raw);
    void *raw = &host_word;
    EXPECT2(gc_stream_raw(fx.s, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_STREAM, h, gc_stream_raw(h, &raw), GC_ERROR_INVALID_ARGUMENT);
    CHECK(raw == &host_word);
    objects_work();

    COVER(gc_stream_wait_stream);
    BAD_HANDLE_ARG(K_STREAM, h, gc_stream_wait_stream(h, fx.s2), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_stream_wait_stream(fx.s, h), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_stream_wait_stream(fx.s, fx.s)); /* itself: a no-op */
        EXPECT_OK(gc_stream_wait_stream(fx.s, fx.s2));
    }
    objects_work();

    COVER(gc_launch_host_func);
    BAD_HANDLE_ARG(K_STREAM, h, gc_launch_host_func(h, host_count, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_launch_host_func(fx.s, NULL, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        int calls = 0;
        EXPECT_OK(gc_launch_host_func(fx.s, host_count, &calls));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(calls == 1);
    }
    objects_work();

    COVER(gc_stream_synchronize);
    BAD_HANDLE_ARG(K_STREAM, h, gc_stream_synchronize(h), GC_ERROR_INVALID_ARGUMENT);
    objects_work();

    COVER(gc_stream_is_capturing);
    int capturing = 7;
    EXPECT2(gc_stream_is_capturing(fx.s, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_STREAM, h, gc_stream_is_capturing(h, &capturing), GC_ERROR_INVALID_ARGUMENT);
    CHECK(capturing == 7);
    objects_work();

    COVER(gc_stream_destroy);
    EXPECT_OK(gc_stream_destroy(NULL));
    EACH_BAD(K_STREAM, h, EXPECT_STATUS(gc_stream_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_stream_create(fx.ctx, &s));
        EXPECT_OK(gc_memset_async(s, fx.buf, 0, BUF_BYTES)); /* work in flight */
        EXPECT_OK(gc_stream_destroy(s));
        EXPECT_STATUS(gc_stream_destroy(s), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_stream_synchronize(s), GC_ERROR_INVALID_HANDLE);
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static void memory_functions(void) {
    COVER(gc_host_alloc);
    void *p = &host_word;
    EXPECT2(gc_host_alloc(fx.ctx, 16, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_host_alloc(h, 16, &p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_host_alloc(fx.ctx, 0, &p), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "SIZE_MAX bytes";
    if (fx.gpu) EXPECT_FAILS(gc_host_alloc(fx.ctx, SIZE_MAX, &p));
    CHECK(p == &host_word);
    objects_work();

    COVER(gc_host_free);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_host_free(h, fx.host), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_host_free(fx.ctx, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_host_free(fx.ctx, &host_word), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_host_free(fx.ctx, (char *)fx.host + 16), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_host_free(fx.ctx, fx.buf), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        void *h = NULL;
        EXPECT_OK(gc_host_alloc(fx.ctx, 64, &h));
        EXPECT_OK(gc_host_free(fx.ctx, h));
        EXPECT_STATUS(gc_host_free(fx.ctx, h), GC_ERROR_INVALID_ARGUMENT); /* twice */
    }
    objects_work();

    COVER(gc_memcpy_async);
    BAD_HANDLE_ARG(K_STREAM, h, gc_memcpy_async(h, fx.buf, fx.host, 64), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_memcpy_async(fx.s, NULL, fx.host, 64), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memcpy_async(fx.s, fx.buf, NULL, 64), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memcpy_async(fx.s, NULL, NULL, 0), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memcpy_async(fx.s, fx.buf, fx.host, 0), GC_SUCCESS, GC_ERROR_INVALID_HANDLE); /* a no-op */
    if (fx.gpu) {
        /* Ranges that overrun the pool block they start in: refused with
         * both sizes named, nothing copied. */
        memset(fx.host, 0x11, 2 * BUF_BYTES);
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0x22, BUF_BYTES));
        check_case = "dst overruns its 4096-byte pool block";
        EXPECT_STATUS(gc_memcpy_async(fx.s, fx.buf, fx.host, BUF_BYTES + 1), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("4097 bytes");
        EXPECT_ERROR_MENTIONS("4096 bytes");
        check_case = "dst starts inside its block and runs past its end";
        EXPECT_STATUS(gc_memcpy_async(fx.s, (char *)fx.buf + 4000, fx.host, 200), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("104 bytes past");
        check_case = "src overruns its pool block";
        EXPECT_STATUS(gc_memcpy_async(fx.s, fx.host, fx.buf, 2 * BUF_BYTES), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("`src`");
        check_case = "dst + bytes wraps around the address space";
        EXPECT_STATUS(gc_memcpy_async(fx.s, fx.buf, fx.host, SIZE_MAX), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("overflows");
        check_case = "the block is intact";
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, BUF_BYTES));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((unsigned char *)fx.host)[0] == 0x22 && ((unsigned char *)fx.host)[BUF_BYTES - 1] == 0x22);
        CHECK(((unsigned char *)fx.host)[BUF_BYTES] == 0x11);
        /* Pageable host memory works (synchronously) as a copy source. */
        char local[64];
        memset(local, 3, sizeof local);
        EXPECT_OK(gc_memcpy_async(fx.s, fx.buf, local, sizeof local));
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();

    COVER(gc_memset_async);
    BAD_HANDLE_ARG(K_STREAM, h, gc_memset_async(h, fx.buf, 0, 64), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_memset_async(fx.s, NULL, 0, 64), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memset_async(fx.s, NULL, 0, 0), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memset_async(fx.s, fx.buf, 0, 0), GC_SUCCESS, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        check_case = "a memset past its 4096-byte pool block";
        EXPECT_STATUS(gc_memset_async(fx.s, fx.buf, 0, BUF_BYTES + 256), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("4352 bytes");
        EXPECT_ERROR_MENTIONS("4096 bytes");
        EXPECT_STATUS(gc_memset_async(fx.s, (char *)fx.buf2 + 1, 0, BUF_BYTES), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_memset_async(fx.s, fx.buf, 0, SIZE_MAX), GC_ERROR_INVALID_ARGUMENT);
        /* Value outside a byte: its low byte is used (memset semantics). */
        check_case = "value -1";
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, -1, 16));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, 16));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((unsigned char *)fx.host)[15] == 0xff);
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();

    COVER(gc_memset_async_elem);
    BAD_HANDLE_ARG(K_STREAM, h, gc_memset_async_elem(h, fx.buf, 0, 4, 16), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_memset_async_elem(fx.s, NULL, 0, 4, 16), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memset_async_elem(fx.s, fx.buf, 0, 4, 0), GC_SUCCESS, GC_ERROR_INVALID_HANDLE); /* a no-op */
    {
        const uint32_t sizes[] = {0, 3, 8, 16, UINT32_MAX};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            check_case = "an element size other than 1, 2 or 4";
            EXPECT2(gc_memset_async_elem(fx.s, fx.buf, 0, sizes[i], 16), GC_ERROR_INVALID_ARGUMENT,
                    GC_ERROR_INVALID_HANDLE);
        }
    }
    check_case = "dst not aligned to the element size";
    EXPECT2(gc_memset_async_elem(fx.s, (char *)fx.buf + 1, 0, 2, 16), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memset_async_elem(fx.s, (char *)fx.buf + 2, 0, 4, 16), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    check_case = "a value that does not fit in an element";
    EXPECT2(gc_memset_async_elem(fx.s, fx.buf, 0x100, 1, 16), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_memset_async_elem(fx.s, fx.buf, 0x10000, 2, 16), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "a count whose bytes overflow";
    EXPECT2(gc_memset_async_elem(fx.s, fx.buf, 0, 4, SIZE_MAX / 2), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        check_case = "elements past the 4096-byte pool block";
        EXPECT_STATUS(gc_memset_async_elem(fx.s, fx.buf, 0, 4, BUF_BYTES / 4 + 1), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("4100 bytes");
        check_case = "2- and 4-byte elements land whole";
        EXPECT_OK(gc_memset_async_elem(fx.s, fx.buf, 0xbeef, 2, 8));
        EXPECT_OK(gc_memset_async_elem(fx.s, (char *)fx.buf + 16, 0xdeadbeefu, 4, 4));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, 32));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((uint16_t *)fx.host)[7] == 0xbeef);
        CHECK(((uint32_t *)fx.host)[7] == 0xdeadbeefu);
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static void event_functions(void) {
    gc_event *e = NULL, *untimed = NULL;
    float ms = -7.0f;
    int done = 7;

    COVER(gc_event_create);
    EXPECT_STATUS(gc_event_create(fx.ctx, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_event_create(h, 0, &e), GC_ERROR_INVALID_ARGUMENT);
    check_case = "unknown flags";
    EXPECT_STATUS(gc_event_create(fx.ctx, 2, &e), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_event_create(fx.ctx, UINT32_MAX, &e), GC_ERROR_INVALID_ARGUMENT);
    CHECK(e == NULL);
    if (fx.gpu) EXPECT_OK(gc_event_create(fx.ctx, GC_EVENT_DISABLE_TIMING, &untimed));
    else untimed = fx.ev;
    objects_work();

    COVER(gc_event_wrap);
    EXPECT_STATUS(gc_event_wrap(fx.ctx, &host_word, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_event_wrap(h, &host_word, &e), GC_ERROR_INVALID_ARGUMENT);
    check_case = "raw NULL";
    EXPECT2(gc_event_wrap(fx.ctx, NULL, &e), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    CHECK(e == NULL);
    if (fx.gpu) {
        /* Borrowing our own event's CUevent: the borrowed handle goes, the
         * event stays. */
        void *raw = NULL;
        gc_event *borrowed = NULL;
        EXPECT_OK(gc_event_raw(fx.ev, &raw));
        EXPECT_OK(gc_event_wrap(fx.ctx, raw, &borrowed));
        EXPECT_OK(gc_event_record(borrowed, fx.s, 0));
        EXPECT_OK(gc_event_destroy(borrowed));
        EXPECT_OK(gc_event_synchronize(fx.ev));
    }
    objects_work();

    COVER(gc_event_raw);
    void *raw = &host_word;
    EXPECT_STATUS(gc_event_raw(fx.ev, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EVENT, h, gc_event_raw(h, &raw), GC_ERROR_INVALID_ARGUMENT);
    CHECK(raw == &host_word);
    objects_work();

    COVER(gc_event_record);
    BAD_HANDLE_ARG(K_EVENT, h, gc_event_record(h, fx.s, 0), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_event_record(fx.ev, h, 0), GC_ERROR_INVALID_ARGUMENT);
        check_case = "unknown flags";
        EXPECT_STATUS(gc_event_record(fx.ev, fx.s, 2), GC_ERROR_INVALID_ARGUMENT);
        check_case = "GC_EVENT_EXTERNAL outside capture is a plain record";
        EXPECT_OK(gc_event_record(fx.ev, fx.s, GC_EVENT_EXTERNAL));
        EXPECT_OK(gc_event_synchronize(fx.ev));
    }
    objects_work();

    COVER(gc_stream_wait_event);
    BAD_HANDLE_ARG(K_STREAM, h, gc_stream_wait_event(h, fx.ev, 0), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_EVENT, h, gc_stream_wait_event(fx.s, h, 0), GC_ERROR_INVALID_ARGUMENT);
        check_case = "unknown flags";
        EXPECT_STATUS(gc_stream_wait_event(fx.s, fx.ev, 0x80000000u), GC_ERROR_INVALID_ARGUMENT);
        gc_event *never = NULL;
        EXPECT_OK(gc_event_create(fx.ctx, 0, &never));
        check_case = "an event never recorded: no wait";
        EXPECT_OK(gc_stream_wait_event(fx.s, never, 0));
        EXPECT_OK(gc_stream_wait_event(fx.s2, fx.ev, GC_EVENT_EXTERNAL));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_event_destroy(never));
    }
    objects_work();

    COVER(gc_event_synchronize);
    BAD_HANDLE_ARG(K_EVENT, h, gc_event_synchronize(h), GC_ERROR_INVALID_ARGUMENT);
    objects_work();

    COVER(gc_event_query);
    EXPECT_STATUS(gc_event_query(fx.ev, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EVENT, h, gc_event_query(h, &done), GC_ERROR_INVALID_ARGUMENT);
    CHECK(done == 7);
    if (fx.gpu) {
        EXPECT_OK(gc_event_query(fx.ev, &done));
        CHECK(done == 1);
    }
    objects_work();

    COVER(gc_event_elapsed_ms);
    EXPECT_STATUS(gc_event_elapsed_ms(fx.ev, fx.ev, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EVENT, h, gc_event_elapsed_ms(h, fx.ev, &ms), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_EVENT, h, gc_event_elapsed_ms(fx.ev, h, &ms), GC_ERROR_INVALID_ARGUMENT);
        check_case = "an event without timing";
        EXPECT_OK(gc_event_record(untimed, fx.s, 0));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_STATUS(gc_event_elapsed_ms(fx.ev, untimed, &ms), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_event_elapsed_ms(untimed, fx.ev, &ms), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("without timing");
        check_case = "an event never recorded";
        gc_event *never = NULL;
        EXPECT_OK(gc_event_create(fx.ctx, 0, &never));
        EXPECT_FAILS(gc_event_elapsed_ms(fx.ev, never, &ms));
        EXPECT_OK(gc_event_destroy(never));
        CHECK(ms == -7.0f);
        check_case = "one event against itself";
        EXPECT_OK(gc_event_elapsed_ms(fx.ev, fx.ev, &ms));
        CHECK(ms == 0.0f);
    }
    CHECK(fx.gpu || ms == -7.0f);
    objects_work();

    COVER(gc_event_destroy);
    EXPECT_OK(gc_event_destroy(NULL));
    EACH_BAD(K_EVENT, h, EXPECT_STATUS(gc_event_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_event_create(fx.ctx, 0, &e));
        EXPECT_OK(gc_event_record(e, fx.s, 0)); /* a record in flight */
        EXPECT_OK(gc_event_destroy(e));
        EXPECT_STATUS(gc_event_destroy(e), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_event_synchronize(e), GC_ERROR_INVALID_HANDLE);
        EXPECT_OK(gc_event_destroy(untimed));
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static void pool_functions(void) {
    gc_pool_options o;
    gc_pool *p = NULL;

    COVER(gc_pool_create);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    EXPECT_STATUS(gc_pool_create(fx.ctx, &o, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_pool_create(h, &o, &p), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_pool_create(h, NULL, &p), GC_ERROR_INVALID_ARGUMENT);
    o.struct_size = 0;
    check_case = "struct_size 0";
    EXPECT_STATUS(gc_pool_create(fx.ctx, &o, &p), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    o.struct_size = 4;
    EXPECT_STATUS(gc_pool_create(fx.ctx, &o, &p), GC_ERROR_INVALID_ARGUMENT);
    {
        /* A newer caller's larger options: accepted if the extra is zero. */
        struct {
            gc_pool_options o;
            uint64_t more[2];
        } big;
        memset(&big, 0, sizeof big);
        big.o.struct_size = sizeof big;
        big.more[1] = 1;
        check_case = "a larger struct with nonzero unknown fields";
        EXPECT_STATUS(gc_pool_create(fx.ctx, &big.o, &p), GC_ERROR_INVALID_ARGUMENT);
        big.more[1] = 0;
        check_case = "a larger struct with zero unknown fields";
        EXPECT2(gc_pool_create(fx.ctx, &big.o, &p), GC_SUCCESS, GC_ERROR_INVALID_HANDLE);
        if (fx.gpu) EXPECT_OK(gc_pool_destroy(p));
        p = NULL;
    }
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.initial_bytes = 8u << 20;
    o.max_bytes = 4u << 20;
    check_case = "initial_bytes over max_bytes";
    EXPECT2(gc_pool_create(fx.ctx, &o, &p), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    CHECK(p == NULL);
    if (fx.gpu) {
        const uint64_t huge[] = {UINT64_MAX, UINT64_MAX / 2, (uint64_t)1 << 62};
        for (size_t i = 0; i < 3; i++) {
            o.initial_bytes = huge[i];
            o.max_bytes = 0;
            check_case = "huge initial_bytes: more than the device has";
            gc_status st = gc_pool_create(fx.ctx, &o, &p);
            CHECK(st == GC_ERROR_OUT_OF_MEMORY || st == GC_ERROR_INVALID_ARGUMENT);
            if (st != GC_ERROR_OUT_OF_MEMORY && st != GC_ERROR_INVALID_ARGUMENT)
                fprintf(stderr, "  initial_bytes %llu: %s (%s)\n", (unsigned long long)huge[i],
                        gc_status_name((int)st), gc_last_error());
            CHECK(p == NULL);
        }
    }
    objects_work();

    COVER(gc_pool_alloc);
    gc_pool_statistics before, after;
    memset(&before, 0, sizeof before);
    before.struct_size = sizeof before;
    after = before;
    void *a = &host_word;
    EXPECT2(gc_pool_alloc(fx.pool, 256, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_POOL, h, gc_pool_alloc(h, 256, &a), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) EXPECT_OK(gc_pool_stats(fx.pool, &before));
    EXPECT2(gc_pool_alloc(fx.pool, 0, &a), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "SIZE_MAX bytes (rounding up overflows)";
    EXPECT2(gc_pool_alloc(fx.pool, SIZE_MAX, &a), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "SIZE_MAX - 255 bytes";
    EXPECT2(gc_pool_alloc(fx.pool, SIZE_MAX - 255, &a), GC_ERROR_OUT_OF_MEMORY, GC_ERROR_INVALID_HANDLE);
    check_case = "past max_bytes";
    EXPECT2(gc_pool_alloc(fx.pool, 65u << 20, &a), GC_ERROR_OUT_OF_MEMORY, GC_ERROR_INVALID_HANDLE);
    CHECK(a == &host_word);
    if (fx.gpu) {
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        check_case = "refused allocations change nothing";
        CHECK(after.allocated_bytes == before.allocated_bytes && after.reserved_bytes == before.reserved_bytes &&
              after.block_count == before.block_count && after.alloc_count == before.alloc_count);
    }
    objects_work();

    COVER(gc_pool_free);
    BAD_HANDLE_ARG(K_POOL, h, gc_pool_free(h, fx.buf), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) EXPECT_OK(gc_pool_stats(fx.pool, &before));
    void *not_handed_out[] = {NULL, &host_word, (char *)fx.buf + 256, (char *)fx.buf + 1, fx.host,
                              (char *)fx.buf + ((size_t)1 << 40)};
    for (size_t i = 0; i < sizeof not_handed_out / sizeof not_handed_out[0]; i++) {
        check_case = "a pointer the pool did not hand out";
        EXPECT2(gc_pool_free(fx.pool, not_handed_out[i]), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    }
    if (fx.gpu) {
        gc_pool *other = NULL;
        void *q = NULL;
        EXPECT_OK(gc_pool_create(fx.ctx, NULL, &other));
        EXPECT_OK(gc_pool_alloc(other, 256, &q));
        check_case = "a block of another pool";
        EXPECT_STATUS(gc_pool_free(fx.pool, q), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_pool_free(other, q));
        check_case = "a double free";
        EXPECT_STATUS(gc_pool_free(other, q), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_pool_destroy(other));
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        check_case = "refused frees change nothing";
        CHECK(after.allocated_bytes == before.allocated_bytes && after.free_count == before.free_count);
    }
    objects_work();

    COVER(gc_pool_stats);
    BAD_HANDLE_ARG(K_POOL, h, gc_pool_stats(h, &before), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_pool_stats(fx.pool, NULL), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    after.struct_size = 0;
    EXPECT_STATUS(gc_pool_stats(fx.pool, &after), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    after.struct_size = 7;
    EXPECT_STATUS(gc_pool_stats(fx.pool, &after), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    after.struct_size = sizeof after;
    objects_work();

    COVER(gc_pool_trim);
    BAD_HANDLE_ARG(K_POOL, h, gc_pool_trim(h), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        /* While a capture into the pool is open: refused, capture intact. */
        EXPECT_OK(gc_capture_begin(fx.s2, fx.pool, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_STATUS(gc_pool_trim(fx.pool), GC_ERROR_INVALID_STATE);
        gc_graph *g = NULL;
        EXPECT_OK(gc_op_fill(fx.s2, fx.buf, SMALL, 0.0f));
        EXPECT_OK(gc_capture_end(fx.s2, &g));
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_OK(gc_pool_trim(fx.pool));
    }
    objects_work();

    COVER(gc_pool_enable_peer_access);
    BAD_HANDLE_ARG(K_POOL, h, gc_pool_enable_peer_access(h, fx.ctx), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_CONTEXT, h, gc_pool_enable_peer_access(fx.pool, h), GC_ERROR_INVALID_ARGUMENT);
        /* The pool's own device always has access: a clear refusal. */
        EXPECT_STATUS(gc_pool_enable_peer_access(fx.pool, fx.ctx), GC_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(gc_last_error(), "own device") != NULL);
    }
    objects_work();

    COVER(gc_pool_destroy);
    EXPECT_OK(gc_pool_destroy(NULL));
    EACH_BAD(K_POOL, h, EXPECT_STATUS(gc_pool_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        /* A pool with a live graph: the handle goes, the graph's memory
         * stays until the graph's exec is destroyed. */
        gc_pool *q = NULL;
        gc_graph *g = NULL;
        gc_exec *e = NULL;
        void *block = NULL;
        EXPECT_OK(gc_pool_create(fx.ctx, NULL, &q));
        EXPECT_OK(gc_capture_begin(fx.s2, q, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_OK(gc_pool_alloc(q, SMALL * 4, &block));
        EXPECT_OK(gc_op_fill(fx.s2, block, SMALL, 7.0f));
        EXPECT_OK(gc_op_copy(fx.s2, fx.buf, block, SMALL));
        EXPECT_OK(gc_capture_end(fx.s2, &g));
        uint64_t held = 0;
        EXPECT_OK(gc_graph_pool_bytes(g, &held));
        CHECK(held >= SMALL * 4);
        EXPECT_OK(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &e));
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_OK(gc_pool_destroy(q));
        EXPECT_STATUS(gc_pool_destroy(q), GC_ERROR_INVALID_HANDLE); /* twice */
        EXPECT_STATUS(gc_pool_alloc(q, 256, &block), GC_ERROR_INVALID_HANDLE);
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, SMALL * 4));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, SMALL * 4));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((float *)fx.host)[SMALL - 1] == 7.0f);
        EXPECT_OK(gc_exec_destroy(e));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
/* The allocator exports return a pointer or nothing: a refusal is NULL (or
 * no change) and a last error that names the export and the status. */
#define FRESH_ERROR() (void)gc_stream_synchronize(NULL) /* the last error now names another call */
#define EXPECT_NULL(expr, fn, needle)                                            \
    do {                                                                         \
        FRESH_ERROR();                                                           \
        CHECK((expr) == NULL);                                                   \
        EXPECT_ERROR_MENTIONS(fn);                                               \
        EXPECT_ERROR_MENTIONS(needle);                                           \
    } while (0)
#define EXPECT_REFUSED_FREE(stmt, fn, needle)                                    \
    do {                                                                         \
        FRESH_ERROR();                                                           \
        stmt;                                                                    \
        EXPECT_ERROR_MENTIONS(fn);                                               \
        EXPECT_ERROR_MENTIONS(needle);                                           \
    } while (0)

static void allocator_functions(void) {
    gc_pool_statistics before, after;
    memset(&before, 0, sizeof before);
    before.struct_size = sizeof before;
    after = before;
    const char *no_pool = fx.gpu ? "GC_ERROR_INVALID_STATE" : "GC_ERROR_NO_DRIVER";

    COVER(gc_allocator_set_pool);
    const int bad_devices[] = {-1, INT_MIN, GC_ALLOCATOR_MAX_DEVICES, INT_MAX};
    for (size_t i = 0; i < sizeof bad_devices / sizeof bad_devices[0]; i++) {
        check_case = "a device out of range";
        EXPECT_STATUS(gc_allocator_set_pool(bad_devices[i], NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("`device`");
        EXPECT_STATUS(gc_allocator_set_pool(bad_devices[i], fx.pool), GC_ERROR_INVALID_ARGUMENT);
    }
    EACH_BAD(K_POOL, h, EXPECT_STATUS(gc_allocator_set_pool(0, h), GC_ERROR_INVALID_HANDLE));
    check_case = "unset twice";
    EXPECT_OK(gc_allocator_set_pool(0, NULL));
    EXPECT_OK(gc_allocator_set_pool(0, NULL));
    if (fx.gpu) {
        check_case = "a pool of device 0 set for device 1";
        EXPECT_STATUS(gc_allocator_set_pool(1, fx.pool), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("not of `device` 1");
    }
    check_case = "refusals leave no pool set";
    EXPECT_NULL(gc_torch_alloc(256, 0, NULL), "gc_torch_alloc", no_pool);
    objects_work();

    COVER(gc_torch_alloc);
    check_case = "size 0 is NULL without an error";
    FRESH_ERROR();
    CHECK(gc_torch_alloc(0, 0, NULL) == NULL);
    EXPECT_ERROR_MENTIONS("gc_stream_synchronize");
    for (size_t i = 0; i < sizeof bad_devices / sizeof bad_devices[0]; i++) {
        check_case = "a device out of range";
        EXPECT_NULL(gc_torch_alloc(256, bad_devices[i], NULL), "gc_torch_alloc", "GC_ERROR_INVALID_ARGUMENT");
    }
    check_case = "no pool set";
    EXPECT_NULL(gc_torch_alloc(256, 0, NULL), "gc_torch_alloc", no_pool);
    if (fx.gpu) {
        check_case = "a device the machine does not have";
        EXPECT_NULL(gc_torch_alloc(256, GC_ALLOCATOR_MAX_DEVICES - 1, NULL), "gc_torch_alloc",
                    "GC_ERROR_INVALID_ARGUMENT");
        EXPECT_OK(gc_allocator_set_pool(0, fx.pool));
        EXPECT_OK(gc_pool_stats(fx.pool, &before));
        check_case = "SIZE_MAX bytes (rounding up overflows)";
        EXPECT_NULL(gc_torch_alloc(SIZE_MAX, 0, NULL), "gc_torch_alloc", "GC_ERROR_INVALID_ARGUMENT");
        check_case = "past max_bytes";
        EXPECT_NULL(gc_torch_alloc(65u << 20, 0, NULL), "gc_torch_alloc", "GC_ERROR_OUT_OF_MEMORY");
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        check_case = "refused allocations change nothing";
        CHECK(after.allocated_bytes == before.allocated_bytes && after.reserved_bytes == before.reserved_bytes &&
              after.alloc_count == before.alloc_count);
        check_case = "a good allocation still works";
        void *p = gc_torch_alloc(1000, 0, NULL);
        CHECK(p != NULL);
        gc_torch_free(p, 1000, 0, NULL);
        EXPECT_OK(gc_allocator_set_pool(0, NULL));
    }
    objects_work();

    COVER(gc_torch_free);
    gc_torch_free(NULL, 0, 0, NULL); /* a no-op */
    if (fx.gpu) {
        EXPECT_OK(gc_allocator_set_pool(0, fx.pool));
        EXPECT_OK(gc_pool_stats(fx.pool, &before));
    }
    void *not_handed_out[] = {&host_word, (char *)fx.buf + 256, (char *)fx.buf + 1, fx.host,
                              (char *)fx.buf + ((size_t)1 << 40)};
    for (size_t i = 0; i < sizeof not_handed_out / sizeof not_handed_out[0]; i++) {
        check_case = "a pointer the pool did not hand out";
        EXPECT_REFUSED_FREE(gc_torch_free(not_handed_out[i], 256, 0, NULL), "gc_torch_free",
                            "GC_ERROR_INVALID_ARGUMENT");
    }
    check_case = "a device out of range";
    EXPECT_REFUSED_FREE(gc_torch_free(fx.buf, 256, -1, NULL), "gc_torch_free", "GC_ERROR_INVALID_ARGUMENT");
    if (fx.gpu) {
        void *p = gc_torch_alloc(512, 0, NULL);
        CHECK(p != NULL);
        gc_torch_free(p, 512, 0, NULL);
        check_case = "a double free";
        EXPECT_REFUSED_FREE(gc_torch_free(p, 512, 0, NULL), "gc_torch_free", "GC_ERROR_INVALID_ARGUMENT");
        check_case = "a block of device 0 freed as device 1's";
        p = gc_torch_alloc(512, 0, NULL);
        EXPECT_REFUSED_FREE(gc_torch_free(p, 512, 1, NULL), "gc_torch_free", "GC_ERROR_INVALID_ARGUMENT");
        gc_torch_free(p, 512, 0, NULL);
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        check_case = "refused frees change nothing";
        CHECK(after.allocated_bytes == before.allocated_bytes && after.block_count == before.block_count);
        EXPECT_OK(gc_allocator_set_pool(0, NULL));
    }
    objects_work();

    COVER(gc_engine_alloc);
    EACH_BAD(K_POOL, h, EXPECT_NULL(gc_engine_alloc(h, 256, 0, NULL), "gc_engine_alloc", "GC_ERROR_INVALID_HANDLE"));
    check_case = "size 0 is NULL without an error";
    FRESH_ERROR();
    CHECK(gc_engine_alloc(fx.pool, 0, 0, NULL) == NULL);
    EXPECT_ERROR_MENTIONS("gc_stream_synchronize");
    check_case = "a NULL user and no pool set for the device";
    EXPECT_NULL(gc_engine_alloc(NULL, 256, 0, NULL), "gc_engine_alloc", no_pool);
    check_case = "a NULL user and a device out of range";
    EXPECT_NULL(gc_engine_alloc(NULL, 256, -1, NULL), "gc_engine_alloc", "GC_ERROR_INVALID_ARGUMENT");
    if (fx.gpu) {
        check_case = "a device other than the pool's";
        EXPECT_NULL(gc_engine_alloc(fx.pool, 256, 1, NULL), "gc_engine_alloc", "`device`");
        check_case = "past max_bytes";
        EXPECT_NULL(gc_engine_alloc(fx.pool, 65u << 20, -1, NULL), "gc_engine_alloc", "GC_ERROR_OUT_OF_MEMORY");
        check_case = "a good allocation still works";
        void *p = gc_engine_alloc(fx.pool, 256, 0, NULL);
        CHECK(p != NULL);
        gc_engine_free(fx.pool, p, 256, 0, NULL);
    }
    objects_work();

    COVER(gc_engine_free);
    gc_engine_free(fx.pool, NULL, 0, 0, NULL); /* a no-op */
    EACH_BAD(K_POOL, h,
             EXPECT_REFUSED_FREE(gc_engine_free(h, fx.buf, 256, 0, NULL), "gc_engine_free", "GC_ERROR_INVALID_HANDLE"));
    check_case = "a NULL user and no pool set for the device";
    EXPECT_REFUSED_FREE(gc_engine_free(NULL, fx.buf, 256, 0, NULL), "gc_engine_free", "GC_ERROR_INVALID_ARGUMENT");
    if (fx.gpu) {
        EXPECT_OK(gc_pool_stats(fx.pool, &before));
        for (size_t i = 0; i < sizeof not_handed_out / sizeof not_handed_out[0]; i++) {
            check_case = "a pointer the pool did not hand out";
            EXPECT_REFUSED_FREE(gc_engine_free(fx.pool, not_handed_out[i], 256, 0, NULL), "gc_engine_free",
                                "GC_ERROR_INVALID_ARGUMENT");
        }
        check_case = "a device other than the pool's";
        EXPECT_REFUSED_FREE(gc_engine_free(fx.pool, fx.buf, 256, 1, NULL), "gc_engine_free", "`device`");
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        check_case = "refused frees change nothing";
        CHECK(after.allocated_bytes == before.allocated_bytes && after.block_count == before.block_count);
    }
    objects_work();
}
#undef EXPECT_NULL
#undef EXPECT_REFUSED_FREE

/* ------------------------------------------------------------------ */
static void module_functions(void) {
    gc_module *m = NULL;
    gc_function *f = NULL;
    gc_dim3 one = {1, 1, 1};

    COVER(gc_module_load);
    size_t len = strlen(GOOD_PTX);
    EXPECT_STATUS(gc_module_load(fx.ctx, GOOD_PTX, len, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_module_load(h, GOOD_PTX, len, &m), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_module_load(fx.ctx, NULL, len, &m), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_module_load(fx.ctx, GOOD_PTX, 0, &m), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        const char *bad = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k( {\n";
        check_case = "malformed PTX";
        EXPECT_STATUS(gc_module_load(fx.ctx, bad, strlen(bad), &m), GC_ERROR_CUDA);
        EXPECT_ERROR_MENTIONS("JIT log");
        CHECK(gc_last_cuda_result() != 0);
        check_case = "not PTX text (invalid UTF-8)";
        static const unsigned char junk[] = {0xff, 0xfe, 0x80, 0x81, 0x00};
        EXPECT_STATUS(gc_module_load(fx.ctx, junk, sizeof junk, &m), GC_ERROR_INVALID_ARGUMENT);
        check_case = "an ELF header with nothing behind it";
        static unsigned char elf[4096];
        memcpy(elf, "\x7f" "ELF", 4);
        EXPECT_FAILS(gc_module_load(fx.ctx, elf, sizeof elf, &m));
        check_case = "PTX for a target newer than any GPU";
        const char *future = ".version 99.0\n.target sm_999\n.address_size 64\n";
        EXPECT_FAILS(gc_module_load(fx.ctx, future, strlen(future), &m));
        CHECK(m == NULL);
        check_case = "PTX with a NUL in the middle: the text before it loads";
        char with_nul[1024];
        memcpy(with_nul, GOOD_PTX, len + 1);
        memcpy(with_nul + len + 1, "garbage", 8);
        EXPECT_OK(gc_module_load(fx.ctx, with_nul, len + 9, &m));
        EXPECT_OK(gc_module_destroy(m));
    }
    objects_work();

    COVER(gc_module_function);
    EXPECT_STATUS(gc_module_function(fx.mod, "noop", NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_MODULE, h, gc_module_function(h, "noop", &f), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_module_function(fx.mod, NULL, &f), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_module_function(fx.mod, "missing", &f), GC_ERROR_NOT_FOUND, GC_ERROR_INVALID_HANDLE);
    check_case = "an empty name";
    if (fx.gpu)
        EXPECT_FAILS(gc_module_function(fx.mod, "", &f));
    else
        EXPECT_STATUS(gc_module_function(fx.mod, "", &f), GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_module_function(fx.mod, "\xff\xfe", &f), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    CHECK(f == NULL);
    objects_work();

    COVER(gc_function_wrap);
    void *raw = NULL;
    if (fx.gpu) EXPECT_OK(gc_function_raw(fx.noop, &raw));
    EXPECT_STATUS(gc_function_wrap(fx.ctx, raw, "w", NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_function_wrap(h, raw, "w", &f), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_function_wrap(fx.ctx, NULL, "w", &f), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(gc_function_wrap(fx.ctx, raw, "\xff", &f), GC_ERROR_INVALID_ARGUMENT);
    CHECK(f == NULL);
    if (fx.gpu) {
        EXPECT_OK(gc_function_wrap(fx.ctx, raw, NULL, &f)); /* a NULL name is allowed */
        EXPECT_OK(gc_launch(f, fx.s, one, one, 0, NULL));
        EXPECT_OK(gc_function_destroy(f));
        f = NULL;
    }
    objects_work();

    COVER(gc_kernel_builtin);
    EXPECT_STATUS(gc_kernel_builtin(fx.ctx, "gc_fill_f32", NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_kernel_builtin(h, "gc_fill_f32", &f), GC_ERROR_INVALID_ARGUMENT);
    const char *unknown[] = {"no_such_kernel", "", "gc_fill_f32 ", "GC_FILL_F32", "gc_fill_f64"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        check_case = "an unknown built-in name";
        EXPECT2(gc_kernel_builtin(fx.ctx, unknown[i], &f), GC_ERROR_NOT_FOUND, GC_ERROR_INVALID_HANDLE);
    }
    EXPECT2(gc_kernel_builtin(fx.ctx, NULL, &f), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_kernel_builtin(fx.ctx, "\xc3\x28", &f), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    CHECK(f == NULL);
    objects_work();

    COVER(gc_launch);
    BAD_HANDLE_ARG(K_FUNCTION, h, gc_launch(h, fx.s, one, one, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) BAD_HANDLE_ARG(K_STREAM, h, gc_launch(fx.noop, h, one, one, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    {
        const gc_dim3 grids[] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {0x80000000u, 1, 1}, {1, 65536, 1}, {1, 1, 65536}};
        const gc_dim3 blocks[] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {1025, 1, 1}, {1, 1025, 1},
                                  {1, 1, 65},  {32, 32, 2}, {UINT32_MAX, UINT32_MAX, UINT32_MAX}};
        for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
            check_case = "a grid with a zero or over-limit dimension";
            EXPECT2(gc_launch(fx.noop, fx.s, grids[i], one, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
                    GC_ERROR_INVALID_HANDLE);
        }
        for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
            check_case = "a block with a zero or over-limit dimension";
            EXPECT2(gc_launch(fx.noop, fx.s, one, blocks[i], 0, NULL), GC_ERROR_INVALID_ARGUMENT,
                    GC_ERROR_INVALID_HANDLE);
        }
    }
    if (fx.gpu) {
        check_case = "more dynamic shared memory than any GPU has";
        EXPECT_FAILS(gc_launch(fx.noop, fx.s, one, one, UINT32_MAX, NULL));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        /* A user kernel with real arguments, then bad ones never launched. */
        uint64_t ptr = (uint64_t)(uintptr_t)fx.buf;
        uint32_t n = SMALL;
        void *args[2] = {&ptr, &n};
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, SMALL * 4));
        EXPECT_OK(gc_launch(fx.add_one, fx.s, one, one, 0, args));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, SMALL * 4));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((float *)fx.host)[0] == 1.0f);
    }
    objects_work();

    COVER(gc_function_raw);
    raw = &host_word;
    EXPECT_STATUS(gc_function_raw(fx.noop, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_FUNCTION, h, gc_function_raw(h, &raw), GC_ERROR_INVALID_ARGUMENT);
    CHECK(raw == &host_word);
    objects_work();

    COVER(gc_function_destroy);
    EXPECT_OK(gc_function_destroy(NULL));
    EACH_BAD(K_FUNCTION, h, EXPECT_STATUS(gc_function_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_kernel_builtin(fx.ctx, "gc_copy_f32", &f));
        EXPECT_OK(gc_function_destroy(f));
        EXPECT_STATUS(gc_function_destroy(f), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_launch(f, fx.s, one, one, 0, NULL), GC_ERROR_INVALID_HANDLE); /* launch after destroy */
        EXPECT_ERROR_MENTIONS("destroyed");
    }
    objects_work();

    COVER(gc_module_destroy);
    EXPECT_OK(gc_module_destroy(NULL));
    EACH_BAD(K_MODULE, h, EXPECT_STATUS(gc_module_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        /* A function keeps its module loaded after the module's handle goes. */
        EXPECT_OK(gc_module_load(fx.ctx, GOOD_PTX, len, &m));
        EXPECT_OK(gc_module_function(m, "noop", &f));
        EXPECT_OK(gc_module_destroy(m));
        EXPECT_STATUS(gc_module_destroy(m), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_module_function(m, "noop", &f), GC_ERROR_INVALID_HANDLE);
        EXPECT_OK(gc_launch(f, fx.s, one, one, 0, NULL));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_function_destroy(f));
    }
    objects_work();
}

/* NULL kernel arguments for kernels that take some: graphcore must refuse
 * them or pass CUDA's refusal on, never launch (its own process: a library
 * that let one through could crash). */
static void null_kernel_args(void) {
    gc_dim3 one = {1, 1, 1};
    COVER(gc_launch);
    check_case = "NULL args for a kernel with parameters";
    EXPECT_FAILS(gc_launch(fx.fill, fx.s, one, one, 0, NULL));
    EXPECT_FAILS(gc_launch(fx.add_one, fx.s, one, one, 0, NULL));
    COVER(gc_graph_add_kernel);
    EXPECT_FAILS(gc_graph_add_kernel(fx.graph, fx.fill, one, one, 0, NULL, NULL, 0, NULL));
    if (fx.gpu) {
        size_t nodes = 0;
        EXPECT_OK(gc_graph_node_count(fx.graph, &nodes));
        CHECK(nodes == 1);
    }
    if (fx.gpu) {
        COVER(gc_exec_set_kernel_args);
        gc_graph *g = NULL;
        gc_exec *e = NULL;
        gc_node n;
        uint64_t y = (uint64_t)(uintptr_t)fx.buf, count = SMALL;
        float v = 1.0f;
        void *args[3] = {&y, &count, &v};
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        EXPECT_OK(gc_graph_add_kernel(g, fx.fill, one, one, 0, args, NULL, 0, &n));
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
        EXPECT_FAILS(gc_exec_set_kernel_args(e, n, NULL));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_exec_destroy(e));
        EXPECT_OK(gc_graph_destroy(g));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static void capture_functions(void) {
    gc_graph *g = NULL;

    COVER(gc_capture_begin);
    BAD_HANDLE_ARG(K_STREAM, h, gc_capture_begin(h, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        EACH_BAD(K_POOL, h,
                 EXPECT_STATUS(gc_capture_begin(fx.s, h, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_HANDLE));
        const gc_capture_mode modes[] = {3, 4, 0x7fffffffu, UINT32_MAX};
        for (size_t i = 0; i < 4; i++) {
            check_case = "an unknown capture mode";
            EXPECT_STATUS(gc_capture_begin(fx.s, fx.pool, modes[i]), GC_ERROR_INVALID_ARGUMENT);
        }
        int capturing = 7;
        EXPECT_OK(gc_stream_is_capturing(fx.s, &capturing));
        CHECK(capturing == 0);
        /* Begin twice: refused; the first capture goes on. */
        check_case = "begin on a capturing stream";
        EXPECT_OK(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_STATUS(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_STATE);
        EXPECT_STATUS(gc_capture_begin(fx.s, NULL, GC_CAPTURE_GLOBAL), GC_ERROR_INVALID_STATE);
        EXPECT_OK(gc_op_fill(fx.s, fx.buf, SMALL, 1.0f));
        EXPECT_OK(gc_capture_end(fx.s, &g));
        size_t nodes = 0;
        EXPECT_OK(gc_graph_node_count(g, &nodes));
        CHECK(nodes == 1);
        EXPECT_OK(gc_graph_destroy(g));
        /* A capture broken by a synchronize: named at the end; the stream
         * and the pool are as before. */
        check_case = "a capture broken by gc_stream_synchronize";
        gc_pool_statistics before, after;
        memset(&before, 0, sizeof before);
        before.struct_size = sizeof before;
        after = before;
        EXPECT_OK(gc_pool_stats(fx.pool, &before));
        void *blk = NULL;
        EXPECT_OK(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_OK(gc_pool_alloc(fx.pool, 8u << 20, &blk));
        EXPECT_OK(gc_op_fill(fx.s, blk, SMALL, 1.0f));
        EXPECT_STATUS(gc_stream_synchronize(fx.s), GC_ERROR_CAPTURE);
        g = NULL;
        EXPECT_STATUS(gc_capture_end(fx.s, &g), GC_ERROR_CAPTURE);
        EXPECT_ERROR_MENTIONS("stream synchronize");
        CHECK(g == NULL);
        EXPECT_OK(gc_pool_stats(fx.pool, &after));
        CHECK(after.allocated_bytes == before.allocated_bytes && after.reserved_bytes == before.reserved_bytes &&
              after.block_count == before.block_count);
        /* The pool's max_bytes reached inside a capture: that allocation
         * fails, the capture is intact and ends well. */
        check_case = "max_bytes reached during a capture";
        EXPECT_OK(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_STATUS(gc_pool_alloc(fx.pool, 100u << 20, &blk), GC_ERROR_OUT_OF_MEMORY);
        EXPECT_OK(gc_op_fill(fx.s, fx.buf, SMALL, 2.0f));
        EXPECT_OK(gc_capture_end(fx.s, &g));
        EXPECT_OK(gc_graph_destroy(g));
    }
    objects_work();

    COVER(gc_capture_end);
    g = NULL;
    EXPECT2(gc_capture_end(fx.s, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_STREAM, h, gc_capture_end(h, &g), GC_ERROR_INVALID_ARGUMENT);
    check_case = "end without begin";
    EXPECT2(gc_capture_end(fx.s, &g), GC_ERROR_INVALID_STATE, GC_ERROR_INVALID_HANDLE);
    CHECK(g == NULL);
    if (fx.gpu) {
        /* A NULL out-parameter leaves the capture open; end it properly. */
        check_case = "end with a NULL out-parameter";
        EXPECT_OK(gc_capture_begin(fx.s, NULL, GC_CAPTURE_RELAXED));
        EXPECT_STATUS(gc_capture_end(fx.s, NULL), GC_ERROR_INVALID_ARGUMENT);
        int capturing = 0;
        EXPECT_OK(gc_stream_is_capturing(fx.s, &capturing));
        CHECK(capturing == 1);
        EXPECT_OK(gc_capture_end(fx.s, &g));
        EXPECT_OK(gc_graph_destroy(g));
        /* An empty capture gives an empty graph, which cannot be
         * instantiated. */
        check_case = "an empty capture";
        EXPECT_OK(gc_capture_begin(fx.s, NULL, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_OK(gc_capture_end(fx.s, &g));
        gc_exec *e = NULL;
        EXPECT_STATUS(gc_graph_instantiate(g, 0, &e), GC_ERROR_INVALID_ARGUMENT);
        CHECK(e == NULL);
        EXPECT_OK(gc_graph_destroy(g));
        /* A side stream that joins and never rejoins. */
        check_case = "an unjoined side stream";
        EXPECT_OK(gc_capture_begin(fx.s, NULL, GC_CAPTURE_THREAD_LOCAL));
        EXPECT_OK(gc_stream_wait_stream(fx.s2, fx.s));
        EXPECT_OK(gc_op_fill(fx.s2, fx.buf2, SMALL, 3.0f));
        EXPECT_STATUS(gc_capture_end(fx.s, &g), GC_ERROR_CAPTURE);
        EXPECT_ERROR_MENTIONS("rejoin");
        EXPECT_OK(gc_stream_is_capturing(fx.s2, &capturing));
        CHECK(capturing == 0);
        EXPECT_OK(gc_stream_synchronize(fx.s2));
    }
    objects_work();
}

/* A stream destroyed while it captures: the capture must not outlive it
 * (the pool's capture slot for this thread, the context's count of open
 * captures). Its own process: it leaves state behind if it fails. */
static void destroy_capturing_stream(void) {
    COVER(gc_stream_destroy);
    if (!fx.gpu) {
        objects_work();
        return;
    }
    gc_stream *t = NULL;
    gc_pool *q = NULL;
    void *blk = NULL;
    gc_pool_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    EXPECT_OK(gc_pool_create(fx.ctx, NULL, &q));
    EXPECT_OK(gc_stream_create(fx.ctx, &t));
    EXPECT_OK(gc_capture_begin(t, q, GC_CAPTURE_THREAD_LOCAL));
    EXPECT_OK(gc_pool_alloc(q, 1u << 20, &blk));
    EXPECT_OK(gc_op_fill(t, blk, SMALL, 1.0f));
    check_case = "gc_stream_destroy on a capturing stream";
    EXPECT_OK(gc_stream_destroy(t));
    check_case = "afterwards: no capture is left open";
    EXPECT_OK(gc_context_synchronize(fx.ctx)); /* refused while a capture is open */
    EXPECT_OK(gc_pool_stats(q, &st));
    CHECK(st.allocated_bytes == 0 && st.block_count == 0);
    EXPECT_OK(gc_capture_begin(fx.s, q, GC_CAPTURE_THREAD_LOCAL)); /* this thread may capture into q again */
    EXPECT_OK(gc_pool_alloc(q, 1u << 20, &blk));
    EXPECT_OK(gc_op_fill(fx.s, blk, SMALL, 1.0f));
    gc_graph *g = NULL;
    EXPECT_OK(gc_capture_end(fx.s, &g));
    EXPECT_OK(gc_graph_destroy(g));
    EXPECT_OK(gc_pool_destroy(q));
    objects_work();
}

/* ------------------------------------------------------------------ */
static void host_cb(void *user) {
    (void)user;
}

static void graph_functions(void) {
    gc_graph *g = NULL, *other = NULL;
    gc_node n, bogus;
    gc_dim3 one = {1, 1, 1};
    size_t count = 0;
    memset(&n, 0, sizeof n);

    COVER(gc_graph_create);
    EXPECT_STATUS(gc_graph_create(fx.ctx, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_graph_create(h, &g), GC_ERROR_INVALID_ARGUMENT);
    CHECK(g == NULL);
    if (fx.gpu) {
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        EXPECT_OK(gc_graph_create(fx.ctx, &other));
        EXPECT_OK(gc_graph_add_empty(other, NULL, 0, &bogus)); /* a node of another graph */
    } else {
        g = other = fx.graph;
        bogus = fx.node;
    }
    objects_work();

    /* Dependency lists every add_* refuses: NULL with a count, a node of
     * another graph, an index out of range, a repeat. */
    gc_node out_of_range = {0, 999}, deps2[2];
    if (fx.gpu) {
        EXPECT_OK(gc_graph_add_empty(g, NULL, 0, &n));
        out_of_range.graph = n.graph;
    }
    deps2[0] = n;
    deps2[1] = n;
#define BAD_DEPS(call_with_deps)                                                 \
    do {                                                                         \
        const gc_node *deps;                                                     \
        size_t ndeps;                                                            \
        check_case = "deps NULL, ndeps 1";                                       \
        deps = NULL;                                                             \
        ndeps = 1;                                                               \
        EXPECT2(call_with_deps, GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE); \
        check_case = "deps NULL, ndeps SIZE_MAX";                                \
        ndeps = SIZE_MAX;                                                        \
        EXPECT2(call_with_deps, GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE); \
        check_case = "a node of another graph";                                  \
        deps = &bogus;                                                           \
        ndeps = 1;                                                               \
        EXPECT2(call_with_deps, GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE); \
        check_case = "a node index out of range";                                \
        deps = &out_of_range;                                                    \
        EXPECT2(call_with_deps, GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE); \
        check_case = "a repeated dependency";                                    \
        deps = deps2;                                                            \
        ndeps = 2;                                                               \
        EXPECT2(call_with_deps, GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE); \
        if (fx.gpu) {                                                            \
            EXPECT_OK(gc_graph_node_count(g, &count));                           \
            CHECK(count == 1); /* nothing was added */                           \
        }                                                                        \
    } while (0)

    COVER(gc_graph_add_kernel);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_kernel(h, fx.noop, one, one, 0, NULL, NULL, 0, NULL),
                   GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu)
        BAD_HANDLE_ARG(K_FUNCTION, h, gc_graph_add_kernel(g, h, one, one, 0, NULL, NULL, 0, NULL),
                       GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_kernel(g, fx.noop, one, one, 0, NULL, deps, ndeps, NULL));
    {
        const gc_dim3 bad[] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {1, 65536, 1}, {0x80000000u, 1, 1}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            check_case = "a zero or over-limit grid";
            EXPECT2(gc_graph_add_kernel(g, fx.noop, bad[i], one, 0, NULL, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
                    GC_ERROR_INVALID_HANDLE);
            check_case = "a zero or over-limit block";
            gc_dim3 b = bad[i];
            if (b.x > 1024) b.x = 1025;
            EXPECT2(gc_graph_add_kernel(g, fx.noop, one, b, 0, NULL, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
                    GC_ERROR_INVALID_HANDLE);
        }
    }
    if (fx.gpu) {
        EXPECT_OK(gc_graph_node_count(g, &count));
        CHECK(count == 1);
    }
    objects_work();

    COVER(gc_graph_add_memcpy);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_memcpy(h, fx.buf, fx.host, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_memcpy(g, fx.buf, fx.host, 64, deps, ndeps, NULL));
    EXPECT2(gc_graph_add_memcpy(g, NULL, fx.host, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memcpy(g, fx.buf, NULL, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memcpy(g, fx.buf, fx.host, 0, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    {
        char pageable[64];
        check_case = "pageable host memory";
        EXPECT2(gc_graph_add_memcpy(g, fx.buf, pageable, sizeof pageable, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
                GC_ERROR_INVALID_HANDLE);
    }
    if (fx.gpu) {
        /* On a graph of its own, so a node wrongly added spoils no other case. */
        gc_graph *scratch = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &scratch));
        check_case = "a copy node overrunning its pool block";
        EXPECT_STATUS(gc_graph_add_memcpy(scratch, fx.buf, fx.host, 2 * BUF_BYTES, NULL, 0, NULL),
                      GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_graph_add_memcpy(scratch, fx.host, fx.buf, 2 * BUF_BYTES, NULL, 0, NULL),
                      GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_graph_node_count(scratch, &count));
        CHECK(count == 0);
        EXPECT_OK(gc_graph_destroy(scratch));
    }
    objects_work();

    COVER(gc_graph_add_memset);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_memset(h, fx.buf, 0, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_memset(g, fx.buf, 0, 64, deps, ndeps, NULL));
    EXPECT2(gc_graph_add_memset(g, NULL, 0, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memset(g, fx.buf, 0, 0, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memset(g, fx.host, 0, 64, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE); /* host memory is not device memory */
    if (fx.gpu) {
        gc_graph *scratch = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &scratch));
        check_case = "a set node overrunning its pool block";
        EXPECT_STATUS(gc_graph_add_memset(scratch, fx.buf, 0, 2 * BUF_BYTES, NULL, 0, NULL),
                      GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_graph_node_count(scratch, &count));
        CHECK(count == 0);
        EXPECT_OK(gc_graph_destroy(scratch));
    }
    objects_work();

    COVER(gc_graph_add_memset_elem);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_memset_elem(h, fx.buf, 0, 4, 16, NULL, 0, NULL),
                   GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_memset_elem(g, fx.buf, 0, 4, 16, deps, ndeps, NULL));
    EXPECT2(gc_graph_add_memset_elem(g, NULL, 0, 4, 16, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memset_elem(g, fx.buf, 0, 4, 0, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    check_case = "an element size other than 1, 2 or 4";
    EXPECT2(gc_graph_add_memset_elem(g, fx.buf, 0, 8, 16, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    check_case = "dst not aligned to the element size";
    EXPECT2(gc_graph_add_memset_elem(g, (char *)fx.buf + 2, 0, 4, 16, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    check_case = "a value that does not fit in an element";
    EXPECT2(gc_graph_add_memset_elem(g, fx.buf, 0x12345, 2, 16, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_memset_elem(g, fx.host, 0, 4, 16, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE); /* host memory is not device memory */
    if (fx.gpu) {
        gc_graph *scratch = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &scratch));
        check_case = "a set node of elements overrunning its pool block";
        EXPECT_STATUS(gc_graph_add_memset_elem(scratch, fx.buf, 0, 2, BUF_BYTES, NULL, 0, NULL),
                      GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_graph_node_count(scratch, &count));
        CHECK(count == 0);
        EXPECT_OK(gc_graph_destroy(scratch));
    }
    objects_work();

    COVER(gc_graph_add_host);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_host(h, host_cb, NULL, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_host(g, host_cb, NULL, deps, ndeps, NULL));
    EXPECT2(gc_graph_add_host(g, NULL, NULL, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    objects_work();

    COVER(gc_graph_add_child);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_child(h, fx.graph, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_child(g, h, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "a graph as its own child";
        EXPECT_STATUS(gc_graph_add_child(g, g, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        gc_graph *empty = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &empty));
        check_case = "an empty child";
        EXPECT_STATUS(gc_graph_add_child(g, empty, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_graph_destroy(empty));
    }
    BAD_DEPS(gc_graph_add_child(g, fx.graph, deps, ndeps, NULL));
    objects_work();

    COVER(gc_graph_add_empty);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_empty(h, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_DEPS(gc_graph_add_empty(g, deps, ndeps, NULL));
    objects_work();

    COVER(gc_graph_add_dependency);
    gc_node m2 = n;
    if (fx.gpu) EXPECT_OK(gc_graph_add_empty(g, &n, 1, &m2)); /* n -> m2 */
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_dependency(h, n, m2), GC_ERROR_INVALID_ARGUMENT);
    check_case = "a self-loop";
    EXPECT2(gc_graph_add_dependency(g, n, n), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "an edge already there";
    EXPECT2(gc_graph_add_dependency(g, n, m2), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "an edge closing a cycle";
    EXPECT2(gc_graph_add_dependency(g, m2, n), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) EXPECT_ERROR_MENTIONS("cycle");
    check_case = "a node of another graph";
    EXPECT2(gc_graph_add_dependency(g, bogus, n), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_dependency(g, n, bogus), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    check_case = "a node index out of range";
    EXPECT2(gc_graph_add_dependency(g, n, out_of_range), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_add_dependency(g, out_of_range, n), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        check_case = "the graph is unchanged and still takes edges";
        EXPECT_OK(gc_graph_node_count(g, &count));
        CHECK(count == 2);
        gc_node third;
        EXPECT_OK(gc_graph_add_empty(g, NULL, 0, &third));
        EXPECT_OK(gc_graph_add_dependency(g, m2, third));
        gc_exec *e = NULL;
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_exec_destroy(e));
    }
    objects_work();

    COVER(gc_graph_add_programmatic_dependency);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_programmatic_dependency(h, n, m2), GC_ERROR_INVALID_ARGUMENT);
    check_case = "a node of another graph";
    EXPECT2(gc_graph_add_programmatic_dependency(g, bogus, n), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        gc_graph *pg = NULL;
        gc_dim3 one = {1, 1, 1};
        gc_node k1, k2, empty_node, fill_node;
        float *fy = (float *)fx.buf;
        uint64_t fcount = 1;
        float fvalue = 1.0f;
        void *fargs[] = {&fy, &fcount, &fvalue};
        EXPECT_OK(gc_graph_create(fx.ctx, &pg));
        EXPECT_OK(gc_graph_add_kernel(pg, fx.noop, one, one, 0, NULL, NULL, 0, &k1));
        EXPECT_OK(gc_graph_add_kernel(pg, fx.noop, one, one, 0, NULL, NULL, 0, &k2));
        EXPECT_OK(gc_graph_add_empty(pg, NULL, 0, &empty_node));
        EXPECT_OK(gc_graph_add_kernel(pg, fx.fill, one, one, 0, fargs, NULL, 0, &fill_node));
        check_case = "two user kernels (a full edge below compute capability 9.0 or CUDA 12.3)";
        gc_status st = gc_graph_add_programmatic_dependency(pg, k1, k2);
        CHECK(st == GC_SUCCESS);
        if (st == GC_SUCCESS) {
            check_case = "an edge already there";
            EXPECT_STATUS(gc_graph_add_programmatic_dependency(pg, k1, k2), GC_ERROR_INVALID_ARGUMENT);
            check_case = "a self-loop";
            EXPECT_STATUS(gc_graph_add_programmatic_dependency(pg, k1, k1), GC_ERROR_INVALID_ARGUMENT);
            check_case = "an edge closing a cycle";
            EXPECT_STATUS(gc_graph_add_programmatic_dependency(pg, k2, k1), GC_ERROR_INVALID_ARGUMENT);
            check_case = "a node that is not a kernel";
            EXPECT_STATUS(gc_graph_add_programmatic_dependency(pg, k1, empty_node), GC_ERROR_INVALID_ARGUMENT);
            EXPECT_ERROR_MENTIONS("kernel nodes");
            check_case = "a built-in kernel as the node that waits (its compute_90 code waits first)";
            EXPECT_OK(gc_graph_add_programmatic_dependency(pg, k1, fill_node));
            check_case = "a node index out of range";
            gc_node beyond = k1;
            beyond.index = 999;
            EXPECT_STATUS(gc_graph_add_programmatic_dependency(pg, k1, beyond), GC_ERROR_INVALID_ARGUMENT);
            check_case = "a built-in kernel as the node that triggers";
            EXPECT_OK(gc_graph_add_programmatic_dependency(pg, fill_node, k2));
            check_case = "the graph runs";
            gc_exec *pe = NULL;
            EXPECT_OK(gc_graph_instantiate(pg, 0, &pe));
            EXPECT_OK(gc_exec_launch(pe, fx.s));
            EXPECT_OK(gc_stream_synchronize(fx.s));
            EXPECT_OK(gc_exec_destroy(pe));
        }
        EXPECT_OK(gc_graph_destroy(pg));
    }
    objects_work();

    COVER(gc_graph_clone);
    gc_graph *clone = NULL;
    EXPECT_STATUS(gc_graph_clone(fx.graph, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_clone(h, &clone), GC_ERROR_INVALID_ARGUMENT);
    CHECK(clone == NULL);
    if (fx.gpu) {
        EXPECT_OK(gc_graph_clone(fx.graph, &clone));
        EXPECT_OK(gc_graph_node_count(clone, &count));
        CHECK(count == 1);
        EXPECT_OK(gc_graph_destroy(clone));
        EXPECT_OK(gc_graph_node_count(fx.graph, &count)); /* the source lives on */
        CHECK(count == 1);
    }
    objects_work();

    COVER(gc_graph_wrap);
    gc_graph *wrapped = NULL;
    EXPECT_STATUS(gc_graph_wrap(fx.ctx, &host_word, GC_GRAPH_WRAP_BORROW, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_graph_wrap(h, &host_word, GC_GRAPH_WRAP_BORROW, &wrapped),
                   GC_ERROR_INVALID_ARGUMENT);
    check_case = "unknown flags";
    EXPECT_STATUS(gc_graph_wrap(fx.ctx, &host_word, 2, &wrapped), GC_ERROR_INVALID_ARGUMENT);
    check_case = "raw NULL";
    EXPECT2(gc_graph_wrap(fx.ctx, NULL, GC_GRAPH_WRAP_ADOPT, &wrapped), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    CHECK(wrapped == NULL);
    if (fx.gpu) {
        /* Borrow the fixture graph's own CUgraph: its node is read back, and
         * destroying the borrowing handle leaves the graph whole. */
        void *rawg = NULL;
        EXPECT_OK(gc_graph_raw(fx.graph, &rawg));
        EXPECT_OK(gc_graph_wrap(fx.ctx, rawg, GC_GRAPH_WRAP_BORROW, &wrapped));
        EXPECT_OK(gc_graph_node_count(wrapped, &count));
        CHECK(count == 1);
        EXPECT_OK(gc_graph_destroy(wrapped));
        EXPECT_OK(gc_graph_node_count(fx.graph, &count));
        CHECK(count == 1);
    }
    objects_work();

    COVER(gc_graph_node_count);
    count = 12345;
    EXPECT_STATUS(gc_graph_node_count(fx.graph, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_node_count(h, &count), GC_ERROR_INVALID_ARGUMENT);
    CHECK(count == 12345);
    objects_work();

    COVER(gc_graph_raw);
    void *raw = &host_word;
    EXPECT_STATUS(gc_graph_raw(fx.graph, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_raw(h, &raw), GC_ERROR_INVALID_ARGUMENT);
    CHECK(raw == &host_word);
    objects_work();

    COVER(gc_graph_pool_bytes);
    uint64_t bytes = 777;
    EXPECT_STATUS(gc_graph_pool_bytes(fx.graph, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_pool_bytes(h, &bytes), GC_ERROR_INVALID_ARGUMENT);
    CHECK(bytes == 777);
    objects_work();

    COVER(gc_graph_write_dot);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_write_dot(h, "/tmp/gc-bad-input.dot"), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_graph_write_dot(fx.graph, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_graph_write_dot(fx.graph, "\xff\xfe.dot"), GC_ERROR_INVALID_ARGUMENT);
    EXPECT2(gc_graph_write_dot(fx.graph, "/nonexistent-dir/x/y.dot"), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_graph_write_dot(fx.graph, ""), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    objects_work();

    COVER(gc_graph_destroy);
    EXPECT_OK(gc_graph_destroy(NULL));
    EACH_BAD(K_GRAPH, h, EXPECT_STATUS(gc_graph_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_STATUS(gc_graph_destroy(g), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_graph_add_empty(g, NULL, 0, NULL), GC_ERROR_INVALID_HANDLE);
        EXPECT_OK(gc_graph_destroy(other));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static void exec_functions(void) {
    gc_exec *e = NULL;
    gc_dim3 one = {1, 1, 1};

    COVER(gc_graph_instantiate);
    EXPECT_STATUS(gc_graph_instantiate(fx.graph, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_instantiate(h, 0, &e), GC_ERROR_INVALID_ARGUMENT);
    const uint32_t flags[] = {16, 0x80000000u, UINT32_MAX};
    for (size_t i = 0; i < 3; i++) {
        check_case = "unknown instantiate flags";
        EXPECT2(gc_graph_instantiate(fx.graph, flags[i], &e), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    }
    if (fx.gpu) {
        gc_graph *empty = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &empty));
        check_case = "an empty graph";
        EXPECT_STATUS(gc_graph_instantiate(empty, 0, &e), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("no nodes");
        EXPECT_OK(gc_graph_destroy(empty));
    }
    CHECK(e == NULL);
    objects_work();

    COVER(gc_exec_upload);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_upload(h, fx.s), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_exec_upload(fx.exec, h), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_exec_upload(fx.exec, fx.s));
    }
    objects_work();

    COVER(gc_exec_launch);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_launch(h, fx.s), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_exec_launch(fx.exec, h), GC_ERROR_INVALID_ARGUMENT);
        check_case = "launch after destroy";
        EXPECT_OK(gc_graph_instantiate(fx.graph, GC_INSTANTIATE_UPLOAD, &e));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_exec_destroy(e));
        EXPECT_STATUS(gc_exec_launch(e, fx.s), GC_ERROR_INVALID_HANDLE);
        EXPECT_ERROR_MENTIONS("destroyed");
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();

    COVER(gc_exec_update);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_update(h, fx.graph), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_GRAPH, h, gc_exec_update(fx.exec, h), GC_ERROR_INVALID_ARGUMENT);
        gc_graph *g2 = NULL, *g3 = NULL, *g4 = NULL;
        gc_node a;
        /* Another topology: two nodes. */
        EXPECT_OK(gc_graph_create(fx.ctx, &g2));
        EXPECT_OK(gc_graph_add_kernel(g2, fx.noop, one, one, 0, NULL, NULL, 0, &a));
        EXPECT_OK(gc_graph_add_empty(g2, &a, 1, NULL));
        check_case = "update with another topology (more nodes)";
        EXPECT_STATUS(gc_exec_update(fx.exec, g2), GC_ERROR_UPDATE_MISMATCH);
        EXPECT_ERROR_MENTIONS("nodes");
        /* Another node kind. */
        EXPECT_OK(gc_graph_create(fx.ctx, &g3));
        EXPECT_OK(gc_graph_add_empty(g3, NULL, 0, NULL));
        check_case = "update with another node kind";
        EXPECT_STATUS(gc_exec_update(fx.exec, g3), GC_ERROR_UPDATE_MISMATCH);
        EXPECT_ERROR_MENTIONS("node 0");
        /* Another kernel in the same place. */
        EXPECT_OK(gc_graph_create(fx.ctx, &g4));
        uint64_t y = (uint64_t)(uintptr_t)fx.buf, count = SMALL;
        float v = 1.0f;
        void *args[3] = {&y, &count, &v};
        EXPECT_OK(gc_graph_add_kernel(g4, fx.fill, one, one, 0, args, NULL, 0, NULL));
        /* A kernel's function is a parameter: it may change (CUDA's rule). */
        check_case = "update with another kernel";
        EXPECT_OK(gc_exec_update(fx.exec, g4));
        /* The exec runs; the first topology updates it back. */
        check_case = "the exec still works";
        EXPECT_OK(gc_exec_launch(fx.exec, fx.s));
        EXPECT_OK(gc_exec_update(fx.exec, fx.graph));
        EXPECT_OK(gc_exec_launch(fx.exec, fx.s));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_graph_destroy(g2));
        EXPECT_OK(gc_graph_destroy(g3));
        EXPECT_OK(gc_graph_destroy(g4));
    }
    objects_work();

    COVER(gc_exec_set_kernel_args);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_set_kernel_args(h, fx.node, NULL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        gc_node wrong = fx.node;
        wrong.graph += 1000000;
        check_case = "a node of another graph";
        EXPECT_STATUS(gc_exec_set_kernel_args(fx.exec, wrong, NULL), GC_ERROR_INVALID_ARGUMENT);
        wrong = fx.node;
        wrong.index = 5;
        check_case = "a node index out of range";
        EXPECT_STATUS(gc_exec_set_kernel_args(fx.exec, wrong, NULL), GC_ERROR_INVALID_ARGUMENT);
        wrong.index = UINT32_MAX;
        EXPECT_STATUS(gc_exec_set_kernel_args(fx.exec, wrong, NULL), GC_ERROR_INVALID_ARGUMENT);
        /* A node that is not a kernel. */
        gc_graph *g = NULL;
        gc_node empty;
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        EXPECT_OK(gc_graph_add_empty(g, NULL, 0, &empty));
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
        check_case = "a node that is not a kernel";
        EXPECT_STATUS(gc_exec_set_kernel_args(e, empty, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_exec_destroy(e));
        EXPECT_OK(gc_graph_destroy(g));
        check_case = "NULL args for a kernel without parameters";
        EXPECT_OK(gc_exec_set_kernel_args(fx.exec, fx.node, NULL));
    }
    objects_work();

    COVER(gc_exec_raw);
    void *raw = &host_word;
    EXPECT_STATUS(gc_exec_raw(fx.exec, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_raw(h, &raw), GC_ERROR_INVALID_ARGUMENT);
    CHECK(raw == &host_word);
    objects_work();

    COVER(gc_exec_stats);
    gc_exec_statistics es;
    memset(&es, 0, sizeof es);
    es.struct_size = sizeof es;
    EXPECT_STATUS(gc_exec_stats(fx.exec, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_stats(h, &es), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        es.struct_size = 0;
        check_case = "struct_size 0";
        EXPECT_STATUS(gc_exec_stats(fx.exec, &es), GC_ERROR_INVALID_ARGUMENT);
        es.struct_size = (size_t)1 << 40;
        check_case = "garbage struct_size";
        EXPECT_STATUS(gc_exec_stats(fx.exec, &es), GC_ERROR_INVALID_ARGUMENT);
        es.struct_size = sizeof es;
        EXPECT_OK(gc_exec_stats(fx.exec, &es));
        CHECK(es.graph_nodes >= 1 && es.instantiated_nodes == es.graph_nodes && es.fused_away == 0);
    }
    objects_work();

    COVER(gc_exec_write_dot);
    EXPECT_STATUS(gc_exec_write_dot(fx.exec, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_write_dot(h, "/tmp/gc_bad_input_exec.dot"), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        check_case = "a path in a folder that does not exist";
        EXPECT_STATUS(gc_exec_write_dot(fx.exec, "/nonexistent-folder/x.dot"), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_exec_write_dot(fx.exec, "/tmp/gc_bad_input_exec.dot"));
    }
    objects_work();

    COVER(gc_exec_destroy);
    EXPECT_OK(gc_exec_destroy(NULL));
    EACH_BAD(K_EXEC, h, EXPECT_STATUS(gc_exec_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        /* Destroying the graph first: the exec keeps what it needs. */
        gc_graph *g = NULL;
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        EXPECT_OK(gc_graph_add_kernel(g, fx.noop, one, one, 0, NULL, NULL, 0, NULL));
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_exec_destroy(e)); /* work in flight completes */
        EXPECT_STATUS(gc_exec_destroy(e), GC_ERROR_INVALID_HANDLE);
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
/* The typed built-in launches: bad streams, NULL and misaligned buffers,
 * zero and overflowing sizes, overlapping outputs. Nothing is launched
 * on a refusal: the output keeps its poison. */
static void poison(void) {
    if (fx.gpu) EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0x7f, BUF_BYTES));
}
static void poison_intact(void) {
    if (!fx.gpu) return;
    EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, BUF_BYTES));
    EXPECT_OK(gc_stream_synchronize(fx.s));
    unsigned char *h = fx.host;
    CHECK(h[0] == 0x7f && h[BUF_BYTES - 1] == 0x7f);
}

/* With `st` the stream and y, x, n the buffers and size: one refused case. */
#define REFUSED(what, ...)                                                       \
    do {                                                                         \
        gc_stream *st = fx.s;                                                    \
        (void)st;                                                                \
        check_case = what;                                                       \
        __VA_ARGS__;                                                             \
    } while (0)

static void unary_op(gc_status (*op)(gc_stream *, float *, const float *, uint64_t, float), int reads_x) {
    float *y = fx.buf;
    const float *x = fx.buf2;
    BAD_HANDLE_ARG(K_STREAM, st, op(st, y, x, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    if (!fx.gpu) return;
    poison();
    check_case = "y NULL";
    EXPECT_STATUS(op(fx.s, NULL, x, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    if (reads_x) {
        check_case = "x NULL";
        EXPECT_STATUS(op(fx.s, y, NULL, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
        check_case = "y and x overlap partly";
        EXPECT_STATUS(op(fx.s, y, y + 1, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
        check_case = "x misaligned";
        EXPECT_STATUS(op(fx.s, y, (const float *)((const char *)x + 2), SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    }
    check_case = "n 0";
    EXPECT_STATUS(op(fx.s, y, x, 0, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    check_case = "n overflows the byte count";
    EXPECT_STATUS(op(fx.s, y, x, UINT64_MAX, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    check_case = "y misaligned";
    EXPECT_STATUS(op(fx.s, (float *)((char *)y + 1), x, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    check_case = "y + n runs past the address space";
    EXPECT_STATUS(op(fx.s, (float *)(uintptr_t)(UINT64_MAX - 63), x, SMALL, 1.0f), GC_ERROR_INVALID_ARGUMENT);
    poison_intact();
}

/* The map ops (copy, scale, add_scalar, relu, gelu, ...) and zip ops (add,
 * mul, relu_backward): one adapter each and map_ops(), generated from their
 * declarations in kernels/src/table.rs. */
/* ---- generated by ffi/src/ops/gen.rs from the map ops of kernels/src/table.rs: do not edit ---- */
static gc_status map_copy(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_copy(s, y, x, n);
}
static gc_status map_scale(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    return gc_op_scale(s, y, x, n, c);
}
static gc_status map_add_scalar(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    return gc_op_add_scalar(s, y, x, n, c);
}
static gc_status map_relu(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_relu(s, y, x, n);
}
static gc_status map_gelu(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_gelu(s, y, x, n);
}
static gc_status zip_add(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_add(s, y, x, x, n);
}
static gc_status zip_mul(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_mul(s, y, x, x, n);
}
static gc_status zip_relu_backward(gc_stream *s, float *y, const float *x, uint64_t n, float c) {
    (void)c;
    return gc_op_relu_backward(s, y, x, x, n);
}
static void map_ops(void) {
    COVER(gc_op_copy);
    unary_op(map_copy, 1);
    objects_work();
    COVER(gc_op_scale);
    unary_op(map_scale, 1);
    objects_work();
    COVER(gc_op_add_scalar);
    unary_op(map_add_scalar, 1);
    objects_work();
    COVER(gc_op_relu);
    unary_op(map_relu, 1);
    objects_work();
    COVER(gc_op_gelu);
    unary_op(map_gelu, 1);
    objects_work();
    COVER(gc_op_add);
    unary_op(zip_add, 1);
    if (fx.gpu) {
        check_case = "y NULL";
        EXPECT_STATUS(gc_op_add(fx.s, fx.buf, fx.buf2, NULL, SMALL), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();
    COVER(gc_op_mul);
    unary_op(zip_mul, 1);
    if (fx.gpu) {
        check_case = "y NULL";
        EXPECT_STATUS(gc_op_mul(fx.s, fx.buf, fx.buf2, NULL, SMALL), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();
    COVER(gc_op_relu_backward);
    unary_op(zip_relu_backward, 1);
    if (fx.gpu) {
        check_case = "x NULL";
        EXPECT_STATUS(gc_op_relu_backward(fx.s, fx.buf, fx.buf2, NULL, SMALL), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();
}
/* The first opcode below 16 that gc_op_chain does not know. */
#define MAP_UNKNOWN_OPCODE 8u
/* ---- end of the generated map ops ---- */

/* Adapters to one signature for unary_op. */
static gc_status fill_(gc_stream *s, float *y, const float *x, uint64_t n, float v) {
    (void)x;
    return gc_op_fill(s, y, n, v);
}

static void ops_functions(void) {
    COVER(gc_op_fill);
    unary_op(fill_, 0);
    objects_work();
    map_ops();
    COVER(gc_op_axpy);
    unary_op(gc_op_axpy, 1);
    objects_work();
    COVER(gc_op_sgd);
    unary_op(gc_op_sgd, 1);
    objects_work();

    COVER(gc_op_chain);
    {
        gc_chain_op ops[GC_CHAIN_MAX_OPS + 1];
        for (int i = 0; i <= GC_CHAIN_MAX_OPS; i++) {
            ops[i].op = GC_CHAIN_MUL;
            ops[i].value = 1.0f;
        }
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_chain(st, fx.buf, fx.buf2, SMALL, ops, 1), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            poison();
            check_case = "ops NULL with a count";
            EXPECT_STATUS(gc_op_chain(fx.s, fx.buf, fx.buf2, SMALL, NULL, 1), GC_ERROR_INVALID_ARGUMENT);
            check_case = "more than GC_CHAIN_MAX_OPS operations";
            EXPECT_STATUS(gc_op_chain(fx.s, fx.buf, fx.buf2, SMALL, ops, GC_CHAIN_MAX_OPS + 1),
                          GC_ERROR_INVALID_ARGUMENT);
            const uint32_t bad_ops[] = {0, MAP_UNKNOWN_OPCODE, 16, UINT32_MAX};
            for (size_t i = 0; i < sizeof bad_ops / sizeof bad_ops[0]; i++) {
                check_case = "an unknown opcode";
                ops[1].op = bad_ops[i];
                EXPECT_STATUS(gc_op_chain(fx.s, fx.buf, fx.buf2, SMALL, ops, 2), GC_ERROR_INVALID_ARGUMENT);
            }
            ops[1].op = GC_CHAIN_MUL;
            check_case = "x NULL when the first op reads it";
            EXPECT_STATUS(gc_op_chain(fx.s, fx.buf, NULL, SMALL, ops, 1), GC_ERROR_INVALID_ARGUMENT);
            check_case = "n 0";
            EXPECT_STATUS(gc_op_chain(fx.s, fx.buf, fx.buf2, 0, ops, 1), GC_ERROR_INVALID_ARGUMENT);
            poison_intact();
            check_case = "x NULL when the first op is a fill";
            ops[0].op = GC_CHAIN_FILL;
            EXPECT_OK(gc_op_chain(fx.s, fx.buf, NULL, SMALL, ops, 1));
            check_case = "no operations: a copy (ops may be NULL)";
            EXPECT_OK(gc_op_chain(fx.s, fx.buf, fx.buf2, SMALL, NULL, 0));
            EXPECT_OK(gc_stream_synchronize(fx.s));
        }
    }
    objects_work();

    COVER(gc_op_mse_workspace_bytes);
    {
        uint64_t bytes = 99;
        EXPECT_STATUS(gc_op_mse_workspace_bytes(fx.ctx, SMALL, NULL), GC_ERROR_INVALID_ARGUMENT);
        BAD_HANDLE_ARG(K_CONTEXT, h, gc_op_mse_workspace_bytes(h, SMALL, &bytes), GC_ERROR_INVALID_ARGUMENT);
        CHECK(bytes == 99);
        if (fx.gpu) {
            EXPECT_OK(gc_op_mse_workspace_bytes(fx.ctx, UINT64_MAX, &bytes));
            CHECK(bytes >= 16);
        }
    }
    objects_work();

    COVER(gc_op_mse);
    {
        float *loss = fx.buf, *grad = (float *)fx.buf + 64, *pred = fx.buf2, *target = (float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 2048;
        uint64_t need = 0;
        if (fx.gpu) EXPECT_OK(gc_op_mse_workspace_bytes(fx.ctx, SMALL, &need));
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_mse(st, loss, grad, pred, target, SMALL, 1.0f, ws, need),
                       GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            CHECK(need <= 2048);
            REFUSED("loss NULL", EXPECT_STATUS(gc_op_mse(st, NULL, grad, pred, target, SMALL, 1.0f, ws, need),
                                               GC_ERROR_INVALID_ARGUMENT));
            REFUSED("pred NULL", EXPECT_STATUS(gc_op_mse(st, loss, grad, NULL, target, SMALL, 1.0f, ws, need),
                                               GC_ERROR_INVALID_ARGUMENT));
            REFUSED("target NULL", EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, NULL, SMALL, 1.0f, ws, need),
                                                 GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace NULL", EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, target, SMALL, 1.0f, NULL, need),
                                                    GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small",
                    EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, target, SMALL, 1.0f, ws, need - 1),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace 0 bytes", EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, target, SMALL, 1.0f, ws, 0),
                                                       GC_ERROR_INVALID_ARGUMENT));
            REFUSED("n 0", EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, target, 0, 1.0f, ws, need),
                                         GC_ERROR_INVALID_ARGUMENT));
            REFUSED("n overflows", EXPECT_STATUS(gc_op_mse(st, loss, grad, pred, target, UINT64_MAX, 1.0f, ws,
                                                           UINT64_MAX),
                                                 GC_ERROR_INVALID_ARGUMENT));
        }
    }
    objects_work();

    COVER(gc_op_mse_reduction);
    {
        float *loss = fx.buf, *grad = (float *)fx.buf + 64, *pred = fx.buf2, *target = (float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 2048;
        uint64_t need = 0;
        if (fx.gpu) EXPECT_OK(gc_op_mse_workspace_bytes(fx.ctx, SMALL, &need));
        BAD_HANDLE_ARG(K_STREAM, st,
                       gc_op_mse_reduction(st, loss, grad, pred, target, SMALL, GC_REDUCTION_MEAN, ws, need),
                       GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            CHECK(need <= 2048);
            REFUSED("reduction 2", {
                EXPECT_STATUS(gc_op_mse_reduction(st, loss, grad, pred, target, SMALL, 2, ws, need),
                              GC_ERROR_INVALID_ARGUMENT);
                EXPECT_ERROR_MENTIONS("reduction 2");
            });
            REFUSED("reduction UINT32_MAX",
                    EXPECT_STATUS(gc_op_mse_reduction(st, loss, grad, pred, target, SMALL, UINT32_MAX, ws, need),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss NULL",
                    EXPECT_STATUS(gc_op_mse_reduction(st, NULL, grad, pred, target, SMALL, GC_REDUCTION_MEAN, ws, need),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small", EXPECT_STATUS(gc_op_mse_reduction(st, loss, grad, pred, target, SMALL,
                                                                             GC_REDUCTION_MEAN, ws, need - 1),
                                                         GC_ERROR_INVALID_ARGUMENT));
            REFUSED("n 0", EXPECT_STATUS(gc_op_mse_reduction(st, loss, grad, pred, target, 0, GC_REDUCTION_SUM, ws, need),
                                         GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss overlaps pred",
                    EXPECT_STATUS(gc_op_mse_reduction(st, pred, grad, pred, target, SMALL, GC_REDUCTION_MEAN, ws, need),
                                  GC_ERROR_INVALID_ARGUMENT));
        }
    }
    objects_work();

    COVER(gc_op_mlp_workspace_bytes);
    {
        gc_mlp_layer layers[2] = {{(const float *)fx.buf2, NULL, 4, 4, 1}, {(const float *)fx.buf2, NULL, 4, 2, 0}};
        uint64_t bytes = 99;
        check_case = "bytes NULL";
        EXPECT_STATUS(gc_op_mlp_workspace_bytes(2, layers, 2, NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "layers NULL";
        EXPECT_STATUS(gc_op_mlp_workspace_bytes(2, NULL, 2, &bytes), GC_ERROR_INVALID_ARGUMENT);
        check_case = "n_layers 0";
        EXPECT_STATUS(gc_op_mlp_workspace_bytes(2, layers, 0, &bytes), GC_ERROR_INVALID_ARGUMENT);
        check_case = "n_layers too many (layers not read)";
        EXPECT_STATUS(gc_op_mlp_workspace_bytes(2, (const gc_mlp_layer *)(uintptr_t)8, GC_MLP_MAX_LAYERS + 1, &bytes),
                      GC_ERROR_INVALID_ARGUMENT);
        CHECK(bytes == 99);
        check_case = "counter and one intermediate, tagged and as floats";
        EXPECT_OK(gc_op_mlp_workspace_bytes(2, layers, 2, &bytes));
        CHECK(bytes == 768);
    }
    objects_work();

    COVER(gc_op_mlp);
    {
        /* x: buf2 (2 x 4), W0 4 x 4 and W1 2 x 4 in buf2, y and the workspace in buf. */
        const float *x = fx.buf2, *w = (const float *)fx.buf2 + 64;
        float *y = fx.buf;
        void *ws = (char *)fx.buf + 1024;
        gc_mlp_layer layers[2] = {{w, NULL, 4, 4, 1}, {w, NULL, 4, 2, 0}};
        gc_mlp_layer mismatch[2] = {{w, NULL, 4, 4, 1}, {w, NULL, 3, 2, 0}};
        gc_mlp_layer no_w[2] = {{w, NULL, 4, 4, 1}, {NULL, NULL, 4, 2, 0}};
        uint64_t need = 512;
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_mlp(st, y, x, 2, layers, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            REFUSED("y NULL", EXPECT_STATUS(gc_op_mlp(st, NULL, x, 2, layers, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("x NULL", EXPECT_STATUS(gc_op_mlp(st, y, NULL, 2, layers, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("layers NULL",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, NULL, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("n_layers 0", EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 0, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("n_layers too many (layers not read)",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, (const gc_mlp_layer *)(uintptr_t)8, GC_MLP_MAX_LAYERS + 1, ws,
                                            need, GC_MLP_FUSED),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("rows 0", EXPECT_STATUS(gc_op_mlp(st, y, x, 0, layers, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("widths do not chain",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, mismatch, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("a layer's w NULL",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, no_w, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace NULL",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, NULL, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, ws, need - 1, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("y overlaps the workspace",
                    EXPECT_STATUS(gc_op_mlp(st, (float *)ws, x, 2, layers, 2, ws, need, GC_MLP_FUSED), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("unknown flag", EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, ws, need, 0x100u),
                                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, ws, need, GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("GC_MLP_TF32 with GC_MLP_FUSED",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, ws, need, GC_MLP_TF32 | GC_MLP_FUSED),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("GC_LINEAR_CUBLASLT with GC_MLP_FUSED_ALWAYS",
                    EXPECT_STATUS(gc_op_mlp(st, y, x, 2, layers, 2, ws, need, GC_LINEAR_CUBLASLT | GC_MLP_FUSED_ALWAYS),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("y overlaps x", EXPECT_STATUS(gc_op_mlp(st, (float *)x, x, 2, layers, 2, ws, need, GC_MLP_FUSED),
                                                  GC_ERROR_INVALID_ARGUMENT));
        }
    }
    objects_work();

    COVER(gc_op_mlp_rows);
    {
        /* As gc_op_mlp's: x in buf2, y and the workspace in buf; the row count in buf2 past the weights. */
        const float *x = fx.buf2, *w = (const float *)fx.buf2 + 64;
        const uint32_t *rows = (const uint32_t *)((char *)fx.buf2 + 2048);
        float *y = fx.buf;
        void *ws = (char *)fx.buf + 1024;
        gc_mlp_layer layers[2] = {{w, NULL, 4, 4, 1}, {w, NULL, 4, 2, 0}};
        gc_mlp_layer mismatch[2] = {{w, NULL, 4, 4, 1}, {w, NULL, 3, 2, 0}};
        uint64_t need = 768;
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_mlp_rows(st, y, x, rows, 2, layers, 2, ws, need, 0), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            REFUSED("rows NULL", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, NULL, 2, layers, 2, ws, need, 0),
                                               GC_ERROR_INVALID_ARGUMENT));
            REFUSED("max_rows 0", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 0, layers, 2, ws, need, 0),
                                                GC_ERROR_INVALID_ARGUMENT));
            REFUSED("max_rows 257", {
                EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 257, layers, 2, ws, UINT64_MAX, 0), GC_ERROR_INVALID_ARGUMENT);
            });
            REFUSED("layers NULL", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 2, NULL, 2, ws, need, 0),
                                                 GC_ERROR_INVALID_ARGUMENT));
            REFUSED("widths do not chain", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 2, mismatch, 2, ws, need, 0),
                                                         GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 2, layers, 2, ws, need - 1, 0),
                                                         GC_ERROR_INVALID_ARGUMENT));
            REFUSED("rows inside the workspace",
                    EXPECT_STATUS(gc_op_mlp_rows(st, y, x, (const uint32_t *)ws, 2, layers, 2, ws, need, 0),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("a flag", EXPECT_STATUS(gc_op_mlp_rows(st, y, x, rows, 2, layers, 2, ws, need, 1),
                                            GC_ERROR_INVALID_ARGUMENT));
        }
    }
    objects_work();

    COVER(gc_op_linear_mse_step_workspace_bytes);
    {
        uint64_t bytes = 99;
        check_case = "bytes NULL";
        EXPECT_STATUS(gc_op_linear_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, NULL), GC_ERROR_INVALID_ARGUMENT);
        BAD_HANDLE_ARG(K_CONTEXT, h, gc_op_linear_mse_step_workspace_bytes(h, 2, 4, 4, &bytes),
                       GC_ERROR_INVALID_ARGUMENT);
        CHECK(bytes == 99);
        if (fx.gpu) {
            check_case = "sums and dY";
            EXPECT_OK(gc_op_linear_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &bytes));
            CHECK(bytes >= 256 + 2 * 4 * sizeof(float));
        }
    }
    objects_work();

    COVER(gc_op_linear_mse_step);
    {
        /* W 4 x 4 and b in buf, x (2 x 4) and target (2 x 4) in buf2, loss and the workspace in buf. */
        float *w = fx.buf, *b = (float *)fx.buf + 64, *loss = (float *)fx.buf + 128;
        const float *x = fx.buf2, *target = (const float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 1024;
        uint64_t need = 512;
        if (fx.gpu) EXPECT_OK(gc_op_linear_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &need));
#define STEP(st_, w_, b_, x_, t_, l_, rows_, ws_, bytes_) \
    gc_op_linear_mse_step(st_, w_, b_, x_, t_, l_, rows_, 4, 4, 1.0f, 0.01f, ws_, bytes_)
        BAD_HANDLE_ARG(K_STREAM, st, STEP(st, w, b, x, target, loss, 2, ws, need), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            CHECK(need <= 2048);
            REFUSED("w NULL", EXPECT_STATUS(STEP(st, NULL, b, x, target, loss, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("x NULL", EXPECT_STATUS(STEP(st, w, b, NULL, target, loss, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("target NULL",
                    EXPECT_STATUS(STEP(st, w, b, x, NULL, loss, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss NULL", EXPECT_STATUS(STEP(st, w, b, x, target, NULL, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace NULL",
                    EXPECT_STATUS(STEP(st, w, b, x, target, loss, 2, NULL, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small",
                    EXPECT_STATUS(STEP(st, w, b, x, target, loss, 2, ws, need - 1), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("rows 0", EXPECT_STATUS(STEP(st, w, b, x, target, loss, 0, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("inputs 0", EXPECT_STATUS(gc_op_linear_mse_step(st, w, b, x, target, loss, 2, 0, 4, 1.0f, 0.01f, ws,
                                                                    need),
                                              GC_ERROR_INVALID_ARGUMENT));
            REFUSED("outputs x inputs = 2^32",
                    EXPECT_STATUS(gc_op_linear_mse_step(st, w, b, x, target, loss, 2, 65536, 65536, 1.0f, 0.01f, ws,
                                                        UINT64_MAX),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss overlaps w",
                    EXPECT_STATUS(STEP(st, w, b, x, target, w + 1, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("w overlaps x",
                    EXPECT_STATUS(STEP(st, (float *)x, b, x, target, loss, 2, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace overlaps target",
                    EXPECT_STATUS(STEP(st, w, b, x, target, loss, 2, (void *)target, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("w misaligned",
                    EXPECT_STATUS(STEP(st, (float *)((char *)w + 2), b, x, target, loss, 2, ws, need),
                                  GC_ERROR_INVALID_ARGUMENT));
        }
#undef STEP
    }
    objects_work();

    COVER(gc_op_linear_mse_step_flags);
    {
        /* As gc_op_linear_mse_step's buffers. The flags are checked before the stream. */
        float *w = fx.buf, *b = (float *)fx.buf + 64, *loss = (float *)fx.buf + 128;
        const float *x = fx.buf2, *target = (const float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 1024;
        uint64_t need = 512;
        if (fx.gpu) EXPECT_OK(gc_op_linear_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &need));
#define STEPF(st_, rows_, bytes_, flags_) \
    gc_op_linear_mse_step_flags(st_, w, b, x, target, loss, rows_, 4, 4, 1.0f, 0.01f, ws, bytes_, flags_)
        BAD_HANDLE_ARG(K_STREAM, st, STEPF(st, 2, need, 0), GC_ERROR_INVALID_ARGUMENT);
        REFUSED("unknown flag (GC_LINEAR_RELU)",
                EXPECT_STATUS(STEPF(st, 2, need, GC_LINEAR_RELU), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT",
                EXPECT_STATUS(STEPF(st, 2, need, GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("GC_LINEAR_TF32 with GC_LINEAR_GRAPHCORE",
                EXPECT_STATUS(STEPF(st, 2, need, GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE), GC_ERROR_NOT_SUPPORTED));
        if (fx.gpu) {
            REFUSED("workspace too small", EXPECT_STATUS(STEPF(st, 2, need - 1, 0), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("GC_LINEAR_CUBLASLT in the small-batch form",
                    EXPECT_STATUS(STEPF(st, 2, need, GC_LINEAR_CUBLASLT), GC_ERROR_NOT_SUPPORTED));
        }
#undef STEPF
    }
    objects_work();

    COVER(gc_op_mlp2_mse_step_workspace_bytes);
    {
        uint64_t bytes = 99;
        check_case = "bytes NULL";
        EXPECT_STATUS(gc_op_mlp2_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, NULL), GC_ERROR_INVALID_ARGUMENT);
        BAD_HANDLE_ARG(K_CONTEXT, h, gc_op_mlp2_mse_step_workspace_bytes(h, 2, 4, 4, &bytes),
                       GC_ERROR_INVALID_ARGUMENT);
        CHECK(bytes == 99);
        if (fx.gpu) {
            check_case = "barrier, sums, h, dP and dH";
            EXPECT_OK(gc_op_mlp2_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &bytes));
            CHECK(bytes >= 256 + 4 * 256);
        }
    }
    objects_work();

    COVER(gc_op_mlp2_mse_step);
    {
        /* W1 4 x 4, b1, W2 4 x 4, b2 and loss in buf; x (2 x 4) and target (2 x 4) in buf2; the workspace in buf. */
        float *w1 = fx.buf, *b1 = (float *)fx.buf + 32, *w2 = (float *)fx.buf + 64, *b2 = (float *)fx.buf + 96;
        float *loss = (float *)fx.buf + 128;
        const float *x = fx.buf2, *target = (const float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 1024;
        uint64_t need = 1024;
        if (fx.gpu) EXPECT_OK(gc_op_mlp2_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &need));
#define STEP2(st_, w1_, w2_, x_, l_, rows_, hidden_, ws_, bytes_) \
    gc_op_mlp2_mse_step(st_, w1_, b1, w2_, b2, x_, target, l_, rows_, 4, hidden_, 4, 1.0f, 0.01f, ws_, bytes_)
        BAD_HANDLE_ARG(K_STREAM, st, STEP2(st, w1, w2, x, loss, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            CHECK(need <= 3072);
            REFUSED("w1 NULL", EXPECT_STATUS(STEP2(st, NULL, w2, x, loss, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("w2 NULL", EXPECT_STATUS(STEP2(st, w1, NULL, x, loss, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("x NULL", EXPECT_STATUS(STEP2(st, w1, w2, NULL, loss, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss NULL", EXPECT_STATUS(STEP2(st, w1, w2, x, NULL, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace NULL",
                    EXPECT_STATUS(STEP2(st, w1, w2, x, loss, 2, 4, NULL, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("workspace too small",
                    EXPECT_STATUS(STEP2(st, w1, w2, x, loss, 2, 4, ws, need - 1), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("rows 0", EXPECT_STATUS(STEP2(st, w1, w2, x, loss, 0, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("hidden 0", EXPECT_STATUS(STEP2(st, w1, w2, x, loss, 2, 0, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("hidden 65536",
                    EXPECT_STATUS(STEP2(st, w1, w2, x, loss, 1, 65536, ws, UINT64_MAX), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("w2 overlaps w1", EXPECT_STATUS(STEP2(st, w1, w1 + 4, x, loss, 2, 4, ws, need),
                                                    GC_ERROR_INVALID_ARGUMENT));
            REFUSED("loss overlaps the workspace",
                    EXPECT_STATUS(STEP2(st, w1, w2, x, (float *)ws, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("w1 overlaps x",
                    EXPECT_STATUS(STEP2(st, (float *)x, w2, x, loss, 2, 4, ws, need), GC_ERROR_INVALID_ARGUMENT));
        }
#undef STEP2
    }
    objects_work();

    COVER(gc_op_mlp2_mse_step_flags);
    {
        /* As gc_op_mlp2_mse_step's buffers. The flags are checked before the stream. */
        float *w1 = fx.buf, *b1 = (float *)fx.buf + 32, *w2 = (float *)fx.buf + 64, *b2 = (float *)fx.buf + 96;
        float *loss = (float *)fx.buf + 128;
        const float *x = fx.buf2, *target = (const float *)fx.buf2 + 64;
        void *ws = (char *)fx.buf + 1024;
        uint64_t need = 1024;
        if (fx.gpu) EXPECT_OK(gc_op_mlp2_mse_step_workspace_bytes(fx.ctx, 2, 4, 4, &need));
#define STEP2F(st_, rows_, bytes_, flags_)                                                                  \
    gc_op_mlp2_mse_step_flags(st_, w1, b1, w2, b2, x, target, loss, rows_, 4, 4, 4, 1.0f, 0.01f, ws, bytes_, \
                              flags_)
        BAD_HANDLE_ARG(K_STREAM, st, STEP2F(st, 2, need, 0), GC_ERROR_INVALID_ARGUMENT);
        REFUSED("unknown flag (0x100)", EXPECT_STATUS(STEP2F(st, 2, need, 0x100), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT",
                EXPECT_STATUS(STEP2F(st, 2, need, GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("GC_LINEAR_TF32 with GC_LINEAR_GRAPHCORE",
                EXPECT_STATUS(STEP2F(st, 2, need, GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE), GC_ERROR_NOT_SUPPORTED));
        if (fx.gpu) {
            REFUSED("workspace too small", EXPECT_STATUS(STEP2F(st, 2, need - 1, 0), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("GC_LINEAR_CUBLASLT in the two-launch form",
                    EXPECT_STATUS(STEP2F(st, 2, need, GC_LINEAR_CUBLASLT), GC_ERROR_NOT_SUPPORTED));
        }
#undef STEP2F
    }
    objects_work();

    /* Row/column ops: zero sizes, products at 2^32, NULL buffers. */
    COVER(gc_op_bias_add);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_bias_add(st, fx.buf, fx.buf2, fx.buf2, 4, 4), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("rows 0", EXPECT_STATUS(gc_op_bias_add(st, fx.buf, fx.buf2, fx.buf2, 0, 4), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("cols 0", EXPECT_STATUS(gc_op_bias_add(st, fx.buf, fx.buf2, fx.buf2, 4, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("rows x cols = 2^32", EXPECT_STATUS(gc_op_bias_add(st, fx.buf, fx.buf2, fx.buf2, 65536, 65536),
                                                    GC_ERROR_INVALID_ARGUMENT));
        REFUSED("b NULL", EXPECT_STATUS(gc_op_bias_add(st, fx.buf, fx.buf2, NULL, 4, 4), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("y NULL", EXPECT_STATUS(gc_op_bias_add(st, NULL, fx.buf2, fx.buf2, 4, 4), GC_ERROR_INVALID_ARGUMENT));
    }
    objects_work();

    COVER(gc_op_bias_grad);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_bias_grad(st, fx.buf, fx.buf2, 4, 4), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("rows 0", EXPECT_STATUS(gc_op_bias_grad(st, fx.buf, fx.buf2, 0, 4), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("cols 0", EXPECT_STATUS(gc_op_bias_grad(st, fx.buf, fx.buf2, 4, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("rows x cols = 2^32",
                EXPECT_STATUS(gc_op_bias_grad(st, fx.buf, fx.buf2, 65536, 65536), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("db overlaps dy",
                EXPECT_STATUS(gc_op_bias_grad(st, fx.buf, (float *)fx.buf + 1, 4, 4), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("dy NULL", EXPECT_STATUS(gc_op_bias_grad(st, fx.buf, NULL, 4, 4), GC_ERROR_INVALID_ARGUMENT));
    }
    objects_work();

    COVER(gc_op_bias_sgd);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_bias_sgd(st, fx.buf, fx.buf2, 4, 4, 0.1f), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("rows 0", EXPECT_STATUS(gc_op_bias_sgd(st, fx.buf, fx.buf2, 0, 4, 0.1f), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("b NULL", EXPECT_STATUS(gc_op_bias_sgd(st, NULL, fx.buf2, 4, 4, 0.1f), GC_ERROR_INVALID_ARGUMENT));
    }
    objects_work();

    /* Linear layers: m, n, k = 0; NULL buffers; outputs overlapping inputs. */
#define LINEAR_CASES(fn)                                                         \
    do {                                                                         \
        BAD_HANDLE_ARG(K_STREAM, st, fn(st, fx.buf, fx.buf2, fx.buf2, 2, 2, 2), GC_ERROR_INVALID_ARGUMENT); \
        if (fx.gpu) {                                                            \
            REFUSED("m 0", EXPECT_STATUS(fn(st, fx.buf, fx.buf2, fx.buf2, 0, 2, 2), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("n 0", EXPECT_STATUS(fn(st, fx.buf, fx.buf2, fx.buf2, 2, 0, 2), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("k 0", EXPECT_STATUS(fn(st, fx.buf, fx.buf2, fx.buf2, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("output NULL", EXPECT_STATUS(fn(st, NULL, fx.buf2, fx.buf2, 2, 2, 2), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("first input NULL", EXPECT_STATUS(fn(st, fx.buf, NULL, fx.buf2, 2, 2, 2), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("second input NULL", EXPECT_STATUS(fn(st, fx.buf, fx.buf2, NULL, 2, 2, 2), GC_ERROR_INVALID_ARGUMENT)); \
            REFUSED("output overlaps an input", EXPECT_STATUS(fn(st, fx.buf, (float *)fx.buf + 1, fx.buf2, 2, 2, 2), GC_ERROR_INVALID_ARGUMENT)); \
        }                                                                        \
    } while (0)
    COVER(gc_op_linear);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 2, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("m 0", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 0, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("n 0", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 2, 0, 2, 1), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("k 0", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 2, 2, 0, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("y NULL", EXPECT_STATUS(gc_op_linear(st, NULL, fx.buf2, fx.buf2, NULL, 2, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("x NULL", EXPECT_STATUS(gc_op_linear(st, fx.buf, NULL, fx.buf2, NULL, 2, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("w NULL", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, NULL, NULL, 2, 2, 2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("y overlaps x", EXPECT_STATUS(gc_op_linear(st, fx.buf, (float *)fx.buf + 1, fx.buf2, NULL, 2, 2, 2, 0),
                                              GC_ERROR_INVALID_ARGUMENT));
        REFUSED("huge m (tiled path)", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, UINT32_MAX, UINT32_MAX, 2, 0),
                                                     GC_ERROR_INVALID_ARGUMENT));
        REFUSED("huge m (TF32 path)", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, UINT32_MAX, UINT32_MAX, 2,
                                                                 GC_LINEAR_TF32),
                                                    GC_ERROR_INVALID_ARGUMENT));
        REFUSED("unknown flag", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 2, 2, 2, 16), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("both backends forced", EXPECT_STATUS(gc_op_linear(st, fx.buf, fx.buf2, fx.buf2, NULL, 2, 2, 2,
                                                                   GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT),
                                                      GC_ERROR_INVALID_ARGUMENT));
        REFUSED("bad input on the forced cuBLASLt path", EXPECT_STATUS(gc_op_linear(st, fx.buf, (float *)fx.buf + 1, fx.buf2, NULL,
                                                                                    2, 2, 2, GC_LINEAR_CUBLASLT),
                                                                       GC_ERROR_INVALID_ARGUMENT));
    }
    /* Flags are checked before the stream: refused with any handle. */
    check_case = "both backends forced";
    EXPECT_STATUS(gc_op_linear(NULL, fx.buf, fx.buf2, fx.buf2, NULL, 2, 2, 2, GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT),
                  GC_ERROR_INVALID_ARGUMENT);
    objects_work();
    COVER(gc_op_linear_backend);
    {
        int backend = -1;
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_linear_backend(st, 2, 2, 2, 0, &backend), GC_ERROR_INVALID_ARGUMENT);
        check_case = "backend NULL";
        EXPECT_STATUS(gc_op_linear_backend(fx.s, 2, 2, 2, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "m 0";
        EXPECT_STATUS(gc_op_linear_backend(fx.s, 0, 2, 2, 0, &backend), GC_ERROR_INVALID_ARGUMENT);
        check_case = "unknown flag";
        EXPECT_STATUS(gc_op_linear_backend(fx.s, 2, 2, 2, 16, &backend), GC_ERROR_INVALID_ARGUMENT);
        check_case = "both backends forced";
        EXPECT_STATUS(gc_op_linear_backend(fx.s, 2, 2, 2, GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT, &backend),
                      GC_ERROR_INVALID_ARGUMENT);
        CHECK(backend == -1);
        if (fx.gpu) {
            check_case = "small batch takes graphcore's kernels";
            EXPECT_STATUS(gc_op_linear_backend(fx.s, 1, 64, 64, 0, &backend), GC_SUCCESS);
            CHECK(backend == GC_LINEAR_BACKEND_GRAPHCORE);
            check_case = "forced graphcore";
            EXPECT_STATUS(gc_op_linear_backend(fx.s, 4096, 4096, 4096, GC_LINEAR_GRAPHCORE, &backend), GC_SUCCESS);
            CHECK(backend == GC_LINEAR_BACKEND_GRAPHCORE);
        }
    }
    objects_work();
    COVER(gc_cublaslt_version);
    {
        size_t version = 0;
        check_case = "version NULL";
        EXPECT_STATUS(gc_cublaslt_version(NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "loaded (GPU machine, stage/run.sh) or not";
        gc_status vs = gc_cublaslt_version(&version);
        CHECK(vs == GC_SUCCESS ? version > 0 : vs == GC_ERROR_NOT_SUPPORTED && version == 0);
    }
    objects_work();
    COVER(gc_op_linear_rows);
    {
        const uint32_t *rows = (const uint32_t *)((char *)fx.buf2 + 2048);
        BAD_HANDLE_ARG(K_STREAM, st, gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, rows, 2, 2, 2, 0),
                       GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            REFUSED("rows NULL", EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, NULL, 2, 2, 2, 0),
                                               GC_ERROR_INVALID_ARGUMENT));
            REFUSED("max_rows 0", EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, rows, 0, 2, 2, 0),
                                                GC_ERROR_INVALID_ARGUMENT));
            REFUSED("max_rows 257", {
                EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, rows, 257, 2, 2, 0),
                              GC_ERROR_INVALID_ARGUMENT);
                EXPECT_ERROR_MENTIONS("max_rows");
            });
            REFUSED("rows misaligned",
                    EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL,
                                                    (const uint32_t *)((char *)fx.buf2 + 2049), 2, 2, 2, 0),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("y overlaps rows",
                    EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, (const uint32_t *)fx.buf, 2, 2, 2,
                                                    0),
                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("y NULL", EXPECT_STATUS(gc_op_linear_rows(st, NULL, fx.buf2, fx.buf2, NULL, rows, 2, 2, 2, 0),
                                            GC_ERROR_INVALID_ARGUMENT));
            REFUSED("TF32 refused", EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, rows, 2, 2, 2,
                                                                    GC_LINEAR_TF32),
                                                  GC_ERROR_INVALID_ARGUMENT));
            REFUSED("unknown flag", EXPECT_STATUS(gc_op_linear_rows(st, fx.buf, fx.buf2, fx.buf2, NULL, rows, 2, 2, 2, 4),
                                                  GC_ERROR_INVALID_ARGUMENT));
        }
    }
    objects_work();
    COVER(gc_op_linear_backward_input);
    LINEAR_CASES(gc_op_linear_backward_input);
    objects_work();
    COVER(gc_op_linear_backward_weight);
    LINEAR_CASES(gc_op_linear_backward_weight);
    objects_work();
    COVER(gc_op_linear_weight_sgd);
    {
        /* Same cases; lr goes last, so an adapter puts it there. */
#define WSGD(s, w, dy, x, m, n, k) gc_op_linear_weight_sgd(s, w, dy, x, m, n, k, 0.1f)
        LINEAR_CASES(WSGD);
#undef WSGD
    }
    objects_work();
#undef LINEAR_CASES
    if (fx.gpu) EXPECT_OK(gc_stream_synchronize(fx.s));
}

/* ------------------------------------------------------------------ */
static gc_status record_fails(gc_stream *s, uint32_t batch, void *user) {
    (void)s;
    (void)batch;
    (void)user;
    return GC_ERROR_NOT_SUPPORTED;
}
static gc_status record_breaks_capture(gc_stream *s, uint32_t batch, void *user) {
    gc_status st = record_fill(s, batch, user);
    return st != GC_SUCCESS ? st : gc_stream_synchronize(s);
}

/* An exact-size record: y (buf, 4 wide) = x (buf2, 4 wide) * W^T, W 4 x 4 at buf2 + 2048 bytes, its row count
 * from `rows`; x and y declared as rows. With user non-NULL, also a fill of y that ignores the row count (the
 * bucket then takes no exact-size replay). */
static gc_status record_rows_linear(gc_stream *s, uint32_t batch, const uint32_t *rows, void *user) {
    float *y = fx.buf;
    const float *x = fx.buf2, *w = (const float *)((char *)fx.buf2 + 2048);
    int capturing = 0;
    size_t index = 0;
    gc_status st = gc_stream_is_capturing(s, &capturing);
    if (st == GC_SUCCESS && capturing) st = gc_capture_arg(s, x, (size_t)batch * 16u, GC_ARG_ROWS, &index);
    if (st == GC_SUCCESS && capturing) st = gc_capture_arg(s, y, (size_t)batch * 16u, GC_ARG_ROWS, &index);
    if (st == GC_SUCCESS) st = gc_op_linear_rows(s, y, x, w, NULL, rows, batch, 4, 4, 0);
    if (st == GC_SUCCESS && user) st = gc_op_fill(s, y, (uint64_t)batch * 4u, 1.0f);
    return st;
}

static gc_status record_rows_fails(gc_stream *s, uint32_t batch, const uint32_t *rows, void *user) {
    (void)s;
    (void)batch;
    (void)rows;
    (void)user;
    return GC_ERROR_NOT_SUPPORTED;
}

static void runner_functions(void) {
    gc_runner *r = NULL;
    uint32_t buckets[GC_RUNNER_MAX_BUCKETS + 1];
    for (uint32_t i = 0; i <= GC_RUNNER_MAX_BUCKETS; i++) buckets[i] = 100 + i;

    COVER(gc_runner_create);
    EXPECT_STATUS(gc_runner_create(fx.ctx, NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_runner_create(h, NULL, &r), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) EACH_BAD(K_POOL, h, EXPECT_STATUS(gc_runner_create(fx.ctx, h, &r), GC_ERROR_INVALID_HANDLE));
    CHECK(r == NULL);
    objects_work();

    COVER(gc_runner_capture);
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_capture(h, buckets, 1, record_fill, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &r));
        REFUSED("record NULL", EXPECT_STATUS(gc_runner_capture(r, buckets, 1, NULL, NULL, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("buckets NULL", EXPECT_STATUS(gc_runner_capture(r, NULL, 1, record_fill, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("n 0", EXPECT_STATUS(gc_runner_capture(r, buckets, 0, record_fill, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("more than GC_RUNNER_MAX_BUCKETS",
                EXPECT_STATUS(gc_runner_capture(r, buckets, GC_RUNNER_MAX_BUCKETS + 1, record_fill, fx.buf2, 0),
                              GC_ERROR_INVALID_ARGUMENT));
        uint32_t zero = 0, twice[2] = {4, 4};
        REFUSED("bucket 0", EXPECT_STATUS(gc_runner_capture(r, &zero, 1, record_fill, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a bucket twice", EXPECT_STATUS(gc_runner_capture(r, twice, 2, record_fill, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a failing record", EXPECT_STATUS(gc_runner_capture(r, twice, 1, record_fails, NULL, 1), GC_ERROR_NOT_SUPPORTED));
        REFUSED("a record breaking the capture",
                EXPECT_STATUS(gc_runner_capture(r, twice, 1, record_breaks_capture, fx.buf2, 0), GC_ERROR_CAPTURE));
        gc_runner_statistics rs;
        memset(&rs, 0, sizeof rs);
        rs.struct_size = sizeof rs;
        EXPECT_OK(gc_runner_stats(r, &rs));
        CHECK(rs.bucket_count == 0);
        check_case = "the runner still captures";
        EXPECT_OK(gc_runner_capture(r, twice, 1, record_fill, fx.buf2, 1));
        uint32_t got = 0;
        EXPECT_OK(gc_runner_replay(r, 2, fx.s, &got));
        CHECK(got == 4);
        EXPECT_OK(gc_stream_synchronize(fx.s));
    }
    objects_work();

    COVER(gc_runner_capture_exact);
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_capture_exact(h, buckets, 1, record_rows_linear, NULL, 0),
                   GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        gc_runner *x = NULL;
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &x));
        uint32_t four = 4, zero = 0;
        REFUSED("record NULL", EXPECT_STATUS(gc_runner_capture_exact(x, &four, 1, NULL, NULL, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("buckets NULL",
                EXPECT_STATUS(gc_runner_capture_exact(x, NULL, 1, record_rows_linear, NULL, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("bucket 0",
                EXPECT_STATUS(gc_runner_capture_exact(x, &zero, 1, record_rows_linear, NULL, 0), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a failing record",
                EXPECT_STATUS(gc_runner_capture_exact(x, &four, 1, record_rows_fails, NULL, 1), GC_ERROR_NOT_SUPPORTED));
        check_case = "an exact-size capture: the bucket takes exact-size replays";
        EXPECT_OK(gc_runner_capture_exact(x, &four, 1, record_rows_linear, NULL, 1));
        gc_runner_statistics xs;
        memset(&xs, 0, sizeof xs);
        xs.struct_size = sizeof xs;
        EXPECT_OK(gc_runner_stats(x, &xs));
        CHECK(xs.bucket_count == 1 && xs.exact_buckets == 1u);
        EXPECT_OK(gc_runner_destroy(x));
    }
    objects_work();

    COVER(gc_runner_replay);
    uint32_t bucket = 77;
    EXPECT_STATUS(gc_runner_replay(fx.runner, 1, fx.s, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_replay(h, 1, fx.s, &bucket), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_runner_replay(fx.runner, 1, h, &bucket), GC_ERROR_INVALID_ARGUMENT);
        REFUSED("rows 0", EXPECT_STATUS(gc_runner_replay(fx.runner, 0, st, &bucket), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("more rows than the largest bucket",
                EXPECT_STATUS(gc_runner_replay(fx.runner, 5, st, &bucket), GC_ERROR_NO_BUCKET));
        REFUSED("UINT32_MAX rows", EXPECT_STATUS(gc_runner_replay(fx.runner, UINT32_MAX, st, &bucket), GC_ERROR_NO_BUCKET));
        gc_runner *empty = NULL;
        EXPECT_OK(gc_runner_create(fx.ctx, NULL, &empty));
        REFUSED("a runner without buckets", EXPECT_STATUS(gc_runner_replay(empty, 1, st, &bucket), GC_ERROR_NO_BUCKET));
        EXPECT_OK(gc_runner_destroy(empty));
    }
    CHECK(bucket == 77);
    objects_work();

    COVER(gc_runner_stats);
    gc_runner_statistics rs;
    memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_stats(h, &rs), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_runner_stats(fx.runner, NULL), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    rs.struct_size = 0;
    EXPECT_STATUS(gc_runner_stats(fx.runner, &rs), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    CHECK(rs.bucket_count == 0);
    objects_work();

    COVER(gc_runner_set_fallback);
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_set_fallback(h, 0), GC_ERROR_INVALID_ARGUMENT);
    check_case = "an unknown flag";
    EXPECT_STATUS(gc_runner_set_fallback(fx.runner, 4), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_ERROR_MENTIONS("flags");
    if (fx.gpu) {
        gc_runner *e = NULL;
        uint32_t four = 4, got = 0;
        gc_runner_statistics es;
        memset(&es, 0, sizeof es);
        es.struct_size = sizeof es;
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &e));
        check_case = "hard fail with the eager flag: a capture is refused";
        EXPECT_OK(gc_runner_set_fallback(e, GC_FALLBACK_EAGER | GC_FALLBACK_HARD_FAIL));
        EXPECT_STATUS(gc_runner_capture(e, &four, 1, record_fill, fx.buf2, 1), GC_ERROR_INVALID_STATE);
        EXPECT_OK(gc_runner_stats(e, &es));
        CHECK(es.bucket_count == 0 && es.eager_runs == 0);
        check_case = "eager: buckets without graphs, replays run the record function";
        EXPECT_OK(gc_runner_set_fallback(e, GC_FALLBACK_EAGER));
        EXPECT_OK(gc_runner_capture(e, &four, 1, record_fill, fx.buf2, 1));
        EXPECT_OK(gc_runner_replay(e, 3, fx.s, &got));
        CHECK(got == 4);
        EXPECT_OK(gc_runner_stats(e, &es));
        CHECK(es.bucket_count == 1 && es.buckets[0].node_count == 0 && es.eager_runs == 1);
        check_case = "eager and hard fail: replays are refused, nothing runs";
        EXPECT_OK(gc_runner_set_fallback(e, GC_FALLBACK_EAGER | GC_FALLBACK_HARD_FAIL));
        got = 77;
        EXPECT_STATUS(gc_runner_replay(e, 3, fx.s, &got), GC_ERROR_INVALID_STATE);
        CHECK(got == 77);
        check_case = "a bucket added eagerly has no graph to replay";
        EXPECT_OK(gc_runner_set_fallback(e, 0));
        if (getenv("GRAPHCORE_DISABLE") == NULL) {
            EXPECT_STATUS(gc_runner_replay(e, 3, fx.s, &got), GC_ERROR_INVALID_STATE);
            CHECK(got == 77);
        }
        EXPECT_OK(gc_runner_stats(e, &es));
        CHECK(es.eager_runs == 1);
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_runner_destroy(e));
    }
    objects_work();

    COVER(gc_runner_destroy);
    EXPECT_OK(gc_runner_destroy(NULL));
    EACH_BAD(K_RUNNER, h, EXPECT_STATUS(gc_runner_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_runner_destroy(r));
        EXPECT_STATUS(gc_runner_destroy(r), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_runner_replay(r, 1, fx.s, &bucket), GC_ERROR_INVALID_HANDLE);
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
static gc_status cache_record_fails(gc_stream *s, const void *key, size_t len, void *user) {
    (void)s, (void)key, (void)len, (void)user;
    return GC_ERROR_NOT_SUPPORTED;
}

static gc_status cache_record_breaks_capture(gc_stream *s, const void *key, size_t len, void *user) {
    gc_status st = record_cache_fill(s, key, len, user);
    return st != GC_SUCCESS ? st : gc_stream_synchronize(s);
}

/* Allocates 8 MiB from the cache's pool (user) and fills it: a graph of
 * more than a small budget. */
static gc_status cache_record_big(gc_stream *s, const void *key, size_t len, void *user) {
    (void)key, (void)len;
    void *p = NULL;
    gc_status st = gc_pool_alloc((gc_pool *)user, 8u << 20, &p);
    if (st != GC_SUCCESS) return st;
    st = gc_op_fill(s, (float *)p, 1024, 1.0f);
    gc_status f = gc_pool_free((gc_pool *)user, p);
    return st != GC_SUCCESS ? st : f;
}

static void cache_functions(void) {
    gc_cache_options o;
    gc_cache *c = NULL;
    gc_cache_statistics before, after;
    memset(&before, 0, sizeof before);
    before.struct_size = sizeof before;
    after = before;
    int outcome = 77;

    COVER(gc_cache_create);
    EXPECT_STATUS(gc_cache_create(fx.ctx, NULL, NULL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_CONTEXT, h, gc_cache_create(h, NULL, &c), GC_ERROR_INVALID_ARGUMENT);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_entries = 4;
    o.max_bytes = 64u << 20;
    check_case = "struct_size 0";
    o.struct_size = 0;
    EXPECT_STATUS(gc_cache_create(fx.ctx, &o, &c), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    o.struct_size = sizeof o;
    check_case = "a budget of zero entries";
    o.max_entries = 0;
    EXPECT_STATUS(gc_cache_create(fx.ctx, &o, &c), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_ERROR_MENTIONS("max_entries");
    check_case = "a budget of zero bytes";
    o.max_entries = 4;
    o.max_bytes = 0;
    EXPECT_STATUS(gc_cache_create(fx.ctx, &o, &c), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_ERROR_MENTIONS("max_bytes");
    check_case = "an unknown flag";
    o.max_bytes = 64u << 20;
    o.flags = 8;
    EXPECT_STATUS(gc_cache_create(fx.ctx, &o, &c), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    o.flags = 0;
    CHECK(c == NULL);
    objects_work();

    COVER(gc_cache_launch);
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_launch(h, "fill", 4, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                   GC_ERROR_INVALID_ARGUMENT);
    check_case = "key NULL";
    EXPECT_STATUS(gc_cache_launch(fx.cache, NULL, 4, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                  GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    check_case = "a key of zero length";
    EXPECT_STATUS(gc_cache_launch(fx.cache, "fill", 0, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                  GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_ERROR_MENTIONS("`key`");
    check_case = "bindings NULL with n 1";
    EXPECT_STATUS(gc_cache_launch(fx.cache, "fill", 4, fx.s, NULL, 1, record_cache_fill, fx.buf2, &outcome),
                  GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    CHECK(outcome == 77);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h,
                       gc_cache_launch(fx.cache, "fill", 4, h, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                       GC_ERROR_INVALID_ARGUMENT);
        gc_pool *cp = NULL;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.max_entries = 2;
        o.max_bytes = 4u << 20; /* two pages */
        o.warmup_runs = 1;
        EXPECT_OK(gc_cache_create(fx.ctx, &o, &c));
        EXPECT_OK(gc_cache_pool(c, &cp));
        EXPECT_OK(gc_cache_launch(c, "a", 1, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome));
        CHECK(outcome == GC_CACHE_MISS);
        EXPECT_OK(gc_cache_stats(c, &before));
        struct {
            const char *what;
            const char *key;
            gc_cache_record_fn record;
            void *user;
            gc_status want;
        } refused[] = {
            {"a miss with record NULL", "b", NULL, NULL, GC_ERROR_INVALID_ARGUMENT},
            {"a failing record", "b", cache_record_fails, NULL, GC_ERROR_NOT_SUPPORTED},
            {"a record breaking its capture", "b", cache_record_breaks_capture, fx.buf2, GC_ERROR_CAPTURE},
            {"a record allocating past the budget", "b", cache_record_big, cp, GC_ERROR_OUT_OF_MEMORY},
        };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
            check_case = refused[i].what;
            outcome = 77;
            EXPECT_STATUS(gc_cache_launch(c, refused[i].key, 1, fx.s, NULL, 0, refused[i].record, refused[i].user,
                                          &outcome),
                          refused[i].want);
            CHECK(outcome == 77);
            EXPECT_OK(gc_cache_stats(c, &after));
            CHECK(after.entries == before.entries && after.evictions == before.evictions &&
                  after.bytes == before.bytes && after.pool.allocated_bytes == before.pool.allocated_bytes &&
                  after.pool.reserved_bytes == before.pool.reserved_bytes);
        }
        CHECK(after.failed_records == before.failed_records + 3);
        check_case = "hard fail with the eager flag";
        EXPECT_OK(gc_cache_set_fallback(c, GC_FALLBACK_EAGER | GC_FALLBACK_HARD_FAIL));
        EXPECT_STATUS(gc_cache_launch(c, "a", 1, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                      GC_ERROR_INVALID_STATE);
        CHECK(outcome == 77);
        EXPECT_OK(gc_cache_set_fallback(c, GC_FALLBACK_EAGER));
        EXPECT_OK(gc_cache_launch(c, "a", 1, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome));
        CHECK(outcome == GC_CACHE_EAGER);
        EXPECT_OK(gc_cache_set_fallback(c, 0));
        check_case = "a bad binding (no argument declared)";
        gc_binding bad = {0, fx.buf, BUF_BYTES};
        if (getenv("GRAPHCORE_DISABLE") == NULL) {
            EXPECT_STATUS(gc_cache_launch(c, "a", 1, fx.s, &bad, 1, record_cache_fill, fx.buf2, &outcome),
                          GC_ERROR_INVALID_ARGUMENT);
            check_case = "the cache still works";
            EXPECT_OK(gc_cache_launch(c, "a", 1, fx.s, NULL, 0, NULL, NULL, &outcome));
            CHECK(outcome == GC_CACHE_HIT);
        }
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_pool_destroy(cp));
    }
    objects_work();

    COVER(gc_cache_stats);
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_stats(h, &after), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_cache_stats(fx.cache, NULL), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    after.struct_size = 3;
    EXPECT_STATUS(gc_cache_stats(fx.cache, &after), GC_ERROR_INVALID_ARGUMENT); /* the out-struct is checked first */
    after.struct_size = sizeof after;
    objects_work();

    COVER(gc_cache_entry_info);
    gc_cache_entry ei;
    memset(&ei, 0, sizeof ei);
    ei.struct_size = sizeof ei;
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_entry_info(h, "fill", 4, &ei), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_cache_entry_info(fx.cache, "fill", 4, NULL), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    EXPECT_STATUS(gc_cache_entry_info(fx.cache, NULL, 4, &ei), GC_ERROR_INVALID_ARGUMENT);   /* before the handle */
    EXPECT_STATUS(gc_cache_entry_info(fx.cache, "fill", 0, &ei), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    if (fx.gpu) {
        check_case = "a key not cached";
        EXPECT_STATUS(gc_cache_entry_info(fx.cache, "fil", 3, &ei), GC_ERROR_NOT_FOUND);
        CHECK(ei.node_count == 0);
        check_case = "the fixture's entry";
        EXPECT_OK(gc_cache_entry_info(fx.cache, "fill", 4, &ei));
        CHECK(ei.node_count == 1 && ei.exec_bytes == GC_CACHE_EXEC_BASE_BYTES + GC_CACHE_DEFAULT_NODE_BYTES);
    }
    objects_work();

    COVER(gc_cache_set_fallback);
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_set_fallback(h, 0), GC_ERROR_INVALID_ARGUMENT);
    check_case = "an unknown flag";
    EXPECT_STATUS(gc_cache_set_fallback(fx.cache, 4), GC_ERROR_INVALID_ARGUMENT); /* before the handle */
    objects_work();

    COVER(gc_cache_set_budget);
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_set_budget(h, 4, 1u << 20), GC_ERROR_INVALID_ARGUMENT);
    check_case = "a budget of zero";
    EXPECT2(gc_cache_set_budget(fx.cache, 0, 1u << 20), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    EXPECT2(gc_cache_set_budget(fx.cache, 4, 0), GC_ERROR_INVALID_ARGUMENT, GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) {
        check_case = "a refused budget changes nothing";
        EXPECT_OK(gc_cache_stats(fx.cache, &after));
        CHECK(after.entries == 1 && after.max_entries == 64);
        check_case = "a budget of one entry evicts down to it";
        EXPECT_OK(gc_cache_set_budget(c, 1, 1u << 30));
        EXPECT_OK(gc_cache_stats(c, &after));
        CHECK(after.entries == 1 && after.max_entries == 1);
    }
    objects_work();

    COVER(gc_cache_pool);
    gc_pool *p = NULL;
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_pool(h, &p), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_cache_pool(fx.cache, NULL), GC_ERROR_INVALID_ARGUMENT);
    CHECK(p == NULL);
    objects_work();

    COVER(gc_cache_clear);
    BAD_HANDLE_ARG(K_CACHE, h, gc_cache_clear(h), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        EXPECT_OK(gc_cache_clear(c));
        EXPECT_OK(gc_cache_stats(c, &after));
        CHECK(after.entries == 0 && after.bytes == 0 && after.pool.reserved_bytes == 0);
    }
    objects_work();

    COVER(gc_cache_destroy);
    EXPECT_OK(gc_cache_destroy(NULL));
    EACH_BAD(K_CACHE, h, EXPECT_STATUS(gc_cache_destroy(h), GC_ERROR_INVALID_HANDLE));
    if (fx.gpu) {
        EXPECT_OK(gc_cache_destroy(c));
        EXPECT_STATUS(gc_cache_destroy(c), GC_ERROR_INVALID_HANDLE);
        EXPECT_STATUS(gc_cache_launch(c, "a", 1, fx.s, NULL, 0, record_cache_fill, fx.buf2, &outcome),
                      GC_ERROR_INVALID_HANDLE);
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
/* A record function declaring its output (user) as argument 0. */
static gc_status record_fill_arg(gc_stream *s, uint32_t batch, void *user) {
    size_t index = 99;
    gc_status st = gc_capture_arg(s, user, (size_t)batch * 64u * 4u, 0, &index);
    if (st != GC_SUCCESS) return st;
    if (index != 0) return GC_ERROR_INVALID_STATE;
    return gc_op_fill(s, (float *)user, (uint64_t)batch * 64u, 2.0f);
}

static void args_functions(void) {
    size_t index = 77, uses = 77;
    gc_dim3 one = {1, 1, 1};
    gc_graph *g = NULL;
    gc_exec *e = NULL;
    gc_binding b;
    memset(&b, 0, sizeof b);

    COVER(gc_graph_declare_arg);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_declare_arg(h, fx.buf, 64, 0, &index), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_graph_declare_arg(fx.graph, fx.buf, 64, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_graph_declare_arg(fx.graph, fx.buf, 64, 0x80, &index), GC_ERROR_INVALID_ARGUMENT);
    CHECK(index == 77);
    if (fx.gpu) {
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        REFUSED("ptr NULL", EXPECT_STATUS(gc_graph_declare_arg(g, NULL, 64, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("NULL");
        REFUSED("0 bytes", EXPECT_STATUS(gc_graph_declare_arg(g, fx.buf, 0, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a host address", EXPECT_STATUS(gc_graph_declare_arg(g, &host_word, 4, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("not device memory");
        REFUSED("pinned host memory", EXPECT_STATUS(gc_graph_declare_arg(g, fx.host, 4, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a range past its pool block",
                EXPECT_STATUS(gc_graph_declare_arg(g, fx.buf, BUF_BYTES + 4, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        CHECK(index == 77);
        check_case = "a good declaration";
        EXPECT_OK(gc_graph_declare_arg(g, fx.buf, SMALL * 4, 0, &index));
        CHECK(index == 0);
        REFUSED("an overlapping range",
                EXPECT_STATUS(gc_graph_declare_arg(g, (char *)fx.buf + 4, 4, GC_ARG_EXACT, &index), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("argument 0");
        uint64_t y = (uint64_t)(uintptr_t)fx.buf, count = SMALL;
        float v = 3.0f;
        void *args[3] = {&y, &count, &v};
        EXPECT_OK(gc_graph_add_kernel(g, fx.fill, one, one, 0, args, NULL, 0, NULL));
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
    }
    objects_work();

    COVER(gc_capture_arg);
    BAD_HANDLE_ARG(K_STREAM, h, gc_capture_arg(h, fx.buf, 64, 0, &index), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_capture_arg(fx.s, fx.buf, 64, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("no capture open", EXPECT_STATUS(gc_capture_arg(fx.s, fx.buf, 64, 0, &index), GC_ERROR_INVALID_STATE));
        gc_graph *cg = NULL;
        EXPECT_OK(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL));
        REFUSED("a host address under capture",
                EXPECT_STATUS(gc_capture_arg(fx.s, &host_word, 4, 0, &index), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("an unknown flag", EXPECT_STATUS(gc_capture_arg(fx.s, fx.buf, 4, 0x100, &index), GC_ERROR_INVALID_ARGUMENT));
        check_case = "declaring does not break the capture";
        EXPECT_OK(gc_capture_arg(fx.s, fx.buf2, 64, GC_ARG_EXACT, &index));
        CHECK(index == 0);
        EXPECT_OK(gc_op_fill(fx.s, (float *)fx.buf2, 16, 1.0f));
        EXPECT_OK(gc_capture_end(fx.s, &cg));
        gc_exec *ce = NULL;
        EXPECT_OK(gc_graph_instantiate(cg, 0, &ce));
        EXPECT_OK(gc_exec_arg_info(ce, 0, &uses));
        CHECK(uses == 1);
        EXPECT_OK(gc_exec_destroy(ce));
        EXPECT_OK(gc_graph_destroy(cg));
    }
    objects_work();

    COVER(gc_graph_declare_scalar_arg);
    {
        float marker = 1234.5f, zero = 0.0f;
        uint64_t wide = 0;
        BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_declare_scalar_arg(h, &marker, 4, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_graph_declare_scalar_arg(fx.graph, &marker, 4, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_graph_declare_scalar_arg(fx.graph, NULL, 4, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("marker");
        EXPECT_STATUS(gc_graph_declare_scalar_arg(fx.graph, &marker, 0, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_graph_declare_scalar_arg(fx.graph, &wide, 9, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("1 to 8");
        CHECK(index == 77);
        if (fx.gpu) {
            gc_graph *sg = NULL;
            gc_exec *se = NULL;
            EXPECT_OK(gc_graph_create(fx.ctx, &sg));
            REFUSED("an all-zero marker",
                    EXPECT_STATUS(gc_graph_declare_scalar_arg(sg, &zero, 4, &index), GC_ERROR_INVALID_ARGUMENT));
            EXPECT_ERROR_MENTIONS("zero");
            check_case = "a fill kernel's value declared as a scalar";
            EXPECT_OK(gc_graph_declare_scalar_arg(sg, &marker, 4, &index));
            CHECK(index == 0);
            REFUSED("the same marker twice",
                    EXPECT_STATUS(gc_graph_declare_scalar_arg(sg, &marker, 4, &index), GC_ERROR_INVALID_ARGUMENT));
            uint64_t y = (uint64_t)(uintptr_t)fx.buf, count = SMALL;
            void *args[3] = {&y, &count, &marker};
            EXPECT_OK(gc_graph_add_kernel(sg, fx.fill, one, one, 0, args, NULL, 0, NULL));
            EXPECT_OK(gc_graph_instantiate(sg, 0, &se));
            EXPECT_OK(gc_exec_arg_info(se, 0, &uses));
            CHECK(uses == 1);
            gc_binding sb = {0, NULL, 0};
            float lr = 0.5f;
            memcpy(&sb.ptr, &lr, sizeof lr);
            gc_binding bad = sb;
            bad.bytes = 8;
            REFUSED("a scalar binding of another size",
                    EXPECT_STATUS(gc_exec_launch_with(se, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
            EXPECT_ERROR_MENTIONS("scalar of 4 bytes");
            bad = sb;
            bad.ptr = fx.buf2;
            REFUSED("an address bound to a 4-byte scalar",
                    EXPECT_STATUS(gc_exec_launch_with(se, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
            EXPECT_ERROR_MENTIONS("bits above");
            check_case = "bound to 0.5, the fill writes 0.5";
            EXPECT_OK(gc_exec_launch_with(se, fx.s, &sb, 1));
            EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, SMALL * 4));
            EXPECT_OK(gc_stream_synchronize(fx.s));
            CHECK(((float *)fx.host)[SMALL - 1] == 0.5f);
            EXPECT_OK(gc_exec_destroy(se));
            EXPECT_OK(gc_graph_destroy(sg));
        }
    }
    objects_work();

    COVER(gc_capture_scalar_arg);
    {
        uint32_t marker = 0x5ca1ab1eu, zero = 0;
        BAD_HANDLE_ARG(K_STREAM, h, gc_capture_scalar_arg(h, &marker, 4, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_capture_scalar_arg(fx.s, &marker, 4, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_capture_scalar_arg(fx.s, NULL, 4, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_capture_scalar_arg(fx.s, &marker, 0, &index), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_capture_scalar_arg(fx.s, &marker, 16, &index), GC_ERROR_INVALID_ARGUMENT);
        if (fx.gpu) {
            REFUSED("no capture open",
                    EXPECT_STATUS(gc_capture_scalar_arg(fx.s, &marker, 4, &index), GC_ERROR_INVALID_STATE));
            gc_graph *cg = NULL;
            EXPECT_OK(gc_capture_begin(fx.s, fx.pool, GC_CAPTURE_THREAD_LOCAL));
            REFUSED("an all-zero marker under capture",
                    EXPECT_STATUS(gc_capture_scalar_arg(fx.s, &zero, 4, &index), GC_ERROR_INVALID_ARGUMENT));
            check_case = "declaring a scalar does not break the capture";
            EXPECT_OK(gc_capture_scalar_arg(fx.s, &marker, 4, &index));
            CHECK(index == 0);
            EXPECT_OK(gc_op_fill(fx.s, (float *)fx.buf2, 16, 1.0f));
            EXPECT_OK(gc_capture_end(fx.s, &cg));
            gc_exec *ce = NULL;
            EXPECT_OK(gc_graph_instantiate(cg, 0, &ce));
            check_case = "a marker no parameter holds has 0 uses";
            EXPECT_OK(gc_exec_arg_info(ce, 0, &uses));
            CHECK(uses == 0);
            EXPECT_OK(gc_exec_destroy(ce));
            EXPECT_OK(gc_graph_destroy(cg));
        }
    }
    objects_work();

    COVER(gc_exec_arg_info);
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_arg_info(h, 0, &uses), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_exec_arg_info(fx.exec, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        REFUSED("an exec without arguments", EXPECT_STATUS(gc_exec_arg_info(fx.exec, 0, &uses), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("an unknown index", EXPECT_STATUS(gc_exec_arg_info(e, 1, &uses), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("argument 1");
        check_case = "the fill kernel's pointer is one use";
        EXPECT_OK(gc_exec_arg_info(e, 0, &uses));
        CHECK(uses == 1);
    }
    objects_work();

    COVER(gc_exec_arg_uses);
    {
        gc_arg_use au[2];
        size_t n_uses = 77;
        BAD_HANDLE_ARG(K_EXEC, h, gc_exec_arg_uses(h, 0, au, 2, &n_uses), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_STATUS(gc_exec_arg_uses(fx.exec, 0, au, 2, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("count");
        EXPECT_STATUS(gc_exec_arg_uses(fx.exec, 0, NULL, 2, &n_uses), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("uses");
        CHECK(n_uses == 77);
        if (fx.gpu) {
            REFUSED("an exec without arguments",
                    EXPECT_STATUS(gc_exec_arg_uses(fx.exec, 0, au, 2, &n_uses), GC_ERROR_INVALID_ARGUMENT));
            REFUSED("an unknown index", EXPECT_STATUS(gc_exec_arg_uses(e, 1, au, 2, &n_uses), GC_ERROR_INVALID_ARGUMENT));
            EXPECT_ERROR_MENTIONS("argument 1");
            check_case = "sizing with capacity 0 and uses NULL";
            EXPECT_OK(gc_exec_arg_uses(e, 0, NULL, 0, &n_uses));
            CHECK(n_uses == 1);
            check_case = "the fill kernel's pointer: node 0, offset 0";
            EXPECT_OK(gc_exec_arg_uses(e, 0, au, 2, &n_uses));
            CHECK(n_uses == 1 && au[0].node == 0 && au[0].kind == GC_ARG_USE_KERNEL && au[0].nested == 0);
            CHECK(au[0].offset == 0 && au[0].delta == 0 && strstr(au[0].kernel, "fill") != NULL);
        }
    }
    objects_work();

    COVER(gc_exec_launch_with);
    b.index = 0;
    b.ptr = fx.buf2;
    BAD_HANDLE_ARG(K_EXEC, h, gc_exec_launch_with(h, fx.s, &b, 1), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_exec_launch_with(fx.exec, fx.s, NULL, 1), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        BAD_HANDLE_ARG(K_STREAM, h, gc_exec_launch_with(e, h, &b, 1), GC_ERROR_INVALID_ARGUMENT);
        REFUSED("an exec without arguments", EXPECT_STATUS(gc_exec_launch_with(fx.exec, fx.s, &b, 1), GC_ERROR_INVALID_ARGUMENT));
        gc_binding bad = b;
        bad.index = 5;
        REFUSED("an unknown index", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("argument 5");
        bad = b;
        bad.ptr = NULL;
        REFUSED("ptr NULL", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("binding 0");
        bad.ptr = &host_word;
        REFUSED("a host address", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        bad.ptr = fx.host;
        REFUSED("pinned host memory", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        bad = b;
        bad.bytes = 8;
        REFUSED("a range smaller than declared", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("declared");
        bad.bytes = 0;
        bad.ptr = (char *)fx.buf2 + BUF_BYTES - 8;
        REFUSED("a range running past its block", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, &bad, 1), GC_ERROR_INVALID_ARGUMENT));
        gc_binding twice[2] = {b, b};
        REFUSED("an argument bound twice", EXPECT_STATUS(gc_exec_launch_with(e, fx.s, twice, 2), GC_ERROR_INVALID_ARGUMENT));
        check_case = "the exec is unchanged: it fills buf";
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, SMALL * 4));
        EXPECT_OK(gc_memset_async(fx.s, fx.buf2, 0, SMALL * 4));
        EXPECT_OK(gc_exec_launch_with(e, fx.s, NULL, 0));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, SMALL * 4));
        EXPECT_OK(gc_memcpy_async(fx.s, (char *)fx.host + BUF_BYTES, fx.buf2, SMALL * 4));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((float *)fx.host)[SMALL - 1] == 3.0f);
        CHECK(((float *)((char *)fx.host + BUF_BYTES))[SMALL - 1] == 0.0f);
        check_case = "bound to buf2, it fills buf2, and a plain launch keeps the binding";
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, SMALL * 4));
        EXPECT_OK(gc_exec_launch_with(e, fx.s, &b, 1));
        EXPECT_OK(gc_memset_async(fx.s, fx.buf2, 0, SMALL * 4));
        EXPECT_OK(gc_exec_launch(e, fx.s));
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, SMALL * 4));
        EXPECT_OK(gc_memcpy_async(fx.s, (char *)fx.host + BUF_BYTES, fx.buf2, SMALL * 4));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((float *)fx.host)[SMALL - 1] == 0.0f);
        CHECK(((float *)((char *)fx.host + BUF_BYTES))[SMALL - 1] == 3.0f);
        EXPECT_OK(gc_exec_destroy(e));
        EXPECT_OK(gc_graph_destroy(g));
    }
    objects_work();

    COVER(gc_runner_replay_with);
    uint32_t got = 0;
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_replay_with(h, 1, fx.s, &b, 1, &got), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_runner_replay_with(fx.runner, 1, fx.s, &b, 1, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_runner_replay_with(fx.runner, 1, fx.s, NULL, 1, &got), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        gc_runner *r = NULL;
        uint32_t sizes[2] = {1, 2};
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &r));
        EXPECT_OK(gc_runner_capture(r, sizes, 2, record_fill_arg, fx.buf, 0));
        gc_binding bad = b;
        bad.index = 3;
        REFUSED("an unknown index", EXPECT_STATUS(gc_runner_replay_with(r, 2, fx.s, &bad, 1, &got), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("bucket 2");
        REFUSED("rows 0", EXPECT_STATUS(gc_runner_replay_with(r, 0, fx.s, &b, 1, &got), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("rows over the largest bucket", EXPECT_STATUS(gc_runner_replay_with(r, 3, fx.s, &b, 1, &got), GC_ERROR_NO_BUCKET));
        check_case = "a replay bound to buf2 fills buf2";
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, 128 * 4));
        EXPECT_OK(gc_memset_async(fx.s, fx.buf2, 0, 128 * 4));
        EXPECT_OK(gc_runner_replay_with(r, 2, fx.s, &b, 1, &got));
        CHECK(got == 2);
        EXPECT_OK(gc_memcpy_async(fx.s, fx.host, fx.buf, 128 * 4));
        EXPECT_OK(gc_memcpy_async(fx.s, (char *)fx.host + BUF_BYTES, fx.buf2, 128 * 4));
        EXPECT_OK(gc_stream_synchronize(fx.s));
        CHECK(((float *)fx.host)[127] == 0.0f);
        CHECK(((float *)((char *)fx.host + BUF_BYTES))[127] == 2.0f);
        EXPECT_OK(gc_runner_destroy(r));
    }
    objects_work();

    COVER(gc_runner_replay_exact);
    BAD_HANDLE_ARG(K_RUNNER, h, gc_runner_replay_exact(h, 1, fx.s, NULL, 0, &got), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_runner_replay_exact(fx.runner, 1, fx.s, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(gc_runner_replay_exact(fx.runner, 1, fx.s, NULL, 1, &got), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        gc_runner *r = NULL, *mixed = NULL;
        uint32_t four = 4;
        /* x: 2 rows of 4 floats at buf2 + 1024 bytes; y: 2 rows at buf + 1024 bytes. */
        gc_binding two[2] = {{0, (char *)fx.buf2 + 1024, 32}, {1, (char *)fx.buf + 1024, 32}};
        gc_binding count = {2, (char *)fx.buf2 + 3072, 4};
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &r));
        EXPECT_OK(gc_runner_capture_exact(r, &four, 1, record_rows_linear, NULL, 0));
        check_case = "2 rows bound as 2-row ranges";
        EXPECT_OK(gc_runner_replay_exact(r, 2, fx.s, two, 2, &got));
        CHECK(got == 4);
        REFUSED("rows 0", EXPECT_STATUS(gc_runner_replay_exact(r, 0, fx.s, two, 2, &got), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("rows over the largest bucket",
                EXPECT_STATUS(gc_runner_replay_exact(r, 5, fx.s, two, 2, &got), GC_ERROR_NO_BUCKET));
        REFUSED("3 rows: the 2-row ranges bound before are too small",
                EXPECT_STATUS(gc_runner_replay_exact(r, 3, fx.s, NULL, 0, &got), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("3 rows into 2-row ranges",
                EXPECT_STATUS(gc_runner_replay_exact(r, 3, fx.s, two, 2, &got), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a plain replay of the bucket while its ranges hold 2 rows",
                EXPECT_STATUS(gc_runner_replay(r, 4, fx.s, &got), GC_ERROR_INVALID_ARGUMENT));
        REFUSED("a binding of the row count",
                EXPECT_STATUS(gc_runner_replay_exact(r, 2, fx.s, &count, 1, &got), GC_ERROR_INVALID_ARGUMENT));
        EXPECT_ERROR_MENTIONS("row count");
        REFUSED("a bucket of gc_runner_capture",
                EXPECT_STATUS(gc_runner_replay_exact(fx.runner, 1, fx.s, NULL, 0, &got), GC_ERROR_INVALID_STATE));
        EXPECT_OK(gc_runner_create(fx.ctx, fx.pool, &mixed));
        EXPECT_OK(gc_runner_capture_exact(mixed, &four, 1, record_rows_linear, fx.buf, 0));
        REFUSED("a bucket whose fill of y ignores the row count", {
            EXPECT_STATUS(gc_runner_replay_exact(mixed, 2, fx.s, two, 2, &got), GC_ERROR_INVALID_STATE);
            EXPECT_ERROR_MENTIONS("does not read the row count");
        });
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_runner_destroy(mixed));
        EXPECT_OK(gc_runner_destroy(r));
    }
    objects_work();
}

/* ------------------------------------------------------------------ */
/* Conditional nodes: handles, nodes and their bodies, capture into a body,
 * the setter ops. The H100 machine's driver has them all (CUDA 13); the
 * NOT_SUPPORTED rule for older drivers is a unit test of core. */
static void conditional_functions(void) {
    gc_graph *g = fx.graph, *g2 = fx.graph, *g3 = fx.graph;
    gc_cond_handle hd, other, zero;
    gc_graph *bodies[4] = {NULL, NULL, NULL, NULL};
    gc_node n, bogus, out_of_range = {0, 999}, deps2[2];
    size_t count = 0;
    uint64_t raw = 0;
    memset(&hd, 0, sizeof hd);
    memset(&other, 0, sizeof other);
    memset(&zero, 0, sizeof zero);
    memset(&n, 0, sizeof n);
    bogus = fx.node;
    if (fx.gpu) {
        EXPECT_OK(gc_graph_create(fx.ctx, &g));
        EXPECT_OK(gc_graph_create(fx.ctx, &g2));
        EXPECT_OK(gc_graph_create(fx.ctx, &g3));
        EXPECT_OK(gc_graph_add_empty(g2, NULL, 0, &bogus)); /* a node of another graph */
        EXPECT_OK(gc_graph_add_empty(g, NULL, 0, &n));
        out_of_range.graph = n.graph;
    }
    deps2[0] = n;
    deps2[1] = n;

    COVER(gc_graph_conditional_handle_create);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_conditional_handle_create(h, 0, 0, &hd), GC_ERROR_INVALID_ARGUMENT);
    check_case = "handle NULL";
    EXPECT_STATUS(gc_graph_conditional_handle_create(g, 0, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
    check_case = "unknown flags";
    EXPECT_STATUS(gc_graph_conditional_handle_create(g, 0, 0x80, &hd), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        EXPECT_OK(gc_graph_conditional_handle_create(g, 0, GC_COND_RESET_ON_LAUNCH, &hd));
        EXPECT_OK(gc_graph_conditional_handle_create(g2, 0, 0, &other));
        check_case = "a nonzero default without GC_COND_RESET_ON_LAUNCH (CUDA would ignore it)";
        EXPECT_STATUS(gc_graph_conditional_handle_create(g, 1, 0, &hd), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();

    COVER(gc_cond_handle_raw);
    check_case = "raw NULL";
    EXPECT_STATUS(gc_cond_handle_raw(hd, NULL), GC_ERROR_INVALID_ARGUMENT);
    check_case = "a zeroed handle";
    EXPECT_STATUS(gc_cond_handle_raw(zero, &raw), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        EXPECT_OK(gc_cond_handle_raw(hd, &raw));
        CHECK(raw == hd.raw);
    }
    objects_work();

    COVER(gc_graph_add_conditional);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_graph_add_conditional(h, GC_COND_IF, hd, 0, NULL, 0, NULL, bodies, 4),
                   GC_ERROR_INVALID_ARGUMENT);
    check_case = "an unknown type";
    EXPECT_STATUS(gc_graph_add_conditional(g, 99, hd, 0, NULL, 0, NULL, bodies, 4), GC_ERROR_INVALID_ARGUMENT);
    check_case = "bodies NULL";
    EXPECT_STATUS(gc_graph_add_conditional(g, GC_COND_IF, hd, 0, NULL, 0, NULL, NULL, 1), GC_ERROR_INVALID_ARGUMENT);
    check_case = "no room for the IF/ELSE's two bodies";
    EXPECT_STATUS(gc_graph_add_conditional(g, GC_COND_IF_ELSE, hd, 0, NULL, 0, NULL, bodies, 1),
                  GC_ERROR_INVALID_ARGUMENT);
    check_case = "a SWITCH with 0 cases";
    EXPECT2(gc_graph_add_conditional(g, GC_COND_SWITCH, hd, 0, NULL, 0, NULL, bodies, 4), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) EXPECT_ERROR_MENTIONS("SWITCH");
    check_case = "cases not matching an IF";
    EXPECT2(gc_graph_add_conditional(g, GC_COND_IF, hd, 3, NULL, 0, NULL, bodies, 4), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    check_case = "a handle of another graph";
    EXPECT2(gc_graph_add_conditional(g, GC_COND_IF, other, 0, NULL, 0, NULL, bodies, 4), GC_ERROR_INVALID_ARGUMENT,
            GC_ERROR_INVALID_HANDLE);
    if (fx.gpu) EXPECT_ERROR_MENTIONS("another graph");
    BAD_DEPS(gc_graph_add_conditional(g, GC_COND_WHILE, hd, 0, deps, ndeps, NULL, bodies, 4));
    CHECK(bodies[0] == NULL); /* nothing written on failure */
    if (fx.gpu) {
        gc_graph *body = NULL;
        gc_exec *e = NULL;
        gc_node m;
        EXPECT_OK(gc_graph_add_conditional(g, GC_COND_WHILE, hd, 0, &n, 1, &m, bodies, 1));
        body = bodies[0];
        CHECK(body != NULL && m.index == 1);
        check_case = "a handle that already steers a node";
        EXPECT_STATUS(gc_graph_add_conditional(g, GC_COND_IF, hd, 0, NULL, 0, NULL, bodies + 1, 1),
                      GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("already steers");
        CHECK(bodies[1] == NULL);
        check_case = "a host node in a body";
        EXPECT_STATUS(gc_graph_add_host(body, host_cb, NULL, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_ERROR_MENTIONS("host");
        EXPECT_OK(gc_graph_add_empty(body, NULL, 0, NULL));
        check_case = "a body used as a child graph";
        EXPECT_STATUS(gc_graph_add_child(g2, body, NULL, 0, NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "a body instantiated on its own";
        EXPECT_STATUS(gc_graph_instantiate(body, 0, &e), GC_ERROR_INVALID_ARGUMENT);
        CHECK(e == NULL);
        EXPECT_OK(gc_graph_instantiate(g, 0, &e));
        check_case = "a body changed after its graph was instantiated";
        EXPECT_STATUS(gc_graph_add_empty(body, NULL, 0, NULL), GC_ERROR_INVALID_STATE);
        EXPECT_OK(gc_graph_node_count(body, &count));
        CHECK(count == 1);
        check_case = "an exec update of a graph with conditional nodes";
        EXPECT_STATUS(gc_exec_update(e, g), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_exec_launch(e, fx.s)); /* the body is one empty node; the handle's default is 0 */
        EXPECT_OK(gc_stream_synchronize(fx.s));
        EXPECT_OK(gc_exec_destroy(e));
        EXPECT_OK(gc_graph_destroy(body));
        bodies[0] = NULL;
    }
    objects_work();

    COVER(gc_capture_begin_into);
    BAD_HANDLE_ARG(K_STREAM, st, gc_capture_begin_into(st, g3, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_ARGUMENT);
    BAD_HANDLE_ARG(K_GRAPH, h, gc_capture_begin_into(fx.s, h, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        gc_cond_handle h3;
        gc_graph *body = NULL, *ended = NULL;
        EXPECT_OK(gc_graph_conditional_handle_create(g3, 0, 0, &h3));
        EXPECT_OK(gc_graph_add_conditional(g3, GC_COND_IF, h3, 1, NULL, 0, NULL, bodies, 1));
        body = bodies[0];
        check_case = "a graph that is not a body";
        EXPECT_STATUS(gc_capture_begin_into(fx.s, g2, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "an unknown mode";
        EXPECT_STATUS(gc_capture_begin_into(fx.s, body, NULL, 99), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_capture_begin_into(fx.s, body, NULL, GC_CAPTURE_THREAD_LOCAL));
        check_case = "a second capture into the same body";
        EXPECT_STATUS(gc_capture_begin_into(fx.s2, body, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_STATE);
        check_case = "ending the capture on the wrong stream";
        EXPECT_STATUS(gc_capture_end(fx.s2, &ended), GC_ERROR_INVALID_STATE);
        CHECK(ended == NULL);
        EXPECT_OK(gc_memset_async(fx.s, fx.buf, 0, 64));
        EXPECT_OK(gc_capture_end(fx.s, &ended));
        EXPECT_OK(gc_graph_node_count(ended, &count));
        CHECK(count == 1);
        check_case = "a body that is not empty";
        EXPECT_STATUS(gc_capture_begin_into(fx.s, body, NULL, GC_CAPTURE_THREAD_LOCAL), GC_ERROR_INVALID_ARGUMENT);
        EXPECT_OK(gc_graph_destroy(ended));
        EXPECT_OK(gc_graph_destroy(body));
        bodies[0] = NULL;
    }
    objects_work();

    COVER(gc_op_cond_set_u32);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_cond_set_u32(st, hd, fx.buf), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        check_case = "value NULL";
        EXPECT_STATUS(gc_op_cond_set_u32(fx.s, hd, NULL), GC_ERROR_INVALID_ARGUMENT);
        check_case = "value misaligned";
        EXPECT_STATUS(gc_op_cond_set_u32(fx.s, hd, (const uint32_t *)((char *)fx.buf + 2)), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();

    COVER(gc_op_cond_count);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_cond_count(st, hd, fx.buf, 4), GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        check_case = "counter NULL";
        EXPECT_STATUS(gc_op_cond_count(fx.s, hd, NULL, 4), GC_ERROR_INVALID_ARGUMENT);
        check_case = "limit 0";
        EXPECT_STATUS(gc_op_cond_count(fx.s, hd, fx.buf, 0), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();

    COVER(gc_op_cond_set_f32);
    BAD_HANDLE_ARG(K_STREAM, st, gc_op_cond_set_f32(st, hd, fx.buf, 1.0f, GC_CMP_GE, NULL, 0),
                   GC_ERROR_INVALID_ARGUMENT);
    if (fx.gpu) {
        check_case = "x NULL";
        EXPECT_STATUS(gc_op_cond_set_f32(fx.s, hd, NULL, 1.0f, GC_CMP_GE, NULL, 0), GC_ERROR_INVALID_ARGUMENT);
        check_case = "an unknown comparison";
        EXPECT_STATUS(gc_op_cond_set_f32(fx.s, hd, fx.buf, 1.0f, 9, NULL, 0), GC_ERROR_INVALID_ARGUMENT);
        check_case = "a counter with limit 0";
        EXPECT_STATUS(gc_op_cond_set_f32(fx.s, hd, fx.buf, 1.0f, GC_CMP_GE, fx.buf2, 0), GC_ERROR_INVALID_ARGUMENT);
        check_case = "x and counter the same word";
        EXPECT_STATUS(gc_op_cond_set_f32(fx.s, hd, fx.buf, 1.0f, GC_CMP_GE, fx.buf, 4), GC_ERROR_INVALID_ARGUMENT);
    }
    objects_work();
    if (fx.gpu) {
        EXPECT_OK(gc_graph_destroy(g));
        EXPECT_OK(gc_graph_destroy(g2));
        EXPECT_OK(gc_graph_destroy(g3));
    }
}
#undef BAD_DEPS

static const struct {
    const char *name;
    void (*run)(void);
} SECTIONS[] = {
    {"status", status_functions},
    {"context", context_functions},
    {"stream", stream_functions},
    {"event", event_functions},
    {"memory", memory_functions},
    {"pool", pool_functions},
    {"allocator", allocator_functions},
    {"module", module_functions},
    {"null_kernel_args", null_kernel_args},
    {"capture", capture_functions},
    {"destroy_capturing_stream", destroy_capturing_stream},
    {"graph", graph_functions},
    {"conditional", conditional_functions},
    {"exec", exec_functions},
    {"ops", ops_functions},
    {"runner", runner_functions},
    {"cache", cache_functions},
    {"args", args_functions},
};
#define NSECTIONS (sizeof SECTIONS / sizeof SECTIONS[0])

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < NSECTIONS; i++) printf("%s\n", SECTIONS[i].name);
        return 0;
    }
    int n = 0;
    gc_status st = gc_device_count(&n);
    const char *want_gpu = getenv("GC_GPU");
    if (st == GC_SUCCESS && n > 0) {
        fx.gpu = 1;
        fixture_gpu();
    } else if (want_gpu != NULL && strcmp(want_gpu, "0") != 0) {
        fprintf(stderr, "GC_GPU is set but there is no usable GPU: %s (%s)\n", gc_status_name((int)st),
                gc_last_error());
        return 2;
    } else {
        fixture_no_driver();
    }
    int ran = 0;
    for (size_t i = 0; i < NSECTIONS; i++) {
        if (argc > 1 && strcmp(argv[1], SECTIONS[i].name) != 0) continue;
        section = SECTIONS[i].name;
        printf("section %s (%s)\n", section, fx.gpu ? "GPU" : "no driver");
        SECTIONS[i].run();
        ran++;
    }
    if (ran == 0) {
        fprintf(stderr, "no section named %s\n", argv[1]);
        return 2;
    }
    return check_summary(argc > 1 ? argv[1] : "bad_input");
}
