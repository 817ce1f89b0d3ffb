/* The PyTorch notes' CUDAGraphModel in C: a 1024 -> 512 -> 256 -> 10 MLP
 * with ReLU between, served with one graph per batch size (1, 4, 16, 32)
 * in one shared pool through a gc_runner, and an eager fallback above 32
 * rows. The graphs declare their input and output as arguments
 * (gc_capture_arg), so each request is served from its own input and output
 * buffers (gc_runner_replay_with) with no copy into static buffers; the
 * notes' way (copy in, replay, copy out) is timed beside it. Exact-size
 * requests (gc_runner_capture_exact, gc_op_mlp_rows, gc_runner_replay_exact)
 * are served from buffers of exactly each request's rows.
 *
 * Weights are initialised as torch.nn.Linear does (uniform +-1/sqrt(in))
 * from a fixed seed, or read from a file (--data FILE: W1, b1, W2, b2, W3,
 * b3, then 64x1024 inputs, float32, row-major, as
 * perf/side_by_side/mlp_vs_torch.py writes them). Outputs are checked
 * against an eager run and a float64 CPU reference; memory is reported as
 * the notes report it; timings are printed (--json FILE writes them;
 * --dump FILE writes the graph's outputs for the first 32 inputs).
 *
 * Build and run: make examples && c_examples/build/mlp_inference */
#include "common.h"

#define IN 1024
#define H1 512
#define H2 256
#define OUT 10
#define MAX_ROWS 64
#define NBUCKETS 4
static const uint32_t BUCKETS[NBUCKETS] = {1, 4, 16, 32};

typedef struct {
    gc_pool *pool;
    float *w1, *b1, *w2, *b2, *w3, *b3;
    float *x, *y; /* the static input (32 rows) and output */
    gc_mlp_layer layers[3];
    void *ws1;        /* the one-row fused forward's workspace (zeroed once) */
    uint64_t ws1_bytes;
} mlp;

/* The arguments every bucket's graph declares, in this order. */
enum { ARG_X = 0, ARG_Y = 1 };

/* The forward pass for `rows` rows of m->x into m->y. One row: gc_op_mlp
 * with GC_MLP_FUSED, which runs the notes' MLP at one row in one fused
 * launch where that measured faster than three launches (without
 * programmatic dependent launch; with it, as on an H100 with a CUDA 12.3
 * driver, one launch per layer is faster and gc_op_mlp makes those), on a
 * workspace of its own (the fused kernel keeps a counter in it, so it must
 * not be scratch that other graphs reuse). More rows: one
 * gc_op_linear launch per layer, the hidden activations scratch from the
 * pool, freed at the end (inside a capture they are reused by the next
 * bucket's capture). Under capture it declares m->x and m->y arguments
 * ARG_X and ARG_Y (the warm-up runs are eager and declare nothing). */
static gc_status forward(gc_stream *s, uint32_t rows, void *user) {
    mlp *m = user;
    float *h1, *h2;
    gc_status st;
    int capturing = 0;
    if ((st = gc_stream_is_capturing(s, &capturing))) return st;
    if (capturing) {
        size_t ix, iy;
        if ((st = gc_capture_arg(s, m->x, (size_t)rows * IN * sizeof(float), 0, &ix))) return st;
        if ((st = gc_capture_arg(s, m->y, (size_t)rows * OUT * sizeof(float), 0, &iy))) return st;
        if (ix != ARG_X || iy != ARG_Y) return GC_ERROR_INVALID_STATE;
    }
    if (rows == 1) return gc_op_mlp(s, m->y, m->x, 1, m->layers, 3, m->ws1, m->ws1_bytes, GC_MLP_FUSED);
    if ((st = gc_pool_alloc(m->pool, (size_t)rows * H1 * sizeof(float), (void **)&h1))) return st;
    if ((st = gc_pool_alloc(m->pool, (size_t)rows * H2 * sizeof(float), (void **)&h2))) return st;
    if ((st = gc_op_linear(s, h1, m->x, m->w1, m->b1, rows, H1, IN, 1))) return st;
    if ((st = gc_op_linear(s, h2, h1, m->w2, m->b2, rows, H2, H1, 1))) return st;
    if ((st = gc_op_linear(s, m->y, h2, m->w3, m->b3, rows, OUT, H2, 0))) return st;
    if ((st = gc_pool_free(m->pool, h1))) return st;
    return gc_pool_free(m->pool, h2);
}

