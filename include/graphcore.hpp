/*
 * graphcore.hpp: a header-only C++17 layer over graphcore.h (the C API,
 * which documents every call). It adds ownership and errors, nothing else:
 *
 *  - graphcore::context, stream, event, pool, module, function, graph, exec
 *    and runner own one handle each: move-only, gc_<thing>_destroy on
 *    destruction. Their constructors call the matching create function (and
 *    throw on failure); each also adopts a handle you already have
 *    (explicit T(gc_thing *)), gives it back with release(), and converts
 *    implicitly to its C handle, so every gc_* call takes it as it is.
 *  - graphcore::check(status) throws graphcore::error, a std::runtime_error
 *    carrying the gc_status, gc_last_error()'s text and
 *    gc_last_cuda_result().
 *  - graphcore::capture owns an open stream capture: end() gives the graph;
 *    a capture still open when the guard goes (an exception) is ended and
 *    its graph destroyed, so the stream is usable again.
 *  - graphcore::graph_add_kernel and the other graph_add_* calls take the
 *    dependencies as a std::vector<gc_node> or a braced list and return the
 *    new node.
 *
 *      graphcore::context ctx(0);
 *      graphcore::stream s(ctx);
 *      graphcore::pool pool(ctx);
 *      graphcore::capture cap(s, pool);
 *      graphcore::check(gc_op_scale(s, x, x, n, 2.0f));
 *      graphcore::graph g = cap.end();
 *      graphcore::exec e(g, GC_INSTANTIATE_UPLOAD);
 *      graphcore::check(gc_exec_launch(e, s));
 *
 * Ownership: each owner holds one C handle and destroys it once, in its
 * destructor or reset(); the ownership rules of the C objects hold as they
 * are (an exec keeps its graph's memory, a graph keeps its functions, every
 * object keeps its context...), so owners may be destroyed in any order.
 * Blocks from gc_pool_alloc and gc_host_alloc are not wrapped: free them
 * with gc_pool_free / gc_host_free.
 *
 * Thread safety: that of the C calls underneath, stated on each handle
 * type in graphcore.h. An owner object itself is not synchronized: moving,
 * reset(), release() and destruction of one owner must not race with other
 * uses of it (as gc_*_destroy must not race with calls on its handle).
 *
 * Errors: the constructors, stream::wrap, event::wrap, event::elapsed_ms,
 * function::builtin and function::wrap, graph::clone and graph::wrap,
 * pool::enable_peer_access,
 * capture::end and the graph_add_* helpers throw
 * graphcore::error with the status the C call returned (its `Errors:` line
 * in graphcore.h lists them); nothing else here throws. Destructors never
 * throw: destroy failures are ignored there (call
 * gc_*_destroy(x.release()) to see them). Calls you make through check()
 * throw as the C call fails.
 */
#ifndef GRAPHCORE_HPP
#define GRAPHCORE_HPP

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "graphcore.hpp needs C++17 or newer"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graphcore.h"

namespace graphcore {

/* ------------------------------------------------------------------ errors */

/** A failed graphcore call: its status, message and CUDA result. */
class error : public std::runtime_error {
public:
    /** what() is "<status name>: <message>". */
    error(gc_status status, const std::string &message, int cuda_result = 0)
        : std::runtime_error(std::string(gc_status_name(static_cast<int>(status))) + ": " +
                             message),
          status_(status),
          cuda_result_(cuda_result),
          prefix_(std::strlen(gc_status_name(static_cast<int>(status))) + 2) {}

    /** The status the call returned. */
    gc_status status() const noexcept { return status_; }
    /** Its name, as gc_status_name gives it ("GC_ERROR_NO_DRIVER"). */
    const char *status_name() const noexcept { return gc_status_name(static_cast<int>(status_)); }
    /** gc_last_error()'s text at the time of the failure. */
    const char *message() const noexcept { return what() + prefix_; }
    /** gc_last_cuda_result() at the time of the failure (0 if not CUDA's). */
    int cuda_result() const noexcept { return cuda_result_; }

private:
    gc_status status_;
    int cuda_result_;
    std::size_t prefix_;
};

/** Throws graphcore::error unless status is GC_SUCCESS. */
inline void check(gc_status status) {
    if (status != GC_SUCCESS) {
        throw error(status, gc_last_error(), gc_last_cuda_result());
    }
}

/* ------------------------------------------------------------------ owners */

namespace detail {

/** Owns one handle; Destroy releases it. Move-only. */
template <typename Handle, gc_status (*Destroy)(Handle *)>
class owner {
public:
    using handle_type = Handle;

