/* engine_cache.c: graphcore embedded in an engine that keeps its own
 * allocator. The engine's weights, inputs and outputs are its own device
 * memory (cuMemAlloc, from libcuda loaded at run time); a graph cache
 * (gc_cache) serves requests of 50 shapes under a budget of 16 entries,
 * smaller than the 50 graphs; the graphs take the engine's buffers as
 * arguments, bound at each launch; the record function allocates its
 * temporary through graphcore's allocator export (gc_engine_alloc, with the
 * cache's pool as its user pointer), so the temporary belongs to the
 * capture. Every request is run twice, replayed and then eagerly with the
 * fallback switch on (GC_FALLBACK_EAGER), into two outputs that must be
 * bitwise equal; the budget is checked after every request; hard fail
 * turns the eager run into an error. GRAPHCORE_DISABLE=1 in the
 * environment makes every launch eager: the checks still hold.
 *
 * A learning-rate-like scalar changes at every request: the capture
 * declares it a scalar argument (gc_capture_scalar_arg) by a marker value
 * given to the kernel that takes it, and each launch binds the request's
 * value beside the buffers.
 *
 * Build: make examples. Without a GPU it stops with graphcore's message
 * (exit status 2). */
#include "common.h"

#include <dlfcn.h>

#define SHAPES 50
#define REQUESTS 500
#define MAX_N (256u * SHAPES)
#define MAX_ENTRIES 16
#define MAX_BYTES (64ull << 20)

/* The engine's allocator: cuMemAlloc and cuMemFree of libcuda. */
static struct {
    int (*alloc)(unsigned long long *ptr, size_t bytes);
    int (*free)(unsigned long long ptr);
} cu;

/* Loads one symbol into *fn (memcpy: ISO C has no object-to-function cast). */
static void load_symbol(void *lib, const char *name, void *fn, size_t size) {
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "libcuda lacks %s: %s\n", name, dlerror());
        exit(2);
    }
    memcpy(fn, &sym, size);
}

static float *engine_alloc(size_t bytes) {
    unsigned long long p = 0;
    /* graphcore's calls left the device's primary context current on this
     * thread, the context cuMemAlloc allocates in. */
    int r = cu.alloc(&p, bytes);
    if (r != 0) {
        fprintf(stderr, "cuMemAlloc(%zu) failed: CUresult %d\n", bytes, r);
        exit(1);
    }
    return (float *)(uintptr_t)p;
}

/* What a request runs on: the engine's state, read by the record
 * function for warm-ups, captures and eager runs alike. */
typedef struct {
    float *w, *x, *y; /* weights, input, output: the engine's memory */
    uint64_t n;       /* elements of this request's shape */
    float lr;         /* a learning-rate-like scalar, new at each request */
    gc_pool *pool;    /* the cache's pool, for temporaries */
} request;

/* The marker of the scalar argument lr: a value no other float parameter
 * of the graph holds. */
#define LR_MARKER 1234.5f

/* y = relu(w * x + 0.5) * lr over n elements, through a temporary. Under
 * capture, x, y and w are declared arguments 0, 1 and 2, and lr scalar
 * argument 3 (the kernel gets the marker; each launch binds the value). */
static gc_status record(gc_stream *s, const void *key, size_t key_len, void *user) {
    (void)key, (void)key_len;
    request *q = user;
    int capturing = 0;
    size_t index = 0;
    gc_status st = gc_stream_is_capturing(s, &capturing);
    if (st != GC_SUCCESS) return st;
    if (capturing) {
        float *args[3] = {q->x, q->y, q->w};
        for (int i = 0; i < 3; i++) {
            st = gc_capture_arg(s, args[i], q->n * sizeof(float), GC_ARG_EXACT, &index);
            if (st != GC_SUCCESS) return st;
        }
        float marker = LR_MARKER;
        st = gc_capture_scalar_arg(s, &marker, sizeof marker, &index);
        if (st != GC_SUCCESS) return st;
    }
    float *t = gc_engine_alloc(q->pool, q->n * sizeof(float), -1, NULL);
    if (t == NULL) return GC_ERROR_OUT_OF_MEMORY; /* gc_last_error() says why */
    if ((st = gc_op_mul(s, t, q->w, q->x, q->n)) == GC_SUCCESS &&
        (st = gc_op_add_scalar(s, t, t, q->n, 0.5f)) == GC_SUCCESS &&
        (st = gc_op_relu(s, t, t, q->n)) == GC_SUCCESS)
        st = gc_op_scale(s, q->y, t, q->n, capturing ? LR_MARKER : q->lr);
    /* Freed at once: the next allocation on this stream runs after these
     * kernels (one stream), and under capture the block is the graph's. */
    gc_engine_free(q->pool, t, q->n * sizeof(float), -1, NULL);
    return st;
}

