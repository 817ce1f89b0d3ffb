//! Conditional nodes (CUDA 12.3: IF and WHILE; 12.8: IF/ELSE and SWITCH),
//! their handles, and capture into an existing graph (12.3).
//!
//! cudarc is pinned to the CUDA 12.0 API, whose bindings have none of these
//! symbols or types. The few types are declared here as cuda.h (12.8)
//! declares them, and the functions are resolved at run time with
//! `cuGetProcAddress` for the ABI of the CUDA version that introduced them,
//! only after the driver's version says it has them ([`require`]). Nothing
//! here is linked against a newer API than the driver offers.

use super::stream::CaptureMode;
use super::{check, resolve, sys, CUcontext, CUgraph, CUgraphNode, CUstream};
use crate::error::{Error, Result};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;

/// `CUgraphConditionalHandle` (cuda.h: `typedef cuuint64_t`).
pub(crate) type CondHandle = u64;

/// What a conditional node does with its bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CondType {
    /// Runs body 0 once when the condition is non-zero.
    If,
    /// Runs body 0 when the condition is non-zero, body 1 when it is zero.
    IfElse,
    /// Runs body 0 again and again while the condition is non-zero.
    While,
    /// Runs body n when the condition is n (none when it is >= the number
    /// of bodies).
    Switch,
}

impl CondType {
    /// The CUDA version (cuDriverGetVersion form) that added the type.
    pub fn needs(self) -> i32 {
        match self {
            CondType::If | CondType::While => 12030,
            CondType::IfElse | CondType::Switch => 12080,
        }
    }

    /// The name used in messages and DOT ("IF", "IF/ELSE", ...).
    pub fn name(self) -> &'static str {
        match self {
            CondType::If => "IF",
            CondType::IfElse => "IF/ELSE",
            CondType::While => "WHILE",
            CondType::Switch => "SWITCH",
        }
    }

    /// cuda.h `CUgraphConditionalNodeType`: IF = 0, WHILE = 1, SWITCH = 2
    /// (IF/ELSE is IF with two bodies).
    fn raw(self) -> c_uint {
        match self {
            CondType::If | CondType::IfElse => 0,
            CondType::While => 1,
            CondType::Switch => 2,
        }
    }
}

/// cuda.h `CU_GRAPH_COND_ASSIGN_DEFAULT`: the default value is assigned at
/// every launch.
pub(crate) const ASSIGN_DEFAULT: c_uint = 1;

/// cuda.h `CU_GRAPH_NODE_TYPE_CONDITIONAL`.
const NODE_TYPE_CONDITIONAL: c_int = 13;

/// cuda.h (12.8) `CUDA_CONDITIONAL_NODE_PARAMS`:
/// `{ CUgraphConditionalHandle handle; CUgraphConditionalNodeType type;
/// unsigned int size; CUgraph *phGraph_out; CUcontext ctx; }` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct ConditionalParams {
    handle: CondHandle,
    type_: c_uint,
    size: c_uint,
    graphs_out: *mut CUgraph,
    ctx: CUcontext,
}

/// cuda.h (12.8) `CUgraphNodeParams`: `{ CUgraphNodeType type; int
/// reserved0[3]; union { long long reserved1[29]; ...;
/// CUDA_CONDITIONAL_NODE_PARAMS conditional; }; long long reserved2; }`
/// (256 bytes; unused bytes must be zero).
#[repr(C)]
struct NodeParams {
    type_: c_int,
    reserved0: [c_int; 3],
    conditional: ConditionalParams,
    reserved1: [i64; 29 - 4],
    reserved2: i64,
}

const _: () = assert!(std::mem::size_of::<ConditionalParams>() == 32);
const _: () = assert!(std::mem::size_of::<NodeParams>() == 256);

/// `cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out,
/// CUgraph hGraph, CUcontext ctx, unsigned int defaultLaunchValue,
/// unsigned int flags)` (12.3).
type HandleCreateFn =
    unsafe extern "C" fn(*mut CondHandle, CUgraph, CUcontext, c_uint, c_uint) -> sys::CUresult;
/// `cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const
/// CUgraphNode *dependencies, size_t numDependencies, CUgraphNodeParams
/// *nodeParams)` (12.2 ABI).
type AddNodeFn = unsafe extern "C" fn(
    *mut CUgraphNode,
    CUgraph,
    *const CUgraphNode,
    usize,
    *mut NodeParams,
) -> sys::CUresult;
/// `cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const
/// CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t
/// numDependencies, CUstreamCaptureMode mode)` (12.3).
type CaptureToGraphFn = unsafe extern "C" fn(
    CUstream,
    CUgraph,
    *const CUgraphNode,
    *const c_void,
    usize,
    sys::CUstreamCaptureMode,
) -> sys::CUresult;

