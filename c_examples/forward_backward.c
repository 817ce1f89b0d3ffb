/* The CUDA C++ forward/backward sample (shared/reference) rewritten against
 * graphcore: 1024 floats, forward (x2) and backward (/2) kernels, a copy in
 * and a copy out.
 *
 *   1. eagerly, as the original does it (a synchronize after each kernel);
 *   2. as a graph built node by node: memcpy in -> forward -> backward ->
 *      memcpy out, instantiated once and launched;
 *   3. as the same work captured from a stream;
 *   4. timings of a chain of 100 forward/backward pairs: eager launches vs
 *      one graph replay vs the same graph instantiated with
 *      GC_INSTANTIATE_FUSE_ELEMENTWISE (the 200 kernels become one);
 *   5. graph arguments: the device buffer declared an argument of the
 *      built graph and of the chain, and each exec bound to another buffer
 *      at launch (gc_exec_launch_with), the fused chain included.
 *
 * Each run checks that the data comes back equal to the input. (The
 * original launches a graph it never instantiated; here a gc_graph cannot
 * be launched at all, only the gc_exec made from it.)
 *
 * Build and run: make example */
#include "common.h"

#define N 1024
#define PAIRS 100
#define REPS 200

/* The forward and backward kernels are graphcore's built-in scale kernel,
 * gc_scale_f32(y, x, n, alpha), with alpha 2 and 0.5. */
typedef struct {
    gc_function *scale;
    gc_dim3 grid, block;
} kernels;

/* One kernel's arguments, kept together so their addresses stay valid. */
typedef struct {
    float *y;
    const float *x;
    uint64_t n;
    float alpha;
    void *args[4];
} scale_args;

static void set_args(scale_args *a, float *data, float alpha) {
    a->y = data;
    a->x = data;
    a->n = N;
    a->alpha = alpha;
    a->args[0] = &a->y;
    a->args[1] = &a->x;
    a->args[2] = &a->n;
    a->args[3] = &a->alpha;
}

static int same(const float *a, const float *b) {
    return memcmp(a, b, N * sizeof(float)) == 0;
}

