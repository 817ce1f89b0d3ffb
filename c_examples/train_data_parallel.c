/* Data-parallel training on N GPUs with NCCL collectives captured inside
 * graphcore graphs. graphcore does not link NCCL: this program loads
 * libnccl.so.2 at run time (dlopen; $NCCL_LIB names another path, e.g. the
 * one the nvidia-nccl-cu12/cu13 wheel ships) and declares the few NCCL
 * entry points it needs itself, so no NCCL header is needed to build it.
 *
 * The model is the notes' training step (train_step.c): Linear D -> D on a
 * global batch of B rows, loss (pred - y)^2 summed, SGD. Each rank takes
 * B/N rows of the batch and, in one captured graph per rank:
 *   pred = linear(x_r)                            gc_op_linear
 *   loss_r, grad = 2 (pred - y_r) / (B/N)         gc_op_mse (mean over its rows)
 *   db_r = sum rows of grad                       gc_op_bias_grad
 *   all-reduce [db | loss] (sum)                  ncclAllReduce, in place, pool memory
 *   b -= (lr / N) db                              gc_op_sgd ("sum, then scale")
 *   for each of C row chunks of W (--chunks, 4):
 *     dW_r[chunk] = grad[:, chunk]^T x_r          gc_gemm_f32 (gc_launch)
 *     all-reduce dW[chunk] (sum)                  ncclAllReduce
 *     W[chunk] -= (lr / N) dW[chunk]              gc_op_sgd
 * The collectives and SGD run on a second stream that forks from the main
 * one and joins it at the end, so chunk c's all-reduce overlaps chunk c+1's
 * GEMM (DDP's gradient buckets, inside one graph). The side stream has the
 * device's highest priority and the exec honours node priorities
 * (GC_INSTANTIATE_USE_NODE_PRIORITY), as PyTorch runs NCCL; on two H200s
 * that measured the same as normal priority (docs/multi-gpu.md). This is
 * exactly the step on the whole batch with the gradient of the loss averaged
 * over the batch (up to the order of float sums). Each rank then
 * trains the same model alone on the whole batch on its GPU (the same
 * kernels, no collective) and checks that its loss trajectory (every step)
 * and final weights equal the data-parallel ones within 1e-5, relative
 * (losses: per step; weights: the largest difference over the largest
 * magnitude). Exit status 0 when every rank agrees.
 *
 * The rules for NCCL inside a capture (docs/multi-gpu.md says why):
 *   1. NCCL set-up is never captured: the communicator is made, and one
 *      eager all-reduce runs on the capturing stream, before the capture.
 *   2. Capture mode GC_CAPTURE_THREAD_LOCAL: with one thread per GPU the
 *      ranks capture at the same time; in global mode a set-up call of one
 *      rank's thread would invalidate every other rank's capture.
 *   3. Send and receive buffers are pool memory allocated before the capture
 *      and kept (not freed, not trimmed) while the graph lives: the graph
 *      names their addresses, and the pool never remaps a live block.
 *
 * Modes:
 *   --mode threads   one process, one thread per GPU (ncclCommInitRank on
 *                    each thread, one unique id shared in memory);
 *   --mode procs     one process per GPU: this program starts N copies of
 *                    itself as `--rank r`; rank 0 writes ncclGetUniqueId's
 *                    bytes to a file (--id-file, atomically) and the others
 *                    read it, as processes on separate hosts would through a
 *                    shared file system. Run the `--rank r --nranks N
 *                    --id-file F` form yourself on each host for multi-node.
 * --ranks N (default: every GPU) picks N <= the device count; --steps N
 * trains N steps instead of 1000 (shorter runs under compute-sanitizer);
 * --bench STEPS --dim D --rows R times the step (D x D, R rows per rank)
 * and an all-reduce in a graph against an eager one, printing a BENCH line
 * of JSON instead (perf/multi_gpu/run.sh uses it). With one GPU
 * it runs N = 1 and says that two-GPU runs need two devices: the
 * communicator of one rank still takes the ncclAllReduce call under capture,
 * but NCCL enqueues no work for an in-place all-reduce of one rank, so that
 * graph holds graphcore's kernels only; a captured NCCL kernel needs two.
 * NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 in the environment force NCCL's
 * network transport (what separate hosts use); NCCL_NVLS_ENABLE is set to 0
 * here unless set (NVLink multicast stays off).
 *
 * Build: make examples (or cc -std=c11 -Iinclude ... -lgraphcore -lm; glibc
 * 2.34 and later need no -ldl or -pthread for dlopen and threads).
 * Run:   NCCL_LIB=/path/to/libnccl.so.2 c_examples/build/train_data_parallel --mode threads */