    owner() noexcept = default;
    /** Adopts `handle` (may be NULL). */
    explicit owner(Handle *handle) noexcept : h_(handle) {}
    owner(owner &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    owner &operator=(owner &&other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.h_, nullptr));
        }
        return *this;
    }
    owner(const owner &) = delete;
    owner &operator=(const owner &) = delete;
    ~owner() { reset(); }

    /** The C handle (still owned). */
    Handle *get() const noexcept { return h_; }
    /** The C handle (still owned), for gc_* calls. */
    operator Handle *() const noexcept { return h_; }
    /** Gives up ownership: the caller destroys the handle. */
    Handle *release() noexcept { return std::exchange(h_, nullptr); }
    /** Destroys the owned handle (if any) and adopts `handle`. */
    void reset(Handle *handle = nullptr) noexcept {
        Handle *old = std::exchange(h_, handle);
        if (old != nullptr) {
            (void)Destroy(old);
        }
    }

protected:
    Handle *h_ = nullptr;
};

}  // namespace detail

/** A device's primary context: gc_context_create / gc_context_destroy.
 * Objects made from it keep the context alive, so it may go first. Any
 * thread may use it at once; the constructor throws GC_ERROR_NO_DRIVER,
 * GC_ERROR_NO_DEVICE, GC_ERROR_INVALID_ARGUMENT (ordinal out of range)...,
 * as gc_context_create. */
class context : public detail::owner<gc_context, gc_context_destroy> {
public:
    using owner::owner;
    context() noexcept = default;
    /** gc_context_create(device). */
    explicit context(int device) { check(gc_context_create(device, &h_)); }
};

/** A stream: gc_stream_create or gc_stream_wrap / gc_stream_destroy. A
 * wrapped stream stays yours: the owner drops only the handle. Work may be
 * enqueued on it from several threads at once. The constructor and wrap()
 * throw what gc_stream_create / gc_stream_wrap return. */
class stream : public detail::owner<gc_stream, gc_stream_destroy> {
public:
    using owner::owner;
    stream() noexcept = default;
    /** gc_stream_create(ctx): a stream graphcore owns. */
    explicit stream(gc_context *ctx) { check(gc_stream_create(ctx, &h_)); }
    /** gc_stream_create_with_priority(ctx, priority): a stream graphcore
     * owns, of that priority (gc_stream_priority_range gives the range). */
    stream(gc_context *ctx, int priority) { check(gc_stream_create_with_priority(ctx, priority, &h_)); }
    /** gc_stream_wrap(ctx, raw): borrows a CUstream / cudaStream_t. */
    static stream wrap(gc_context *ctx, void *raw) {
        gc_stream *s = nullptr;
        check(gc_stream_wrap(ctx, raw, &s));
        return stream(s);
    }
};

/** An event: gc_event_create or gc_event_wrap / gc_event_destroy. A
 * wrapped event (a cudaEvent_t) stays yours: the owner drops only the
 * handle. Any call but destruction may run from several threads at once.
 * The constructor, wrap() and elapsed_ms() throw what gc_event_create,
 * gc_event_wrap and gc_event_elapsed_ms return; record, wait and
 * synchronize are the C calls (gc_event_record(e, s, 0),
 * gc_stream_wait_event(s, e, 0), gc_event_synchronize(e)) through check(). */
class event : public detail::owner<gc_event, gc_event_destroy> {
public:
    using owner::owner;
    event() noexcept = default;
    /** gc_event_create(ctx, flags): 0 records times,
     * GC_EVENT_DISABLE_TIMING does not. */
    explicit event(gc_context *ctx, gc_event_flags flags = 0) {
        check(gc_event_create(ctx, flags, &h_));
    }
    /** gc_event_wrap(ctx, raw): borrows a CUevent / cudaEvent_t. */
    static event wrap(gc_context *ctx, void *raw) {
        gc_event *e = nullptr;
        check(gc_event_wrap(ctx, raw, &e));
        return event(e);
    }
    /** gc_event_elapsed_ms(start, end): milliseconds between the records. */
    static float elapsed_ms(gc_event *start, gc_event *end) {
        float ms = 0.0f;
        check(gc_event_elapsed_ms(start, end, &ms));
        return ms;
    }
};

