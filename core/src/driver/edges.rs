//! Edges that carry data (CUDA 12.3): the programmatic dependent launch
//! edges between kernel nodes, added and read back.
//!
//! cudarc is pinned to the CUDA 12.0 API, which has neither the entry points
//! nor `CUgraphEdgeData`: the type is declared here as cuda.h (12.3)
//! declares it, and the functions are resolved at run time (as in
//! conditional.rs), only when the driver has them.

use super::graph::{edges_unserialized, serialized};
use super::{check, resolve, sys, CUgraph, CUgraphNode};
use crate::error::Result;
use std::ffi::c_void;
use std::sync::OnceLock;

/// `CUgraphEdgeData` (cuda.h 12.3): the port the edge leaves its source
/// through, the port it enters its target through, and its type.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct EdgeData {
    from_port: u8,
    to_port: u8,
    type_: u8,
    reserved: [u8; 5],
}

/// `CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC`.
const TYPE_PROGRAMMATIC: u8 = 1;

/// `cuGraphAddDependencies_v2(CUgraph, const CUgraphNode *from, const
/// CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t n)`.
type AddFn = unsafe extern "C" fn(
    CUgraph,
    *const CUgraphNode,
    *const CUgraphNode,
    *const EdgeData,
    usize,
) -> sys::CUresult;

/// `cuGraphGetEdges_v2(CUgraph, CUgraphNode *from, CUgraphNode *to,
/// CUgraphEdgeData *edgeData, size_t *numEdges)`.
type GetFn = unsafe extern "C" fn(
    CUgraph,
    *mut CUgraphNode,
    *mut CUgraphNode,
    *mut EdgeData,
    *mut usize,
) -> sys::CUresult;

/// The driver entry points, resolved once.
struct Api {
    add: AddFn,
    get: GetFn,
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<Result<Api>> = OnceLock::new();
    API.get_or_init(|| {
        let add = resolve(c"cuGraphAddDependencies", 12030)?;
        let get = resolve(c"cuGraphGetEdges", 12030)?;
        // SAFETY: each pointer is the driver's entry point of the named
        // function for CUDA 12.3's ABI (the _v2 forms), whose C signature
        // the types above spell out.
        unsafe {
            Ok(Api {
                add: std::mem::transmute::<*mut c_void, AddFn>(add),
                get: std::mem::transmute::<*mut c_void, GetFn>(get),
            })
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Whether the driver has CUDA 12.3's edge calls (programmatic edges).
pub(crate) fn programmatic_edges() -> bool {
    api().is_ok()
}

/// Adds the programmatic edge `from -> to` leaving `from` through `port`
/// (1: `CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC`, 2: `..._LAUNCH_ORDER`).
/// A driver older than CUDA 12.3 is `NotSupported`.
pub(crate) fn add_programmatic(
    g: CUgraph,
    from: CUgraphNode,
    to: CUgraphNode,
    port: u8,
) -> Result<()> {
    let add = api()?.add;
    let data = EdgeData {
        from_port: port,
        type_: TYPE_PROGRAMMATIC,
        ..EdgeData::default()
    };
    check(
        // SAFETY: one edge between two nodes of g, with its data.
        serialized(|| unsafe { add(g, &from, &to, &data, 1) }),
        "cuGraphAddDependencies_v2",
    )
}

/// Every edge of `g` as (from, to, port): the port a programmatic edge
/// leaves its source through, 0 for a full edge. Without CUDA 12.3 every
/// edge is a full one. Count and list are read in one hold of the
/// graph-call lock (reads are calls on the graph too).
pub(crate) fn all(g: CUgraph) -> Result<Vec<(CUgraphNode, CUgraphNode, u8)>> {
    serialized(|| all_unserialized(g))
}

/// [`all`], holding the graph-call lock.
fn all_unserialized(g: CUgraph) -> Result<Vec<(CUgraphNode, CUgraphNode, u8)>> {
    let Ok(api) = api() else {
        return Ok(edges_unserialized(g)?
            .into_iter()
            .map(|(f, t)| (f, t, 0))
            .collect());
    };
    let mut n = 0usize;
    let null = std::ptr::null_mut();
    check(
        // SAFETY: with NULL arrays, writes the count only.
        unsafe { (api.get)(g, null, null, std::ptr::null_mut(), &mut n) },
        "cuGraphGetEdges_v2",
    )?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut from = vec![std::ptr::null_mut(); n];
    let mut to = vec![std::ptr::null_mut(); n];
    let mut data = vec![EdgeData::default(); n];
    check(
        // SAFETY: the three arrays have room for n edges.
        unsafe {
            (api.get)(
                g,
                from.as_mut_ptr(),
                to.as_mut_ptr(),
                data.as_mut_ptr(),
                &mut n,
            )
        },
        "cuGraphGetEdges_v2",
    )?;
    Ok(from
        .into_iter()
        .zip(to)
        .zip(data)
        .take(n)
        .map(|((f, t), d)| {
            (
                f,
                t,
                if d.type_ == TYPE_PROGRAMMATIC {
                    d.from_port
                } else {
                    0
                },
            )
        })
        .collect())
}
