//! CUDA graphs: creating nodes, reading captured ones back, instantiating,
//! uploading, launching and updating executable graphs.

use super::memory::Memset;
use super::{check, sys, CUcontext, CUfunction, CUgraph, CUgraphExec, CUgraphNode, CUstream};
use crate::error::{Error, ErrorKind, Result};
use crate::lock::lock;
use crate::timing::{timed, Span};
use std::ffi::c_void;
use std::sync::Mutex;

/// Held around every CUDA call on a graph, a node of one, or an executable
/// graph's nodes: creating, reading (node lists, edges, node parameters,
/// child graphs), changing, cloning, instantiating, updating and
/// destroying, and around the start of a capture into an existing graph
/// and the end of every capture (`cuStreamEndCapture` makes or finishes a
/// graph). Not around an exec's launch and upload, which CUDA orders
/// itself and which must stay cheap, nor around the launches a capture
/// records (graphcore makes no other call on a graph being captured into:
/// a capture into a body refuses every call on the body and its holders).
///
/// The rule: CUDA requires every call on one graph object to be
/// serialized, "including APIs which may appear to be read-only, such as
/// cuGraphClone and cuGraphInstantiate" (the driver API's "Graph object
/// thread safety"). The graph's own lock (`Graph::state`,
/// `Graph::described`) serializes graphcore's calls on one graph, but the
/// driver also shares state between a graph, its clones (fused copies, the
/// copies child-graph nodes hold) and the execs made from any of them:
/// destroying an exec of a graph while a clone of it and a graph holding a
/// copy of it were instantiated on two other threads crashed inside
/// cuGraphExecDestroy (driver 580, CUDA 13; `gpu::locking`). Such a family
/// can span many graphcore objects and grow after the fact, so every call
/// is made one at a time, process-wide: each is short, and the driver
/// serializes much of this work internally anyway.
///
/// What a read hands back that points into the driver's own storage (a
/// kernel node's parameter pointers) is valid only until the next call that
/// changes that node: it is read under this lock, by the caller's closure
/// ([`read_node_with`]), or used by a driver call made in the same hold
/// ([`exec_set_like`]); [`read_node`] hands back no such pointer.
static GRAPH_CALLS: Mutex<()> = Mutex::new(());

/// Makes `call`, a CUDA call on graphs or execs, holding [`GRAPH_CALLS`].
/// The lock is the innermost of graphcore: nothing is locked under it but
/// the built-in kernels' table (looked up by [`read_node_with`]'s callers),
/// which is never held around a graph call.
pub(super) fn serialized<T>(call: impl FnOnce() -> T) -> T {
    let _held = lock(&GRAPH_CALLS);
    call()
}

/// Creates an empty graph.
pub(crate) fn create() -> Result<CUgraph> {
    let mut g = std::ptr::null_mut();
    check(
        timed(Span::DriverGraphCreate, || {
            // SAFETY: writes one graph handle.
            serialized(|| unsafe { sys::cuGraphCreate(&mut g, 0) })
        }),
        "cuGraphCreate",
    )?;
    Ok(g)
}

/// Destroys a graph.
pub(crate) fn destroy(g: CUgraph) -> Result<()> {
    // SAFETY: g is a live graph destroyed once.
    check(
        serialized(|| unsafe { sys::cuGraphDestroy(g) }),
        "cuGraphDestroy",
    )
}

/// A kernel node's launch: function, geometry and parameter pointers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelParams {
    pub func: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: *mut *mut c_void,
}