/* Exact-size requests (gc_runner_capture_exact): the forward pass reads its
 * row count at `rows` (device memory that gc_runner_replay_exact binds to
 * the request's rows) through gc_op_mlp_rows, and x and y are declared as
 * rows (GC_ARG_ROWS), so a replay takes buffers of exactly the request's
 * rows: no padding, nothing copied. */
typedef struct {
    mlp *m;
    void *ws; /* gc_op_mlp_rows's workspace, for the largest bucket */
    uint64_t ws_bytes;
} mlp_exact;

static gc_status forward_rows(gc_stream *s, uint32_t batch, const uint32_t *rows, void *user) {
    mlp_exact *e = user;
    gc_status st;
    int capturing = 0;
    if ((st = gc_stream_is_capturing(s, &capturing))) return st;
    if (capturing) {
        size_t ix, iy;
        if ((st = gc_capture_arg(s, e->m->x, (size_t)batch * IN * sizeof(float), GC_ARG_ROWS, &ix))) return st;
        if ((st = gc_capture_arg(s, e->m->y, (size_t)batch * OUT * sizeof(float), GC_ARG_ROWS, &iy))) return st;
        if (ix != ARG_X || iy != ARG_Y) return GC_ERROR_INVALID_STATE;
    }
    return gc_op_mlp_rows(s, e->m->y, e->m->x, rows, batch, e->m->layers, 3, e->ws, e->ws_bytes, 0);
}

/* float64 reference of one row. */
static void reference(const float *w1, const float *b1, const float *w2, const float *b2,
                      const float *w3, const float *b3, const float *x, double *y) {
    double h1[H1], h2[H2];
    for (int j = 0; j < H1; j++) {
        double a = b1[j];
        for (int k = 0; k < IN; k++) a += (double)x[k] * w1[(size_t)j * IN + k];
        h1[j] = a > 0 ? a : 0;
    }
    for (int j = 0; j < H2; j++) {
        double a = b2[j];
        for (int k = 0; k < H1; k++) a += h1[k] * w2[(size_t)j * H1 + k];
        h2[j] = a > 0 ? a : 0;
    }
    for (int j = 0; j < OUT; j++) {
        double a = b3[j];
        for (int k = 0; k < H2; k++) a += h2[k] * w3[(size_t)j * H2 + k];
        y[j] = a;
    }
}

/* The bucket a request of `rows` rows runs in (0: above the largest). */
static uint32_t bucket_of(uint32_t rows) {
    for (int i = 0; i < NBUCKETS; i++)
        if (BUCKETS[i] >= rows) return BUCKETS[i];
    return 0;
}

static float *device_copy(gc_context *ctx, gc_stream *s, gc_pool *pool, const float *h, size_t n) {
    float *d;
    TRY(gc_pool_alloc(pool, n * sizeof(float), (void **)&d));
    upload(ctx, s, d, h, n);
    return d;
}

