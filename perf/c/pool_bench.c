/* Pool allocation through the C ABI vs the CUDA driver's allocators, side
 * by side in one run on one GPU: gc_pool_alloc + gc_pool_free of a cached
 * block, cuMemAllocAsync + cuMemFreeAsync (the stream-ordered pool), and
 * cuMemAlloc + cuMemFree. Median nanoseconds per pair over many batches.
 * Prints a table and writes JSON to $OUT/pool_bench.json (or ./).
 *
 * Then the scaling over threads: 1, 2, 4, 8 and 16 threads, each with its
 * own pool, start each round together and time their own alloc+free pairs
 * (issue 15: "16 threads on 16 pools must not contend"). Per thread count,
 * the mean and the slowest of the threads' median ns per pair; written to
 * $OUT/pool_threads.json. */
#include "bench.h" /* first: it sets _POSIX_C_SOURCE */
#include <pthread.h>

#define BATCH 1000
#define ROUNDS 101
#define THREAD_ROUNDS 51
#define MAX_THREADS 16

/* Exits unless every result OR-ed into `bad` was 0 (success). */
static void check_batch(int bad, const char *what) {
    if (bad) {
        fprintf(stderr, "pool_bench: %s failed in a timed batch\n", what);
        exit(1);
    }
}

static void single_thread(gc_pool *pool, CUstream raw_stream) {
    size_t sizes[] = {4096, 1 << 20};
    static double pool_ns[ROUNDS], again_ns[ROUNDS], async_ns[ROUNDS], plain_ns[ROUNDS];
    char path[4096];
    const char *out = getenv("OUT");
    snprintf(path, sizeof path, "%s/pool_bench.json", out ? out : ".");
    FILE *json = fopen(path, "w");
    if (json) fprintf(json, "[\n");
    printf("%10s %14s %18s %14s %12s %12s\n", "bytes", "gc_pool ns", "cuMemAllocAsync ns", "cuMemAlloc ns",
           "vs async", "vs plain");
    for (int s = 0; s < 2; s++) {
        size_t bytes = sizes[s];
        void *p;
        CUdeviceptr d;
        /* Warm up every path (the first allocation grows each pool). */
        TRY(gc_pool_alloc(pool, bytes, &p));
        TRY(gc_pool_free(pool, p));
        CU(cu.MemAllocAsync(&d, bytes, raw_stream));
        CU(cu.MemFreeAsync(d, raw_stream));
        CU(cu.StreamSynchronize(raw_stream));
        for (int r = 0; r < ROUNDS; r++) {
            int bad = 0;
            double t0 = bench_now_ns();
            for (int i = 0; i < BATCH; i++) {
                bad |= gc_pool_alloc(pool, bytes, &p);
                bad |= gc_pool_free(pool, p);
            }
            pool_ns[r] = (bench_now_ns() - t0) / BATCH;
            check_batch(bad, "gc_pool_alloc/gc_pool_free");
            /* The same batch again at once: no driver call in between. */
            t0 = bench_now_ns();
            for (int i = 0; i < BATCH; i++) {
                bad |= gc_pool_alloc(pool, bytes, &p);
                bad |= gc_pool_free(pool, p);
            }
            again_ns[r] = (bench_now_ns() - t0) / BATCH;
            check_batch(bad, "gc_pool_alloc/gc_pool_free (again)");
            t0 = bench_now_ns();
            for (int i = 0; i < BATCH; i++) {
                bad |= cu.MemAllocAsync(&d, bytes, raw_stream);
                bad |= cu.MemFreeAsync(d, raw_stream);
            }
            async_ns[r] = (bench_now_ns() - t0) / BATCH;
            check_batch(bad, "cuMemAllocAsync/cuMemFreeAsync");
            CU(cu.StreamSynchronize(raw_stream));
            t0 = bench_now_ns();
            for (int i = 0; i < BATCH / 10; i++) {
                bad |= cu.MemAlloc(&d, bytes);
                bad |= cu.MemFree(d);
            }
            plain_ns[r] = (bench_now_ns() - t0) / (BATCH / 10);
            check_batch(bad, "cuMemAlloc/cuMemFree");
        }
        double a = bench_median(pool_ns, ROUNDS), b = bench_median(async_ns, ROUNDS),
               c = bench_median(plain_ns, ROUNDS), a2 = bench_median(again_ns, ROUNDS);
        printf("%10zu %14.1f %18.1f %14.1f %11.1fx %11.1fx   (gc_pool batch again at once: %.1f ns)\n", bytes, a,
               b, c, b / a, c / a, a2);
        if (json)
            fprintf(json,
                    "  {\"bytes\": %zu, \"gc_pool_ns\": %.1f, \"gc_pool_again_ns\": %.1f, "
                    "\"cuMemAllocAsync_ns\": %.1f, \"cuMemAlloc_ns\": %.1f}%s\n",
                    bytes, a, a2, b, c, s == 0 ? "," : "");
    }
    if (json) {
        fprintf(json, "]\n");
        fclose(json);
    }
}