static gc_cache_statistics cache_stats(gc_cache *c) {
    gc_cache_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TRY(gc_cache_stats(c, &st));
    return st;
}

int main(void) {
    gc_context *ctx;
    gc_stream *s;
    gc_pool *unused;
    open_gpu("engine_cache", &ctx, &s, &unused);
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda) {
        fprintf(stderr, "engine_cache: cannot load libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    load_symbol(libcuda, "cuMemAlloc_v2", &cu.alloc, sizeof cu.alloc);
    load_symbol(libcuda, "cuMemFree_v2", &cu.free, sizeof cu.free);

    /* The engine's memory: weights, two inputs, and two outputs of each
     * kind (replayed, eager), all from cuMemAlloc. */
    size_t bytes = MAX_N * sizeof(float);
    float *w = engine_alloc(bytes), *x[2] = {engine_alloc(bytes), engine_alloc(bytes)};
    float *y_graph[2] = {engine_alloc(bytes), engine_alloc(bytes)};
    float *y_eager = engine_alloc(bytes);
    float *host = NULL, *host2 = NULL;
    TRY(gc_host_alloc(ctx, bytes, (void **)&host));
    TRY(gc_host_alloc(ctx, bytes, (void **)&host2));
    uint64_t rng = 0x5eed;
    float *targets[3] = {w, x[0], x[1]};
    for (int b = 0; b < 3; b++) {
        fill_uniform(host, MAX_N, 1.0f, &rng);
        TRY(gc_memcpy_async(s, targets[b], host, bytes));
        TRY(gc_stream_synchronize(s));
    }

    gc_cache_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_entries = MAX_ENTRIES;
    o.max_bytes = MAX_BYTES;
    o.warmup_runs = 1;
    gc_cache *cache = NULL;
    TRY(gc_cache_create(ctx, &o, &cache));
    request q;
    memset(&q, 0, sizeof q);
    q.w = w;
    TRY(gc_cache_pool(cache, &q.pool));

    int outcomes[3] = {0, 0, 0};
    double graph_us = 0, eager_us = 0;
    int hits = 0, mismatches = 0;
    for (int r = 0; r < REQUESTS; r++) {
        uint32_t shape = (uint32_t)((uniform(&rng) + 1.0f) * 0.5f * SHAPES) % SHAPES;
        struct {
            char tag[8];
            uint32_t n;
        } key;
        memset(&key, 0, sizeof key);
        memcpy(key.tag, "relu-mul", 8);
        q.n = key.n = 256u * (shape + 1);
        q.x = x[r % 2];
        q.y = y_graph[r % 2];
        q.lr = 0.75f + 0.001f * (float)(r % 100);
        gc_binding b[4] = {{0, q.x, 0}, {1, q.y, 0}, {2, q.w, 0}, {3, NULL, sizeof q.lr}};
        memcpy(&b[3].ptr, &q.lr, sizeof q.lr); /* a scalar's value in ptr's first bytes */
        int outcome = -1;
        double t = now_us();
        TRY(gc_cache_launch(cache, &key, sizeof key, s, b, 4, record, &q, &outcome));
        TRY(gc_stream_synchronize(s));
        t = now_us() - t;
        outcomes[outcome]++;
        if (outcome == GC_CACHE_HIT) {
            graph_us += t;
            hits++;
        }
        /* The same request eagerly (the fallback switch), into y_eager. */
        TRY(gc_cache_set_fallback(cache, GC_FALLBACK_EAGER));
        q.y = y_eager;
        t = now_us();
        TRY(gc_cache_launch(cache, &key, sizeof key, s, NULL, 0, record, &q, &outcome));
        TRY(gc_stream_synchronize(s));
        eager_us += now_us() - t;
        TRY(gc_cache_set_fallback(cache, 0));
        if (outcome != GC_CACHE_EAGER) {
            fprintf(stderr, "request %d: the fallback switch did not run eagerly\n", r);
            return 1;
        }
        TRY(gc_memcpy_async(s, host, y_graph[r % 2], q.n * sizeof(float)));
        TRY(gc_memcpy_async(s, host2, y_eager, q.n * sizeof(float)));
        TRY(gc_stream_synchronize(s));
        if (memcmp(host, host2, q.n * sizeof(float)) != 0) mismatches++;
        gc_cache_statistics st = cache_stats(cache);
        if (st.entries > MAX_ENTRIES || st.bytes > MAX_BYTES) {
            fprintf(stderr, "request %d: the cache holds %llu entries, %llu bytes: over its budget\n", r,
                    (unsigned long long)st.entries, (unsigned long long)st.bytes);
            return 1;
        }
    }

    /* Hard fail: an eager run becomes an error, and runs nothing. */
    TRY(gc_cache_set_fallback(cache, GC_FALLBACK_EAGER | GC_FALLBACK_HARD_FAIL));
    struct {
        char tag[8];
        uint32_t n;
    } key = {{'r', 'e', 'l', 'u', '-', 'm', 'u', 'l'}, 256};
    q.n = 256;
    gc_status hard = gc_cache_launch(cache, &key, sizeof key, s, NULL, 0, record, &q, NULL);
    if (hard != GC_ERROR_INVALID_STATE) {
        fprintf(stderr, "hard fail: expected GC_ERROR_INVALID_STATE, got %s\n", gc_status_name((int)hard));
        return 1;
    }
    TRY(gc_cache_set_fallback(cache, 0));

    gc_cache_statistics st = cache_stats(cache);
    printf("engine_cache: %d requests of %d shapes, budget %d entries / %llu MiB\n", REQUESTS, SHAPES,
           MAX_ENTRIES, MAX_BYTES >> 20);
    printf("  hits %llu, misses %llu, evictions %llu, eager runs %llu (the fallback switch, counted)\n",
           (unsigned long long)st.hits, (unsigned long long)st.misses, (unsigned long long)st.evictions,
           (unsigned long long)st.eager_runs);
    printf("  held: %llu entries, %llu bytes (%llu of pool pages, %llu of exec estimates); pool reserves %llu\n",
           (unsigned long long)st.entries, (unsigned long long)st.bytes, (unsigned long long)st.pool_bytes,
           (unsigned long long)st.exec_bytes, (unsigned long long)st.pool.reserved_bytes);
    if (hits > 0)
        printf("  a hit, launched and waited for: %.1f us; an eager run: %.1f us (means)\n", graph_us / hits,
               eager_us / REQUESTS);
    printf("  replayed == eager, bitwise: %d of %d requests\n", REQUESTS - mismatches, REQUESTS);

    TRY(gc_pool_destroy(q.pool));
    TRY(gc_cache_destroy(cache));
    TRY(gc_host_free(ctx, host));
    TRY(gc_host_free(ctx, host2));
    float *all[6] = {w, x[0], x[1], y_graph[0], y_graph[1], y_eager};
    for (int i = 0; i < 6; i++) cu.free((unsigned long long)(uintptr_t)all[i]);
    TRY(gc_pool_destroy(unused));
    TRY(gc_stream_destroy(s));
    TRY(gc_context_destroy(ctx));
    if (mismatches != 0 || (getenv("GRAPHCORE_DISABLE") == NULL && st.evictions == 0)) {
        fprintf(stderr, "engine_cache: FAILED\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
