// forward_backward.c in C++17 with graphcore.hpp: the CUDA C++
// forward/backward sample (shared/reference) against graphcore, 1024
// floats, forward (x2) and backward (/2), a copy in and a copy out:
//
//   1. eagerly, as the original does it (a synchronize after each kernel);
//   2. as a graph built node by node: memcpy in -> forward -> backward ->
//      memcpy out, instantiated once and launched;
//   3. as the same work captured from a stream.
//
// Each run checks that the data comes back equal to the input. Handles are
// owned (destroyed in reverse order, also when something throws) and every
// failure is a graphcore::error. (The timings are in forward_backward.c.)
//
// Build and run: make examples && c_examples/build/forward_backward_cpp
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "graphcore.hpp"

namespace gc = graphcore;

namespace {

constexpr std::uint64_t N = 1024;

// Pinned host memory (what graph memcpy nodes need), freed on scope exit.
struct pinned {
    gc_context *ctx;
    float *data = nullptr;
    explicit pinned(gc_context *c) : ctx(c) {
        void *p = nullptr;
        gc::check(gc_host_alloc(ctx, N * sizeof(float), &p));
        data = static_cast<float *>(p);
    }
    ~pinned() { (void)gc_host_free(ctx, data); }
    pinned(const pinned &) = delete;
    pinned &operator=(const pinned &) = delete;
};

// One kernel's arguments, kept together so their addresses stay valid:
// gc_scale_f32(float *y, float *x, uint64_t n, float alpha).
struct scale_args {
    float *y, *x;
    std::uint64_t n = N;
    float alpha;
    void *args[4] = {&y, &x, &n, &alpha};
    scale_args(float *data, float a) : y(data), x(data), alpha(a) {}
    scale_args(const scale_args &) = delete;
    scale_args &operator=(const scale_args &) = delete;
};

bool same(const float *a, const float *b) { return std::memcmp(a, b, N * sizeof(float)) == 0; }

const char *verdict(bool ok) { return ok ? "comes back equal" : "DIFFERS"; }

int run() {
    gc::context ctx(0);
    gc::stream stream(ctx);
    gc::pool pool(ctx);
    gc_device_info info{};
    info.struct_size = sizeof info;
    gc::check(gc_context_info(ctx, &info));
    std::printf("device: %s (%d SMs), CUDA driver %d.%d\n", info.name, info.sm_count,
                info.driver_version / 1000, info.driver_version % 1000 / 10);

    // The forward and backward kernels: the built-in scale kernel with
    // alpha 2 and 0.5.
    gc::function scale = gc::function::builtin(ctx, "gc_scale_f32");
    const gc_dim3 grid{4, 1, 1}, block{256, 1, 1};

    pinned in(ctx), out(ctx);
    for (std::uint64_t i = 0; i < N; i++) in.data[i] = static_cast<float>(i % 97) * 0.37f - 11.0f;
    void *d = nullptr;
    gc::check(gc_pool_alloc(pool, N * sizeof(float), &d));
    float *data = static_cast<float *>(d);
    scale_args fwd(data, 2.0f), bwd(data, 0.5f);
    const std::size_t bytes = N * sizeof(float);

    // 1. Eagerly, as the original: copy in, forward, sync, backward, sync,
    //    copy out.
    std::memset(out.data, 0, bytes);
    gc::check(gc_memcpy_async(stream, data, in.data, bytes));
    gc::check(gc_launch(scale, stream, grid, block, 0, fwd.args));
    gc::check(gc_stream_synchronize(stream));
    gc::check(gc_launch(scale, stream, grid, block, 0, bwd.args));
    gc::check(gc_stream_synchronize(stream));
    gc::check(gc_memcpy_async(stream, out.data, data, bytes));
    gc::check(gc_stream_synchronize(stream));
    bool ok = same(in.data, out.data);
    std::printf("eager:    data %s\n", verdict(same(in.data, out.data)));

    // 2. Explicit nodes: memcpy in -> forward -> backward -> memcpy out.
    gc::graph graph(ctx);
    gc_node copy_in = gc::graph_add_memcpy(graph, data, in.data, bytes);
    gc_node f = gc::graph_add_kernel(graph, scale, grid, block, 0, fwd.args, {copy_in});
    gc_node b = gc::graph_add_kernel(graph, scale, grid, block, 0, bwd.args, {f});
    gc::graph_add_memcpy(graph, out.data, data, bytes, {b});
    gc::exec exec(graph, GC_INSTANTIATE_UPLOAD);
    std::memset(out.data, 0, bytes);
    gc::check(gc_exec_launch(exec, stream));
    gc::check(gc_stream_synchronize(stream));
    ok &= same(in.data, out.data);
    std::printf("built:    data %s (4 nodes: memcpy in -> forward -> backward -> memcpy out)\n",
                verdict(same(in.data, out.data)));

    // 3. The same work captured from the stream.
    gc::capture cap(stream, pool);
    gc::check(gc_memcpy_async(stream, data, in.data, bytes));
    gc::check(gc_launch(scale, stream, grid, block, 0, fwd.args));
    gc::check(gc_launch(scale, stream, grid, block, 0, bwd.args));
    gc::check(gc_memcpy_async(stream, out.data, data, bytes));
    gc::graph captured = cap.end();
    std::size_t nodes = 0;
    gc::check(gc_graph_node_count(captured, &nodes));
    gc::exec cexec(captured, GC_INSTANTIATE_UPLOAD);
    std::memset(out.data, 0, bytes);
    gc::check(gc_exec_launch(cexec, stream));
    gc::check(gc_stream_synchronize(stream));
    ok &= same(in.data, out.data);
    std::printf("captured: data %s (%zu nodes)\n", verdict(same(in.data, out.data)), nodes);

    gc::check(gc_pool_free(pool, data));
    std::printf("forward_backward (C++): %s\n", ok ? "all runs correct" : "FAILED");
    return ok ? 0 : 1;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const gc::error &e) {
        // Without a driver this is GC_ERROR_NO_DRIVER and graphcore's message.
        std::fprintf(stderr, "forward_backward (C++): %s\n  %s\n", e.status_name(), e.message());
        return 2;
    }
}