int main(void) {
    gc_context *ctx;
    gc_stream *stream;
    gc_pool *pool;
    open_gpu("forward_backward", &ctx, &stream, &pool);
    gc_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TRY(gc_context_info(ctx, &info));
    printf("device: %s (%d SMs), CUDA driver %d.%d\n", info.name, info.sm_count,
           info.driver_version / 1000, info.driver_version % 1000 / 10);

    kernels k = {NULL, {4, 1, 1}, {256, 1, 1}};
    TRY(gc_kernel_builtin(ctx, "gc_scale_f32", &k.scale));

    float *h_in, *h_out, *d_data;
    TRY(gc_host_alloc(ctx, N * sizeof(float), (void **)&h_in));
    TRY(gc_host_alloc(ctx, N * sizeof(float), (void **)&h_out));
    TRY(gc_pool_alloc(pool, N * sizeof(float), (void **)&d_data));
    for (int i = 0; i < N; i++) h_in[i] = (float)(i % 97) * 0.37f - 11.0f;

    scale_args fwd, bwd;
    set_args(&fwd, d_data, 2.0f);
    set_args(&bwd, d_data, 0.5f);

    /* 1. Eagerly, as the original: copy in, forward, sync, backward, sync,
     *    copy out. */
    memset(h_out, 0, N * sizeof(float));
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, fwd.args));
    TRY(gc_stream_synchronize(stream));
    TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, bwd.args));
    TRY(gc_stream_synchronize(stream));
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    printf("eager:    data %s\n", same(h_in, h_out) ? "comes back equal" : "DIFFERS");
    int ok = same(h_in, h_out);

    /* 2. Explicit nodes: memcpy in -> forward -> backward -> memcpy out. */
    gc_graph *graph;
    gc_node in, f, b, out;
    TRY(gc_graph_create(ctx, &graph));
    TRY(gc_graph_add_memcpy(graph, d_data, h_in, N * sizeof(float), NULL, 0, &in));
    TRY(gc_graph_add_kernel(graph, k.scale, k.grid, k.block, 0, fwd.args, &in, 1, &f));
    TRY(gc_graph_add_kernel(graph, k.scale, k.grid, k.block, 0, bwd.args, &f, 1, &b));
    TRY(gc_graph_add_memcpy(graph, h_out, d_data, N * sizeof(float), &b, 1, &out));
    gc_exec *exec;
    TRY(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD, &exec));
    memset(h_out, 0, N * sizeof(float));
    TRY(gc_exec_launch(exec, stream));
    TRY(gc_stream_synchronize(stream));
    printf("built:    data %s (4 nodes: memcpy in -> forward -> backward -> memcpy out)\n",
           same(h_in, h_out) ? "comes back equal" : "DIFFERS");
    ok &= same(h_in, h_out);
    TRY(gc_graph_write_dot(graph, "forward_backward.dot"));

    /* 3. The same work captured from the stream. */
    gc_graph *captured;
    gc_exec *cexec;
    size_t nodes = 0;
    TRY(gc_capture_begin(stream, pool, GC_CAPTURE_THREAD_LOCAL));
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, fwd.args));
    TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, bwd.args));
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_capture_end(stream, &captured));
    TRY(gc_graph_node_count(captured, &nodes));
    TRY(gc_graph_instantiate(captured, GC_INSTANTIATE_UPLOAD, &cexec));
    memset(h_out, 0, N * sizeof(float));
    TRY(gc_exec_launch(cexec, stream));
    TRY(gc_stream_synchronize(stream));
    printf("captured: data %s (%zu nodes)\n", same(h_in, h_out) ? "comes back equal" : "DIFFERS",
           nodes);
    ok &= same(h_in, h_out);

    /* 4. A chain of 100 forward/backward pairs: eager launches vs a graph. */
    gc_graph *chain;
    gc_exec *chain_exec;
    TRY(gc_capture_begin(stream, NULL, GC_CAPTURE_THREAD_LOCAL));
    for (int i = 0; i < PAIRS; i++) {
        TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, fwd.args));
        TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, bwd.args));
    }
    TRY(gc_capture_end(stream, &chain));
    TRY(gc_graph_instantiate(chain, GC_INSTANTIATE_UPLOAD, &chain_exec));
    gc_exec *fused_exec;
    TRY(gc_graph_instantiate(chain, GC_INSTANTIATE_UPLOAD | GC_INSTANTIATE_FUSE_ELEMENTWISE, &fused_exec));
    gc_exec_statistics fst;
    memset(&fst, 0, sizeof fst);
    fst.struct_size = sizeof fst;
    TRY(gc_exec_stats(fused_exec, &fst));
    TRY(gc_exec_write_dot(fused_exec, "forward_backward_fused.dot"));

    static double eager_sync[REPS], eager[REPS], replay[REPS], fused[REPS];
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    for (int r = 0; r < REPS; r++) {
        double t0 = now_us();
        for (int i = 0; i < PAIRS; i++) { /* the original's pattern */
            TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, fwd.args));
            TRY(gc_stream_synchronize(stream));
            TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, bwd.args));
            TRY(gc_stream_synchronize(stream));
        }
        eager_sync[r] = now_us() - t0;
        t0 = now_us();
        for (int i = 0; i < PAIRS; i++) {
            TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, fwd.args));
            TRY(gc_launch(k.scale, stream, k.grid, k.block, 0, bwd.args));
        }
        TRY(gc_stream_synchronize(stream));
        eager[r] = now_us() - t0;
        t0 = now_us();
        TRY(gc_exec_launch(chain_exec, stream));
        TRY(gc_stream_synchronize(stream));
        replay[r] = now_us() - t0;
    }
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    int chain_ok = same(h_in, h_out);
    ok &= chain_ok;
    /* The fused exec, from the same input: bitwise the same result. */
    float *h_unfused = malloc(N * sizeof(float));
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    TRY(gc_exec_launch(chain_exec, stream));
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    memcpy(h_unfused, h_out, N * sizeof(float));
    TRY(gc_memcpy_async(stream, d_data, h_in, N * sizeof(float)));
    TRY(gc_exec_launch(fused_exec, stream));
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    int fused_ok = same(h_unfused, h_out);
    ok &= fused_ok;
    free(h_unfused);
    for (int r = 0; r < REPS; r++) {
        double t0 = now_us();
        TRY(gc_exec_launch(fused_exec, stream));
        TRY(gc_stream_synchronize(stream));
        fused[r] = now_us() - t0;
    }
    double es = median(eager_sync, REPS), e = median(eager, REPS), g = median(replay, REPS),
           fu = median(fused, REPS);
    printf("chain of %d forward/backward pairs over %d floats (data %s), median of %d:\n", PAIRS,
           N, chain_ok ? "comes back equal" : "DIFFERS", REPS);
    printf("  eager, synchronize after each kernel (the original): %9.1f us\n", es);
    printf("  eager launches, one synchronize:                     %9.1f us\n", e);
    printf("  graph replay:                                        %9.1f us\n", g);
    printf("  fused graph replay (%llu nodes -> %llu, %s):   %9.1f us\n",
           (unsigned long long)fst.graph_nodes, (unsigned long long)fst.instantiated_nodes,
           fused_ok ? "bitwise equal" : "DIFFERS", fu);
    printf("  graph vs eager: %.1fx faster; vs the original: %.1fx faster; fused vs graph: %.1fx faster\n",
           e / g, es / g, g / fu);

    /* 5. Bindings: d_data is argument 0 of the built graph (its memcpy
     *    endpoints and both kernels' pointers) and of the chain; each exec
     *    runs on d_other instead, and d_data is left alone. */
    float *d_other;
    size_t arg, uses = 0;
    TRY(gc_pool_alloc(pool, N * sizeof(float), (void **)&d_other));
    TRY(gc_graph_declare_arg(graph, d_data, N * sizeof(float), GC_ARG_EXACT, &arg));
    gc_exec *bound;
    TRY(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD, &bound));
    TRY(gc_exec_arg_info(bound, arg, &uses));
    gc_binding to_other = {arg, d_other, N * sizeof(float)};
    TRY(gc_memset_async(stream, d_data, 0, N * sizeof(float)));
    memset(h_out, 0, N * sizeof(float));
    TRY(gc_exec_launch_with(bound, stream, &to_other, 1));
    TRY(gc_stream_synchronize(stream));
    int bound_ok = same(h_in, h_out);
    TRY(gc_memcpy_async(stream, h_out, d_data, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    for (int i = 0; i < N; i++) bound_ok &= h_out[i] == 0.0f;
    printf("bound:    data %s, d_data %s (argument 0: %zu uses patched)\n",
           bound_ok ? "comes back equal through another buffer" : "DIFFERS",
           bound_ok ? "untouched" : "CHANGED", uses);
    ok &= bound_ok;
    TRY(gc_graph_declare_arg(chain, d_data, N * sizeof(float), 0, &arg));
    gc_exec *fused_bound;
    TRY(gc_graph_instantiate(chain, GC_INSTANTIATE_FUSE_ELEMENTWISE, &fused_bound));
    TRY(gc_memcpy_async(stream, d_other, h_in, N * sizeof(float)));
    TRY(gc_exec_launch_with(fused_bound, stream, &to_other, 1));
    TRY(gc_memcpy_async(stream, h_out, d_other, N * sizeof(float)));
    TRY(gc_stream_synchronize(stream));
    int fused_bound_ok = same(h_in, h_out);
    printf("bound:    the fused chain on another buffer: data %s\n",
           fused_bound_ok ? "comes back equal" : "DIFFERS");
    ok &= fused_bound_ok;
    TRY(gc_exec_destroy(fused_bound));
    TRY(gc_exec_destroy(bound));
    TRY(gc_pool_free(pool, d_other));

    TRY(gc_exec_destroy(fused_exec));
    TRY(gc_exec_destroy(chain_exec));
    TRY(gc_graph_destroy(chain));
    TRY(gc_exec_destroy(cexec));
    TRY(gc_graph_destroy(captured));
    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(graph));
    TRY(gc_function_destroy(k.scale));
    TRY(gc_pool_free(pool, d_data));
    TRY(gc_host_free(ctx, h_in));
    TRY(gc_host_free(ctx, h_out));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(stream));
    TRY(gc_context_destroy(ctx));
    printf("forward_backward: %s\n", ok ? "all runs correct" : "FAILED");
    return ok ? 0 : 1;
}
