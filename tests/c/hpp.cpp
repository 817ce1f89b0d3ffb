// graphcore.hpp: owners (move-only, destroy once, adopt and release),
// errors (status, message and what() of a failed call), the capture guard
// and the dependency-list overloads. Without a driver it checks what can be
// checked there (errors, empty and adopted owners, NO_DRIVER from the
// constructors); with one, the owners over real handles and a graph built,
// captured and run. Prints "hpp: N passed, M failed".
#include <cstdint>
#include <type_traits>
#include <vector>

#include "graphcore.hpp"
#include "check.h"

namespace gc = graphcore;

// Move-only owners, nothrow moves, implicit conversion to the C handle.
template <typename T, typename H>
constexpr bool owner_shape() {
    return !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
           std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T> &&
           std::is_nothrow_default_constructible_v<T> && std::is_convertible_v<T, H *> &&
           !std::is_convertible_v<H *, T>;
}
static_assert(owner_shape<gc::context, gc_context>());
static_assert(owner_shape<gc::stream, gc_stream>());
static_assert(owner_shape<gc::pool, gc_pool>());
static_assert(owner_shape<gc::module, gc_module>());
static_assert(owner_shape<gc::function, gc_function>());
static_assert(owner_shape<gc::graph, gc_graph>());
static_assert(owner_shape<gc::exec, gc_exec>());
static_assert(owner_shape<gc::runner, gc_runner>());
static_assert(owner_shape<gc::event, gc_event>());
static_assert(std::is_base_of_v<std::runtime_error, gc::error>);
static_assert(!std::is_copy_constructible_v<gc::capture>);

// A handle value that was never issued (kind byte 0x7f), as in abi.c.
template <typename T>
T *bogus() {
    return reinterpret_cast<T *>(static_cast<std::uintptr_t>(0x7f00000100000001ull));
}

