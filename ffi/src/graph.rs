//! Graphs: built node by node (gc_graph_create, gc_graph_add_*), or
//! captured from a stream (gc_capture_end). A graph is a description; to
//! run it, instantiate it into a gc_exec (Exec section).

use crate::args::Out;
use crate::context::{context, gc_context, CONTEXTS};
use crate::handle::Registry;
use crate::launch::{gc_host_fn, launch_config};
use crate::module::{gc_dim3, gc_function, FUNCTIONS};
use crate::status::{boundary, gc_status};
use graphcore_core::{Error, Graph, Node};
use std::ffi::{c_char, c_int, c_void};

/// A CUDA graph being built, or captured from a stream.
///
/// Ownership: gc_graph_create, gc_graph_clone, gc_graph_wrap and
/// gc_capture_end return a handle the caller destroys with
/// gc_graph_destroy (a graph wrapped with GC_GRAPH_WRAP_BORROW leaves the
/// CUgraph to the caller). The graph keeps the functions of its
/// kernel nodes loaded and holds the pool memory its capture (and its child
/// graphs' captures) used, and the events of the event nodes its capture
/// made on the capturing stream; execs instantiated from it keep what they
/// need,
/// so the graph may be destroyed before them. gc_graph_add_child copies the
/// child, which stays the caller's.
///
/// Thread safety: building calls on one graph are serialized inside, but
/// the order of the nodes is the caller's: build each graph from one
/// thread. Different graphs may be built concurrently (the driver calls
/// that change, clone, instantiate or destroy graphs and execs are made one
/// at a time inside, process-wide: the driver shares state between a graph,
/// its copies and its execs, so they do not run in parallel). Reading calls
/// (gc_graph_node_count, gc_graph_write_dot, gc_graph_instantiate...) may
/// run concurrently with each other. gc_graph_destroy must not race with
/// other calls on the handle.
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

// gc_node and core's Node are both `#[repr(C)]` { u64, u32 }: the caller's
// array is read in place.
const _: () = assert!(
    std::mem::size_of::<gc_node>() == std::mem::size_of::<Node>()
        && std::mem::align_of::<gc_node>() == std::mem::align_of::<Node>()
        && std::mem::offset_of!(gc_node, graph) == std::mem::offset_of!(Node, graph)
        && std::mem::offset_of!(gc_node, index) == std::mem::offset_of!(Node, index)
);

/// The caller's `n` dependencies at `p`, read in place.
pub(crate) fn deps<'a>(p: *const gc_node, n: usize) -> graphcore_core::Result<&'a [Node]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::invalid_argument(format!(
            "`deps` is NULL but `ndeps` is {n}"
        )));
    }
    // SAFETY: the caller passes `n` readable nodes, unchanged during the
    // call; gc_node and Node have one layout (`#[repr(C)]`, the same fields at the
    // same offsets, checked above).
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<Node>(), n) })
}

/// Writes the new node if the caller asked for it (`node` may be NULL).
pub(crate) fn emit(node: *mut gc_node, n: Node) {
    if !node.is_null() {
        // SAFETY: non-NULL, writable as documented.
        unsafe { node.write(n.into()) }
    }
}

/// gc_graph_declare_arg and gc_capture_arg flag: find the argument's uses
/// only where they are known exactly (graphcore's built-in kernels' pointer
/// parameters, memcpy and memset endpoints); do not scan other kernels'
/// parameters (no false positives; foreign kernels' uses are then not
/// rebound).
pub const GC_ARG_EXACT: u32 = 1;

/// gc_capture_arg flag: the range holds the rows of a runner's exact-size
/// capture (gc_runner_capture_exact): its bytes are the bucket's rows times
/// a row's bytes, and gc_runner_replay_exact of n rows may bind it to a
/// range of n rows. Every kernel that uses it must read the row count the
/// record function was given (else the bucket takes no exact-size replay).
/// In other captures it changes nothing; gc_graph_declare_arg refuses it.
pub const GC_ARG_ROWS: u32 = 2;

