/* train_step.c's training step (Linear 1024 -> 1024, batch 64, summed
 * squared loss, SGD lr 1e-3) as the body of a WHILE node: the GPU runs
 * steps until the loss falls below EPS or MAX_STEPS steps have run, with
 * one launch and no host decision in between; then the step count and the
 * loss are read once. A second SWITCH graph then picks a "bucket" on the
 * device from a row count held in device memory (as an earlier kernel
 * would produce it).
 *
 * The WHILE's condition is set at the end of the body by
 * gc_op_cond_set_f32(loss >= EPS, with a step counter capped at
 * MAX_STEPS): a WHILE whose condition never clears would hang the GPU, so
 * the cap is not optional. Needs CUDA 12.3 (IF/WHILE) and 12.8 (SWITCH),
 * and libcudadevrt.a from the CUDA toolkit for graphcore's setters.
 *
 * Build and run: make examples && c_examples/build/train_until */
#include "common.h"

#define N 64
#define D 1024
#define LR 1e-3f
#define MAX_STEPS 1000u

typedef struct {
    float *w, *b, *x, *y, *pred, *grad, *loss, *ws;
    uint64_t ws_bytes;
} model;

static gc_status step(gc_stream *s, const model *m) {
    gc_status st;
    if ((st = gc_op_linear(s, m->pred, m->x, m->w, m->b, N, D, D, 0))) return st;
    if ((st = gc_op_mse(s, m->loss, m->grad, m->pred, m->y, (uint64_t)N * D, 1.0f, m->ws, m->ws_bytes)))
        return st;
    if ((st = gc_op_linear_weight_sgd(s, m->w, m->grad, m->x, N, D, D, LR))) return st;
    return gc_op_bias_sgd(s, m->b, m->grad, N, D, LR);
}