/** A device memory pool: gc_pool_create / gc_pool_destroy. Graphs, execs
 * and runners that use its memory keep it alive after the owner goes.
 * gc_pool_alloc / gc_pool_free may run from any threads at once; graphs
 * sharing the pool must not run concurrently. The constructor throws what
 * gc_pool_create returns (GC_ERROR_NOT_SUPPORTED, GC_ERROR_OUT_OF_MEMORY,
 * GC_ERROR_INVALID_ARGUMENT...). */
class pool : public detail::owner<gc_pool, gc_pool_destroy> {
public:
    using owner::owner;
    pool() noexcept = default;
    /** gc_pool_create(ctx, options); NULL options are the defaults. */
    explicit pool(gc_context *ctx, const gc_pool_options *options = nullptr) {
        check(gc_pool_create(ctx, options, &h_));
    }
    /** gc_pool_enable_peer_access(pool, peer): peer's device may use the
     * pool's memory (copies, sets, copy nodes); throws what the C call
     * returns (GC_ERROR_INVALID_ARGUMENT for the pool's own device,
     * GC_ERROR_NOT_SUPPORTED without a peer path...). */
    void enable_peer_access(gc_context *peer) { check(gc_pool_enable_peer_access(h_, peer)); }
};

/** A loaded module image: gc_module_load / gc_module_destroy. Its
 * functions keep it loaded after the owner goes. The constructor throws
 * what gc_module_load returns (GC_ERROR_CUDA with the JIT log for bad
 * PTX...). */
class module : public detail::owner<gc_module, gc_module_destroy> {
public:
    using owner::owner;
    module() noexcept = default;
    /** gc_module_load(ctx, image, size): PTX, cubin or fatbin. */
    module(gc_context *ctx, const void *image, std::size_t size) {
        check(gc_module_load(ctx, image, size, &h_));
    }
};

/** A kernel: gc_module_function, gc_kernel_builtin or gc_function_wrap /
 * gc_function_destroy. Graphs using it keep it loaded after the owner goes;
 * it may be launched from many threads at once. The constructor, builtin()
 * and wrap() throw what the C call returns (GC_ERROR_NOT_FOUND for an
 * unknown name...). */
class function : public detail::owner<gc_function, gc_function_destroy> {
public:
    using owner::owner;
    function() noexcept = default;
    /** gc_module_function(module, name). */
    function(gc_module *module, const char *name) {
        check(gc_module_function(module, name, &h_));
    }
    /** gc_kernel_builtin(ctx, name). */
    static function builtin(gc_context *ctx, const char *name) {
        gc_function *f = nullptr;
        check(gc_kernel_builtin(ctx, name, &f));
        return function(f);
    }
    /** gc_function_wrap(ctx, raw, name): a CUfunction / cudaFunction_t. */
    static function wrap(gc_context *ctx, void *raw, const char *name = nullptr) {
        gc_function *f = nullptr;
        check(gc_function_wrap(ctx, raw, name, &f));
        return function(f);
    }
};

/** A graph: gc_graph_create, clone() or wrap() (or adopt gc_capture_end's)
 * / gc_graph_destroy. Execs made from it keep what they need after the
 * owner goes. Build each graph from one thread (the node order is yours);
 * different graphs may be built at once. The constructor, clone() and
 * wrap() throw what gc_graph_create, gc_graph_clone and gc_graph_wrap
 * return; the graph_add_* helpers below throw what their C calls return. */
