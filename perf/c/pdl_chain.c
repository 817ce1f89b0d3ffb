/* Programmatic dependent launch, A/B (issue 14, item 3): chains of
 * graphcore's built-in ops, each captured once into a graph and replayed,
 * timed per replay (median of 7 runs of R replays, wall clock, back to back
 * on one stream, synchronized at the end of each run). GC_PDL=0 in the
 * environment turns programmatic launches off for the whole process, so
 * run it twice, with and without (perf/c/pdl_ab.sh alternates the two):
 *   mlp_b<N>     the notes' MLP (1024 -> 512 -> 256 -> 10, ReLU between),
 *                one gc_op_linear per layer, N rows (the per-layer path)
 *   linear_step  gc_op_linear_mse_step, Linear 1024 x 1024, 64 rows
 *   mlp2_step    gc_op_mlp2_mse_step, 1024 -> 512 -> 10, 64 rows
 *   gemm_MxKxN   one gc_op_linear (bias, no ReLU) of M rows, K inputs, N
 *                outputs: no edge in its graph, so it shows what the
 *                compute_90 PTX itself costs or saves (run it against the
 *                library before the change for that)
 * Each line: `RES name us_per_replay nodes programmatic_edges checksum`,
 * the checksum an FNV-1a hash of the outputs' bits after every replay (the
 * training steps' parameters after all of them): equal with and without
 * programmatic launches when the kernels wait where they must.
 *   pdl_chain [--quick] [--json FILE]
 * --quick: 3 replays, one run (for compute-sanitizer). */
#include "bench.h"
#include <unistd.h>

static gc_context *ctx;
static gc_stream *s;
static gc_pool *pool;

/* n floats of device memory holding deterministic values in [-a, a). */
static float *dev(size_t n, uint32_t seed, float a) {
    float *d, *h;
    TRY(gc_pool_alloc(pool, n * sizeof(float), (void **)&d));
    TRY(gc_host_alloc(ctx, n * sizeof(float), (void **)&h));
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        h[i] = ((float)(x >> 8) / 16777216.0f * 2.0f - 1.0f) * a;
    }
    TRY(gc_memcpy_async(s, d, h, n * sizeof(float)));
    TRY(gc_stream_synchronize(s));
    TRY(gc_host_free(ctx, h));
    return d;
}

/* FNV-1a over the bits of n floats of device memory, folded into h. */
static uint64_t fold(uint64_t h, const float *d, size_t n) {
    uint32_t *p;
    TRY(gc_host_alloc(ctx, n * 4, (void **)&p));
    TRY(gc_memcpy_async(s, p, d, n * 4));
    TRY(gc_stream_synchronize(s));
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    TRY(gc_host_free(ctx, p));
    return h;
}

/* The programmatic edges of g (dashed in its DOT output). */
static int programmatic_edges(gc_graph *g) {
    char path[4096];
    const char *out = getenv("OUT");
    snprintf(path, sizeof path, "%s/pdl_chain_%d.dot", out ? out : "/tmp", (int)getpid());
    TRY(gc_graph_write_dot(g, path));
    FILE *f = fopen(path, "r");
    int n = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "programmatic")) n++;
    if (f) fclose(f);
    remove(path);
    return n;
}

/* The workloads: `run` enqueues one on s. */
typedef struct {
    const char *name;
    void (*run)(void *);
    void *arg;
    const float *out; /* folded into the checksum after each replay */
    size_t out_n;
} workload;

typedef struct {
    float *x, *w[3], *b[3], *h1, *h2, *y;
    uint32_t rows;
} mlp;

static void mlp_run(void *p) {
    mlp *m = p;
    TRY(gc_op_linear(s, m->h1, m->x, m->w[0], m->b[0], m->rows, 512, 1024, GC_LINEAR_RELU));
    TRY(gc_op_linear(s, m->h2, m->h1, m->w[1], m->b[1], m->rows, 256, 512, GC_LINEAR_RELU));
    TRY(gc_op_linear(s, m->y, m->h2, m->w[2], m->b[2], m->rows, 10, 256, 0));
}

