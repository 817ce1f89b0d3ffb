/* A program built against an installed graphcore (tests/install.rs builds
 * it with `pkg-config --cflags --libs graphcore`, and with CMake against
 * graphcore::graphcore_static). It checks that the library it runs with is
 * the version its header names, then either
 *   - runs a small capture and replay and checks the data, ending with
 *     "<name>: full run ok", or
 *   - without a CUDA driver, prints graphcore's own message in a line
 *     "<name>: no driver mode: GC_ERROR_NO_DRIVER: <message>"
 * and exits 0; anything else exits 1. */
#include <graphcore.h>
#include <stdio.h>
#include <string.h>

static const char *name = "consumer";

#define TRY(call)                                                                  \
    do {                                                                           \
        gc_status st_ = (call);                                                    \
        if (st_ != GC_SUCCESS) {                                                   \
            printf("%s: %s failed: %s: %s\n", name, #call, gc_status_name((int)st_), \
                   gc_last_error());                                               \
            return 1;                                                              \
        }                                                                          \
    } while (0)

int main(int argc, char **argv) {
    (void)argc;
    const char *slash = strrchr(argv[0], '/');
    name = slash ? slash + 1 : argv[0];
    unsigned want = GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH;
    printf("%s: graphcore %u.%u.%u, header %d.%d.%d\n", name, gc_version() / 10000,
           gc_version() / 100 % 100, gc_version() % 100, GC_VERSION_MAJOR, GC_VERSION_MINOR,
           GC_VERSION_PATCH);
    if (gc_version() != want) {
        printf("%s: library and header versions differ\n", name);
        return 1;
    }
    int devices = 0;
    gc_status st = gc_device_count(&devices);
    if (st == GC_ERROR_NO_DRIVER) {
        printf("%s: no driver mode: %s: %s\n", name, gc_status_name((int)st), gc_last_error());
        return 0;
    }
    TRY(st);

    enum { N = 4096 };
    gc_context *ctx;
    gc_stream *s;
    gc_pool *pool;
    gc_graph *graph;
    gc_exec *exec;
    float *x, *host;
    TRY(gc_context_create(0, &ctx));
    TRY(gc_stream_create(ctx, &s));
    TRY(gc_pool_create(ctx, NULL, &pool));
    TRY(gc_pool_alloc(pool, N * sizeof(float), (void **)&x));
    TRY(gc_host_alloc(ctx, N * sizeof(float), (void **)&host));
    TRY(gc_op_fill(s, x, N, 1.5f));
    TRY(gc_capture_begin(s, pool, GC_CAPTURE_THREAD_LOCAL));
    TRY(gc_op_scale(s, x, x, N, 2.0f));
    TRY(gc_op_add_scalar(s, x, x, N, 1.0f));
    TRY(gc_capture_end(s, &graph));
    TRY(gc_graph_instantiate(graph, GC_INSTANTIATE_UPLOAD, &exec));
    TRY(gc_exec_launch(exec, s)); /* 1.5 * 2 + 1 = 4 */
    TRY(gc_exec_launch(exec, s)); /* 4 * 2 + 1 = 9 */
    TRY(gc_memcpy_async(s, host, x, N * sizeof(float)));
    TRY(gc_stream_synchronize(s));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != 9.0f;
    TRY(gc_exec_destroy(exec));
    TRY(gc_graph_destroy(graph));
    TRY(gc_host_free(ctx, host));
    TRY(gc_pool_free(pool, x));
    TRY(gc_pool_destroy(pool));
    TRY(gc_stream_destroy(s));
    TRY(gc_context_destroy(ctx));
    if (bad) {
        printf("%s: %d of %d values wrong after two replays\n", name, bad, N);
        return 1;
    }
    printf("%s: full run ok (%d device(s); captured, replayed twice, data checked)\n", name, devices);
    return 0;
}