int main(void) {
    gc_context *ctx;
    gc_stream *s;
    gc_pool *pool;
    open_gpu("train_until", &ctx, &s, &pool);
    size_t sizes[4] = {(size_t)D * D, D, (size_t)N * D, (size_t)N * D};
    model m;
    float **bufs[4] = {&m.w, &m.b, &m.x, &m.y};
    float scales[4] = {1.0f / sqrtf((float)D), 1.0f / sqrtf((float)D), 0.1f, 1.0f};
    uint64_t seed = 7;
    for (int k = 0; k < 4; k++) {
        float *h = malloc(sizes[k] * sizeof(float));
        fill_uniform(h, sizes[k], scales[k], &seed);
        TRY(gc_pool_alloc(pool, sizes[k] * sizeof(float), (void **)bufs[k]));
        upload(ctx, s, *bufs[k], h, sizes[k]);
        free(h);
    }
    TRY(gc_op_mse_workspace_bytes(ctx, (uint64_t)N * D, &m.ws_bytes));
    TRY(gc_pool_alloc(pool, (size_t)N * D * sizeof(float), (void **)&m.pred));
    TRY(gc_pool_alloc(pool, (size_t)N * D * sizeof(float), (void **)&m.grad));
    TRY(gc_pool_alloc(pool, sizeof(float), (void **)&m.loss));
    TRY(gc_pool_alloc(pool, m.ws_bytes, (void **)&m.ws));
    TRY(gc_memset_async(s, m.ws, 0, m.ws_bytes));
    uint32_t *steps;
    TRY(gc_pool_alloc(pool, sizeof(uint32_t), (void **)&steps));

    /* The first loss, to pick an EPS the loop reaches: 90% of it. */
    TRY(step(s, &m));
    float first;
    download(ctx, s, &first, m.loss, 1);
    const float eps = 0.9f * first;

    /* graph: steps = 0 -> WHILE(h) { step; h = loss >= eps && ++steps < MAX } */
    gc_graph *g, *body, *filled;
    gc_cond_handle h;
    gc_node zero, loop;
    TRY(gc_graph_create(ctx, &g));
    TRY(gc_graph_conditional_handle_create(g, 1, GC_COND_RESET_ON_LAUNCH, &h));
    TRY(gc_graph_add_memset(g, steps, 0, sizeof(uint32_t), NULL, 0, &zero));
    TRY(gc_graph_add_conditional(g, GC_COND_WHILE, h, 0, &zero, 1, &loop, &body, 1));
    TRY(gc_capture_begin_into(s, body, pool, GC_CAPTURE_THREAD_LOCAL));
    TRY(step(s, &m));
    TRY(gc_op_cond_set_f32(s, h, m.loss, eps, GC_CMP_GE, steps, MAX_STEPS));
    TRY(gc_capture_end(s, &filled)); /* another handle to the body */
    TRY(gc_graph_destroy(filled));
    gc_exec *exec;
    TRY(gc_graph_instantiate(g, GC_INSTANTIATE_UPLOAD, &exec));

    double t0 = now_us();
    TRY(gc_exec_launch(exec, s)); /* the whole loop: one launch */
    TRY(gc_stream_synchronize(s));
    double us = now_us() - t0;
    float last, ran_f;
    download(ctx, s, &last, m.loss, 1);
    download(ctx, s, &ran_f, (const float *)steps, 1);
    uint32_t ran;
    memcpy(&ran, &ran_f, sizeof ran);
    printf("loss %.6g -> %.6g (eps %.6g) after %u steps in one launch, %.0f us\n", first, last, eps, ran,
           us);
    int ok = ran > 0 && ran < MAX_STEPS && last < eps;

    /* SWITCH: the bucket for a row count in device memory. */
    uint32_t buckets[4] = {8, 16, 32, 64}, *dev_rows, *dev_sizes;
    float *chosen;
    TRY(gc_pool_alloc(pool, sizeof(uint32_t), (void **)&dev_rows));
    TRY(gc_pool_alloc(pool, sizeof buckets, (void **)&dev_sizes));
    TRY(gc_pool_alloc(pool, sizeof(float), (void **)&chosen));
    upload(ctx, s, (float *)dev_sizes, (const float *)buckets, 4);
    gc_graph *sw, *cases[4];
    gc_cond_handle hs;
    gc_function *setter;
    gc_node set;
    TRY(gc_graph_create(ctx, &sw));
    TRY(gc_graph_conditional_handle_create(sw, 0, GC_COND_RESET_ON_LAUNCH, &hs));
    TRY(gc_kernel_builtin(ctx, "gc_cond_set_bucket", &setter));
    uint64_t raw;
    uint32_t count = 4;
    TRY(gc_cond_handle_raw(hs, &raw));
    void *args[4] = {&raw, &dev_rows, &dev_sizes, &count};
    gc_dim3 one = {1, 1, 1};
    TRY(gc_graph_add_kernel(sw, setter, one, one, 0, args, NULL, 0, &set));
    TRY(gc_graph_add_conditional(sw, GC_COND_SWITCH, hs, 4, &set, 1, NULL, cases, 4));
    for (int i = 0; i < 4; i++) {
        TRY(gc_capture_begin_into(s, cases[i], NULL, GC_CAPTURE_THREAD_LOCAL));
        TRY(gc_op_fill(s, chosen, 1, (float)buckets[i]));
        TRY(gc_capture_end(s, &filled));
        TRY(gc_graph_destroy(filled));
    }
    gc_exec *swe;
    TRY(gc_graph_instantiate(sw, 0, &swe));
    for (uint32_t rows = 1; rows <= 64; rows++) {
        float r;
        memcpy(&r, &rows, sizeof r);
        upload(ctx, s, (float *)dev_rows, &r, 1); /* an earlier kernel's output, say */
        TRY(gc_exec_launch(swe, s));
        float got;
        download(ctx, s, &got, chosen, 1);
        uint32_t want = rows <= 8 ? 8 : rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
        if (got != (float)want) {
            printf("rows %u: bucket %g, want %u\n", rows, got, want);
            ok = 0;
        }
    }
    printf("SWITCH chose the bucket on the device for rows 1..64\n");
    for (int i = 0; i < 4; i++) TRY(gc_graph_destroy(cases[i]));
    TRY(gc_exec_destroy(swe));
    TRY(gc_graph_destroy(sw));
    TRY(gc_function_destroy(setter));
    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(body));
    TRY(gc_graph_destroy(g));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(s));
    TRY(gc_context_destroy(ctx));
    printf("train_until: %s\n", ok ? "stopped below eps on the device" : "FAILED");
    return ok ? 0 : 1;
}