#include "common.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static uint32_t B = 64;   /* global batch (--bench: rows per rank times ranks) */
static uint32_t D = 1024; /* features in and out (--bench: --dim) */
#define LR 0.064f /* the notes' 1e-3 on the summed loss, for the batch-mean gradient */
#define TOL 1e-5
#define MAX_RANKS 8

/* --bench STEPS: time the step instead of training and checking (0). */
static int bench_steps = 0;
/* --steps: training steps checked (1000; fewer under a sanitizer). */
static int train_steps = 1000;

/* ---- NCCL, declared here (ABI of nccl.h 2.x) and loaded at run time ---- */
typedef struct {
    char internal[128];
} nccl_unique_id;
typedef struct nccl_comm *nccl_comm;
enum { NCCL_OK = 0, NCCL_FLOAT32 = 7, NCCL_SUM = 0 };

static struct {
    int (*get_unique_id)(nccl_unique_id *);
    int (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, void *);
    int (*comm_destroy)(nccl_comm);
    int (*get_version)(int *);
    const char *(*error_string)(int);
} nccl;

/* Loads one symbol into *fn (memcpy: ISO C has no object-to-function cast). */
static void load_symbol(void *lib, const char *name, void *fn, size_t size) {
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "NCCL library lacks %s: %s\n", name, dlerror());
        exit(2);
    }
    memcpy(fn, &sym, size);
}
#define LOAD(lib, field, name) load_symbol(lib, name, &nccl.field, sizeof nccl.field)

static void load_nccl(void) {
    const char *path = getenv("NCCL_LIB");
    if (!path || !*path) path = "libnccl.so.2";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr,
                "cannot load NCCL (%s): %s\n  set NCCL_LIB to the libnccl.so.2 of the nvidia-nccl wheel, e.g.\n"
                "  NCCL_LIB=$(python3 -c 'import nvidia.nccl, os; "
                "print(os.path.join(nvidia.nccl.__path__[0], \"lib\", \"libnccl.so.2\"))')\n",
                path, dlerror());
        exit(2);
    }
    LOAD(lib, get_unique_id, "ncclGetUniqueId");
    LOAD(lib, comm_init_rank, "ncclCommInitRank");
    LOAD(lib, all_reduce, "ncclAllReduce");
    LOAD(lib, comm_destroy, "ncclCommDestroy");
    LOAD(lib, get_version, "ncclGetVersion");
    LOAD(lib, error_string, "ncclGetErrorString");
}

