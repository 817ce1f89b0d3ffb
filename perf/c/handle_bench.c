/* The handle tables' cost at the C ABI's pool pair: gc_pool_alloc +
 * gc_pool_free of a cached 4 KiB block (each call looks its pool handle
 * up), median nanoseconds per pair. The contract is <= 100 ns per pair.
 *
 * Run the same binary against two builds of the library to compare the
 * handle table designs (ffi/src/handle.rs): the default (hazard entries;
 * a lookup is a store to the thread's own entry and a load) and the plain
 * one (cargo feature plain-handles: a lookup is an atomic increment and a
 * decrement of the slot's word), e.g.
 *
 *   cargo build --release -p graphcore-ffi --features plain-handles \
 *       --target-dir target/plain-handles
 *   mkdir -p stage/lib-plain && cp target/plain-handles/release/libgraphcore.so stage/lib-plain/
 *   ln -sf libgraphcore.so stage/lib-plain/libgraphcore.so.0
 *   for i in 1 2 3; do
 *     stage/bin/handle_bench hazard
 *     LD_LIBRARY_PATH=$PWD/stage/lib-plain stage/bin/handle_bench plain
 *   done
 *
 * The first argument names the build in the output and in the JSON file,
 * $OUT/handle_bench_<name>.json (or ./). Four measurements, each the median
 * of ROUNDS batches of BATCH pairs:
 *   1. one thread, one pool;
 *   2. 1, 2, 4, 8, 16 threads, each on its own pool (rounds started
 *      together): the mean and the slowest of the threads' medians;
 *   3. 2, 4, 8, 16 threads on one shared pool (one handle's slot, and the
 *      pool's lock, shared);
 *   4. one thread's pairs while another thread creates and destroys events
 *      in a loop (each destroy removes a handle: with hazard entries a
 *      remove, while the pair thread holds a record, interrupts every CPU
 *      running a thread of the process with a membarrier). */
#include "bench.h" /* first: it sets _POSIX_C_SOURCE */
#include <pthread.h>
#include <stdatomic.h>

#define BATCH 1000
#define ROUNDS 201
#define THREAD_ROUNDS 51
#define MAX_THREADS 16
#define BYTES 4096
#define CONTRACT_NS 100.0

static void check_batch(int bad, const char *what) {
    if (bad) {
        fprintf(stderr, "handle_bench: %s failed in a timed batch\n", what);
        exit(1);
    }
}

/* Median ns per pair of `rounds` batches on `pool` (v: scratch). */
static double pairs(gc_pool *pool, double *v, int rounds) {
    void *p;
    for (int r = 0; r < rounds; r++) {
        int bad = 0;
        double t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++) {
            bad |= gc_pool_alloc(pool, BYTES, &p);
            bad |= gc_pool_free(pool, p);
        }
        v[r] = (bench_now_ns() - t0) / BATCH;
        check_batch(bad, "gc_pool_alloc/gc_pool_free");
    }
    return bench_median(v, (size_t)rounds);
}

struct worker {
    gc_pool *pool;
    pthread_barrier_t *start;
    double ns[THREAD_ROUNDS];
    double median;
};

static void *work(void *arg) {
    struct worker *w = arg;
    void *p;
    int bad = 0;
    for (int r = 0; r < THREAD_ROUNDS; r++) {
        pthread_barrier_wait(w->start);
        double t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++) {
            bad |= gc_pool_alloc(w->pool, BYTES, &p);
            bad |= gc_pool_free(w->pool, p);
        }
        w->ns[r] = (bench_now_ns() - t0) / BATCH;
    }
    check_batch(bad, "gc_pool_alloc/gc_pool_free (threads)");
    w->median = bench_median(w->ns, THREAD_ROUNDS);
    return NULL;
}

/* n threads, on their own pools (shared == NULL) or all on `shared`:
 * writes the mean and the slowest of their medians. */
static void threads(gc_context *ctx, int n, gc_pool *shared, double *mean, double *slowest) {
    static struct worker workers[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)n) != 0) {
        fprintf(stderr, "handle_bench: pthread_barrier_init failed\n");
        exit(1);
    }
    for (int t = 0; t < n; t++) {
        void *p;
        memset(&workers[t], 0, sizeof workers[t]);
        workers[t].start = &start;
        if (shared) {
            workers[t].pool = shared;
        } else {
            TRY(gc_pool_create(ctx, NULL, &workers[t].pool));
        }
        /* The first allocation may grow the pool: not timed. */
        TRY(gc_pool_alloc(workers[t].pool, BYTES, &p));
        TRY(gc_pool_free(workers[t].pool, p));
    }
    for (int t = 0; t < n; t++)
        if (pthread_create(&tid[t], NULL, work, &workers[t]) != 0) {
            fprintf(stderr, "handle_bench: pthread_create failed\n");
            exit(1);
        }
    double sum = 0.0;
    *slowest = 0.0;
    for (int t = 0; t < n; t++) {
        pthread_join(tid[t], NULL);
        sum += workers[t].median;
        if (workers[t].median > *slowest) *slowest = workers[t].median;
        if (!shared) TRY(gc_pool_destroy(workers[t].pool));
    }
    pthread_barrier_destroy(&start);
    *mean = sum / n;
}