class graph : public detail::owner<gc_graph, gc_graph_destroy> {
public:
    using owner::owner;
    graph() noexcept = default;
    /** gc_graph_create(ctx): an empty graph to add nodes to. */
    explicit graph(gc_context *ctx) { check(gc_graph_create(ctx, &h_)); }
    /** gc_graph_clone(source): a new graph with the same nodes. */
    static graph clone(gc_graph *source) {
        gc_graph *g = nullptr;
        check(gc_graph_clone(source, &g));
        return graph(g);
    }
    /** gc_graph_wrap(ctx, raw, flags): a CUgraph / cudaGraph_t, borrowed
     * (GC_GRAPH_WRAP_BORROW) or adopted (GC_GRAPH_WRAP_ADOPT). */
    static graph wrap(gc_context *ctx, void *raw, gc_graph_wrap_flags flags) {
        gc_graph *g = nullptr;
        check(gc_graph_wrap(ctx, raw, flags, &g));
        return graph(g);
    }
};

/** An instantiated graph: gc_graph_instantiate / gc_exec_destroy. It keeps
 * its graph's functions and pool memory alive. gc_exec_launch may run from
 * several threads at once; gc_exec_update and gc_exec_set_kernel_args must
 * not race with a launch of the same exec. Execs sharing a pool must not run
 * concurrently. The constructor throws what gc_graph_instantiate returns
 * (GC_ERROR_INVALID_ARGUMENT for an empty graph or an unknown flag...). */
class exec : public detail::owner<gc_exec, gc_exec_destroy> {
public:
    using owner::owner;
    exec() noexcept = default;
    /** gc_graph_instantiate(graph, flags). */
    explicit exec(gc_graph *graph, std::uint32_t flags = 0) {
        check(gc_graph_instantiate(graph, flags, &h_));
    }
};

/** Graphs per batch size: gc_runner_create / gc_runner_destroy, which also
 * destroys its graphs and stream. gc_runner_replay and gc_runner_stats may
 * run from several threads at once (gc_runner_capture makes them wait), but
 * the replays' GPU work must not overlap (the buckets share one pool). The
 * constructor throws what gc_runner_create returns. */
class runner : public detail::owner<gc_runner, gc_runner_destroy> {
public:
    using owner::owner;
    runner() noexcept = default;
    /** gc_runner_create(ctx, pool); NULL: a pool of its own. */
    explicit runner(gc_context *ctx, gc_pool *pool = nullptr) {
        check(gc_runner_create(ctx, pool, &h_));
    }
};

/** An open capture: gc_capture_begin now, gc_capture_end in end() (or,
 * discarding the graph, when the guard goes while still open: the stream
 * is usable again; blocks the capture allocated from the pool stay yours
 * to free, unless the capture had failed, which rolls the pool back). Keep the guard on the thread
 * that began the capture. The constructor throws what gc_capture_begin
 * returns (GC_ERROR_INVALID_STATE on a stream already capturing...). Not
 * movable. */
class capture {
public:
    /** gc_capture_begin(stream, pool, mode). */
    explicit capture(gc_stream *stream, gc_pool *pool = nullptr,
                     gc_capture_mode mode = GC_CAPTURE_THREAD_LOCAL)
        : stream_(stream) {
        check(gc_capture_begin(stream, pool, mode));
    }
    capture(const capture &) = delete;
    capture &operator=(const capture &) = delete;
    ~capture() {
        if (stream_ != nullptr) {
            gc_graph *g = nullptr;
            if (gc_capture_end(stream_, &g) == GC_SUCCESS) {
                (void)gc_graph_destroy(g);
            }
        }
    }
    /** gc_capture_end: the captured graph. Once only; on failure it throws
     * (GC_ERROR_CAPTURE for an invalidated or unjoined capture, naming the
     * call that broke it) and the stream is usable again, the pool as it
     * was before the capture. */
    graph end() {
        gc_graph *g = nullptr;
        check(gc_capture_end(std::exchange(stream_, nullptr), &g));
        return graph(g);
    }

private:
    gc_stream *stream_;
};

/* ---------------------------------------- graph building with dependency lists */