#define NCCL(call)                                                                           \
    do {                                                                                     \
        int r_ = (call);                                                                     \
        if (r_ != NCCL_OK) {                                                                 \
            fprintf(stderr, "%s failed: NCCL error %d (%s)\n", #call, r_, nccl.error_string(r_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* ---- the model ---- */

/* Floats in the gradient bucket: dW, db, then the loss (all-reduced together). */
#define BUCKET ((size_t)D * D + D + 1)

typedef struct {
    gc_context *ctx;
    gc_stream *s;
    gc_stream *side;         /* data-parallel runs: the collectives and SGD (NULL: none) */
    void *side_raw;          /* its CUstream, for NCCL */
    gc_function *gemm;       /* gc_gemm_f32, for the weight gradient's row chunks */
    gc_pool *pool;
    uint32_t rows;           /* this replica's rows of the batch */
    float *w, *b, *x, *y;    /* parameters and its slice of the batch */
    float *pred, *grad, *ws; /* step buffers */
    float *bucket;           /* [dW | db | loss]: the collective's send and receive buffer */
    uint64_t ws_bytes;
} replica;

/* The global batch and the initial parameters, the same on every rank. */
static float *host_data[4];
static void make_data(void) {
    size_t n[4] = {(size_t)D * D, D, (size_t)B * D, (size_t)B * D};
    for (int i = 0; i < 4; i++) {
        host_data[i] = malloc(n[i] * sizeof(float));
        if (!host_data[i]) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
    }
    uint64_t seed = 7;
    fill_uniform(host_data[0], (size_t)D * D, 1.0f / sqrtf((float)D), &seed); /* W */
    fill_uniform(host_data[1], D, 1.0f / sqrtf((float)D), &seed);             /* b */
    fill_uniform(host_data[2], (size_t)B * D, 0.1f, &seed);                   /* x */
    fill_uniform(host_data[3], (size_t)B * D, 1.0f, &seed);                   /* y */
}

/* A replica on `ctx` holding rows [first, first + rows) of the batch. */
static void replica_init(replica *m, gc_context *ctx, gc_stream *s, gc_pool *pool, uint32_t first, uint32_t rows) {
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->s = s;
    m->pool = pool;
    m->rows = rows;
    const float *src[4] = {host_data[0], host_data[1], host_data[2] + (size_t)first * D,
                           host_data[3] + (size_t)first * D};
    size_t n[4] = {(size_t)D * D, D, (size_t)rows * D, (size_t)rows * D};
    float **dst[4] = {&m->w, &m->b, &m->x, &m->y};
    for (int i = 0; i < 4; i++) {
        TRY(gc_pool_alloc(pool, n[i] * sizeof(float), (void **)dst[i]));
        upload(ctx, s, *dst[i], src[i], n[i]);
    }
    TRY(gc_pool_alloc(pool, (size_t)rows * D * sizeof(float), (void **)&m->pred));
    TRY(gc_pool_alloc(pool, (size_t)rows * D * sizeof(float), (void **)&m->grad));
    TRY(gc_pool_alloc(pool, BUCKET * sizeof(float), (void **)&m->bucket));
    TRY(gc_op_mse_workspace_bytes(ctx, (uint64_t)rows * D, &m->ws_bytes));
    TRY(gc_pool_alloc(pool, m->ws_bytes, (void **)&m->ws));
    TRY(gc_memset_async(s, m->ws, 0, m->ws_bytes));
    TRY(gc_stream_synchronize(s));
}

static float *loss_of(const replica *m) { return m->bucket + (size_t)D * D + D; }

/* dW[r0, r1) = grad[:, r0:r1]^T x: rows r0..r1 of the weight gradient, with
 * graphcore's GEMM, which gc_op_linear_backward_weight runs where the
 * dispatch does not pick cuBLASLt (A transposed,
 * 128 x 128 tiles; each output is summed over the batch rows in order,
 * whatever the tile, so the chunks are bitwise the unchunked result). */
static void weight_grad_rows(const replica *m, uint32_t r0, uint32_t r1) {
    float *c = m->bucket + (size_t)r0 * D, *a = m->grad + r0, *b = m->x, *bias = NULL;
    uint32_t rows = r1 - r0, n = D, k = m->rows, lda = D, ldb = D, ldc = D, flags = 1 /* A stored k x m */, tile = 0;
    float alpha = 1.0f, beta = 0.0f;
    void *args[] = {&c, &a, &b, &bias, &rows, &n, &k, &lda, &ldb, &ldc, &flags, &alpha, &beta, &tile};
    gc_dim3 grid = {((rows + 127) / 128) * ((D + 127) / 128), 1, 1}, block = {256, 1, 1};
    TRY(gc_launch(m->gemm, m->s, grid, block, 0, args));
}

/* --chunks: the weight gradient's row chunks, each all-reduced as soon as
 * it is computed (4; 1: one all-reduce after the whole gradient). */
static int grad_chunks = 4;
/* --comm-priority high|normal: the side stream's priority (high). */
static int comm_priority_high = 1;

/* One step. Without a communicator (one GPU, the whole batch): forward, loss,
 * gradients and SGD on the replica's stream. With one (`nranks` ranks),
 * the gradient is all-reduced (sum) and scaled by 1/nranks, the scale
 * folded into SGD's rate (w -= (lr / N) * sum), and the communication
 * overlaps the backward pass as DDP's gradient buckets do: the side stream
 * forks from the main one; [db | loss] is all-reduced first, then each row
 * chunk of dW as soon as the main stream has computed it, while the main
 * stream computes the next; each chunk's SGD follows its all-reduce there;
 * the main stream joins the side stream at the end. */
static void step(const replica *m, nccl_comm comm, int nranks) {
    float *dw = m->bucket, *db = m->bucket + (size_t)D * D;
    TRY(gc_op_linear(m->s, m->pred, m->x, m->w, m->b, m->rows, D, D, 0));
    TRY(gc_op_mse(m->s, loss_of(m), m->grad, m->pred, m->y, (uint64_t)m->rows * D, 1.0f / (float)m->rows, m->ws,
                  m->ws_bytes));
    TRY(gc_op_bias_grad(m->s, db, m->grad, m->rows, D));
    if (!comm) {
        TRY(gc_op_linear_backward_weight(m->s, dw, m->grad, m->x, m->rows, D, D));
        TRY(gc_op_sgd(m->s, m->w, dw, (uint64_t)D * D, LR));
        TRY(gc_op_sgd(m->s, m->b, db, D, LR));
        return;
    }
    float lr = LR / (float)nranks;
    TRY(gc_stream_wait_stream(m->side, m->s)); /* fork */
    NCCL(nccl.all_reduce(db, db, (size_t)D + 1, NCCL_FLOAT32, NCCL_SUM, comm, m->side_raw));
    TRY(gc_op_sgd(m->side, m->b, db, D, lr));
    for (int c = 0; c < grad_chunks; c++) {
        /* Chunk boundaries on multiples of 4 rows (16-byte aligned rows). */
        uint32_t r0 = (uint32_t)((uint64_t)D * c / grad_chunks) & ~3u;
        uint32_t r1 = c + 1 == grad_chunks ? D : (uint32_t)((uint64_t)D * (c + 1) / grad_chunks) & ~3u;
        if (r1 <= r0) continue;
        size_t n = (size_t)(r1 - r0) * D;
        weight_grad_rows(m, r0, r1);
        TRY(gc_stream_wait_stream(m->side, m->s));
        NCCL(nccl.all_reduce(dw + (size_t)r0 * D, dw + (size_t)r0 * D, n, NCCL_FLOAT32, NCCL_SUM, comm, m->side_raw));
        TRY(gc_op_sgd(m->side, m->w + (size_t)r0 * D, dw + (size_t)r0 * D, n, lr));
    }
    TRY(gc_stream_wait_stream(m->s, m->side)); /* join */
}

/* Trains `m` for train_steps steps by replaying `exec` (or eagerly when exec is
 * NULL), writing the loss after every step to losses (pinned host memory). */
static void train(const replica *m, gc_exec *exec, float *losses) {
    for (int i = 0; i < train_steps; i++) {
        if (exec) TRY(gc_exec_launch(exec, m->s));
        else step(m, NULL, 1);
        TRY(gc_memcpy_async(m->s, losses + i, loss_of(m), sizeof(float)));
    }
    TRY(gc_stream_synchronize(m->s));
}

/* ---- one rank ---- */

typedef struct {
    int rank, nranks;
    nccl_unique_id id;
    int bench_steps; /* --bench: steps timed per run; 0: train and check */
    int failed;
} rank_job;

static double max_abs(const float *v, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)v[i]));
    return m;
}