typedef struct {
    float *w, *b, *x, *t, *loss;
    void *ws;
    uint64_t ws_bytes;
} linear_step;

static void linear_step_run(void *p) {
    linear_step *l = p;
    TRY(gc_op_linear_mse_step(s, l->w, l->b, l->x, l->t, l->loss, 64, 1024, 1024, 1.0f, 1e-3f, l->ws, l->ws_bytes));
}

typedef struct {
    float *w1, *b1, *w2, *b2, *x, *t, *loss;
    void *ws;
    uint64_t ws_bytes;
} mlp2_step;

static void mlp2_step_run(void *p) {
    mlp2_step *l = p;
    TRY(gc_op_mlp2_mse_step(s, l->w1, l->b1, l->w2, l->b2, l->x, l->t, l->loss, 64, 1024, 512, 10, 1.0f, 1e-3f,
                            l->ws, l->ws_bytes));
}

typedef struct {
    float *x, *w, *b, *y;
    uint32_t m, k, n;
} gemm;

static void gemm_run(void *p) {
    gemm *g = p;
    TRY(gc_op_linear(s, g->y, g->x, g->w, g->b, g->m, g->n, g->k, 0));
}

/* A zeroed workspace of `bytes` bytes. */
static void *workspace(uint64_t bytes) {
    void *ws;
    TRY(gc_pool_alloc(pool, bytes, &ws));
    TRY(gc_memset_async(s, ws, 0, bytes));
    return ws;
}