struct churn {
    gc_context *ctx;
    atomic_int stop;
    long destroyed;
};

/* Creates and destroys events until told to stop. */
static void *churn(void *arg) {
    struct churn *c = arg;
    while (!atomic_load(&c->stop)) {
        gc_event *e;
        TRY(gc_event_create(c->ctx, GC_EVENT_DISABLE_TIMING, &e));
        TRY(gc_event_destroy(e));
        c->destroyed++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *build = argc > 1 ? argv[1] : "default";
    static double v[ROUNDS];
    gc_context *ctx = bench_start("handle_bench");
    char name[256];
    snprintf(name, sizeof name, "handle_bench_%s.json", build);
    FILE *json = bench_json_open(ctx, name, "handle_bench");
    if (json)
        fprintf(json,
                "  \"build\": \"%s\",\n  \"method\": \"gc_pool_alloc + gc_pool_free of %d bytes (a cached block), "
                "%d pairs per batch, median of %d batches (%d per thread with threads)\",\n"
                "  \"units\": \"ns per pair\",\n",
                build, BYTES, BATCH, ROUNDS, THREAD_ROUNDS);

    gc_pool *pool;
    TRY(gc_pool_create(ctx, NULL, &pool));
    (void)pairs(pool, v, 5); /* warm up: grows the pool, faults pages in */
    double one = pairs(pool, v, ROUNDS);
    printf("handle_bench [%s]: gc_pool_alloc+gc_pool_free, %d bytes, ns per pair (contract <= %.0f)\n", build,
           BYTES, CONTRACT_NS);
    printf("  1 thread, 1 pool: %.1f ns (%s)\n", one, one <= CONTRACT_NS ? "met" : "MISSED");
    if (json) fprintf(json, "  \"one_thread_ns\": %.1f,\n", one);

    const int counts[] = {1, 2, 4, 8, 16};
    printf("  threads on their own pools:  threads  mean  slowest\n");
    if (json) fprintf(json, "  \"own_pools\": [\n");
    for (int c = 0; c < 5; c++) {
        double mean, slowest;
        threads(ctx, counts[c], NULL, &mean, &slowest);
        printf("  %29d %7.1f %8.1f\n", counts[c], mean, slowest);
        if (json)
            fprintf(json, "    {\"threads\": %d, \"mean_ns\": %.1f, \"slowest_ns\": %.1f}%s\n", counts[c], mean,
                    slowest, c == 4 ? "" : ",");
    }
    if (json) fprintf(json, "  ],\n  \"one_shared_pool\": [\n");
    printf("  threads on one shared pool:  threads  mean  slowest\n");
    for (int c = 1; c < 5; c++) {
        double mean, slowest;
        threads(ctx, counts[c], pool, &mean, &slowest);
        printf("  %29d %7.1f %8.1f\n", counts[c], mean, slowest);
        if (json)
            fprintf(json, "    {\"threads\": %d, \"mean_ns\": %.1f, \"slowest_ns\": %.1f}%s\n", counts[c], mean,
                    slowest, c == 4 ? "" : ",");
    }

    static struct churn c;
    pthread_t tid;
    c.ctx = ctx;
    atomic_store(&c.stop, 0);
    if (pthread_create(&tid, NULL, churn, &c) != 0) {
        fprintf(stderr, "handle_bench: pthread_create failed\n");
        exit(1);
    }
    double t0 = bench_now_ns();
    double busy = pairs(pool, v, ROUNDS);
    double secs = (bench_now_ns() - t0) / 1e9;
    atomic_store(&c.stop, 1);
    pthread_join(tid, NULL);
    printf("  1 thread while another creates and destroys events (%.0f destroys/s): %.1f ns\n",
           (double)c.destroyed / secs, busy);
    if (json) {
        fprintf(json, "  ],\n  \"with_event_churn_ns\": %.1f,\n  \"event_destroys_per_s\": %.0f\n}\n", busy,
                (double)c.destroyed / secs);
        fclose(json);
    }
    TRY(gc_pool_destroy(pool));
    TRY(gc_context_destroy(ctx));
    return 0;
}