/* The largest |a - b| over the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d / fmax(max_abs(b, n), 1e-30);
}

/* Trains a one-GPU replica on the whole batch (the same kernels, no
 * collective) and checks the data-parallel run against it. */
static void check_rank(rank_job *job, const replica *dp, gc_exec *exec, size_t nodes) {
    int r = job->rank, n = job->nranks;
    replica ref;
    replica_init(&ref, dp->ctx, dp->s, dp->pool, 0, B);
    float *losses, *ref_losses;
    TRY(gc_host_alloc(dp->ctx, (size_t)train_steps * sizeof(float), (void **)&losses));
    TRY(gc_host_alloc(dp->ctx, (size_t)train_steps * sizeof(float), (void **)&ref_losses));
    train(dp, exec, losses);
    train(&ref, NULL, ref_losses);

    /* The global loss is the all-reduced sum; compare step by step. */
    double worst_loss = 0;
    for (int i = 0; i < train_steps; i++)
        worst_loss = fmax(worst_loss, fabs((double)losses[i] - ref_losses[i]) / fmax(fabs((double)ref_losses[i]), 1e-30));
    size_t nw = (size_t)D * D + D;
    float *hw = malloc(nw * sizeof(float)), *hr = malloc(nw * sizeof(float));
    if (!hw || !hr) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    download(dp->ctx, dp->s, hw, dp->w, (size_t)D * D);
    download(dp->ctx, dp->s, hw + (size_t)D * D, dp->b, D);
    download(dp->ctx, dp->s, hr, ref.w, (size_t)D * D);
    download(dp->ctx, dp->s, hr + (size_t)D * D, ref.b, D);
    double worst_w = rel_diff(hw, hr, (size_t)D * D), worst_b = rel_diff(hw + (size_t)D * D, hr + (size_t)D * D, D);
    job->failed = !(worst_loss <= TOL && worst_w <= TOL && worst_b <= TOL);
    printf("rank %d/%d (device %d, %u rows): graph of %zu nodes, loss per row %.6g -> %.6g (one GPU: %.6g -> %.6g); "
           "max rel diff: losses %.1e, W %.1e, b %.1e: %s\n",
           r, n, r, dp->rows, nodes, losses[0] / B, losses[train_steps - 1] / B, ref_losses[0] / B,
           ref_losses[train_steps - 1] / B, worst_loss, worst_w, worst_b, job->failed ? "FAIL" : "ok");
    fflush(stdout);
    free(hw);
    free(hr);
    TRY(gc_host_free(dp->ctx, losses));
    TRY(gc_host_free(dp->ctx, ref_losses));
}