/// The checked flags of an argument declaration: whether it is exact
/// (GC_ARG_ROWS is refused: gc_capture_arg takes it).
pub(crate) fn arg_exact(flags: u32) -> graphcore_core::Result<bool> {
    if flags & !GC_ARG_EXACT != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown argument flags 0x{:x}{}",
            flags & !GC_ARG_EXACT,
            if flags & GC_ARG_ROWS != 0 {
                " (GC_ARG_ROWS is for gc_capture_arg in a runner's exact-size capture)"
            } else {
                ""
            }
        )));
    }
    Ok(flags & GC_ARG_EXACT != 0)
}

/// The checked flags of gc_capture_arg: (exact, rows).
pub(crate) fn capture_arg_flags(flags: u32) -> graphcore_core::Result<(bool, bool)> {
    let exact = arg_exact(flags & !GC_ARG_ROWS)?;
    Ok((exact, flags & GC_ARG_ROWS != 0))
}

/// The checks of a declared range that need no object (NULL, 0 bytes),
/// made before the handle's (see "which error wins" in the status section).
pub(crate) fn arg_range(ptr: *const c_void, bytes: usize) -> graphcore_core::Result<()> {
    if ptr.is_null() {
        return Err(Error::invalid_argument("`ptr` is NULL"));
    }
    if bytes == 0 {
        return Err(Error::invalid_argument("an argument of 0 bytes"));
    }
    Ok(())
}

/// Declares the device range ptr .. ptr + bytes an argument of `graph`
/// and writes its index to *index (arguments are numbered from 0 in
/// declaration order; a captured graph's arguments declared with
/// gc_capture_arg come first). An exec instantiated later finds every
/// place the range's addresses occur in its nodes, and gc_exec_launch_with
/// binds the argument to another range, patching those places:
/// built-in kernels' pointer parameters exactly; other kernels' (a
/// module's, a wrapped or captured foreign kernel such as cuBLAS) by a
/// scan of their parameters for 8-byte-aligned 8-byte values inside the
/// range (the parameters are bounded with the driver's cuFuncGetParamInfo,
/// CUDA 12.4 and later; older drivers scan no such kernel); memcpy and
/// memset endpoints; child graphs, recursively. An address inside the range
/// (base + offset) moves with the base. A scanned integer that happens to
/// hold an address inside the range is rebound too (a false positive):
/// GC_ARG_EXACT opts out of scanning. Addresses a kernel computes on the
/// device or reads from device memory cannot be found; gc_exec_arg_info
/// says how many uses were found. Execs instantiated before the
/// declaration do not see it. The range stays the caller's memory.
/// Which memory: a graphcore pool block, or memory the engine allocated
/// itself (cudaMalloc, cuMemAlloc, or a VMM range it mapped with cuMemCreate
/// and cuMemMap), with the same checks: the range must be device memory of
/// the graph's device (pageable or pinned host memory and memory of another
/// device are refused), hold `bytes` bytes (inside one live pool block; for
/// other memory, inside the allocation CUDA reports around ptr, which for
/// a VMM range is the one mapping that holds ptr), and be alive (a freed
/// pool block is refused; memory freed with cudaFree or cuMemFree is
/// refused while the driver does not know the address, that is unless a
/// later allocation got it). Bindings (gc_exec_launch_with) are checked
/// the same way, except that an exec remembers the last 8 allocations
/// outside graphcore's pools that bindings were checked against and does
/// not ask the driver again for ranges inside them: binding memory freed
/// after such a check is not detected. Kernel parameters rebind across
/// kinds (engine memory to pool memory and back); a copy node's endpoint
/// keeps its kind (see gc_exec_launch_with).
/// Errors: GC_ERROR_INVALID_ARGUMENT (graph, ptr or index is NULL, bytes
/// is 0, an unknown flag, ptr is not device memory of the graph's device or
/// holds fewer than bytes bytes, or the range overlaps an argument declared
/// before), GC_ERROR_INVALID_HANDLE (graph destroyed),
/// GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_declare_arg(
    graph: *mut gc_graph,
    ptr: *const c_void,
    bytes: usize,
    flags: u32,
    index: *mut usize,
) -> gc_status {
    boundary("gc_graph_declare_arg", || {
        let out = Out::new(index, "index")?;
        let exact = arg_exact(flags)?;
        arg_range(ptr, bytes)?;
        let g = self::graph(graph, "graph")?;
        out.set(g.declare_arg(ptr as u64, bytes, exact)?);
        Ok(())
    })
}