#define EXPECT_THROW_STATUS(stmt, want)                                                   \
    do {                                                                                  \
        try {                                                                             \
            stmt;                                                                         \
            check_failed++;                                                               \
            fprintf(stderr, "%s:%d: %s did not throw\n", __FILE__, __LINE__, #stmt);      \
        } catch (const gc::error &e_) {                                                   \
            CHECK(e_.status() == (want));                                                 \
            if (e_.status() != (want)) fprintf(stderr, "  threw %s\n", e_.what());        \
        }                                                                                 \
    } while (0)

static void errors() {
    gc::check(GC_SUCCESS);  // no throw
    try {
        gc::check(gc_device_count(nullptr));
        CHECK(false);
    } catch (const gc::error &e) {
        CHECK(e.status() == GC_ERROR_INVALID_ARGUMENT);
        CHECK(strcmp(e.status_name(), "GC_ERROR_INVALID_ARGUMENT") == 0);
        CHECK(strstr(e.message(), "gc_device_count") != nullptr);
        CHECK(strcmp(e.message(), gc_last_error()) == 0);
        CHECK(strncmp(e.what(), "GC_ERROR_INVALID_ARGUMENT: ", 27) == 0);
        CHECK(strcmp(e.what() + 27, e.message()) == 0);
        CHECK(e.cuda_result() == 0);
    }
    // Caught as what it derives from.
    try {
        gc::check(gc_stream_synchronize(nullptr));
        CHECK(false);
    } catch (const std::runtime_error &e) {
        CHECK(strstr(e.what(), "GC_ERROR_INVALID_ARGUMENT") != nullptr);
    }
    // Constructors from NULL parents throw, leaving nothing to destroy.
    EXPECT_THROW_STATUS(gc::stream s(static_cast<gc_context *>(nullptr)), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::pool p(static_cast<gc_context *>(nullptr)), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::graph g(static_cast<gc_context *>(nullptr)), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::exec e(static_cast<gc_graph *>(nullptr)), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::runner r(static_cast<gc_context *>(nullptr)), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::function::builtin(nullptr, "gc_scale_f32"), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::stream::wrap(nullptr, nullptr), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::capture c(nullptr), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::graph_add_empty(nullptr), GC_ERROR_INVALID_ARGUMENT);
    // The MSE loss's reductions: a null stream is refused with either.
    EXPECT_THROW_STATUS(gc::op_mse(nullptr, nullptr, nullptr, nullptr, nullptr, 4, nullptr, 64),
                        GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::op_mse(nullptr, nullptr, nullptr, nullptr, nullptr, 4, nullptr, 64, gc::reduction::sum),
                        GC_ERROR_INVALID_ARGUMENT);
    static_assert(static_cast<std::uint32_t>(gc::reduction::mean) == GC_REDUCTION_MEAN, "reduction values");
    EXPECT_THROW_STATUS(gc::graph_add_empty(nullptr, std::vector<gc_node>{}), GC_ERROR_INVALID_ARGUMENT);
    // Typed arguments: a binding carries the index and the bytes of its type.
    gc::arg<float> x;
    x.index = 2;
    gc_binding bx = x.to(reinterpret_cast<float *>(0x1000), 4);
    CHECK(bx.index == 2 && bx.ptr == reinterpret_cast<void *>(0x1000) && bx.bytes == 16);
    static_assert(!std::is_invocable_v<decltype(&gc::arg<float>::to), gc::arg<float>, int *, std::size_t>,
                  "a float argument takes float buffers only");
    EXPECT_THROW_STATUS(gc::graph_declare_arg(nullptr, reinterpret_cast<float *>(0x1000), 4),
                        GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::exec_launch_with(nullptr, nullptr, {bx}), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::exec_arg_uses(nullptr, 0), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::runner_replay_with(nullptr, 1, nullptr, {bx}), GC_ERROR_INVALID_ARGUMENT);
    EXPECT_THROW_STATUS(gc::runner_replay_exact(nullptr, 1, nullptr, {bx}), GC_ERROR_INVALID_ARGUMENT);
    // Never-issued handles: the error names the kind.
    EXPECT_THROW_STATUS(gc::stream s(bogus<gc_context>()), GC_ERROR_INVALID_HANDLE);
    EXPECT_THROW_STATUS(gc::event e(bogus<gc_context>()), GC_ERROR_INVALID_HANDLE);
    EXPECT_THROW_STATUS(gc::event::elapsed_ms(bogus<gc_event>(), bogus<gc_event>()),
                        GC_ERROR_INVALID_HANDLE);
    EXPECT_THROW_STATUS(gc::graph::clone(bogus<gc_graph>()), GC_ERROR_INVALID_HANDLE);
    int word = 0;  // not a CUgraph; the unknown flags are refused first
    EXPECT_THROW_STATUS(gc::graph::wrap(bogus<gc_context>(), &word, 7), GC_ERROR_INVALID_ARGUMENT);
}

static void owners() {
    gc::stream empty;
    CHECK(empty.get() == nullptr);
    CHECK(!empty);
    gc::stream moved(std::move(empty));
    CHECK(moved.get() == nullptr);
    {
        // Adopting a bogus handle: its destroy fails (INVALID_HANDLE),
        // quietly, in the destructor; release() hands it back untouched.
        gc::pool p(bogus<gc_pool>());
        CHECK(p.get() == bogus<gc_pool>());
        gc::pool q(std::move(p));
        CHECK(p.get() == nullptr && q.get() == bogus<gc_pool>());
        gc::pool r;
        r = std::move(q);
        CHECK(q.get() == nullptr && r.get() == bogus<gc_pool>());
        CHECK(r.release() == bogus<gc_pool>());
        CHECK(r.get() == nullptr);
        gc::module m(bogus<gc_module>());  // destroyed (and refused) here
    }
    EXPECT_STATUS(gc_pool_destroy(bogus<gc_pool>()), GC_ERROR_INVALID_HANDLE);
}

static void without_driver() {
    try {
        gc::context ctx(0);
        CHECK(false);
    } catch (const gc::error &e) {
        CHECK(e.status() == GC_ERROR_NO_DRIVER);
        CHECK(strstr(e.message(), "no CUDA driver") != nullptr);
    }
}

// A kernel's arguments, kept together so their addresses stay valid.
struct scale_args {
    float *y;
    float *x;
    std::uint64_t n;
    float alpha;
    void *args[4];
    scale_args(float *data, std::uint64_t count, float a) : y(data), x(data), n(count), alpha(a) {
        args[0] = &y;
        args[1] = &x;
        args[2] = &n;
        args[3] = &alpha;
    }
};

static void with_driver() {
    const std::uint64_t n = 1024;
    gc::context ctx(0);
    gc::stream s(ctx);
    gc::pool pool(ctx);
    gc::function scale = gc::function::builtin(ctx, "gc_scale_f32");
    EXPECT_THROW_STATUS(gc::function::builtin(ctx, "no_such_kernel"), GC_ERROR_NOT_FOUND);
    float *d = nullptr, *h = nullptr;
    gc::check(gc_pool_alloc(pool, n * sizeof(float), reinterpret_cast<void **>(&d)));
    gc::check(gc_host_alloc(ctx, n * sizeof(float), reinterpret_cast<void **>(&h)));
    for (std::uint64_t i = 0; i < n; i++) h[i] = static_cast<float>(i);
    const gc_dim3 grid{4, 1, 1}, block{256, 1, 1};
    scale_args twice(d, n, 2.0f), half(d, n, 0.5f), triple(d, n, 3.0f);

    // Built: copy in -> x2 -> (empty join, vector deps) -> x3 -> copy out.
    gc::graph g(ctx);
    gc_node in = gc::graph_add_memcpy(g, d, h, n * sizeof(float));
    gc_node a = gc::graph_add_kernel(g, scale, grid, block, 0, twice.args, {in});
    std::vector<gc_node> deps{a, in};
    gc_node j = gc::graph_add_empty(g, deps);
    gc_node b = gc::graph_add_kernel(g, scale, grid, block, 0, triple.args, std::vector<gc_node>{j});
    gc::graph_add_memcpy(g, h, d, n * sizeof(float), {b});
    CHECK(in.index == 0 && a.index == 1 && j.index == 2 && b.index == 3);
    std::size_t count = 0;
    EXPECT_OK(gc_graph_node_count(g, &count));
    CHECK(count == 5);
    gc::exec e(g, GC_INSTANTIATE_UPLOAD);
    g.reset();  // the exec keeps what it needs
    gc::check(gc_exec_launch(e, s));
    gc::check(gc_stream_synchronize(s));
    int good = 1;
    for (std::uint64_t i = 0; i < n; i++) good &= h[i] == static_cast<float>(i) * 6.0f;
    CHECK(good);

    // Captured: x0.5 twice gives back the input of the first run.
    gc::graph captured;
    {
        gc::capture cap(s, pool);
        gc::check(gc_launch(scale, s, grid, block, 0, half.args));
        gc::check(gc_launch(scale, s, grid, block, 0, half.args));
        captured = cap.end();
        EXPECT_THROW_STATUS(cap.end(), GC_ERROR_INVALID_ARGUMENT);  // ended already
    }
    gc::exec ce(captured);
    gc::check(gc_memcpy_async(s, d, h, n * sizeof(float)));
    gc::check(gc_exec_launch(ce, s));
    gc::check(gc_memcpy_async(s, h, d, n * sizeof(float)));
    gc::check(gc_stream_synchronize(s));
    good = 1;
    for (std::uint64_t i = 0; i < n; i++) good &= h[i] == static_cast<float>(i) * 1.5f;
    CHECK(good);

    // An exception inside a capture: the guard ends it, the stream works.
    try {
        gc::capture cap(s, pool);
        gc::check(gc_launch(scale, s, grid, block, 0, half.args));
        gc::check(gc_stream_synchronize(s));  // breaks the capture, throws
        CHECK(false);
    } catch (const gc::error &err) {
        CHECK(err.status() == GC_ERROR_CAPTURE);
    }
    int capturing = 1;
    EXPECT_OK(gc_stream_is_capturing(s, &capturing));
    CHECK(capturing == 0);
    EXPECT_OK(gc_stream_synchronize(s));

    // Runner and module owners over real handles.
    gc::runner r(ctx, pool);
    CHECK(r.get() != nullptr);
    static const char ptx[] =
        ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry noop()\n{\n ret;\n}\n";
    gc::module m(ctx, ptx, sizeof ptx - 1);
    gc::function noop(m, "noop");
    m.reset();  // the function keeps the module loaded
    gc::check(gc_launch(noop, s, gc_dim3{1, 1, 1}, gc_dim3{1, 1, 1}, 0, nullptr));
    // Events time work and order a second stream; clones and wrapped graphs
    // replay what their source does; element memsets land whole.
    gc::stream s2(ctx);
    gc::event start(ctx), stop(ctx), untimed(ctx, GC_EVENT_DISABLE_TIMING);
    gc::check(gc_event_record(start, s, 0));
    gc::check(gc_memset_async_elem(s, d, 0x3f800000u, 4, n));  // 1.0f each
    gc::check(gc_event_record(stop, s, 0));
    gc::check(gc_stream_wait_event(s2, stop, 0));
    gc::check(gc_launch(scale, s2, grid, block, 0, twice.args));
    gc::check(gc_event_record(untimed, s2, 0));
    gc::check(gc_event_synchronize(untimed));
    CHECK(gc::event::elapsed_ms(start, stop) >= 0.0f);
    EXPECT_THROW_STATUS(gc::event::elapsed_ms(start, untimed), GC_ERROR_INVALID_ARGUMENT);
    gc::graph src(ctx);
    gc::graph_add_memset_elem(src, d, 0x4040u, 2, 2 * n);  // 0x40404040 per float
    gc::graph copy = gc::graph::clone(src);
    void *raw_src = nullptr;
    gc::check(gc_graph_raw(src, &raw_src));
    gc::graph view = gc::graph::wrap(ctx, raw_src, GC_GRAPH_WRAP_BORROW);
    for (gc_graph *run : {copy.get(), view.get()}) {
        gc::check(gc_memset_async(s, d, 0, n * sizeof(float)));
        gc::exec ex(run);
        gc::check(gc_exec_launch(ex, s));
        gc::check(gc_memcpy_async(s, h, d, n * sizeof(float)));
        gc::check(gc_stream_synchronize(s));
        std::uint32_t bits = 0;
        memcpy(&bits, &h[n - 1], sizeof bits);
        CHECK(bits == 0x40404040u);
    }
    view.reset();  // the borrowed CUgraph stays src's
    gc::check(gc_graph_node_count(src, &count));
    CHECK(count == 1);
    gc::stream borrowed = gc::stream::wrap(ctx, nullptr);
    gc::check(gc_stream_synchronize(borrowed));
    gc::check(gc_stream_synchronize(s));
    gc::check(gc_host_free(ctx, h));
    gc::check(gc_pool_free(pool, d));
}

int main() {
    errors();
    owners();
    int n = 0;
    if (gc_device_count(&n) == GC_ERROR_NO_DRIVER) {
        printf("hpp: no CUDA driver here: checking the no-driver path\n");
        without_driver();
    } else {
        printf("hpp: CUDA driver present: checking owners over real handles\n");
        try {
            with_driver();
        } catch (const gc::error &e) {
            check_failed++;
            fprintf(stderr, "unexpected graphcore::error: %s\n", e.what());
        }
    }
    return check_summary("hpp");
}