/* Wall time of `iters` launches of exec (or eager all-reduces of the
 * bucket when exec is NULL) on the replica's stream, in microseconds. */
static double time_us(const replica *m, gc_exec *exec, nccl_comm comm, void *raw, int iters) {
    TRY(gc_stream_synchronize(m->s));
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        if (exec) TRY(gc_exec_launch(exec, m->s));
        else NCCL(nccl.all_reduce(m->bucket, m->bucket, BUCKET, NCCL_FLOAT32, NCCL_SUM, comm, raw));
    }
    TRY(gc_stream_synchronize(m->s));
    return now_us() - t0;
}

/* --bench: the step's throughput; with several ranks, one all-reduce of
 * the whole bucket in a graph against the same all-reduce launched eagerly
 * (each measured alone), with one, the plain one-GPU step (medians of 5
 * runs). Rank 0 prints one BENCH line of JSON. */
static void bench_rank(rank_job *job, const replica *dp, gc_exec *step_exec, nccl_comm comm, void *raw, int steps) {
    enum { RUNS = 5, AR_ITERS = 50 };
    double eager[RUNS], graph[RUNS], dp_step[RUNS], plain_step[RUNS];
    /* One rank: NCCL enqueues nothing for an in-place all-reduce (the graph
     * would be empty), so only the step is timed. */
    int collective = job->nranks > 1;
    gc_graph *g = NULL;
    gc_exec *ar = NULL;
    if (collective) {
        TRY(gc_capture_begin(dp->s, dp->pool, GC_CAPTURE_THREAD_LOCAL));
        NCCL(nccl.all_reduce(dp->bucket, dp->bucket, BUCKET, NCCL_FLOAT32, NCCL_SUM, comm, raw));
        TRY(gc_capture_end(dp->s, &g));
        TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &ar));
        time_us(dp, NULL, comm, raw, 10); /* warm */
        time_us(dp, ar, comm, raw, 10);
    }
    /* One rank: also the plain one-GPU step (no communicator, no side
     * stream: what one GPU runs without data parallelism). */
    gc_graph *plain_g = NULL;
    gc_exec *plain = NULL;
    if (!collective) {
        TRY(gc_capture_begin(dp->s, dp->pool, GC_CAPTURE_THREAD_LOCAL));
        step(dp, NULL, 1);
        TRY(gc_capture_end(dp->s, &plain_g));
        TRY(gc_graph_instantiate(plain_g, GC_INSTANTIATE_UPLOAD, &plain));
        time_us(dp, plain, comm, raw, 10);
    }
    time_us(dp, step_exec, comm, raw, 10);
    for (int k = 0; k < RUNS; k++) {
        if (collective) {
            eager[k] = time_us(dp, NULL, comm, raw, AR_ITERS) / AR_ITERS;
            graph[k] = time_us(dp, ar, comm, raw, AR_ITERS) / AR_ITERS;
        } else {
            plain_step[k] = time_us(dp, plain, comm, raw, steps) / steps;
        }
        dp_step[k] = time_us(dp, step_exec, comm, raw, steps) / steps;
    }
    double st = median(dp_step, RUNS);
    if (job->rank == 0) {
        char ar_json[200];
        if (collective) {
            double e = median(eager, RUNS), gr = median(graph, RUNS);
            snprintf(ar_json, sizeof ar_json,
                     "\"plain_step_us\": null, \"allreduce_eager_us\": %.2f, \"allreduce_graph_us\": %.2f, "
                     "\"graph_over_eager\": %.4f",
                     e, gr, gr / e);
        } else {
            snprintf(ar_json, sizeof ar_json,
                     "\"plain_step_us\": %.2f, \"allreduce_eager_us\": null, \"allreduce_graph_us\": null, "
                     "\"graph_over_eager\": null",
                     median(plain_step, RUNS));
        }
        printf("BENCH {\"ranks\": %d, \"dim\": %u, \"rows_per_rank\": %u, \"grad_chunks\": %d, "
               "\"comm_priority\": \"%s\", \"steps\": %d, "
               "\"step_us\": %.2f, \"samples_per_s\": %.1f, \"allreduce_bytes\": %zu, %s}\n",
               job->nranks, D, dp->rows, grad_chunks, comm_priority_high ? "high" : "normal", steps, st, (double)job->nranks * dp->rows / (st * 1e-6),
               BUCKET * sizeof(float), ar_json);
        fflush(stdout);
    }
    TRY(gc_exec_destroy(ar));
    TRY(gc_graph_destroy(g));
    TRY(gc_exec_destroy(plain));
    TRY(gc_graph_destroy(plain_g));
}

