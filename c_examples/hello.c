/* hello.c: a first CUDA graph with graphcore. Captures x = 2x + 1 (two
 * built-in kernels) into a graph, replays it three times and checks that
 * every element went 1 -> 3 -> 7 -> 15.
 *
 * From the repository root, after `make lib`:
 *   cc -std=c11 -Iinclude c_examples/hello.c -o hello \
 *      -Ltarget/release -Wl,-rpath,target/release -lgraphcore && ./hello
 * After `make install`: cc hello.c $(pkg-config --cflags --libs graphcore)
 *
 * On a machine without a CUDA driver or GPU it prints "no CUDA GPU:
 * skipping" and exits 0, so builds and CI without a GPU still pass; any
 * other failure prints the status and graphcore's message and exits 1. */
#include <graphcore.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024

#define CHECK(call)                                                     \
    do {                                                                \
        gc_status st_ = (call);                                         \
        if (st_ != GC_SUCCESS) {                                        \
            fprintf(stderr, "%s: %s: %s\n", #call, gc_status_name(st_), \
                    gc_last_error());                                   \
            exit(1);                                                    \
        }                                                               \
    } while (0)

int main(void) {
    gc_context *ctx;
    gc_status st = gc_context_create(0, &ctx);
    if (st == GC_ERROR_NO_DRIVER || st == GC_ERROR_NO_DEVICE) {
        printf("no CUDA GPU: skipping (%s)\n", gc_status_name(st));
        return 0;
    }
    CHECK(st);
    gc_stream *stream;
    gc_pool *pool;
    CHECK(gc_stream_create(ctx, &stream));
    CHECK(gc_pool_create(ctx, NULL, &pool));
    void *block;
    CHECK(gc_pool_alloc(pool, N * sizeof(float), &block));
    float *x = block;
    CHECK(gc_op_fill(stream, x, N, 1.0f));

    /* Record, don't run: everything enqueued on the stream goes into a graph. */
    gc_graph *graph;
    gc_exec *exec;
    CHECK(gc_capture_begin(stream, pool, GC_CAPTURE_THREAD_LOCAL));
    CHECK(gc_op_scale(stream, x, x, N, 2.0f));      /* x = 2x    */
    CHECK(gc_op_add_scalar(stream, x, x, N, 1.0f)); /* x = x + 1 */
    CHECK(gc_capture_end(stream, &graph));
    CHECK(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD, &exec));

    for (int i = 0; i < 3; i++) CHECK(gc_exec_launch(exec, stream));
    static float host[N];
    CHECK(gc_memcpy_async(stream, host, x, sizeof host));
    CHECK(gc_stream_synchronize(stream));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != 15.0f;
    printf("hello: %d of %d elements are 15 after 3 replays: %s\n", N - bad, N,
           bad ? "WRONG" : "ok");

    CHECK(gc_exec_destroy(exec));
    CHECK(gc_graph_destroy(graph));
    CHECK(gc_pool_free(pool, x));
    CHECK(gc_pool_destroy(pool));
    CHECK(gc_stream_destroy(stream));
    CHECK(gc_context_destroy(ctx));
    return bad ? 1 : 0;
}