int main(int argc, char **argv) {
    ctx = bench_start("pdl_chain");
    int quick = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    }
    TRY(gc_stream_create(ctx, &s));
    TRY(gc_pool_create(ctx, NULL, &pool));
    const char *env = getenv("GC_PDL");
    int pdl = !(env && !strcmp(env, "0"));

    workload wl[9];
    int nw = 0;
    static mlp mlps[3];
    const uint32_t batches[3] = {4, 16, 32};
    static char names[3][16];
    for (int i = 0; i < 3; i++) {
        mlp *m = &mlps[i];
        const uint32_t widths[4] = {1024, 512, 256, 10};
        const float scale[3] = {1.0f / 32, 1.0f / 22.627417f, 1.0f / 16}; /* 1 / sqrt(in) */
        m->rows = batches[i];
        m->x = dev((size_t)m->rows * 1024, 1 + i, 1.0f);
        for (int l = 0; l < 3; l++) {
            m->w[l] = dev((size_t)widths[l + 1] * widths[l], 10 + l, scale[l]);
            m->b[l] = dev(widths[l + 1], 20 + l, scale[l]);
        }
        TRY(gc_pool_alloc(pool, (size_t)m->rows * 512 * 4, (void **)&m->h1));
        TRY(gc_pool_alloc(pool, (size_t)m->rows * 256 * 4, (void **)&m->h2));
        TRY(gc_pool_alloc(pool, (size_t)m->rows * 10 * 4, (void **)&m->y));
        snprintf(names[i], sizeof names[i], "mlp_b%u", m->rows);
        wl[nw++] = (workload){names[i], mlp_run, m, m->y, (size_t)m->rows * 10};
    }
    static linear_step ls;
    ls.w = dev(1024 * 1024, 30, 1.0f / 32);
    ls.b = dev(1024, 31, 1.0f / 32);
    ls.x = dev(64 * 1024, 32, 0.1f);
    ls.t = dev(64 * 1024, 33, 1.0f);
    TRY(gc_pool_alloc(pool, 4, (void **)&ls.loss));
    TRY(gc_op_linear_mse_step_workspace_bytes(ctx, 64, 1024, 1024, &ls.ws_bytes));
    ls.ws = workspace(ls.ws_bytes);
    wl[nw++] = (workload){"linear_step", linear_step_run, &ls, ls.w, 1024 * 1024};
    static mlp2_step m2;
    m2.w1 = dev(512 * 1024, 40, 1.0f / 32);
    m2.b1 = dev(512, 41, 1.0f / 32);
    m2.w2 = dev(10 * 512, 42, 1.0f / 22.6f);
    m2.b2 = dev(10, 43, 1.0f / 22.6f);
    m2.x = dev(64 * 1024, 44, 0.1f);
    m2.t = dev(64 * 10, 45, 1.0f);
    TRY(gc_pool_alloc(pool, 4, (void **)&m2.loss));
    TRY(gc_op_mlp2_mse_step_workspace_bytes(ctx, 64, 512, 10, &m2.ws_bytes));
    m2.ws = workspace(m2.ws_bytes);
    wl[nw++] = (workload){"mlp2_step", mlp2_step_run, &m2, m2.w1, 512 * 1024};
    static gemm gemms[3];
    static char gemm_names[3][32];
    const uint32_t shapes[3][3] = {{256, 1024, 1024}, {1024, 1024, 1024}, {2048, 2048, 2048}};
    for (int i = 0; i < 3; i++) {
        gemm *g = &gemms[i];
        g->m = shapes[i][0];
        g->k = shapes[i][1];
        g->n = shapes[i][2];
        g->x = dev((size_t)g->m * g->k, 50 + i, 1.0f);
        g->w = dev((size_t)g->n * g->k, 60 + i, 1.0f / 32);
        g->b = dev(g->n, 70 + i, 1.0f / 32);
        TRY(gc_pool_alloc(pool, (size_t)g->m * g->n * 4, (void **)&g->y));
        snprintf(gemm_names[i], sizeof gemm_names[i], "gemm_%ux%ux%u", g->m, g->k, g->n);
        wl[nw++] = (workload){gemm_names[i], gemm_run, g, g->y, (size_t)g->m * g->n};
    }

    const int runs = quick ? 1 : 7, max_reps = quick ? 3 : 500;
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf) fprintf(jf, "{\"pdl\": %d, \"runs\": %d, \"max_replays_per_run\": %d, \"results\": [", pdl, runs, max_reps);
    for (int w = 0; w < nw; w++) {
        workload *k = &wl[w];
        k->run(k->arg); /* eager, once (loads the kernels; warms up) */
        gc_graph *g;
        gc_exec *e;
        size_t nodes;
        TRY(gc_capture_begin(s, pool, GC_CAPTURE_THREAD_LOCAL));
        k->run(k->arg);
        TRY(gc_capture_end(s, &g));
        TRY(gc_graph_node_count(g, &nodes));
        int prog = programmatic_edges(g);
        TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &e));
        double w0 = bench_now_ns();
        for (int i = 0; i < 20; i++) TRY(gc_exec_launch(e, s));
        TRY(gc_stream_synchronize(s));
        /* Up to max_reps replays a run, about 20 ms at most. */
        double per = (bench_now_ns() - w0) / 20;
        int reps = per * max_reps > 2e7 ? (int)(2e7 / per) + 1 : max_reps;
        double t[7];
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ns();
            for (int i = 0; i < reps; i++) TRY(gc_exec_launch(e, s));
            TRY(gc_stream_synchronize(s));
            t[r] = (bench_now_ns() - t0) / 1e3 / reps;
        }
        double us = bench_median(t, (size_t)runs);
        /* Checksum: three more replays, each output folded in. */
        uint64_t h = 1469598103934665603ull;
        for (int i = 0; i < 3; i++) {
            TRY(gc_exec_launch(e, s));
            h = fold(h, k->out, k->out_n);
        }
        printf("RES %-12s %8.3f us  nodes %zu  programmatic %d  checksum %016llx  (GC_PDL %s)\n", k->name, us, nodes,
               prog, (unsigned long long)h, pdl ? "on" : "0");
        if (jf)
            fprintf(jf, "%s\n  {\"name\": \"%s\", \"us\": %.4f, \"nodes\": %zu, \"programmatic_edges\": %d, "
                        "\"checksum\": \"%016llx\"}",
                    w ? "," : "", k->name, us, nodes, prog, (unsigned long long)h);
        TRY(gc_exec_destroy(e));
        TRY(gc_graph_destroy(g));
    }
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    TRY(gc_stream_synchronize(s));
    return 0;
}