/// The driver entry points, resolved once.
struct Api {
    handle_create: HandleCreateFn,
    add_node: AddNodeFn,
    capture_to_graph: CaptureToGraphFn,
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, Error>> = OnceLock::new();
    API.get_or_init(|| {
        let create = resolve(c"cuGraphConditionalHandleCreate", 12030)?;
        let add = resolve(c"cuGraphAddNode", 12020)?;
        let capture = resolve(c"cuStreamBeginCaptureToGraph", 12030)?;
        // SAFETY: each pointer is the driver's entry point of the named
        // function for the ABI of the version asked, whose C signature the
        // types above spell out (cuda.h).
        unsafe {
            Ok(Api {
                handle_create: std::mem::transmute::<*mut c_void, HandleCreateFn>(create),
                add_node: std::mem::transmute::<*mut c_void, AddNodeFn>(add),
                capture_to_graph: std::mem::transmute::<*mut c_void, CaptureToGraphFn>(capture),
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Checks that a driver of version `have` runs conditional nodes of type
/// `t` (pure: tested for every version without such drivers).
pub(crate) fn check_version(have: i32, t: CondType) -> Result<()> {
    super::require_version(have, t.needs(), &format!("a {} conditional node", t.name()))
}

/// Checks the running driver for `t`.
pub(crate) fn require(t: CondType) -> Result<()> {
    check_version(super::driver_version()?, t)
}

/// Creates a conditional handle of graph `g` in `ctx`.
pub(crate) fn handle_create(
    g: CUgraph,
    ctx: CUcontext,
    default_value: u32,
    flags: c_uint,
) -> Result<CondHandle> {
    require(CondType::If)?;
    let mut h = 0;
    check(
        {
            let create = api()?.handle_create;
            // SAFETY: writes one handle; g and ctx are live.
            super::graph::serialized(|| unsafe { create(&mut h, g, ctx, default_value, flags) })
        },
        "cuGraphConditionalHandleCreate",
    )?;
    Ok(h)
}

/// Adds a conditional node of type `t` with `bodies` bodies; returns the
/// node and the body graphs CUDA made (owned by the node's graph).
pub(crate) fn add(
    g: CUgraph,
    deps: &[CUgraphNode],
    handle: CondHandle,
    t: CondType,
    bodies: u32,
    ctx: CUcontext,
) -> Result<(CUgraphNode, Vec<CUgraph>)> {
    require(t)?;
    let mut out = vec![std::ptr::null_mut(); bodies as usize];
    let mut p = NodeParams {
        type_: NODE_TYPE_CONDITIONAL,
        reserved0: [0; 3],
        conditional: ConditionalParams {
            handle,
            type_: t.raw(),
            size: bodies,
            graphs_out: std::ptr::null_mut(),
            ctx,
        },
        reserved1: [0; 25],
        reserved2: 0,
    };
    let mut n = std::ptr::null_mut();
    check(
        {
            let add = api()?.add_node;
            // SAFETY: `p` is a zero-padded CUgraphNodeParams; deps outlive
            // the call. The driver writes phGraph_out: a pointer to its own
            // array of `size` graphs, valid while the node lives.
            // The bodies are copied out of the driver's array in the same
            // hold (the array is the driver's, as a read's results are).
            super::graph::serialized(|| {
                // SAFETY: as above.
                let r = unsafe { add(&mut n, g, deps.as_ptr(), deps.len(), &mut p) };
                let graphs = p.conditional.graphs_out;
                if r == sys::CUresult::CUDA_SUCCESS && !graphs.is_null() {
                    // SAFETY: the driver's array holds `bodies` graphs.
                    let s = unsafe { std::slice::from_raw_parts(graphs, bodies as usize) };
                    out.copy_from_slice(s);
                }
                r
            })
        },
        "cuGraphAddNode",
    )?;
    Ok((n, out))
}

/// Begins capturing `s` into the existing graph `g` (appending to it).
pub(crate) fn begin_capture_into(s: CUstream, g: CUgraph, mode: CaptureMode) -> Result<()> {
    require(CondType::If)?;
    let mode = mode.raw();
    check(
        {
            let begin = api()?.capture_to_graph;
            // SAFETY: live stream and graph; no dependencies. A call on
            // the graph: under the graph-call lock.
            super::graph::serialized(|| unsafe {
                begin(s, g, std::ptr::null(), std::ptr::null(), 0, mode)
            })
        },
        "cuStreamBeginCaptureToGraph",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn each_type_names_the_cuda_version_it_needs() {
        for (t, old, new, text) in [
            (CondType::If, 12020, 12030, "needs CUDA 12.3"),
            (CondType::While, 12000, 12030, "needs CUDA 12.3"),
            (CondType::IfElse, 12060, 12080, "needs CUDA 12.8"),
            (CondType::Switch, 12030, 12080, "needs CUDA 12.8"),
        ] {
            let e = check_version(old, t).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.message().contains(text), "{}", e.message());
            assert!(e.message().contains(t.name()), "{}", e.message());
            check_version(new, t).unwrap();
            check_version(13000, t).unwrap();
        }
    }
}