fn kernel_raw(p: &KernelParams) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: p.func,
        gridDimX: p.grid[0],
        gridDimY: p.grid[1],
        gridDimZ: p.grid[2],
        blockDimX: p.block[0],
        blockDimY: p.block[1],
        blockDimZ: p.block[2],
        sharedMemBytes: p.shared_bytes,
        kernelParams: p.args,
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// Adds a kernel node. The driver copies the parameter values.
///
/// # Safety
/// `p.args` must hold one valid pointer per parameter of `p.func`.
pub(crate) unsafe fn add_kernel(
    g: CUgraph,
    deps: &[CUgraphNode],
    p: &KernelParams,
) -> Result<CUgraphNode> {
    let raw = kernel_raw(p);
    let mut n = std::ptr::null_mut();
    check(
        timed(Span::GraphCallsLock, || {
            serialized(|| {
                timed(Span::DriverAddKernel, || {
                    // SAFETY: `raw` and `deps` outlive the call; the argument
                    // pointers are valid by this function's contract, and
                    // the driver copies them.
                    unsafe {
                        sys::cuGraphAddKernelNode_v2(&mut n, g, deps.as_ptr(), deps.len(), &raw)
                    }
                })
            })
        }),
        "cuGraphAddKernelNode",
    )?;
    Ok(n)
}

fn memcpy_raw(dst: u64, src: u64, bytes: usize) -> sys::CUDA_MEMCPY3D {
    // Every field spelled out: the memory-type enums have no zero value.
    let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED;
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: unified,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: unified,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}

/// Adds a 1-D copy node between unified addresses (device or pinned host).
pub(crate) fn add_memcpy(
    g: CUgraph,
    deps: &[CUgraphNode],
    dst: u64,
    src: u64,
    bytes: usize,
    ctx: CUcontext,
) -> Result<CUgraphNode> {
    let c = memcpy_raw(dst, src, bytes);
    let mut n = std::ptr::null_mut();
    check(
        // SAFETY: reads the params; the addresses are checked by the caller.
        serialized(|| unsafe {
            sys::cuGraphAddMemcpyNode(&mut n, g, deps.as_ptr(), deps.len(), &c, ctx)
        }),
        "cuGraphAddMemcpyNode",
    )?;
    Ok(n)
}

/// The driver's parameters of memset `m` (one row).
fn memset_raw(m: &Memset) -> sys::CUDA_MEMSET_NODE_PARAMS {
    sys::CUDA_MEMSET_NODE_PARAMS {
        dst: m.dst,
        pitch: 0,
        value: m.value,
        elementSize: m.elem_size,
        width: m.count,
        height: 1,
    }
}

/// Adds a node running memset `m`.
pub(crate) fn add_memset(
    g: CUgraph,
    deps: &[CUgraphNode],
    m: &Memset,
    ctx: CUcontext,
) -> Result<CUgraphNode> {
    let p = memset_raw(m);
    let mut n = std::ptr::null_mut();
    check(
        // SAFETY: reads the params.
        serialized(|| unsafe {
            sys::cuGraphAddMemsetNode(&mut n, g, deps.as_ptr(), deps.len(), &p, ctx)
        }),
        "cuGraphAddMemsetNode",
    )?;
    Ok(n)
}

/// A host callback: `fn(user_data)`.
pub(crate) use super::HostFn;

/// Adds a node that calls `f(user_data)` on a CPU thread of the driver.
pub(crate) fn add_host(
    g: CUgraph,
    deps: &[CUgraphNode],
    f: HostFn,
    user_data: *mut c_void,
) -> Result<CUgraphNode> {
    let p = sys::CUDA_HOST_NODE_PARAMS {
        fn_: Some(f),
        userData: user_data,
    };
    let mut n = std::ptr::null_mut();
    check(
        // SAFETY: reads the params.
        serialized(|| unsafe { sys::cuGraphAddHostNode(&mut n, g, deps.as_ptr(), deps.len(), &p) }),
        "cuGraphAddHostNode",
    )?;
    Ok(n)
}

/// Adds a node running a copy of `child`.
pub(crate) fn add_child(g: CUgraph, deps: &[CUgraphNode], child: CUgraph) -> Result<CUgraphNode> {
    let mut n = std::ptr::null_mut();
    check(
        // SAFETY: child is a live graph; the driver clones it.
        serialized(|| unsafe {
            sys::cuGraphAddChildGraphNode(&mut n, g, deps.as_ptr(), deps.len(), child)
        }),
        "cuGraphAddChildGraphNode",
    )?;
    Ok(n)
}

