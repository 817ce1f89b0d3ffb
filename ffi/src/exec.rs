//! Executable graphs: instantiate, upload, launch, update.
//!
//! Thread safety: gc_exec_launch may be called from several threads at
//! once, on the same or different execs, without locks or allocation;
//! gc_exec_update and gc_exec_set_kernel_args must not race with a launch
//! of the same exec; gc_exec_destroy must not race with other calls on it.

use crate::args::Out;
use crate::graph::{gc_graph, gc_node, graph};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream, STREAMS};
use graphcore_core::{instantiate_flags, Exec};
use std::ffi::c_void;

/// An instantiated, launchable graph.
pub struct gc_exec;

pub(crate) static EXECS: Registry<Exec> = Registry::new(7, "gc_exec");

fn exec(h: *mut gc_exec) -> graphcore_core::Result<Exec> {
    EXECS.get(h as u64, "exec")
}

/// gc_graph_instantiate flag: upload the graph to the device while
/// instantiating, so the first launch is as cheap as the next.
pub const GC_INSTANTIATE_UPLOAD: u32 = 1;
/// gc_graph_instantiate flag: CUDA's AUTO_FREE_ON_LAUNCH (for graphs with
/// memory allocation nodes).
pub const GC_INSTANTIATE_AUTO_FREE_ON_LAUNCH: u32 = 2;
/// gc_graph_instantiate flag: launch nodes in the order of their priority.
pub const GC_INSTANTIATE_USE_NODE_PRIORITY: u32 = 4;

const _: () = assert!(
    GC_INSTANTIATE_UPLOAD == instantiate_flags::UPLOAD
        && GC_INSTANTIATE_AUTO_FREE_ON_LAUNCH == instantiate_flags::AUTO_FREE_ON_LAUNCH
        && GC_INSTANTIATE_USE_NODE_PRIORITY == instantiate_flags::USE_NODE_PRIORITY
);

/// Instantiates `graph` (flags: GC_INSTANTIATE_*, or 0). An empty graph or
/// an unknown flag is GC_ERROR_INVALID_ARGUMENT. The exec keeps the graph's
/// functions and pool memory alive; the graph handle may be destroyed.
#[no_mangle]
pub extern "C" fn gc_graph_instantiate(
    graph: *mut gc_graph,
    flags: u32,
    exec: *mut *mut gc_exec,
) -> gc_status {
    boundary("gc_graph_instantiate", || {
        let out = Out::new(exec, "exec")?;
        let e = Exec::new(&self::graph(graph, "graph")?, flags)?;
        out.set(EXECS.insert(e)? as *mut gc_exec);
        Ok(())
    })
}

/// Uploads the exec's work to the device on `stream` ahead of its first
/// launch.
#[no_mangle]
pub extern "C" fn gc_exec_upload(exec: *mut gc_exec, stream: *mut gc_stream) -> gc_status {
    boundary("gc_exec_upload", || {
        self::exec(exec)?.upload(&self::stream(stream, "stream")?)
    })
}

/// Launches the exec on `stream` (any stream of its context). No heap
/// allocation and no lock another thread's launch could wait on.
#[no_mangle]
pub extern "C" fn gc_exec_launch(exec: *mut gc_exec, stream: *mut gc_stream) -> gc_status {
    boundary("gc_exec_launch", || {
        EXECS.with(exec as u64, "exec", |e| {
            STREAMS.with(stream as u64, "stream", |s| e.launch(s))
        })
    })
}

/// Updates the exec in place with the parameters of `graph`, a graph of
/// the same topology (same node kinds in the same order, same edges). A
/// different topology is GC_ERROR_UPDATE_MISMATCH naming the first
/// differing node; the exec is unchanged and stays usable.
#[no_mangle]
pub extern "C" fn gc_exec_update(exec: *mut gc_exec, graph: *mut gc_graph) -> gc_status {
    boundary("gc_exec_update", || {
        self::exec(exec)?.update(&self::graph(graph, "graph")?)
    })
}

/// Sets new argument values (as gc_launch takes them; copied now) for the
/// kernel node `node` of the graph the exec was instantiated from.
#[no_mangle]
pub extern "C" fn gc_exec_set_kernel_args(
    exec: *mut gc_exec,
    node: gc_node,
    args: *mut *mut c_void,
) -> gc_status {
    boundary("gc_exec_set_kernel_args", || {
        let e = self::exec(exec)?;
        // SAFETY: the caller passes one pointer per parameter, as documented.
        unsafe { e.set_kernel_args(node.into(), args) }
    })
}

/// Writes the underlying CUgraphExec (a cudaGraphExec_t) to *raw, for CUDA
/// calls graphcore does not wrap. graphcore still owns it: do not destroy it.
#[no_mangle]
pub extern "C" fn gc_exec_raw(exec: *mut gc_exec, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_exec_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::exec(exec)?.raw() as *mut c_void);
        Ok(())
    })
}

/// Destroys the exec (work already launched completes). NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_exec_destroy(exec: *mut gc_exec) -> gc_status {
    boundary("gc_exec_destroy", || {
        EXECS.remove(exec as u64, "exec")?;
        Ok(())
    })
}
