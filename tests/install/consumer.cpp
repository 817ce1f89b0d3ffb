// A C++17 program built against an installed graphcore with CMake
// (find_package(graphcore) and graphcore::graphcore; see CMakeLists.txt),
// using graphcore.hpp. As consumer.c: the version check, then a full run
// ("<name>: full run ok") or, without a driver, "<name>: no driver mode:
// GC_ERROR_NO_DRIVER: <message>" and exit 0; anything else exits 1.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <graphcore.hpp>

namespace gc = graphcore;

int main(int, char **argv) {
    const char *slash = std::strrchr(argv[0], '/');
    const char *name = slash ? slash + 1 : argv[0];
    const unsigned want = GC_VERSION_MAJOR * 10000u + GC_VERSION_MINOR * 100u + GC_VERSION_PATCH;
    std::printf("%s: graphcore %u, header %u\n", name, gc_version(), want);
    if (gc_version() != want) {
        std::printf("%s: library and header versions differ\n", name);
        return 1;
    }
    try {
        std::uint64_t n = 4096;
        gc::context ctx(0);
        gc::stream s(ctx);
        gc::pool pool(ctx);
        void *d = nullptr, *h = nullptr;
        gc::check(gc_pool_alloc(pool, n * sizeof(float), &d));
        gc::check(gc_host_alloc(ctx, n * sizeof(float), &h));
        float *x = static_cast<float *>(d), *host = static_cast<float *>(h);
        // A built graph: fill -> (x2, +1 through a join) with list deps.
        gc::function fill = gc::function::builtin(ctx, "gc_fill_f32");
        float value = 1.5f;
        void *fill_args[] = {&x, &n, &value};
        gc::graph g(ctx);
        const gc_dim3 grid{16, 1, 1}, block{256, 1, 1};
        gc_node a = gc::graph_add_kernel(g, fill, grid, block, 0, fill_args);
        gc_node j = gc::graph_add_empty(g, std::vector<gc_node>{a});
        gc::graph_add_memcpy(g, host, x, n * sizeof(float), {j});
        gc::exec e(g, GC_INSTANTIATE_UPLOAD);
        // A captured graph.
        gc::capture cap(s, pool);
        gc::check(gc_op_scale(s, x, x, n, 2.0f));
        gc::check(gc_op_add_scalar(s, x, x, n, 1.0f));
        gc::graph captured = cap.end();
        gc::exec ce(captured);
        gc::check(gc_exec_launch(e, s));  // host = 1.5
        gc::check(gc_stream_synchronize(s));
        int bad = 0;
        for (std::uint64_t i = 0; i < n; i++) bad += host[i] != 1.5f;
        gc::check(gc_exec_launch(ce, s));
        gc::check(gc_exec_launch(ce, s));  // 1.5 -> 4 -> 9
        gc::check(gc_memcpy_async(s, host, x, n * sizeof(float)));
        gc::check(gc_stream_synchronize(s));
        for (std::uint64_t i = 0; i < n; i++) bad += host[i] != 9.0f;
        gc::check(gc_host_free(ctx, host));
        if (bad) {
            std::printf("%s: %d values wrong\n", name, bad);
            return 1;
        }
        std::printf("%s: full run ok (built and captured graphs, data checked)\n", name);
        return 0;
    } catch (const gc::error &err) {
        if (err.status() == GC_ERROR_NO_DRIVER) {
            std::printf("%s: no driver mode: %s: %s\n", name, err.status_name(), err.message());
            return 0;
        }
        std::printf("%s: %s\n", name, err.what());
        return 1;
    }
}