/// Adds a node that does nothing (a join point).
pub(crate) fn add_empty(g: CUgraph, deps: &[CUgraphNode]) -> Result<CUgraphNode> {
    let mut n = std::ptr::null_mut();
    check(
        // SAFETY: writes one node handle.
        serialized(|| unsafe { sys::cuGraphAddEmptyNode(&mut n, g, deps.as_ptr(), deps.len()) }),
        "cuGraphAddEmptyNode",
    )?;
    Ok(n)
}

/// Adds the edge `from → to`.
pub(crate) fn add_dependency(g: CUgraph, from: CUgraphNode, to: CUgraphNode) -> Result<()> {
    check(
        // SAFETY: one edge between two nodes of g.
        serialized(|| unsafe { sys::cuGraphAddDependencies(g, &from, &to, 1) }),
        "cuGraphAddDependencies",
    )
}

/// The number of nodes of `g`.
pub(crate) fn node_count(g: CUgraph) -> Result<usize> {
    serialized(|| count_unserialized(g))
}

/// [`node_count`], for a caller holding [`GRAPH_CALLS`].
fn count_unserialized(g: CUgraph) -> Result<usize> {
    let mut n = 0usize;
    check(
        // SAFETY: with NULL, writes the count only.
        unsafe { sys::cuGraphGetNodes(g, std::ptr::null_mut(), &mut n) },
        "cuGraphGetNodes",
    )?;
    Ok(n)
}

/// True when `g` has a node: asks CUDA for one node, not for the count
/// (which costs a walk over every node).
pub(crate) fn has_nodes(g: CUgraph) -> Result<bool> {
    let mut one = [std::ptr::null_mut(); 1];
    let mut n = one.len();
    check(
        // SAFETY: `one` has room for `n` nodes; CUDA writes how many it
        // found (at most `n`) back to `n`.
        serialized(|| unsafe { sys::cuGraphGetNodes(g, one.as_mut_ptr(), &mut n) }),
        "cuGraphGetNodes",
    )?;
    Ok(n > 0)
}

/// Every node of `g` (count and list read in one hold of [`GRAPH_CALLS`]).
pub(crate) fn nodes(g: CUgraph) -> Result<Vec<CUgraphNode>> {
    serialized(|| nodes_unserialized(g))
}

/// [`nodes`], for a caller holding [`GRAPH_CALLS`].
fn nodes_unserialized(g: CUgraph) -> Result<Vec<CUgraphNode>> {
    let mut n = count_unserialized(g)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut v = vec![std::ptr::null_mut(); n];
    check(
        // SAFETY: v has room for n nodes.
        unsafe { sys::cuGraphGetNodes(g, v.as_mut_ptr(), &mut n) },
        "cuGraphGetNodes",
    )?;
    v.truncate(n);
    Ok(v)
}

/// Every edge of `g` as (from, to), for a caller holding [`GRAPH_CALLS`].
pub(super) fn edges_unserialized(g: CUgraph) -> Result<Vec<(CUgraphNode, CUgraphNode)>> {
    let mut n = 0usize;
    check(
        // SAFETY: with NULL arrays, writes the count only.
        unsafe { sys::cuGraphGetEdges(g, std::ptr::null_mut(), std::ptr::null_mut(), &mut n) },
        "cuGraphGetEdges",
    )?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut from = vec![std::ptr::null_mut(); n];
    let mut to = vec![std::ptr::null_mut(); n];
    check(
        // SAFETY: both arrays have room for n nodes.
        unsafe { sys::cuGraphGetEdges(g, from.as_mut_ptr(), to.as_mut_ptr(), &mut n) },
        "cuGraphGetEdges",
    )?;
    Ok(from.into_iter().zip(to).take(n).collect())
}