/* One thread of the scaling run: its own pool, its median ns per pair. */
struct worker {
    gc_pool *pool;
    pthread_barrier_t *start;
    double ns[THREAD_ROUNDS];
    double median;
    int bad;
};

static void *work(void *arg) {
    struct worker *w = arg;
    void *p;
    for (int r = 0; r < THREAD_ROUNDS; r++) {
        int bad = 0; /* a local: no stores to memory other threads read */
        pthread_barrier_wait(w->start);
        double t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++) {
            bad |= gc_pool_alloc(w->pool, 4096, &p);
            bad |= gc_pool_free(w->pool, p);
        }
        w->ns[r] = (bench_now_ns() - t0) / BATCH;
        w->bad |= bad;
    }
    w->median = bench_median(w->ns, THREAD_ROUNDS);
    return NULL;
}

static void thread_scaling(gc_context *ctx) {
    static struct worker workers[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    const int counts[] = {1, 2, 4, 8, 16};
    double base = 0.0;
    FILE *json = bench_json_open(ctx, "pool_threads.json", "pool_threads");
    if (json)
        fprintf(json, "  \"method\": \"each thread its own pool, alloc+free of 4096 bytes, %d pairs per round, "
                      "rounds started together, median of %d rounds per thread\",\n  \"units\": \"ns per pair\",\n"
                      "  \"rows\": [\n",
                BATCH, THREAD_ROUNDS);
    printf("\nalloc+free of 4096 bytes, each thread on its own pool (ns per pair per thread)\n");
    printf("%8s %12s %12s %12s\n", "threads", "mean", "slowest", "mean / 1");
    for (int c = 0; c < 5; c++) {
        int n = counts[c];
        pthread_barrier_t start;
        if (pthread_barrier_init(&start, NULL, (unsigned)n) != 0) {
            fprintf(stderr, "pool_bench: pthread_barrier_init failed\n");
            exit(1);
        }
        for (int t = 0; t < n; t++) {
            void *p;
            memset(&workers[t], 0, sizeof workers[t]);
            workers[t].start = &start;
            TRY(gc_pool_create(ctx, NULL, &workers[t].pool));
            /* The first allocation grows the pool: not timed. */
            TRY(gc_pool_alloc(workers[t].pool, 4096, &p));
            TRY(gc_pool_free(workers[t].pool, p));
        }
        for (int t = 0; t < n; t++)
            if (pthread_create(&threads[t], NULL, work, &workers[t]) != 0) {
                fprintf(stderr, "pool_bench: pthread_create failed\n");
                exit(1);
            }
        double sum = 0.0, slowest = 0.0;
        for (int t = 0; t < n; t++) {
            pthread_join(threads[t], NULL);
            check_batch(workers[t].bad, "gc_pool_alloc/gc_pool_free (threads)");
            sum += workers[t].median;
            if (workers[t].median > slowest) slowest = workers[t].median;
            TRY(gc_pool_destroy(workers[t].pool));
        }
        pthread_barrier_destroy(&start);
        double mean = sum / n;
        if (n == 1) base = mean;
        printf("%8d %12.1f %12.1f %11.2fx\n", n, mean, slowest, mean / base);
        if (json)
            fprintf(json, "    {\"threads\": %d, \"mean_ns\": %.1f, \"slowest_ns\": %.1f, \"mean_vs_one\": %.3f}%s\n",
                    n, mean, slowest, mean / base, c == 4 ? "" : ",");
    }
    if (json) {
        fprintf(json, "  ]\n}\n");
        fclose(json);
    }
}

int main(void) {
    gc_context *ctx = bench_start("pool_bench");
    gc_stream *stream;
    gc_pool *pool;
    CUstream raw_stream;
    TRY(gc_stream_create(ctx, &stream));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_stream_raw(stream, (void **)&raw_stream));
    single_thread(pool, raw_stream);
    thread_scaling(ctx);
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    return 0;
}
