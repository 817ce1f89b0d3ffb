//! Executable graphs: instantiate once, upload, launch many times, update
//! parameters in place.

use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams, RawNode};
use crate::driver::CUgraphExec;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::graph::{Graph, Node, NodeKind};
use crate::stream::Stream;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Options of [`Exec::new`], as bits.
pub mod flags {
    /// Upload the graph to the device while instantiating (on the legacy
    /// default stream), so the first launch costs no more than the next.
    pub const UPLOAD: u32 = 1;
    /// Free memory allocated by the graph's allocation nodes when it is
    /// launched again (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH).
    pub const AUTO_FREE_ON_LAUNCH: u32 = 2;
    /// Launch nodes in the order of their priorities
    /// (CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY).
    pub const USE_NODE_PRIORITY: u32 = 4;
    /// Every flag this version knows.
    pub const ALL: u32 = UPLOAD | AUTO_FREE_ON_LAUNCH | USE_NODE_PRIORITY;
}

/// An instantiated graph. Launching is lock-free and allocation-free;
/// launches of one exec may come from several threads but run one after
/// another on the device only if they share a stream.
#[derive(Clone)]
pub struct Exec {
    inner: Arc<ExecInner>,
}

struct ExecInner {
    ctx: Context,
    raw: CUgraphExec,
    /// The graph it was instantiated from (its nodes name the exec's nodes).
    source: Graph,
    /// The graph of the last update, kept alive for the memory it uses.
    updated_from: Mutex<Option<Graph>>,
}

// SAFETY: exec handles may be used from any thread; state is locked.
unsafe impl Send for ExecInner {}
// SAFETY: as above.
unsafe impl Sync for ExecInner {}

impl Drop for ExecInner {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            dg::exec_destroy(self.raw);
        }
    }
}

impl Exec {
    /// Instantiates `graph` with [`flags`]. An empty graph is refused.
    pub fn new(graph: &Graph, flags: u32) -> Result<Exec> {
        ensure_arg!(
            flags & !flags::ALL == 0,
            "unknown instantiate flags 0x{:x}",
            flags & !flags::ALL
        );
        ensure_arg!(graph.node_count() > 0, "the graph has no nodes");
        let ctx = graph.context().clone();
        ctx.bind()?;
        let mut cuda = 0;
        if flags & flags::AUTO_FREE_ON_LAUNCH != 0 {
            cuda |= dg::flags::AUTO_FREE_ON_LAUNCH;
        }
        if flags & flags::USE_NODE_PRIORITY != 0 {
            cuda |= dg::flags::USE_NODE_PRIORITY;
        }
        let raw = dg::instantiate(graph.inner.raw, cuda)?;
        let exec = Exec {
            inner: Arc::new(ExecInner {
                ctx,
                raw,
                source: graph.clone(),
                updated_from: Mutex::new(None),
            }),
        };
        if flags & flags::UPLOAD != 0 {
            dg::upload(raw, std::ptr::null_mut())?;
        }
        Ok(exec)
    }

    /// The raw `CUgraphExec` (for interop; graphcore still owns it).
    pub fn raw(&self) -> CUgraphExec {
        self.inner.raw
    }

    /// The graph the exec was instantiated from.
    pub fn graph(&self) -> &Graph {
        &self.inner.source
    }

    /// Uploads the exec's work to the device on `stream` ahead of launch.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.inner.ctx.bind()?;
        stream.note("gc_exec_upload", dg::upload(self.inner.raw, stream.raw()))
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        ensure_arg!(
            stream.context().same(&self.inner.ctx),
            "the stream belongs to another context"
        );
        Ok(())
    }

    /// Launches the exec on `stream`: no allocation, no lock.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.inner.ctx.bind()?;
        stream.note("gc_exec_launch", dg::launch(self.inner.raw, stream.raw()))
    }

    /// Updates the exec in place with `graph`'s parameters. `graph` must
    /// have the same topology (nodes of the same kinds, same edges); the
    /// first difference is named in the error and the exec is unchanged.
    pub fn update(&self, graph: &Graph) -> Result<()> {
        ensure_arg!(
            graph.context().same(&self.inner.ctx),
            "the graph belongs to another context"
        );
        let mismatch = |m: String| Err(Error::new(ErrorKind::UpdateMismatch, m));
        let ours = self.inner.source.desc();
        let theirs = graph.desc();
        if let Some(diff) = ours.topology_difference(&theirs) {
            return mismatch(diff);
        }
        self.inner.ctx.bind()?;
        if let Err((e, refused)) = dg::exec_update(self.inner.raw, graph.inner.raw) {
            let Some(r) = refused else { return Err(e) };
            let st = graph.state();
            let at = st.nodes.iter().position(|&n| n == r.node);
            return mismatch(match at {
                Some(i) => format!(
                    "node {i} ({}): {}; the exec is unchanged",
                    st.desc.node(i).kind_name(),
                    r.reason
                ),
                None => format!("{}; the exec is unchanged", r.reason),
            });
        }
        *self.inner.updated_from.lock().unwrap() = Some(graph.clone());
        Ok(())
    }

    /// Sets new argument values for kernel node `node` (a node of the graph
    /// the exec was instantiated from); the values are copied now.
    ///
    /// # Safety
    /// `args` must hold one valid pointer per parameter of the node's
    /// kernel, each to a value of the parameter's type.
    pub unsafe fn set_kernel_args(&self, node: Node, args: *mut *mut c_void) -> Result<()> {
        let source = &self.inner.source;
        ensure_arg!(
            node.graph == source.id(),
            "`node` is not a node of the graph this exec was instantiated from"
        );
        let st = source.state();
        let i = node.index as usize;
        ensure_arg!(i < st.desc.len(), "`node` {i} does not exist");
        ensure_arg!(
            matches!(st.desc.node(i), NodeKind::Kernel { .. }),
            "node {i} is a {} node, not a kernel node",
            st.desc.node(i).kind_name()
        );
        self.inner.ctx.bind()?;
        let RawNode::Kernel {
            func,
            grid,
            block,
            shared_bytes,
            ..
        } = dg::read_node(st.nodes[i])?
        else {
            unreachable!("node {i} is a kernel node");
        };
        let params = KernelParams {
            func,
            grid,
            block,
            shared_bytes,
            args,
        };
        dg::exec_set_kernel(self.inner.raw, st.nodes[i], &params)
    }
}