/// What a node of a graph (built or captured) is.
pub(crate) enum RawNode {
    /// A kernel node; `args` is the driver's copy of the parameter values,
    /// one pointer each, valid only while [`GRAPH_CALLS`] is held (inside
    /// [`read_node_with`]'s closure); NULL from [`read_node`].
    Kernel(KernelParams),
    Memcpy {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    Memset(Memset),
    Host {
        f: Option<HostFn>,
        user_data: *mut c_void,
    },
    /// A child-graph node: the graph it owns and that graph's node count.
    Child {
        graph: CUgraph,
        nodes: usize,
    },
    Empty,
    Other(&'static str),
}

/// Reads a node back (kind and parameters), without a kernel node's
/// parameter values (`args` is NULL: see [`read_node_with`]).
pub(crate) fn read_node(n: CUgraphNode) -> Result<RawNode> {
    serialized(|| {
        let mut raw = read_unserialized(n)?;
        if let RawNode::Kernel(p) = &mut raw {
            p.args = std::ptr::null_mut();
        }
        Ok(raw)
    })
}

/// Reads a node back and hands it to `use_it` while [`GRAPH_CALLS`] is
/// still held, so that `use_it` may read a kernel node's parameter values
/// through `args` (the driver's copy, which the next call changing the node
/// frees). `use_it` must make no call on a graph and take no lock that is
/// held around one.
pub(crate) fn read_node_with<T>(n: CUgraphNode, use_it: impl FnOnce(RawNode) -> T) -> Result<T> {
    serialized(|| Ok(use_it(read_unserialized(n)?)))
}

/// Sets node `n` of exec `e` (a node of the graph `e` was instantiated
/// from) to the parameters node `from` has now, read and set in one hold of
/// [`GRAPH_CALLS`] (a kernel node's parameter values are the driver's copy,
/// valid only inside it). Empty, child and other nodes are left as they
/// are.
pub(crate) fn exec_set_like(
    e: CUgraphExec,
    n: CUgraphNode,
    from: CUgraphNode,
    ctx: CUcontext,
) -> Result<()> {
    serialized(|| {
        let (r, name) = match read_unserialized(from)? {
            RawNode::Kernel(p) => {
                let raw = kernel_raw(&p);
                (
                    // SAFETY: `raw`'s parameter pointers are the driver's
                    // copy for `from`, valid in this hold; the driver copies
                    // the values.
                    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(e, n, &raw) },
                    "cuGraphExecKernelNodeSetParams",
                )
            }
            RawNode::Memcpy { dst, src, bytes } => {
                let c = memcpy_raw(dst, src, bytes);
                (
                    // SAFETY: n is a memcpy node of the graph e was made from.
                    unsafe { sys::cuGraphExecMemcpyNodeSetParams(e, n, &c, ctx) },
                    "cuGraphExecMemcpyNodeSetParams",
                )
            }
            RawNode::Memset(m) => {
                let p = memset_raw(&m);
                (
                    // SAFETY: n is a memset node of the graph e was made from.
                    unsafe { sys::cuGraphExecMemsetNodeSetParams(e, n, &p, ctx) },
                    "cuGraphExecMemsetNodeSetParams",
                )
            }
            RawNode::Host { f, user_data } => {
                let p = sys::CUDA_HOST_NODE_PARAMS {
                    fn_: f,
                    userData: user_data,
                };
                (
                    // SAFETY: n is a host node of the graph e was made from.
                    unsafe { sys::cuGraphExecHostNodeSetParams(e, n, &p) },
                    "cuGraphExecHostNodeSetParams",
                )
            }
            RawNode::Empty | RawNode::Child { .. } | RawNode::Other(_) => return Ok(()),
        };
        check(r, name)
    })
}

/// [`read_node`] with the parameter pointers, for a caller holding
/// [`GRAPH_CALLS`].
fn read_unserialized(n: CUgraphNode) -> Result<RawNode> {
    use sys::CUgraphNodeType as T;
    // Read as a plain integer: drivers newer than the 12.0 bindings report
    // types the Rust enum has no variant for (conditional nodes are 13).
    let mut raw_type: u32 = T::CU_GRAPH_NODE_TYPE_EMPTY as u32;
    check(
        // SAFETY: writes the node's type, a C enum (4 bytes), into a u32.
        unsafe { sys::cuGraphNodeGetType(n, (&mut raw_type as *mut u32).cast()) },
        "cuGraphNodeGetType",
    )?;
    let is = |k: T| raw_type == k as u32;
    Ok(match raw_type {
        _ if is(T::CU_GRAPH_NODE_TYPE_KERNEL) => {
            // SAFETY: a plain C struct filled by the driver.
            let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
            check(
                // SAFETY: n is a kernel node.
                unsafe { sys::cuGraphKernelNodeGetParams_v2(n, &mut p) },
                "cuGraphKernelNodeGetParams",
            )?;
            let mut func = p.func;
            if func.is_null() && !p.kern.is_null() {
                // A launch of a library kernel (CUkernel, as the runtime
                // makes for lazily loaded modules): its function in the
                // current context.
                check(
                    // SAFETY: writes one function handle of a live kernel.
                    unsafe { sys::cuKernelGetFunction(&mut func, p.kern) },
                    "cuKernelGetFunction",
                )?;
            }
            RawNode::Kernel(KernelParams {
                func,
                grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                shared_bytes: p.sharedMemBytes,
                args: p.kernelParams,
            })
        }
        _ if is(T::CU_GRAPH_NODE_TYPE_MEMCPY) => {
            let mut c = memcpy_raw(0, 0, 0);
            check(
                // SAFETY: n is a memcpy node.
                unsafe { sys::cuGraphMemcpyNodeGetParams(n, &mut c) },
                "cuGraphMemcpyNodeGetParams",
            )?;
            let addr = |t: sys::CUmemorytype, host: u64, dev: u64| {
                if t == sys::CUmemorytype::CU_MEMORYTYPE_HOST {
                    host
                } else {
                    dev
                }
            };
            RawNode::Memcpy {
                dst: addr(c.dstMemoryType, c.dstHost as u64, c.dstDevice),
                src: addr(c.srcMemoryType, c.srcHost as u64, c.srcDevice),
                bytes: c.WidthInBytes * c.Height.max(1) * c.Depth.max(1),
            }
        }
        _ if is(T::CU_GRAPH_NODE_TYPE_MEMSET) => {
            // SAFETY: a plain C struct filled by the driver.
            let mut p: sys::CUDA_MEMSET_NODE_PARAMS = unsafe { std::mem::zeroed() };
            check(
                // SAFETY: n is a memset node.
                unsafe { sys::cuGraphMemsetNodeGetParams(n, &mut p) },
                "cuGraphMemsetNodeGetParams",
            )?;
            RawNode::Memset(Memset {
                dst: p.dst,
                value: p.value,
                elem_size: p.elementSize,
                count: p.width * p.height.max(1),
            })
        }
        _ if is(T::CU_GRAPH_NODE_TYPE_HOST) => {
            let mut p = sys::CUDA_HOST_NODE_PARAMS {
                fn_: None,
                userData: std::ptr::null_mut(),
            };
            check(
                // SAFETY: n is a host node.
                unsafe { sys::cuGraphHostNodeGetParams(n, &mut p) },
                "cuGraphHostNodeGetParams",
            )?;
            RawNode::Host {
                f: p.fn_,
                user_data: p.userData,
            }
        }
        _ if is(T::CU_GRAPH_NODE_TYPE_GRAPH) => {
            let mut child = std::ptr::null_mut();
            check(
                // SAFETY: n is a child-graph node.
                unsafe { sys::cuGraphChildGraphNodeGetGraph(n, &mut child) },
                "cuGraphChildGraphNodeGetGraph",
            )?;
            RawNode::Child {
                graph: child,
                nodes: count_unserialized(child)?,
            }
        }
        _ if is(T::CU_GRAPH_NODE_TYPE_EMPTY) => RawNode::Empty,
        _ if is(T::CU_GRAPH_NODE_TYPE_WAIT_EVENT) => RawNode::Other("event wait"),
        _ if is(T::CU_GRAPH_NODE_TYPE_EVENT_RECORD) => RawNode::Other("event record"),
        _ if is(T::CU_GRAPH_NODE_TYPE_MEM_ALLOC) => RawNode::Other("memory allocation"),
        _ if is(T::CU_GRAPH_NODE_TYPE_MEM_FREE) => RawNode::Other("memory free"),
        13 => RawNode::Other("conditional"),
        _ => RawNode::Other("other"),
    })
}

/// Instantiate flags as CUDA defines them.
pub(crate) mod flags {
    /// CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.
    pub const AUTO_FREE_ON_LAUNCH: u64 = 1;
    /// CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.
    pub const USE_NODE_PRIORITY: u64 = 8;
}

/// Why an instantiation failed, as CUDA tells
/// (`cuGraphInstantiateWithParams`' result info): its reason, and the node
/// it blames (NULL when it names none).
pub(crate) struct InstantiateRefused {
    pub reason: Option<&'static str>,
    pub node: CUgraphNode,
}

/// CUDA's words for an instantiate result (`CUgraphInstantiateResult`);
/// `None` for success or a value these bindings do not know.
pub(crate) fn instantiate_reason(result: u32) -> Option<&'static str> {
    Some(match result {
        1 => "CUDA_GRAPH_INSTANTIATE_ERROR (an unexpected error; the call's result says more)",
        2 => {
            "CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE (the graph has a cycle, or a structure \
              CUDA cannot instantiate)"
        }
        3 => {
            "CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED (a node's operation is not \
              supported in a graph of this kind, e.g. device-side launches or memory nodes \
              mixed with operations that exclude them)"
        }
        4 => {
            "CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED (the nodes belong to more \
              than one context)"
        }
        5 => {
            "CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED (a conditional handle is not \
              used by any conditional node)"
        }
        _ => return None,
    })
}