int main(int argc, char **argv) {
    const char *data = NULL, *json = NULL, *dump = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--data")) data = argv[i + 1];
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else if (!strcmp(argv[i], "--dump")) dump = argv[i + 1];
    }
    gc_context *ctx;
    gc_stream *s;
    gc_pool *pool;
    open_gpu("mlp_inference", &ctx, &s, &pool);

    /* Host copies of the weights and of 64 input rows. */
    size_t sizes[7] = {(size_t)H1 * IN, H1, (size_t)H2 * H1, H2, (size_t)OUT * H2, OUT,
                       (size_t)MAX_ROWS * IN};
    float *h[7];
    for (int i = 0; i < 7; i++) h[i] = malloc(sizes[i] * sizeof(float));
    if (data) {
        FILE *f = fopen(data, "rb");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", data);
            return 1;
        }
        for (int i = 0; i < 7; i++) read_floats(f, h[i], sizes[i], "the MLP data");
        fclose(f);
    } else {
        uint64_t seed = 42;
        int fan_in[6] = {IN, IN, H1, H1, H2, H2};
        for (int i = 0; i < 6; i++) fill_uniform(h[i], sizes[i], 1.0f / sqrtf((float)fan_in[i]), &seed);
        fill_uniform(h[6], sizes[6], 1.0f, &seed);
    }

    printf("memory (pool statistics, as the PyTorch notes print them):\n");
    print_memory(pool, "model ready (empty)");

    mlp m;
    memset(&m, 0, sizeof m);
    m.pool = pool;
    float **params[6] = {&m.w1, &m.b1, &m.w2, &m.b2, &m.w3, &m.b3};
    for (int i = 0; i < 6; i++) *params[i] = device_copy(ctx, s, pool, h[i], sizes[i]);
    gc_mlp_layer layers[3] = {{m.w1, m.b1, IN, H1, 1}, {m.w2, m.b2, H1, H2, 1}, {m.w3, m.b3, H2, OUT, 0}};
    memcpy(m.layers, layers, sizeof layers);
    TRY(gc_op_mlp_workspace_bytes(1, m.layers, 3, &m.ws1_bytes));
    TRY(gc_pool_alloc(pool, m.ws1_bytes, &m.ws1));
    TRY(gc_memset_async(s, m.ws1, 0, m.ws1_bytes));
    print_memory(pool, "weights");
    float *inputs = device_copy(ctx, s, pool, h[6], sizes[6]); /* where requests come from */
    TRY(gc_pool_alloc(pool, (size_t)32 * IN * sizeof(float), (void **)&m.x));
    TRY(gc_pool_alloc(pool, (size_t)MAX_ROWS * OUT * sizeof(float), (void **)&m.y));
    float *results;
    TRY(gc_pool_alloc(pool, (size_t)MAX_ROWS * OUT * sizeof(float), (void **)&results));
    print_memory(pool, "static inputs");

    /* One graph per bucket, largest first, into the shared pool. */
    gc_runner *runner;
    TRY(gc_runner_create(ctx, pool, &runner));
    TRY(gc_memcpy_async(s, m.x, inputs, (size_t)32 * IN * sizeof(float)));
    TRY(gc_stream_synchronize(s));
    double t0 = now_us();
    TRY(gc_runner_capture(runner, BUCKETS, NBUCKETS, forward, &m, 3));
    double capture_all_us = now_us() - t0;
    print_memory(pool, "graph capture done");
    gc_runner_statistics rs = runner_stats(runner);
    printf("buckets (captured largest first, %.0f us for all four, warm-up included):\n", capture_all_us);
    for (uint32_t i = 0; i < rs.bucket_count; i++)
        printf("  batch %2u: %u nodes, captured in %6.0f us, holds %llu pool bytes\n", rs.buckets[i].batch,
               rs.buckets[i].node_count, rs.buckets[i].capture_us, (unsigned long long)rs.buckets[i].pool_bytes);

    /* What the graphs alone reserve: shared pool vs the batch-32 graph alone
     * vs four separate pools. */
    uint64_t alone32 = 0, separate = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        gc_pool *p;
        gc_runner *r;
        TRY(gc_pool_create(ctx, NULL, &p));
        mlp m1 = m;
        m1.pool = p;
        TRY(gc_runner_create(ctx, p, &r));
        TRY(gc_runner_capture(r, &BUCKETS[i], 1, forward, &m1, 0));
        gc_runner_statistics one = runner_stats(r);
        separate += one.pool.reserved_bytes;
        if (BUCKETS[i] == 32) alone32 = one.pool.reserved_bytes;
        TRY(gc_runner_destroy(r));
        TRY(gc_pool_destroy(p));
    }
    gc_pool *shared_only;
    gc_runner *shared_runner;
    TRY(gc_pool_create(ctx, NULL, &shared_only));
    mlp m2 = m;
    m2.pool = shared_only;
    TRY(gc_runner_create(ctx, shared_only, &shared_runner));
    TRY(gc_runner_capture(shared_runner, BUCKETS, NBUCKETS, forward, &m2, 0));
    gc_runner_statistics sh = runner_stats(shared_runner);
    uint64_t shared = sh.pool.reserved_bytes;
    TRY(gc_runner_destroy(shared_runner));
    TRY(gc_pool_destroy(shared_only));
    printf("graph memory: 4 buckets in one pool reserve %.1f MB; the batch-32 graph alone %.1f MB "
           "(%.2fx); four separate pools would reserve %.1f MB\n",
           shared / 1048576.0, alone32 / 1048576.0, (double)shared / (double)alone32, separate / 1048576.0);

    /* Serve requests of several sizes, each from its own input and output
     * buffers (padded to its bucket's rows, as a replay computes them all):
     * the graph is bound to them, nothing is copied (eager above 32).
     * Compare with the eager path and the CPU reference. */
    int ok = 1;
    uint32_t requests[] = {1, 3, 4, 16, 20, 32, 50};
    float *y_graph = malloc((size_t)MAX_ROWS * OUT * sizeof(float));
    float *y_eager = malloc((size_t)MAX_ROWS * OUT * sizeof(float));
    double max_ref_err = 0, max_eager_err = 0;
    for (size_t r = 0; r < sizeof requests / sizeof *requests; r++) {
        uint32_t n = requests[r], bucket = bucket_of(n);
        uint32_t padded = bucket ? bucket : n;
        const char *how;
        /* The request's own buffers, as a server would receive them. */
        float *req_x, *req_y;
        TRY(gc_pool_alloc(pool, (size_t)padded * IN * sizeof(float), (void **)&req_x));
        TRY(gc_pool_alloc(pool, (size_t)padded * OUT * sizeof(float), (void **)&req_y));
        upload(ctx, s, req_x, h[6], (size_t)n * IN);
        gc_binding bind[2] = {{ARG_X, req_x, (size_t)padded * IN * sizeof(float)},
                              {ARG_Y, req_y, (size_t)padded * OUT * sizeof(float)}};
        gc_status st = gc_runner_replay_with(runner, n, s, bind, 2, &bucket);
        if (st == GC_ERROR_NO_BUCKET) {
            mlp big = m;
            big.x = req_x;
            big.y = req_y;
            TRY(forward(s, n, &big));
            how = "eager fallback";
        } else {
            TRY(st);
            how = "graph, bound";
        }
        download(ctx, s, y_graph, req_y, (size_t)n * OUT);
        mlp eager = m;
        eager.x = inputs;
        eager.y = results;
        TRY(forward(s, n, &eager));
        download(ctx, s, y_eager, results, (size_t)n * OUT);
        double worst = 0, worst_eager = 0;
        for (uint32_t i = 0; i < n; i++) {
            double ref[OUT];
            reference(h[0], h[1], h[2], h[3], h[4], h[5], h[6] + (size_t)i * IN, ref);
            for (int j = 0; j < OUT; j++) {
                double g = y_graph[i * OUT + j], e = y_eager[i * OUT + j];
                double scale = fabs(ref[j]) > 1e-3 ? fabs(ref[j]) : 1e-3;
                worst = fmax(worst, fabs(g - ref[j]) / scale);
                worst_eager = fmax(worst_eager, fabs(g - e) / scale);
            }
        }
        if (dump && n == 32) { /* the graph's outputs for the first 32 inputs */
            FILE *f = fopen(dump, "wb");
            if (f) {
                fwrite(y_graph, sizeof(float), (size_t)32 * OUT, f);
                fclose(f);
            }
        }
        TRY(gc_pool_free(pool, req_x));
        TRY(gc_pool_free(pool, req_y));
        max_ref_err = fmax(max_ref_err, worst);
        max_eager_err = fmax(max_eager_err, worst_eager);
        int good = worst <= 1e-4 && worst_eager <= 1e-5;
        ok &= good;
        printf("  %2u rows -> %-14s bucket %2u: max rel err vs float64 %.1e, vs eager %.1e %s\n", n, how,
               bucket, worst, worst_eager, good ? "" : "(TOO LARGE)");
    }

    /* Exact-size requests: each request's buffers hold exactly its rows
     * (the output one row more, poisoned, to show nothing is written past
     * them). */
    {
        mlp_exact e = {&m, NULL, 0};
        gc_runner *exact;
        TRY(gc_op_mlp_workspace_bytes(32, m.layers, 3, &e.ws_bytes));
        TRY(gc_pool_alloc(pool, e.ws_bytes, &e.ws));
        TRY(gc_runner_create(ctx, pool, &exact));
        TRY(gc_runner_capture_exact(exact, BUCKETS, NBUCKETS, forward_rows, &e, 1));
        gc_runner_statistics es = runner_stats(exact);
        printf("exact-size requests (gc_runner_replay_exact; buckets taking them: 0x%x of %u):\n",
               es.exact_buckets, es.bucket_count);
        ok &= es.exact_buckets == (1u << es.bucket_count) - 1;
        uint32_t exact_requests[] = {1, 2, 3, 4, 7, 16, 20, 31, 32};
        for (size_t r = 0; r < sizeof exact_requests / sizeof *exact_requests; r++) {
            uint32_t n = exact_requests[r], bucket = 0;
            float *req_x, *req_y;
            TRY(gc_pool_alloc(pool, (size_t)n * IN * sizeof(float), (void **)&req_x));
            TRY(gc_pool_alloc(pool, (size_t)(n + 1) * OUT * sizeof(float), (void **)&req_y));
            upload(ctx, s, req_x, h[6], (size_t)n * IN);
            TRY(gc_memset_async(s, req_y, 0xff, (size_t)(n + 1) * OUT * sizeof(float)));
            gc_binding bind[2] = {{ARG_X, req_x, (size_t)n * IN * sizeof(float)},
                                  {ARG_Y, req_y, (size_t)n * OUT * sizeof(float)}};
            TRY(gc_runner_replay_exact(exact, n, s, bind, 2, &bucket));
            download(ctx, s, y_graph, req_y, (size_t)(n + 1) * OUT);
            double worst = 0;
            for (uint32_t i = 0; i < n; i++) {
                double ref[OUT];
                reference(h[0], h[1], h[2], h[3], h[4], h[5], h[6] + (size_t)i * IN, ref);
                for (int j = 0; j < OUT; j++) {
                    double scale = fabs(ref[j]) > 1e-3 ? fabs(ref[j]) : 1e-3;
                    worst = fmax(worst, fabs(y_graph[i * OUT + j] - ref[j]) / scale);
                }
            }
            int untouched = 1;
            for (int j = 0; j < OUT; j++) untouched &= isnan(y_graph[n * OUT + j]);
            int good = worst <= 1e-4 && untouched;
            ok &= good;
            printf("  %2u rows -> bucket %2u, buffers of %2u rows: max rel err vs float64 %.1e, row %u %s%s\n", n,
                   bucket, n, worst, n, untouched ? "untouched" : "WRITTEN", good ? "" : " (FAILED)");
            TRY(gc_pool_free(pool, req_x));
            TRY(gc_pool_free(pool, req_y));
        }
        TRY(gc_runner_destroy(exact));
        TRY(gc_pool_free(pool, e.ws));
    }

    /* Timings, end to end: with bindings (each request bound to its own
     * buffers: two requests' buffers alternate, so every replay rebinds),
     * and as the notes do it (copy the input into the static buffer,
     * replay, copy the output out), all on the device; and eager. */
    float *req_x[2], *req_y[2];
    for (int i = 0; i < 2; i++) {
        TRY(gc_pool_alloc(pool, (size_t)32 * IN * sizeof(float), (void **)&req_x[i]));
        TRY(gc_pool_alloc(pool, (size_t)32 * OUT * sizeof(float), (void **)&req_y[i]));
        TRY(gc_memcpy_async(s, req_x[i], inputs, (size_t)32 * IN * sizeof(float)));
    }
    printf("timings (median per request over 7 runs of 1000, end to end):\n");
    printf("  %5s %12s %12s %12s %9s %9s %12s %12s\n", "batch", "bound", "copies", "eager", "vs copies",
           "vs eager", "enqueue", "same bufs");
    char json_rows[4][300];
    for (int b = 0; b < NBUCKETS; b++) {
        uint32_t n = BUCKETS[b], bucket;
        double graph_t[7], eager_t[7], bound_t[7], enqueue_t[7], same_t[7];
        gc_binding bind[2][2];
        for (int i = 0; i < 2; i++) {
            bind[i][0] = (gc_binding){ARG_X, req_x[i], (size_t)n * IN * sizeof(float)};
            bind[i][1] = (gc_binding){ARG_Y, req_y[i], (size_t)n * OUT * sizeof(float)};
        }
        mlp eager = m;
        eager.x = inputs;
        eager.y = results;
        for (int rep = 0; rep < 7; rep++) {
            double t = now_us();
            for (int i = 0; i < 1000; i++) TRY(gc_runner_replay_with(runner, n, s, bind[i & 1], 2, &bucket));
            enqueue_t[rep] = (now_us() - t) / 1000;
            TRY(gc_stream_synchronize(s));
            bound_t[rep] = (now_us() - t) / 1000;
            /* The same requests' buffers every time: no node is patched. */
            t = now_us();
            for (int i = 0; i < 1000; i++) TRY(gc_runner_replay_with(runner, n, s, bind[0], 2, &bucket));
            TRY(gc_stream_synchronize(s));
            same_t[rep] = (now_us() - t) / 1000;
            /* Bindings persist: the copies path runs on the static buffers. */
            gc_binding home[2] = {{ARG_X, m.x, 0}, {ARG_Y, m.y, 0}};
            TRY(gc_runner_replay_with(runner, n, s, home, 2, &bucket));
            t = now_us();
            for (int i = 0; i < 1000; i++) {
                TRY(gc_memcpy_async(s, m.x, inputs, (size_t)n * IN * sizeof(float)));
                TRY(gc_runner_replay(runner, n, s, &bucket));
                TRY(gc_memcpy_async(s, results, m.y, (size_t)n * OUT * sizeof(float)));
            }
            TRY(gc_stream_synchronize(s));
            graph_t[rep] = (now_us() - t) / 1000;
            t = now_us();
            for (int i = 0; i < 1000; i++) TRY(forward(s, n, &eager));
            TRY(gc_stream_synchronize(s));
            eager_t[rep] = (now_us() - t) / 1000;
        }
        double g = median(graph_t, 7), e = median(eager_t, 7), bd = median(bound_t, 7);
        double enq = median(enqueue_t, 7), same = median(same_t, 7);
        printf("  %5u %9.2f us %9.2f us %9.2f us %8.2fx %8.2fx %9.2f us %9.2f us\n", n, bd, g, e, g / bd,
               e / bd, enq, same);
        snprintf(json_rows[b], sizeof json_rows[b],
                 "{\"batch\": %u, \"graph_us\": %.3f, \"bound_us\": %.3f, \"eager_us\": %.3f, "
                 "\"bound_enqueue_us\": %.3f, \"same_buffers_us\": %.3f}",
                 n, g, bd, e, enq, same);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fprintf(f, "{\"capture_all_us\": %.1f, \"shared_reserved\": %llu, \"alone32_reserved\": %llu, "
                       "\"separate_reserved\": %llu, \"max_rel_err_vs_fp64\": %.3e, \"max_rel_err_vs_eager\": %.3e,\n"
                       " \"buckets\": [",
                    capture_all_us, (unsigned long long)shared, (unsigned long long)alone32,
                    (unsigned long long)separate, max_ref_err, max_eager_err);
            for (uint32_t i = 0; i < rs.bucket_count; i++)
                fprintf(f, "%s{\"batch\": %u, \"capture_us\": %.1f, \"nodes\": %u}", i ? ", " : "",
                        rs.buckets[i].batch, rs.buckets[i].capture_us, rs.buckets[i].node_count);
            fprintf(f, "],\n \"timings\": [%s, %s, %s, %s]}\n", json_rows[0], json_rows[1], json_rows[2],
                    json_rows[3]);
            fclose(f);
        }
    }

    TRY(gc_runner_destroy(runner));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(s));
    TRY(gc_context_destroy(ctx));
    for (int i = 0; i < 7; i++) free(h[i]);
    free(y_graph);
    free(y_eager);
    printf("mlp_inference: %s\n", ok ? "outputs correct" : "FAILED");
    return ok ? 0 : 1;
}
