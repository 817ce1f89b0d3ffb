//! Graphs: explicit building, and stream capture into them.
//!
//! Thread safety: building calls on one gc_graph are serialized inside, but
//! the order of nodes is the caller's: build each graph from one thread.
//! Different graphs may be built concurrently. gc_capture_begin/end on one
//! stream must come from the same thread in thread-local mode.

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::module::{function, gc_dim3, gc_function, launch_config};
use crate::pool::{gc_pool, pool};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::{CaptureMode, Error, Graph, Node};
use std::ffi::{c_char, c_int, c_void};

/// A CUDA graph being built, or captured from a stream.
pub struct gc_graph;

pub(crate) static GRAPHS: Registry<Graph> = Registry::new(6, "gc_graph");

/// The graph behind a handle (`arg` names the parameter).
pub(crate) fn graph(h: *mut gc_graph, arg: &str) -> graphcore_core::Result<Graph> {
    GRAPHS.get(h as u64, arg)
}

/// A node of a graph: the graph's id and the node's index in it (nodes are
/// numbered from 0 in the order they were added; a captured graph's nodes
/// in a dependency order). Plain data: copy it freely.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gc_node {
    /// The id of the graph the node belongs to.
    pub graph: u64,
    /// The node's index in that graph.
    pub index: u32,
}

impl From<Node> for gc_node {
    fn from(n: Node) -> Self {
        gc_node {
            graph: n.graph,
            index: n.index,
        }
    }
}

impl From<gc_node> for Node {
    fn from(n: gc_node) -> Self {
        Node {
            graph: n.graph,
            index: n.index,
        }
    }
}

/// How a capture treats potentially unsafe CUDA calls (cudaMalloc, a
/// synchronize...) made while it is open; CUDA's stream capture modes.
pub type gc_capture_mode = u32;
/// Unsafe calls from the capturing thread invalidate the capture (default).
pub const GC_CAPTURE_THREAD_LOCAL: gc_capture_mode = 0;
/// Unsafe calls from any thread invalidate the capture.
pub const GC_CAPTURE_GLOBAL: gc_capture_mode = 1;
/// No call is checked.
pub const GC_CAPTURE_RELAXED: gc_capture_mode = 2;

fn deps(p: *const gc_node, n: usize) -> graphcore_core::Result<Vec<Node>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::invalid_argument(format!(
            "`deps` is NULL but `ndeps` is {n}"
        )));
    }
    // SAFETY: the caller passes `n` readable nodes.
    let s: &[gc_node] = unsafe { std::slice::from_raw_parts(p, n) };
    Ok(s.iter().map(|&d| d.into()).collect())
}

/// Writes the new node if the caller asked for it (`node` may be NULL).
fn emit(node: *mut gc_node, n: Node) {
    if !node.is_null() {
        // SAFETY: non-NULL, writable as documented.
        unsafe { node.write(n.into()) }
    }
}

/// Begins capturing `stream`: all work enqueued on it (graphcore's
/// kernels and copies, your own kernels and cuBLAS calls on the raw
/// stream, and streams that join through gc_stream_wait_stream) is recorded,
/// not run. With a pool (may be NULL), gc_pool_alloc on the calling thread
/// allocates for the capture until gc_capture_end; blocks it frees are
/// reused within the capture and by later captures into the same pool.
/// A stream that is already capturing (through graphcore or the CUDA API)
/// is GC_ERROR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn gc_capture_begin(
    stream: *mut gc_stream,
    pool: *mut gc_pool,
    mode: gc_capture_mode,
) -> gc_status {
    boundary("gc_capture_begin", || {
        let s = self::stream(stream, "stream")?;
        let p = if pool.is_null() {
            None
        } else {
            Some(self::pool(pool)?)
        };
        let mode = match mode {
            GC_CAPTURE_THREAD_LOCAL => CaptureMode::ThreadLocal,
            GC_CAPTURE_GLOBAL => CaptureMode::Global,
            GC_CAPTURE_RELAXED => CaptureMode::Relaxed,
            m => {
                return Err(Error::invalid_argument(format!(
                    "`mode` {m} is not a gc_capture_mode"
                )))
            }
        };
        graphcore_core::begin_capture(&s, p.as_ref(), mode)
    })
}