/// Instantiates `g` with CUDA instantiate `flags`
/// (`cuGraphInstantiateWithParams`, whose result info names the node CUDA
/// blames on failure).
pub(crate) fn instantiate(
    g: CUgraph,
    flags: u64,
) -> std::result::Result<CUgraphExec, (Error, InstantiateRefused)> {
    let mut e = std::ptr::null_mut();
    // SAFETY: a plain C struct filled by the driver.
    let mut params: sys::CUDA_GRAPH_INSTANTIATE_PARAMS = unsafe { std::mem::zeroed() };
    params.flags = flags;
    let r = serialized(|| {
        timed(Span::DriverInstantiate, || {
            // SAFETY: writes one exec handle and the params' out fields.
            unsafe { sys::cuGraphInstantiateWithParams(&mut e, g, &mut params) }
        })
    });
    match check(r, "cuGraphInstantiateWithParams") {
        Ok(()) => Ok(e),
        Err(err) => Err((
            err,
            InstantiateRefused {
                reason: instantiate_reason(params.result_out as u32),
                node: params.hErrNode_out,
            },
        )),
    }
}

/// Destroys an executable graph.
pub(crate) fn exec_destroy(e: CUgraphExec) -> Result<()> {
    // SAFETY: e is a live exec destroyed once.
    check(
        serialized(|| unsafe { sys::cuGraphExecDestroy(e) }),
        "cuGraphExecDestroy",
    )
}