/// The marker of a scalar argument declaration, read in place: non-NULL,
/// 1 to 8 bytes (checked before it is read; all-zero is refused later).
pub(crate) fn scalar_marker<'a>(
    marker: *const c_void,
    size: usize,
) -> graphcore_core::Result<&'a [u8]> {
    if marker.is_null() {
        return Err(Error::invalid_argument("`marker` is NULL"));
    }
    if !(1..=8).contains(&size) {
        return Err(Error::invalid_argument(format!(
            "`size` is {size}: a scalar argument has 1 to 8 bytes"
        )));
    }
    // SAFETY: the caller passes `size` readable bytes at marker (1 to 8).
    Ok(unsafe { std::slice::from_raw_parts(marker as *const u8, size) })
}

/// Declares a scalar argument of `graph`: a kernel parameter's value,
/// marked by the `size` bytes at `marker` (1 to 8 bytes, not all zero;
/// the bytes are copied), and writes its index to *index (numbered with
/// the range arguments of gc_graph_declare_arg, in declaration order). An
/// exec instantiated later takes as uses exactly the kernel parameters of
/// `size` bytes whose bytes equal the marker, each at the offset and size
/// of the kernel's parameter layout: graphcore's built-in kernels' scalar
/// parameters (from their table), and any other kernel's parameters where
/// the driver gives the layout (cuFuncGetParamInfo, CUDA 12.4 and later;
/// older drivers find no use in such kernels). Nothing else is looked at:
/// not unaligned words, not a parameter of another size (a 4-byte marker
/// does not match the low half of an 8-byte parameter), not copies or sets;
/// a parameter in which a range argument's address was found is not a
/// scalar use. So: give the launches you capture or add the marker as the
/// scalar's value (a value no other parameter of that size holds, such as
/// a NaN payload or an unlikely integer), and check gc_exec_arg_info: 0
/// uses means the marker matched nothing (wrong value or wrong size).
/// Values graphcore's ops hand to cuBLASLt are not kernel parameters of
/// theirs and are never uses: where gc_op_linear_backend gives cuBLASLt,
/// the weight update of gc_op_linear_weight_sgd and of the training steps
/// passes -lr to cuBLASLt, so a learning-rate marker there binds only the
/// bias update (graphcore's kernel); list the uses (gc_exec_arg_uses) to
/// see which launches took the marker, and rebind such a learning rate
/// only where those calls run graphcore's kernels (GC_LINEAR_GRAPHCORE in
/// the steps' _flags forms).
/// gc_exec_launch_with then binds it: a gc_binding whose `ptr` holds the
/// new value's bytes (memcpy them into ptr's first `size` bytes, the rest
/// zero: on the little-endian targets CUDA supports this is the value
/// zero-extended) and whose `bytes` is 0 or `size`; the parameters are
/// patched as address bindings patch theirs. The same marker with the same
/// size declared twice is refused; a marker equal to an address inside a
/// range argument is allowed (a parameter holding it is an address use).
/// From several threads: declarations on one graph are serialized with its
/// other changes, as the building calls are (see gc_graph_create).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (marker or index is NULL,
/// size is 0 or above 8, the marker is all zero bytes or was declared
/// before with the same size), GC_ERROR_INVALID_STATE (body rules: see
/// Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_declare_scalar_arg(
    graph: *mut gc_graph,
    marker: *const c_void,
    size: usize,
    index: *mut usize,
) -> gc_status {
    boundary("gc_graph_declare_scalar_arg", || {
        let out = Out::new(index, "index")?;
        let m = scalar_marker(marker, size)?;
        let g = self::graph(graph, "graph")?;
        out.set(g.declare_scalar_arg(m)?);
        Ok(())
    })
}

/// Creates an empty graph on ctx's device; destroy it with
/// gc_graph_destroy.
/// Errors: common, and GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_graph_create(ctx: *mut gc_context, graph: *mut *mut gc_graph) -> gc_status {
    boundary("gc_graph_create", || {
        let out = Out::new(graph, "graph")?;
        let g = CONTEXTS.with(ctx as u64, "ctx", Graph::new)?;
        out.set(GRAPHS.insert(g)? as *mut gc_graph);
        Ok(())
    })
}