/** gc_graph_add_kernel after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_kernel(gc_graph *graph, gc_function *function, gc_dim3 grid,
                                gc_dim3 block, std::uint32_t shared_bytes, void **args,
                                const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_kernel(graph, function, grid, block, shared_bytes, args, deps.data(),
                              deps.size(), &node));
    return node;
}
inline gc_node graph_add_kernel(gc_graph *graph, gc_function *function, gc_dim3 grid,
                                gc_dim3 block, std::uint32_t shared_bytes, void **args,
                                std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_kernel(graph, function, grid, block, shared_bytes, args, deps.begin(),
                              deps.size(), &node));
    return node;
}

/** gc_graph_add_memcpy after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_memcpy(gc_graph *graph, void *dst, const void *src, std::size_t bytes,
                                const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_memcpy(graph, dst, src, bytes, deps.data(), deps.size(), &node));
    return node;
}
inline gc_node graph_add_memcpy(gc_graph *graph, void *dst, const void *src, std::size_t bytes,
                                std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_memcpy(graph, dst, src, bytes, deps.begin(), deps.size(), &node));
    return node;
}

/** gc_graph_add_memset after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_memset(gc_graph *graph, void *dst, int value, std::size_t bytes,
                                const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_memset(graph, dst, value, bytes, deps.data(), deps.size(), &node));
    return node;
}
inline gc_node graph_add_memset(gc_graph *graph, void *dst, int value, std::size_t bytes,
                                std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_memset(graph, dst, value, bytes, deps.begin(), deps.size(), &node));
    return node;
}

/** gc_graph_add_memset_elem after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_memset_elem(gc_graph *graph, void *dst, std::uint32_t value,
                                     std::uint32_t elem_size, std::size_t count,
                                     const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_memset_elem(graph, dst, value, elem_size, count, deps.data(), deps.size(),
                                   &node));
    return node;
}
inline gc_node graph_add_memset_elem(gc_graph *graph, void *dst, std::uint32_t value,
                                     std::uint32_t elem_size, std::size_t count,
                                     std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_memset_elem(graph, dst, value, elem_size, count, deps.begin(), deps.size(),
                                   &node));
    return node;
}

/** gc_graph_add_host after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_host(gc_graph *graph, gc_host_fn func, void *user_data,
                              const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_host(graph, func, user_data, deps.data(), deps.size(), &node));
    return node;
}
inline gc_node graph_add_host(gc_graph *graph, gc_host_fn func, void *user_data,
                              std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_host(graph, func, user_data, deps.begin(), deps.size(), &node));
    return node;
}

/** gc_graph_add_child after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_child(gc_graph *graph, gc_graph *child, const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_child(graph, child, deps.data(), deps.size(), &node));
    return node;
}
inline gc_node graph_add_child(gc_graph *graph, gc_graph *child,
                               std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_child(graph, child, deps.begin(), deps.size(), &node));
    return node;
}

/** gc_graph_add_empty after the nodes in `deps`; returns the new node. */
inline gc_node graph_add_empty(gc_graph *graph, const std::vector<gc_node> &deps) {
    gc_node node{};
    check(gc_graph_add_empty(graph, deps.data(), deps.size(), &node));
    return node;
}
inline gc_node graph_add_empty(gc_graph *graph, std::initializer_list<gc_node> deps = {}) {
    gc_node node{};
    check(gc_graph_add_empty(graph, deps.begin(), deps.size(), &node));
    return node;
}

/* ------------------------------------------------------------ graph arguments */

/** A declared graph argument holding elements of type T: its index (as
 * gc_graph_declare_arg or gc_capture_arg returned it) and its element
 * count. to() makes the gc_binding for a new buffer of the same type, so a
 * float argument cannot be bound to an int buffer by mistake. */
template <typename T>
struct arg {
    /** The argument's index. */
    std::size_t index = 0;
    /** Elements declared. */
    std::size_t count = 0;
    /** A binding of this argument to `ptr`, a device buffer of `count`
     * elements (0: as large as its memory; gc_exec_launch_with checks). */
    gc_binding to(T *ptr, std::size_t elements = 0) const noexcept {
        return gc_binding{index, static_cast<void *>(ptr), elements * sizeof(T)};
    }
};

/** gc_graph_declare_arg for `count` elements at `ptr` (flags: GC_ARG_EXACT
 * or 0); throws what it returns. */
template <typename T>
arg<T> graph_declare_arg(gc_graph *graph, T *ptr, std::size_t count, std::uint32_t flags = 0) {
    arg<T> a;
    a.count = count;
    check(gc_graph_declare_arg(graph, static_cast<const void *>(ptr), count * sizeof(T), flags,
                               &a.index));
    return a;
}

/** gc_capture_arg for `count` elements at `ptr`, on a capturing stream;
 * throws what it returns. */