/// Uploads `e`'s work descriptors to the device ahead of its first launch.
pub(crate) fn upload(e: CUgraphExec, s: CUstream) -> Result<()> {
    // SAFETY: live exec and stream.
    check(unsafe { sys::cuGraphUpload(e, s) }, "cuGraphUpload")
}

/// Launches `e` on `s`.
pub(crate) fn launch(e: CUgraphExec, s: CUstream) -> Result<()> {
    // SAFETY: live exec and stream.
    check(
        timed(Span::DriverGraphLaunch, || unsafe {
            sys::cuGraphLaunch(e, s)
        }),
        "cuGraphLaunch",
    )
}

/// Why an update was refused: CUDA's reason and the node it blames.
pub(crate) struct UpdateRefused {
    pub reason: &'static str,
    pub node: CUgraphNode,
}

/// Updates `e` in place with the parameters of `g` (same topology).
pub(crate) fn exec_update(
    e: CUgraphExec,
    g: CUgraph,
) -> std::result::Result<(), (Error, Option<UpdateRefused>)> {
    use sys::CUgraphExecUpdateResult as U;
    // SAFETY: a plain C struct filled by the driver.
    let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
    let r = serialized(|| {
        timed(Span::DriverUpdate, || {
            // SAFETY: live exec and graph; `info` is written once.
            unsafe { sys::cuGraphExecUpdate_v2(e, g, &mut info) }
        })
    });
    match check(r, "cuGraphExecUpdate") {
        Ok(()) => Ok(()),
        Err(err) => {
            let reason = match info.result {
                U::CU_GRAPH_EXEC_UPDATE_SUCCESS => return Err((err, None)),
                U::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => "the topology changed",
                U::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => "a node's type changed",
                U::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => "a kernel's function changed",
                U::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
                    "a parameter CUDA cannot update changed"
                }
                U::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => "the change is not supported",
                U::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
                    "the kernel changed in a way CUDA cannot update"
                }
                U::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => "a node's attributes changed",
                U::CU_GRAPH_EXEC_UPDATE_ERROR => "the update failed",
            };
            let e = Error::from_cuda(ErrorKind::UpdateMismatch, r as u32, err.message());
            Err((
                e,
                Some(UpdateRefused {
                    reason,
                    node: info.errorNode,
                }),
            ))
        }
    }
}