/// Adds a kernel node launching `function` with `grid`, `block` and
/// `shared_bytes` after the `ndeps` nodes in `deps`. `args` is as for
/// gc_launch; the values are copied now. The new node goes to *node (which
/// may be NULL). A node of another graph in `deps` is
/// GC_ERROR_INVALID_ARGUMENT. See the Launch section for `args`. Adding
/// costs about what CUDA's own add does: graphcore keeps the node's
/// dependencies, and its kind and parameters are read back from CUDA by the
/// first call that needs them, as a captured graph's are (see
/// gc_capture_end).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a zero or over-limit
/// dimension, deps is NULL with ndeps > 0, or a dependency of another graph or
/// out of range), GC_ERROR_INVALID_STATE (body rules: see Conditional
/// nodes), GC_ERROR_CUDA (the driver refused the node). The graph is
/// unchanged on failure.
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
        let n = GRAPHS.with(graph as u64, "graph", |g| {
            FUNCTIONS.with(function as u64, "function", |f| {
                let d = self::deps(deps, ndeps)?;
                let cfg = launch_config(grid, block, shared_bytes);
                // SAFETY: the caller passes one pointer per parameter, as
                // documented.
                unsafe { g.add_kernel(f, &cfg, args, d) }
            })
        })?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a copy of `bytes` bytes from `src` to `dst`, in any direction.