static void *run_rank(void *arg) {
    rank_job *job = arg;
    int r = job->rank, n = job->nranks;
    uint32_t rows = B / (uint32_t)n;
    gc_context *ctx;
    gc_stream *s;
    gc_pool *pool;
    void *raw;
    /* The set-up calls below make device r's primary context current on
     * this thread (launches and captures on a stream need none and leave
     * it as it is);
     * NCCL (through the CUDA runtime) uses the current device. */
    TRY(gc_context_create(r, &ctx));
    TRY(gc_stream_create(ctx, &s));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_stream_raw(s, &raw));
    replica dp;
    replica_init(&dp, ctx, s, pool, (uint32_t)r * rows, rows);
    /* The side stream at the device's highest priority: the collectives'
     * blocks may start ahead of the GEMM's waiting blocks as SMs free up (the
     * step's exec honours node priorities). --comm-priority normal: not. */
    int least = 0, greatest = 0;
    TRY(gc_stream_priority_range(ctx, &least, &greatest));
    TRY(gc_stream_create_with_priority(ctx, comm_priority_high ? greatest : least, &dp.side));
    TRY(gc_stream_raw(dp.side, &dp.side_raw));
    TRY(gc_kernel_builtin(ctx, "gc_gemm_f32", &dp.gemm));

    /* Rule 1: set-up outside the capture, and one eager collective on each
     * stream that will carry collectives. */
    nccl_comm comm;
    NCCL(nccl.comm_init_rank(&comm, n, job->id, r));
    float *warm;
    TRY(gc_pool_alloc(pool, sizeof(float), (void **)&warm));
    TRY(gc_memset_async(s, warm, 0, sizeof(float)));
    NCCL(nccl.all_reduce(warm, warm, 1, NCCL_FLOAT32, NCCL_SUM, comm, raw));
    TRY(gc_stream_wait_stream(dp.side, s));
    NCCL(nccl.all_reduce(warm, warm, 1, NCCL_FLOAT32, NCCL_SUM, comm, dp.side_raw));
    TRY(gc_stream_synchronize(dp.side));

    /* Rule 2: capture the whole step, collective included, thread-local.
     * Rule 3: its buffers are pool blocks allocated above, kept below. */
    gc_graph *graph;
    gc_exec *exec;
    TRY(gc_capture_begin(s, pool, GC_CAPTURE_THREAD_LOCAL));
    step(&dp, comm, n);
    TRY(gc_capture_end(s, &graph));
    TRY(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD | GC_INSTANTIATE_USE_NODE_PRIORITY, &exec));
    size_t nodes = 0;
    TRY(gc_graph_node_count(graph, &nodes));

    if (job->bench_steps) bench_rank(job, &dp, exec, comm, raw, job->bench_steps);
    else check_rank(job, &dp, exec, nodes);

    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(graph));
    NCCL(nccl.comm_destroy(comm));
    TRY(gc_function_destroy(dp.gemm));
    TRY(gc_stream_destroy(dp.side));
    TRY(gc_stream_destroy(s));
    TRY(gc_pool_destroy(pool));
    TRY(gc_context_destroy(ctx));
    return NULL;
}