/// Sets new parameters for kernel node `n` of `e` (the node of the graph
/// `e` was instantiated from).
///
/// # Safety
/// `p.args` must hold one valid pointer per parameter of `p.func`.
pub(crate) unsafe fn exec_set_kernel(
    e: CUgraphExec,
    n: CUgraphNode,
    p: &KernelParams,
) -> Result<()> {
    let raw = kernel_raw(p);
    check(
        // SAFETY: `raw` outlives the call; the argument pointers are valid by
        // this function's contract, and the driver copies them.
        serialized(|| unsafe { sys::cuGraphExecKernelNodeSetParams_v2(e, n, &raw) }),
        "cuGraphExecKernelNodeSetParams",
    )
}

/// Sets new parameters for copy node `n` of `e`.
pub(crate) fn exec_set_memcpy(
    e: CUgraphExec,
    n: CUgraphNode,
    dst: u64,
    src: u64,
    bytes: usize,
    ctx: CUcontext,
) -> Result<()> {
    let c = memcpy_raw(dst, src, bytes);
    check(
        // SAFETY: n is a memcpy node of the graph e was made from.
        serialized(|| unsafe { sys::cuGraphExecMemcpyNodeSetParams(e, n, &c, ctx) }),
        "cuGraphExecMemcpyNodeSetParams",
    )
}

/// Sets new parameters for memset node `n` of `e`.
pub(crate) fn exec_set_memset(
    e: CUgraphExec,
    n: CUgraphNode,
    m: &Memset,
    ctx: CUcontext,
) -> Result<()> {
    let p = memset_raw(m);
    check(
        // SAFETY: n is a memset node of the graph e was made from.
        serialized(|| unsafe { sys::cuGraphExecMemsetNodeSetParams(e, n, &p, ctx) }),
        "cuGraphExecMemsetNodeSetParams",
    )
}

/// A copy of graph `g` (nodes, parameters and edges).
pub(crate) fn clone(g: CUgraph) -> Result<CUgraph> {
    let mut c = std::ptr::null_mut();
    check(
        // SAFETY: writes one graph handle.
        serialized(|| unsafe { sys::cuGraphClone(&mut c, g) }),
        "cuGraphClone",
    )?;
    Ok(c)
}

/// The node of clone `c` that copies node `n` of the original graph.
pub(crate) fn find_in_clone(n: CUgraphNode, c: CUgraph) -> Result<CUgraphNode> {
    let mut out = std::ptr::null_mut();
    check(
        // SAFETY: n is a node of the graph c was cloned from.
        serialized(|| unsafe { sys::cuGraphNodeFindInClone(&mut out, n, c) }),
        "cuGraphNodeFindInClone",
    )?;
    Ok(out)
}