/// Host memory must be pinned (gc_host_alloc): a pageable host pointer is
/// GC_ERROR_INVALID_ARGUMENT here, not a failure at launch. Pool memory of
/// another device needs that pool's peer access for the graph's device
/// (gc_pool_enable_peer_access).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0, pageable or
/// unknown host memory, a range overrunning its pool block, pool memory of
/// another device without peer access, naming both, or a bad dependency as for
/// gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
/// nodes).
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
        let n = unsafe { g.add_memcpy(dst as u64, src as u64, bytes, deps) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node setting `bytes` bytes of device memory at `dst` to the byte
/// `value`.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0, dst is not device
/// memory, the range overruns its pool block or is pool memory of another
/// device without peer access, or a bad dependency as for gc_graph_add_kernel),
/// GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
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
        let n = unsafe { g.add_memset(dst as u64, value as u8, bytes, deps) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node setting `count` elements of `elem_size` bytes (1, 2 or 4)
/// of device memory at `dst` to `value` (its low elem_size bytes): a
/// cuMemsetD16/D32-style node. dst must be aligned to elem_size and value
/// must fit in an element. gc_graph_add_memset is this with elem_size 1.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (count is 0, elem_size is not
/// 1, 2 or 4, dst is not aligned to it, value does not fit in an element, dst
/// is not device memory, the range overruns its pool block or the address
/// space, or a bad dependency as for gc_graph_add_kernel),
/// GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_add_memset_elem(
    graph: *mut gc_graph,
    dst: *mut c_void,
    value: u32,
    elem_size: u32,
    count: usize,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_memset_elem", || {
        let g = self::graph(graph, "graph")?;
        let deps = self::deps(deps, ndeps)?;
        // SAFETY: the caller's promise (this function's doc): `dst` is device
        // memory valid for `count * elem_size` bytes whenever the graph runs.
        let n = unsafe { g.add_memset_elements(dst as u64, value, elem_size, count, deps) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node calling `func(user_data)` when it runs (on a CPU thread of
/// the driver; it must not call CUDA or graphcore). user_data must stay
/// valid while any exec of the graph may run.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a bad dependency as for
/// gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
/// nodes).
#[no_mangle]
pub extern "C" fn gc_graph_add_host(
    graph: *mut gc_graph,
    func: gc_host_fn,
    user_data: *mut c_void,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_host", || {
        let g = self::graph(graph, "graph")?;
        let f = func.ok_or_else(|| Error::invalid_argument("`func` is NULL"))?;
        // SAFETY: the caller vouches for fn and user_data, as documented.
        let n = unsafe { g.add_host(f, user_data, self::deps(deps, ndeps)?) }?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node running a copy of `child` (later changes to child do not
/// affect it; child's pool memory stays alive with this graph).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (child is the graph itself or
/// empty, or a bad dependency as for gc_graph_add_kernel),
/// GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
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
        let n = g.add_child(&c, self::deps(deps, ndeps)?)?;
        emit(node, n);
        Ok(())
    })
}

/// Adds a node that does nothing: a join point for dependencies.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a bad dependency as for
/// gc_graph_add_kernel), GC_ERROR_INVALID_STATE (body rules: see Conditional
/// nodes).
#[no_mangle]
pub extern "C" fn gc_graph_add_empty(
    graph: *mut gc_graph,
    deps: *const gc_node,
    ndeps: usize,
    node: *mut gc_node,
) -> gc_status {
    boundary("gc_graph_add_empty", || {
        let g = self::graph(graph, "graph")?;
        let n = g.add_empty(self::deps(deps, ndeps)?)?;
        emit(node, n);
        Ok(())
    })
}

/// Makes `to` run after `from`. A node of another graph, a self-loop, an
/// edge already there, or an edge that would close a cycle is
/// GC_ERROR_INVALID_ARGUMENT with a message, and the graph is unchanged.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (the edge is refused as above,
/// or a node is out of range), GC_ERROR_INVALID_STATE (body rules: see
/// Conditional nodes).
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

/// Makes `to` depend on `from` through a programmatic edge (programmatic
/// dependent launch, CUDA 12.3, compute capability 9.0 or newer): kernel
/// node `to` may start launching once every block of kernel node `from`
/// has executed `griddepcontrol.launch_dependents`
/// (`cudaTriggerProgrammaticLaunchCompletion()`) or exited, so its launch
/// and prologue overlap `from`'s tail. `to` must call
/// `griddepcontrol.wait` (`cudaGridDependencySynchronize()`) before it
/// reads anything `from` writes: graphcore's built-in kernels do (on
/// compute capability 9.0 they run their compute_90 PTX, which waits
/// first), so either end may be one; a user kernel that does not wait
/// must not be `to`. The edge is kept by
/// gc_graph_clone, by fusion and in DOT output (dashed), and edges of this
/// kind in captured graphs are read back as such; gc_exec_update refuses a
/// graph whose edge kinds differ from the exec's. Refused edges leave the
/// graph unchanged. Below compute capability 9.0, or with a driver older
/// than CUDA 12.3 (checked at run time), the edge is added as a full one
/// (as gc_graph_add_dependency): `to` runs after `from` ends, with the
/// same results and no overlap, so one program serves every GPU.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a node of another graph or
/// out of range; a self-loop, an edge already there or one closing a cycle;
/// `from` or `to` not a kernel node), GC_ERROR_INVALID_STATE (body rules:
/// see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_add_programmatic_dependency(
    graph: *mut gc_graph,
    from: gc_node,
    to: gc_node,
) -> gc_status {
    boundary("gc_graph_add_programmatic_dependency", || {
        self::graph(graph, "graph")?.add_programmatic_dependency(from.into(), to.into())
    })
}

/// Makes a new graph with the same nodes, parameters and edges as `graph`
/// (CUDA's clone; node i of the clone copies node i of graph, so gc_node
/// values carry over with the clone's id). The clone keeps graph's
/// functions and pool memory alive as graph does; later changes to either
/// leave the other as it is. Destroy it with gc_graph_destroy.
/// Errors: common, and GC_ERROR_INVALID_STATE (body rules: see Conditional
/// nodes), GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_graph_clone(graph: *mut gc_graph, clone: *mut *mut gc_graph) -> gc_status {
    boundary("gc_graph_clone", || {
        let out = Out::new(clone, "clone")?;
        let c = self::graph(graph, "graph")?.duplicate()?;
        out.set(GRAPHS.insert(c)? as *mut gc_graph);
        Ok(())
    })
}

/// Flags of gc_graph_wrap: who destroys the CUgraph.
pub type gc_graph_wrap_flags = u32;
/// Borrow: the caller keeps the CUgraph alive while graphcore (the graph
/// and execs made from it) uses it, and destroys it afterwards.
pub const GC_GRAPH_WRAP_BORROW: gc_graph_wrap_flags = 0;
/// Adopt: graphcore destroys the CUgraph once the handle and the execs
/// made from it are gone, or when gc_graph_wrap fails counting its nodes (when it
/// fails on its arguments - a NULL or destroyed handle, unknown flags - the
/// CUgraph stays the caller's).
pub const GC_GRAPH_WRAP_ADOPT: gc_graph_wrap_flags = 1;

/// Wraps `raw`, a CUgraph (cudaGraph_t) of ctx's device built with the
/// CUDA API or captured outside graphcore. As for a captured graph, only its
/// node count is read now; its nodes and edges are read back by the first
/// call that needs them (nodes numbered in a dependency order). flags: GC_GRAPH_WRAP_BORROW or GC_GRAPH_WRAP_ADOPT (see them for
/// who destroys it). Do not change raw with the CUDA API afterwards (the
/// description graphcore keeps would go stale); the functions and memory
/// its nodes use stay the caller's to keep alive. graphcore cannot check
/// that raw is a live graph: anything else is undefined behaviour in CUDA.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
/// GC_ERROR_OUT_OF_MEMORY, GC_ERROR_DEVICE_FAULT (counting the nodes failed).
#[no_mangle]
pub extern "C" fn gc_graph_wrap(
    ctx: *mut gc_context,
    raw: *mut c_void,
    flags: gc_graph_wrap_flags,
    graph: *mut *mut gc_graph,
) -> gc_status {
    boundary("gc_graph_wrap", || {
        let out = Out::new(graph, "graph")?;
        if flags & !GC_GRAPH_WRAP_ADOPT != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags 0x{flags:x} (GC_GRAPH_WRAP_BORROW or GC_GRAPH_WRAP_ADOPT)"
            )));
        }
        let ctx = context(ctx)?;
        // SAFETY: the caller vouches for `raw` as documented.
        let g = unsafe { Graph::wrap_raw(&ctx, raw as _, flags == GC_GRAPH_WRAP_ADOPT) }?;
        out.set(GRAPHS.insert(g)? as *mut gc_graph);
        Ok(())
    })
}