/* ---- modes ---- */

static int run_threads(int n) {
    nccl_unique_id id;
    NCCL(nccl.get_unique_id(&id));
    pthread_t t[MAX_RANKS];
    rank_job jobs[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        jobs[r] = (rank_job){.rank = r, .nranks = n, .id = id, .bench_steps = bench_steps};
        if (pthread_create(&t[r], NULL, run_rank, &jobs[r]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    int failed = 0;
    for (int r = 0; r < n; r++) {
        pthread_join(t[r], NULL);
        failed += jobs[r].failed;
    }
    printf("threads: %d rank(s), %s\n", n,
           failed ? "FAILED" : bench_steps ? "benchmark done" : "every rank agrees with one-GPU training");
    return failed != 0;
}

/* Rank `rank` of a job of `n` processes: rank 0 writes the unique id to
 * `id_file` (to a temporary name, then renamed, so readers never see part
 * of it); the others wait up to a minute for it. */
static int run_process_rank(int rank, int n, const char *id_file) {
    rank_job job = {.rank = rank, .nranks = n, .bench_steps = bench_steps};
    if (rank == 0) {
        NCCL(nccl.get_unique_id(&job.id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", id_file);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(&job.id, sizeof job.id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, id_file) != 0) {
            fprintf(stderr, "rank 0: cannot write %s: %s\n", id_file, strerror(errno));
            return 1;
        }
    } else {
        int got = 0;
        for (int tries = 0; tries < 6000 && !got; tries++) {
            FILE *f = fopen(id_file, "rb");
            if (f) {
                got = fread(&job.id, sizeof job.id, 1, f) == 1;
                fclose(f);
            }
            if (!got) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
        if (!got) {
            fprintf(stderr, "rank %d: no unique id in %s after 60 s\n", rank, id_file);
            return 1;
        }
    }
    run_rank(&job);
    return job.failed;
}

/* Starts n copies of this program as ranks 0..n-1 and waits for them. */
static int run_processes(const char *self, int n) {
    char id_file[64];
    snprintf(id_file, sizeof id_file, "/tmp/gc_nccl_id.%ld", (long)getpid());
    unlink(id_file);
    pid_t pids[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        char rank[16], nranks[16], steps[16], dim[16], rows[16], train[16], chunks[16];
        snprintf(rank, sizeof rank, "%d", r);
        snprintf(nranks, sizeof nranks, "%d", n);
        snprintf(steps, sizeof steps, "%d", bench_steps);
        snprintf(dim, sizeof dim, "%u", D);
        snprintf(rows, sizeof rows, "%u", B / (uint32_t)n);
        snprintf(train, sizeof train, "%d", train_steps);
        snprintf(chunks, sizeof chunks, "%d", grad_chunks);
        pids[r] = fork();
        if (pids[r] < 0) {
            fprintf(stderr, "fork failed: %s\n", strerror(errno));
            return 1;
        }
        if (pids[r] == 0) {
            /* A fresh process: nothing of the parent's CUDA state is used. */
            execl(self, self, "--rank", rank, "--nranks", nranks, "--id-file", id_file, "--bench", steps, "--dim", dim,
                  "--rows", rows, "--steps", train, "--chunks", chunks, "--comm-priority",
                  comm_priority_high ? "high" : "normal", (char *)NULL);
            fprintf(stderr, "exec %s failed: %s\n", self, strerror(errno));
            _exit(127);
        }
    }
    int failed = 0;
    for (int r = 0; r < n; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "rank %d exited with status %d\n", r, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            failed++;
        }
    }
    unlink(id_file);
    printf("procs: %d process(es), %s\n", n,
           failed ? "FAILED" : bench_steps ? "benchmark done" : "every rank agrees with one-GPU training");
    return failed != 0;
}

int main(int argc, char **argv) {
    const char *mode = "threads", *id_file = NULL;
    int ranks = 0, rank = -1, nranks = 0, rows = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--ranks")) ranks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rank")) rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--nranks")) nranks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--id-file")) id_file = argv[i + 1];
        else if (!strcmp(argv[i], "--bench")) bench_steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dim")) D = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) train_steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--chunks")) grad_chunks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--comm-priority") && !strcmp(argv[i + 1], "high")) comm_priority_high = 1;
        else if (!strcmp(argv[i], "--comm-priority") && !strcmp(argv[i + 1], "normal")) comm_priority_high = 0;
        else {
            fprintf(stderr, "usage: %s [--mode threads|procs] [--ranks N] [--steps N] [--chunks C] [--comm-priority high|normal] [--bench STEPS --dim D --rows ROWS_PER_RANK]\n"
                            "       %s --rank R --nranks N --id-file FILE [--bench ...]   (one rank, e.g. per host)\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    setenv("NCCL_NVLS_ENABLE", "0", 0); /* NVLink multicast stays off */
    int devices = 0;
    gc_status st = gc_device_count(&devices);
    if (st != GC_SUCCESS || devices == 0) {
        fprintf(stderr, "train_data_parallel: %s\n  %s\n", gc_status_name((int)st),
                st != GC_SUCCESS ? gc_last_error() : "no CUDA device is present");
        return 2;
    }
    load_nccl();
    if (D < 1 || rows < 0 || bench_steps < 0 || train_steps < 1 || grad_chunks < 1) {
        fprintf(stderr, "--dim, --rows, --steps, --chunks and --bench must be positive\n");
        return 2;
    }
    if (rank >= 0) { /* one rank of a job started elsewhere */
        if (rows) B = (uint32_t)rows * (uint32_t)nranks;
        if (nranks < 1 || nranks > MAX_RANKS || B % (uint32_t)nranks || rank >= nranks || !id_file) {
            fprintf(stderr, "--rank R --nranks N --id-file FILE: 0 <= R < N <= %d, N dividing %u\n", MAX_RANKS, B);
            return 2;
        }
        make_data();
        return run_process_rank(rank, nranks, id_file);
    }
    if (ranks == 0) ranks = devices < MAX_RANKS ? devices : MAX_RANKS;
    if (rows) B = (uint32_t)rows * (uint32_t)(ranks > 0 ? ranks : 1);
    if (ranks < 1 || ranks > devices || ranks > MAX_RANKS || B % (uint32_t)ranks) {
        fprintf(stderr, "--ranks %d: need 1 <= N <= %d devices present, N dividing the batch of %u\n", ranks,
                devices, B);
        return 2;
    }
    make_data();
    int version = 0;
    nccl.get_version(&version);
    printf("train_data_parallel: NCCL %d, %d device(s), %d rank(s), mode %s, batch %u (%u rows per rank), "
           "Linear %u -> %u, %s %d steps\n",
           version, devices, ranks, mode, B, B / (uint32_t)ranks, D, D, bench_steps ? "timing" : "training",
           bench_steps ? bench_steps : train_steps);
    if (devices < 2)
        printf("one device: running N = 1 (a communicator of one rank: ncclAllReduce is called under capture, but "
               "NCCL enqueues no work for one rank in place); two-GPU runs need two devices\n");
    fflush(stdout);
    if (!strcmp(mode, "threads")) return run_threads(ranks);
    if (!strcmp(mode, "procs")) {
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len <= 0) {
            fprintf(stderr, "cannot find this program (/proc/self/exe)\n");
            return 1;
        }
        self[len] = 0;
        return run_processes(self, ranks);
    }
    fprintf(stderr, "unknown --mode %s (threads or procs)\n", mode);
    return 2;
}