/// Sets new launch parameters of kernel node `n` of a (not instantiated)
/// graph.
///
/// # Safety
/// `p.args` must hold one valid pointer per parameter of `p.func`.
pub(crate) unsafe fn set_kernel(n: CUgraphNode, p: &KernelParams) -> Result<()> {
    let raw = kernel_raw(p);
    check(
        // SAFETY: `raw` outlives the call; the argument pointers are valid by
        // this function's contract, and the driver copies them.
        serialized(|| unsafe { sys::cuGraphKernelNodeSetParams_v2(n, &raw) }),
        "cuGraphKernelNodeSetParams",
    )
}

/// Removes node `n` and its edges from its graph.
pub(crate) fn destroy_node(n: CUgraphNode) -> Result<()> {
    // SAFETY: n is a node of a live graph.
    check(
        serialized(|| unsafe { sys::cuGraphDestroyNode(n) }),
        "cuGraphDestroyNode",
    )
}

/// Sets new parameters for copy node `n` of a (not instantiated) graph.
pub(crate) fn set_memcpy(n: CUgraphNode, dst: u64, src: u64, bytes: usize) -> Result<()> {
    let c = memcpy_raw(dst, src, bytes);
    check(
        // SAFETY: n is a memcpy node of a live graph; reads the params.
        serialized(|| unsafe { sys::cuGraphMemcpyNodeSetParams(n, &c) }),
        "cuGraphMemcpyNodeSetParams",
    )
}

/// Sets new parameters for memset node `n` of a (not instantiated) graph.
pub(crate) fn set_memset(n: CUgraphNode, m: &Memset) -> Result<()> {
    let p = memset_raw(m);
    check(
        // SAFETY: n is a memset node of a live graph; reads the params.
        serialized(|| unsafe { sys::cuGraphMemsetNodeSetParams(n, &p) }),
        "cuGraphMemsetNodeSetParams",
    )
}

/// Sets child-graph node `n` of `e` to run graph `g` (same topology as
/// the child it was instantiated with).
pub(crate) fn exec_set_child(e: CUgraphExec, n: CUgraphNode, g: CUgraph) -> Result<()> {
    check(
        // SAFETY: live exec, its child node and a live graph (read only).
        serialized(|| unsafe { sys::cuGraphExecChildGraphNodeSetParams(e, n, g) }),
        "cuGraphExecChildGraphNodeSetParams",
    )
}

/// `cuFuncGetParamInfo`, looked up at run time (drivers of CUDA 12.4 and
/// later have it; the baseline bindings are CUDA 12.0).
type ParamInfoFn = unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> sys::CUresult;

fn param_info_fn() -> Option<ParamInfoFn> {
    static F: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let addr = *F.get_or_init(|| {
        let mut pfn = std::ptr::null_mut();
        // SAFETY: a plain C enum the driver overwrites.
        let mut status: sys::CUdriverProcAddressQueryResult = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name; writes one function pointer.
        let r = unsafe {
            sys::cuGetProcAddress_v2(
                c"cuFuncGetParamInfo".as_ptr(),
                &mut pfn,
                12040,
                0,
                &mut status,
            )
        };
        (r == sys::CUresult::CUDA_SUCCESS && !pfn.is_null()).then_some(pfn as usize)
    });
    // SAFETY: the driver's address of cuFuncGetParamInfo, whose C signature
    // is `ParamInfoFn`.
    addr.map(|a| unsafe { std::mem::transmute::<usize, ParamInfoFn>(a) })
}

/// Each parameter's (offset, size) in `f`'s parameter buffer, in order;
/// `None` when the driver cannot tell (older than CUDA 12.4).
pub(crate) fn param_layout(f: CUfunction) -> Option<Vec<(usize, usize)>> {
    let get = param_info_fn()?;
    let mut out = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a live function; writes two sizes, or fails past the last
        // parameter.
        let r = unsafe { get(f, out.len(), &mut offset, &mut size) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Some(out);
        }
        out.push((offset, size));
    }
}