template <typename T>
arg<T> capture_arg(gc_stream *stream, T *ptr, std::size_t count, std::uint32_t flags = 0) {
    arg<T> a;
    a.count = count;
    check(gc_capture_arg(stream, static_cast<const void *>(ptr), count * sizeof(T), flags,
                         &a.index));
    return a;
}

/** gc_exec_launch_with: e.g. exec_launch_with(e, s, {x.to(in), y.to(out)}). */
inline void exec_launch_with(gc_exec *exec, gc_stream *stream,
                             std::initializer_list<gc_binding> bindings) {
    check(gc_exec_launch_with(exec, stream, bindings.begin(), bindings.size()));
}
inline void exec_launch_with(gc_exec *exec, gc_stream *stream,
                             const std::vector<gc_binding> &bindings) {
    check(gc_exec_launch_with(exec, stream, bindings.data(), bindings.size()));
}

/** gc_runner_replay_with; returns the bucket's size. */
inline std::uint32_t runner_replay_with(gc_runner *runner, std::uint32_t rows, gc_stream *stream,
                                        std::initializer_list<gc_binding> bindings) {
    std::uint32_t bucket = 0;
    check(gc_runner_replay_with(runner, rows, stream, bindings.begin(), bindings.size(), &bucket));
    return bucket;
}

/** gc_runner_replay_exact: an exact-size request of `rows` rows (its
 * GC_ARG_ROWS arguments bound to ranges of exactly `rows` rows); returns the
 * bucket's size. */
inline std::uint32_t runner_replay_exact(gc_runner *runner, std::uint32_t rows, gc_stream *stream,
                                         std::initializer_list<gc_binding> bindings) {
    std::uint32_t bucket = 0;
    check(gc_runner_replay_exact(runner, rows, stream, bindings.begin(), bindings.size(), &bucket));
    return bucket;
}

/** gc_exec_arg_info: the uses found of argument `index`. */
inline std::size_t exec_arg_uses(gc_exec *exec, std::size_t index) {
    std::size_t uses = 0;
    check(gc_exec_arg_info(exec, index, &uses));
    return uses;
}

/** gc_graph_conditional_handle_create: a handle for `graph`'s conditional
 * nodes (CUDA 12.3). */
inline gc_cond_handle graph_conditional_handle(gc_graph *graph, uint32_t default_value = 0,
                                               bool reset_on_launch = true) {
    gc_cond_handle h{};
    check(gc_graph_conditional_handle_create(graph, default_value,
                                             reset_on_launch ? GC_COND_RESET_ON_LAUNCH : 0u, &h));
    return h;
}

/** gc_cond_handle_raw: the cudaGraphConditionalHandle for your own kernel. */
inline uint64_t cond_handle_raw(gc_cond_handle handle) {
    uint64_t raw = 0;
    check(gc_cond_handle_raw(handle, &raw));
    return raw;
}

/** A conditional node and its bodies (the caller owns the body handles). */
struct Conditional {
    gc_node node;
    std::vector<graph> bodies;
};

/** gc_graph_add_conditional after the nodes in `deps`: the node and its
 * bodies (1 for IF and WHILE, 2 for IF/ELSE, `cases` for SWITCH), each owned
 * by a graphcore::graph. A WHILE whose value never becomes 0 hangs the GPU. */
inline Conditional graph_add_conditional(gc_graph *graph, gc_cond_type type, gc_cond_handle handle,
                                         uint32_t cases = 0,
                                         std::initializer_list<gc_node> deps = {}) {
    std::size_t n = type == GC_COND_IF_ELSE ? 2 : type == GC_COND_SWITCH ? cases : 1;
    std::vector<gc_graph *> raw(n > 0 ? n : 1, nullptr);
    Conditional c{};
    check(gc_graph_add_conditional(graph, type, handle, cases, deps.begin(), deps.size(), &c.node,
                                   raw.data(), raw.size()));
    for (std::size_t i = 0; i < n; i++) c.bodies.emplace_back(raw[i]);
    return c;
}

/** gc_op_mlp_workspace_bytes for `rows` rows through `layers`. */
inline std::uint64_t mlp_workspace_bytes(std::uint32_t rows, const std::vector<gc_mlp_layer> &layers) {
    std::uint64_t bytes = 0;
    check(gc_op_mlp_workspace_bytes(rows, layers.data(), static_cast<std::uint32_t>(layers.size()), &bytes));
    return bytes;
}