/// Ends the capture begun on `stream` and writes the captured graph to
/// *graph. If the capture was invalidated, the error names the first
/// graphcore call that broke it (GC_ERROR_CAPTURE); a stream that joined
/// and did not rejoin is GC_ERROR_CAPTURE too; either way the stream is
/// usable for eager work and the pool is as it was before
/// gc_capture_begin. Without a begin: GC_ERROR_INVALID_STATE.
#[no_mangle]
pub extern "C" fn gc_capture_end(stream: *mut gc_stream, graph: *mut *mut gc_graph) -> gc_status {
    boundary("gc_capture_end", || {
        let out = Out::new(graph, "graph")?;
        let g = graphcore_core::end_capture(&self::stream(stream, "stream")?)?;
        out.set(GRAPHS.insert(g)? as *mut gc_graph);
        Ok(())
    })
}

/// Creates an empty graph.
#[no_mangle]
pub extern "C" fn gc_graph_create(ctx: *mut gc_context, graph: *mut *mut gc_graph) -> gc_status {
    boundary("gc_graph_create", || {
        let out = Out::new(graph, "graph")?;
        let g = Graph::new(&context(ctx)?)?;
        out.set(GRAPHS.insert(g)? as *mut gc_graph);
        Ok(())
    })
}

/// Adds a kernel node launching `function` with `grid`, `block` and
/// `shared_bytes` after the `ndeps` nodes in `deps`. `args` is as for
/// gc_launch; the values are copied now. The new node goes to *node (which
/// may be NULL). A node of another graph in `deps` is
/// GC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn gc_graph_add_kernel(
    graph: *mut gc_graph,
    function: *mut gc_function,
    grid: gc_dim3,
    block: gc_dim3,
    shared_bytes: u32,
    args: *mut *mut c_void,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_kernel", || {
        let g = self::graph(graph, "graph")?;
        let f = self::function(function)?;
        let d = self::deps(deps, ndeps)?;
        let cfg = launch_config(grid, block, shared_bytes);
        // SAFETY: the caller passes one pointer per parameter, as documented.
        let n = unsafe { g.add_kernel(&f, &cfg, args, &d) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a copy of `bytes` bytes from `src` to `dst`, in any direction.
/// Host memory must be pinned (gc_host_alloc): a pageable host pointer is
/// GC_ERROR_INVALID_ARGUMENT here, not a failure at launch.
#[no_mangle]
pub extern "C" fn gc_graph_add_memcpy(
    graph: *mut gc_graph,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_memcpy", || {
        let g = self::graph(graph, "graph")?;
        let deps = self::deps(deps, ndeps)?;
        // SAFETY: the caller's promise (this function's doc): `dst` and `src`
        // are valid for `bytes` bytes whenever the graph runs.
        let n = unsafe { g.add_memcpy(dst as u64, src as u64, bytes, &deps) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node setting `bytes` bytes of device memory at `dst` to the byte
/// `value`.
#[no_mangle]
pub extern "C" fn gc_graph_add_memset(
    graph: *mut gc_graph,
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_memset", || {
        let g = self::graph(graph, "graph")?;
        let deps = self::deps(deps, ndeps)?;
        // SAFETY: the caller's promise (this function's doc): `dst` is device
        // memory valid for `bytes` bytes whenever the graph runs.
        let n = unsafe { g.add_memset(dst as u64, value as u8, bytes, &deps) }?;
        emit(node, n);
        Ok(())
    })
}

/// A host callback of a graph: called with the user data given when the
/// node was added, on a CPU thread of the driver. It must not call CUDA or
/// graphcore.
pub type gc_host_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Adds a node calling `fn(user_data)` when it runs.
#[no_mangle]
pub extern "C" fn gc_graph_add_host(
    graph: *mut gc_graph,
    fn_: gc_host_fn,
    user_data: *mut c_void,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_host", || {
        let g = self::graph(graph, "graph")?;
        let f = fn_.ok_or_else(|| Error::invalid_argument("`fn` is NULL"))?;
        // SAFETY: the caller vouches for fn and user_data, as documented.
        let n = unsafe { g.add_host(f, user_data, &self::deps(deps, ndeps)?) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node running a copy of `child` (later changes to child do not
/// affect it; child's pool memory stays alive with this graph).
#[no_mangle]
pub extern "C" fn gc_graph_add_child(
    graph: *mut gc_graph,
    child: *mut gc_graph,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_child", || {
        let g = self::graph(graph, "graph")?;
        let c = self::graph(child, "child")?;
        let n = g.add_child(&c, &self::deps(deps, ndeps)?)?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node that does nothing: a join point for dependencies.
#[no_mangle]
pub extern "C" fn gc_graph_add_empty(
    graph: *mut gc_graph,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_empty", || {
        let g = self::graph(graph, "graph")?;
        let n = g.add_empty(&self::deps(deps, ndeps)?)?;
        emit(node, n);
        Ok(())
    })
}

/// Makes `to` run after `from`. A node of another graph, a self-loop, an
/// edge already there, or an edge that would close a cycle is
/// GC_ERROR_INVALID_ARGUMENT with a message, and the graph is unchanged.
#[no_mangle]
pub extern "C" fn gc_graph_add_dependency(
    graph: *mut gc_graph,
    from: gc_node,
    to: gc_node,
) -> gc_status {
    boundary("gc_graph_add_dependency", || {
        self::graph(graph, "graph")?.add_dependency(from.into(), to.into())
    })
}

/// Writes the number of nodes to *count.
#[no_mangle]
pub extern "C" fn gc_graph_node_count(graph: *mut gc_graph, count: *mut usize) -> gc_status {
    boundary("gc_graph_node_count", || {
        let out = Out::new(count, "count")?;
        out.set(self::graph(graph, "graph")?.node_count());
        Ok(())
    })
}

/// Writes the underlying CUgraph (a cudaGraph_t) to *raw, for CUDA calls
/// graphcore does not wrap. graphcore still owns it: do not destroy it, and
/// add nodes only through graphcore (its description would go stale).
#[no_mangle]
pub extern "C" fn gc_graph_raw(graph: *mut gc_graph, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_graph_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::graph(graph, "graph")?.raw() as *mut c_void);
        Ok(())
    })
}