/// Writes the number of nodes to *count. A captured graph's count is read
/// from CUDA by the first call that needs it (this one, or gc_exec_stats),
/// not when the capture ends.
/// Errors: common (GC_ERROR_CUDA: reading a captured graph's count failed),
/// and GC_ERROR_INVALID_STATE (body rules: see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_node_count(graph: *mut gc_graph, count: *mut usize) -> gc_status {
    boundary("gc_graph_node_count", || {
        let out = Out::new(count, "count")?;
        out.set(self::graph(graph, "graph")?.node_count()?);
        Ok(())
    })
}

/// Writes the underlying CUgraph (a cudaGraph_t) to *raw, for CUDA calls
/// graphcore does not wrap. graphcore still owns it: do not destroy it, and
/// add nodes only through graphcore (its description would go stale).
/// Errors: GC_ERROR_INVALID_ARGUMENT (graph or raw is NULL),
/// GC_ERROR_INVALID_HANDLE (graph destroyed), GC_ERROR_INVALID_STATE (body
/// rules: see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_raw(graph: *mut gc_graph, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_graph_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::graph(graph, "graph")?.raw()? as *mut c_void);
        Ok(())
    })
}

/// Writes the pool bytes the graph holds to *bytes: what its capture (and
/// its child graphs' captures) allocated from the pool and had not freed
/// when the capture ended. 0 for graphs without pool memory. Those blocks
/// are the caller's to free (Pool section).
/// Errors: GC_ERROR_INVALID_ARGUMENT (graph or bytes is NULL),
/// GC_ERROR_INVALID_HANDLE (graph destroyed).
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
/// The file is created or replaced.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (path is not UTF-8, or the
/// file cannot be written: the message gives the OS error), GC_ERROR_CUDA
/// (reading a captured graph's nodes back failed), GC_ERROR_INVALID_STATE
/// (body rules: see Conditional nodes).
#[no_mangle]
pub extern "C" fn gc_graph_write_dot(graph: *mut gc_graph, path: *const c_char) -> gc_status {
    boundary("gc_graph_write_dot", || {
        let p = crate::args::c_str(path, "path")?;
        self::graph(graph, "graph")?.write_dot(std::path::Path::new(p))
    })
}

/// Drops this handle; execs made from the graph keep what they need.
/// NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (graph already destroyed, or not a
/// graph).
#[no_mangle]
pub extern "C" fn gc_graph_destroy(graph: *mut gc_graph) -> gc_status {
    boundary("gc_graph_destroy", || {
        GRAPHS.remove(graph as u64, "graph")?;
        Ok(())
    })
}