/** gc_op_mlp: `rows` rows of x through `layers` into y (workspace and flags as gc_op_mlp says). */
inline void op_mlp(gc_stream *stream, float *y, const float *x, std::uint32_t rows,
                   const std::vector<gc_mlp_layer> &layers, void *workspace, std::uint64_t workspace_bytes,
                   std::uint32_t flags = 0) {
    check(gc_op_mlp(stream, y, x, rows, layers.data(), static_cast<std::uint32_t>(layers.size()), workspace,
                    workspace_bytes, flags));
}

/** gc_op_mse_reduction's reductions (nn.MSELoss(reduction=...)). */
enum class reduction : std::uint32_t { sum = GC_REDUCTION_SUM, mean = GC_REDUCTION_MEAN };

/** gc_op_mse_workspace_bytes for n elements on ctx's device. */
inline std::uint64_t mse_workspace_bytes(gc_context *ctx, std::uint64_t n) {
    std::uint64_t bytes = 0;
    check(gc_op_mse_workspace_bytes(ctx, n, &bytes));
    return bytes;
}

/** gc_op_mse_reduction: nn.MSELoss(reduction=r) into loss[0] and, when grad is not null, its gradient
 * (workspace as gc_op_mse_reduction says). The default is nn.MSELoss()'s mean. */
inline void op_mse(gc_stream *stream, float *loss, float *grad, const float *pred, const float *target,
                   std::uint64_t n, void *workspace, std::uint64_t workspace_bytes,
                   reduction r = reduction::mean) {
    check(gc_op_mse_reduction(stream, loss, grad, pred, target, n, static_cast<std::uint32_t>(r), workspace,
                              workspace_bytes));
}

/** gc_op_linear_mse_step_workspace_bytes on ctx's device. */
inline std::uint64_t linear_mse_step_workspace_bytes(gc_context *ctx, std::uint32_t rows, std::uint32_t inputs,
                                                     std::uint32_t outputs) {
    std::uint64_t bytes = 0;
    check(gc_op_linear_mse_step_workspace_bytes(ctx, rows, inputs, outputs, &bytes));
    return bytes;
}

/** gc_op_linear_mse_step: one training step of a linear layer (summed squared error, SGD) in two launches;
 *  b may be NULL; grad_scale 1 for the summed loss. */
inline void op_linear_mse_step(gc_stream *stream, float *w, float *b, const float *x, const float *target,
                               float *loss, std::uint32_t rows, std::uint32_t inputs, std::uint32_t outputs,
                               float lr, void *workspace, std::uint64_t workspace_bytes, float grad_scale = 1.0f) {
    check(gc_op_linear_mse_step(stream, w, b, x, target, loss, rows, inputs, outputs, grad_scale, lr, workspace,
                                workspace_bytes));
}

/** gc_op_mlp2_mse_step_workspace_bytes on ctx's device. */
inline std::uint64_t mlp2_mse_step_workspace_bytes(gc_context *ctx, std::uint32_t rows, std::uint32_t hidden,
                                                   std::uint32_t outputs) {
    std::uint64_t bytes = 0;
    check(gc_op_mlp2_mse_step_workspace_bytes(ctx, rows, hidden, outputs, &bytes));
    return bytes;
}

/** gc_op_mlp2_mse_step: one training step of a 2-layer MLP (ReLU hidden layer, summed squared error, SGD) in
 *  two launches; b1 and b2 may be NULL; grad_scale 1 for the summed loss. */
inline void op_mlp2_mse_step(gc_stream *stream, float *w1, float *b1, float *w2, float *b2, const float *x,
                             const float *target, float *loss, std::uint32_t rows, std::uint32_t inputs,
                             std::uint32_t hidden, std::uint32_t outputs, float lr, void *workspace,
                             std::uint64_t workspace_bytes, float grad_scale = 1.0f) {
    check(gc_op_mlp2_mse_step(stream, w1, b1, w2, b2, x, target, loss, rows, inputs, hidden, outputs, grad_scale, lr,
                              workspace, workspace_bytes));
}

}  // namespace graphcore

#endif /* GRAPHCORE_HPP */