/// Writes the pool bytes the graph holds to *bytes: what its capture (and
/// its child graphs' captures) allocated from the pool and had not freed
/// when the capture ended. 0 for graphs without pool memory.
#[no_mangle]
pub extern "C" fn gc_graph_pool_bytes(graph: *mut gc_graph, bytes: *mut u64) -> gc_status {
    boundary("gc_graph_pool_bytes", || {
        let out = Out::new(bytes, "bytes")?;
        out.set(self::graph(graph, "graph")?.pool_bytes());
        Ok(())
    })
}

/// Writes the graph to `path` in Graphviz DOT: one box per node (kernel
/// name and launch geometry, copy direction and size, ...) and its edges.
#[no_mangle]
pub extern "C" fn gc_graph_write_dot(graph: *mut gc_graph, path: *const c_char) -> gc_status {
    boundary("gc_graph_write_dot", || {
        let p = crate::args::c_str(path, "path")?;
        self::graph(graph, "graph")?.write_dot(std::path::Path::new(p))
    })
}

/// Drops this handle; execs made from the graph keep what they need.
/// NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_graph_destroy(graph: *mut gc_graph) -> gc_status {
    boundary("gc_graph_destroy", || {
        GRAPHS.remove(graph as u64, "graph")?;
        Ok(())
    })
}
