//! Executable graphs: instantiate once, upload, launch many times, update
//! parameters in place.

use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams, RawNode};
use crate::driver::owned::Owned;
use crate::driver::CUgraphExec;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::graph::fuse::{self, Fused};
use crate::graph::{Graph, GraphDesc, Node, NodeKind};
use crate::lock::lock;
use crate::stream::{Stream, StreamOp};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

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
    /// Fuse chains of graphcore's elementwise kernels into launches of the
    /// chain kernel before instantiating (see `graph::fuse`); results are
    /// bitwise equal to the unfused graph's.
    pub const FUSE_ELEMENTWISE: u32 = 8;
    /// Every flag this version knows.
    pub const ALL: u32 = UPLOAD | AUTO_FREE_ON_LAUNCH | USE_NODE_PRIORITY | FUSE_ELEMENTWISE;
}

/// An instantiated graph. Launching is lock-free and allocation-free;
/// launches of one exec may come from several threads but run one after
/// another on the device only if they share a stream.
#[derive(Clone)]
pub struct Exec {
    inner: Arc<ExecInner>,
}

/// Lock order: `current`, then `fused`, then `updated_from` (a thread
/// holding one of them takes only those after it); graph locks (the source's
/// or an update's) come after all of them.
struct ExecInner {
    /// Destroyed first (fields drop in order), before the graphs it runs.
    raw: Owned<CUgraphExec>,
    ctx: Context,
    /// The graph it was instantiated from (its nodes name the exec's nodes).
    source: Graph,
    /// The graph of the last update, kept alive for the memory it uses.
    updated_from: Mutex<Option<Graph>>,
    /// What each node does now (the source's description as instantiated,
    /// then each update's): lets an update skip nodes whose parameters stay
    /// the same. (Shared with the source until either changes, to keep
    /// instantiation lean.)
    current: Mutex<Arc<GraphDesc>>,
    /// The fused copy that was instantiated, when fusion applied.
    fused: Mutex<Option<Fused>>,
}

/// What an exec holds: node counts before and after fusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecStats {
    /// Nodes of the graph it was instantiated from.
    pub graph_nodes: usize,
    /// Nodes fusion removed.
    pub fused_away: usize,
    /// Nodes of the graph that was instantiated.
    pub instantiated_nodes: usize,
    /// Chains fused.
    pub chains: usize,
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
        graph.check_instantiable()?;
        let ctx = graph.context().clone();
        ctx.bind()?;
        let mut cuda = 0;
        if flags & flags::AUTO_FREE_ON_LAUNCH != 0 {
            cuda |= dg::flags::AUTO_FREE_ON_LAUNCH;
        }
        if flags & flags::USE_NODE_PRIORITY != 0 {
            cuda |= dg::flags::USE_NODE_PRIORITY;
        }
        // Fusion works on the top-level graph only: graphs with conditional
        // bodies are instantiated as they are.
        let fused = if flags & flags::FUSE_ELEMENTWISE != 0 && !graph.has_conditionals() {
            Fused::of(graph)?
        } else {
            None
        };
        // CUDA reads the graph while it instantiates it: under its lock,
        // with the description of the graph it instantiates.
        let (raw, desc) = match &fused {
            Some(f) => (dg::instantiate(f.raw(), cuda)?, f.source.clone()),
            None => {
                let st = graph.state();
                (dg::instantiate(st.raw(), cuda)?, st.desc.clone())
            }
        };
        graph.mark_instantiated();
        let exec = Exec {
            inner: Arc::new(ExecInner {
                raw: Owned::new(raw, ctx.primary()),
                ctx,
                source: graph.clone(),
                updated_from: Mutex::new(None),
                current: Mutex::new(desc),
                fused: Mutex::new(fused),
            }),
        };
        if flags & flags::UPLOAD != 0 {
            dg::upload(raw, std::ptr::null_mut())?;
        }
        Ok(exec)
    }

    /// The raw `CUgraphExec` (for interop; graphcore still owns it).
    pub fn raw(&self) -> CUgraphExec {
        self.inner.raw.raw()
    }

    /// What each node does now: the source's description as instantiated,
    /// until the first update or argument change.
    fn current(&self) -> MutexGuard<'_, Arc<GraphDesc>> {
        lock(&self.inner.current)
    }

    /// Node counts before and after fusion.
    pub fn stats(&self) -> ExecStats {
        let graph_nodes = self.current().len();
        match &*lock(&self.inner.fused) {
            Some(f) => ExecStats {
                graph_nodes,
                fused_away: f.plan.fused_away(),
                instantiated_nodes: f.desc.len(),
                chains: f.plan.chains.len(),
            },
            None => ExecStats {
                graph_nodes,
                fused_away: 0,
                instantiated_nodes: graph_nodes,
                chains: 0,
            },
        }
    }

    /// The graph that was instantiated (fused, if fusion applied), in DOT.
    pub fn to_dot(&self, name: &str) -> String {
        // One lock at a time: `fused` is released before `current` is taken
        // (see the lock order at `ExecInner`).
        if let Some(f) = &*lock(&self.inner.fused) {
            return crate::graph::to_dot(&f.desc, name);
        }
        crate::graph::to_dot(&self.current(), name)
    }

    /// The graph the exec was instantiated from.
    pub fn graph(&self) -> &Graph {
        &self.inner.source
    }

    /// Uploads the exec's work to the device on `stream` ahead of launch.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        self.inner.ctx.bind()?;
        stream.note(StreamOp::ExecUpload, dg::upload(self.raw(), stream.raw()))
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        ensure_arg!(
            stream.context().same(&self.inner.ctx),
            "the stream belongs to another context"
        );
        Ok(())
    }

    /// Launches the exec on `stream`: no allocation, no lock. The stream
    /// names the context, so no context is made current for a launch on a
    /// stream of graphcore's or a borrowed one (the legacy default stream,
    /// NULL, needs it).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        if stream.raw().is_null() {
            self.inner.ctx.bind()?;
        }
        stream.note(StreamOp::ExecLaunch, dg::launch(self.raw(), stream.raw()))
    }

    /// Updates the exec in place with `graph`'s parameters. `graph` must
    /// have the same topology (nodes of the same kinds, same edges); the
    /// first difference is named in the error and the exec is unchanged.
    /// When few nodes change, only they are set (CUDA's per-node exec
    /// setters); otherwise, or with child or other nodes, the whole graph
    /// goes through `cuGraphExecUpdate`.
    pub fn update(&self, graph: &Graph) -> Result<()> {
        ensure_arg!(
            graph.context().same(&self.inner.ctx),
            "the graph belongs to another context"
        );
        for (what, g) in [
            ("this exec's graph", &self.inner.source),
            ("the graph", graph),
        ] {
            ensure_arg!(
                !g.has_conditionals(),
                "{what} has conditional nodes: graphcore does not update execs with conditional \
                 bodies in place (instantiate the graph again); the exec is unchanged"
            );
        }
        let mut current = self.current();
        if lock(&self.inner.fused).is_some() {
            return self.update_fused(graph, Arc::make_mut(&mut current));
        }
        // The exec's record and the new graph are separate locks (the new
        // graph may be the source itself: its lock is taken only here).
        let (changed, new_nodes, whole) = {
            let st = graph.state();
            let theirs = &st.desc;
            if let Some(diff) = current.topology_difference(theirs) {
                return Err(Error::new(ErrorKind::UpdateMismatch, diff.to_string()));
            }
            let whole = (0..theirs.len())
                .any(|i| matches!(theirs.node(i), NodeKind::Child { .. } | NodeKind::Other(_)));
            let changed: Vec<(usize, NodeKind)> = (0..theirs.len())
                .filter(|&i| {
                    // Host callbacks and user kernels carry parameters the
                    // description does not record: always set them.
                    matches!(
                        theirs.node(i),
                        NodeKind::Host | NodeKind::Kernel { builtin: None, .. }
                    ) || current.node(i) != theirs.node(i)
                })
                .map(|i| (i, theirs.node(i).clone()))
                .collect();
            let nodes: Vec<_> = changed.iter().map(|(i, _)| st.nodes[*i]).collect();
            let whole = whole || changed.len() * 4 > theirs.len().max(4);
            (changed, nodes, whole)
        };
        self.inner.ctx.bind()?;
        if whole {
            self.update_whole(graph)?;
        } else {
            self.update_nodes(graph, &changed, &new_nodes)?;
        }
        let current = Arc::make_mut(&mut current);
        for (i, kind) in changed {
            current.set_node(i, kind);
        }
        *lock(&self.inner.updated_from) = Some(graph.clone());
        Ok(())
    }

    /// Sets the parameters of the `changed` nodes (read from `graph`'s
    /// `new_nodes`). Kernel functions must stay the same (checked before
    /// anything is set, so a refusal leaves the exec unchanged).
    fn update_nodes(
        &self,
        graph: &Graph,
        changed: &[(usize, NodeKind)],
        new_nodes: &[crate::driver::CUgraphNode],
    ) -> Result<()> {
        // Driver calls on a graph's nodes hold that graph's lock, one graph
        // at a time (`graph` may be the source itself).
        let reads: Vec<RawNode> = {
            let _graph = graph.state();
            new_nodes
                .iter()
                .map(|&n| dg::read_node(n))
                .collect::<Result<_>>()?
        };
        let source = self.inner.source.state();
        let source_nodes: Vec<_> = changed.iter().map(|(i, _)| source.nodes[*i]).collect();
        for (k, (i, kind)) in changed.iter().enumerate() {
            if let RawNode::Kernel { func, .. } = &reads[k] {
                let RawNode::Kernel { func: old, .. } = dg::read_node(source_nodes[k])? else {
                    unreachable!("same topology: node {i} is a kernel in both");
                };
                if *func != old {
                    let name = match kind {
                        NodeKind::Kernel { name, .. } => name.as_str(),
                        _ => "?",
                    };
                    return Err(Error::new(
                        ErrorKind::UpdateMismatch,
                        format!("node {i} launches another kernel ({name}); the exec is unchanged"),
                    ));
                }
            }
        }
        let ctx = self.inner.ctx.raw();
        let e = self.raw();
        let mut failed = None;
        for (k, raw) in reads.into_iter().enumerate() {
            let n = source_nodes[k];
            let r = match raw {
                RawNode::Kernel {
                    func,
                    grid,
                    block,
                    shared_bytes,
                    args,
                } => {
                    let p = KernelParams {
                        func,
                        grid,
                        block,
                        shared_bytes,
                        args,
                    };
                    // SAFETY: `args` is the driver's own copy for this node.
                    unsafe { dg::exec_set_kernel(e, n, &p) }
                }
                RawNode::Memcpy { dst, src, bytes } => {
                    dg::exec_set_memcpy(e, n, dst, src, bytes, ctx)
                }
                RawNode::Memset { dst, value, bytes } => {
                    dg::exec_set_memset(e, n, dst, value, bytes, ctx)
                }
                RawNode::Host { f, user_data } => dg::exec_set_host(e, n, f, user_data),
                RawNode::Empty | RawNode::Child(_) | RawNode::Other(_) => Ok(()),
            };
            if let Err(err) = r {
                failed = Some((k, err));
                break;
            }
        }
        drop(source);
        if let Some((k, err)) = failed {
            // Leave the exec consistent: try CUDA's whole-graph update.
            return self.update_whole(graph).map_err(|_| {
                err.context(&format!(
                    "node {}: the exec may be partly updated; update it again or re-instantiate",
                    changed[k].0
                ))
            });
        }
        Ok(())
    }

    /// `cuGraphExecUpdate` with the whole graph.
    fn update_whole(&self, graph: &Graph) -> Result<()> {
        let st = graph.state();
        self.update_raw(st.raw(), &st.nodes, &st.desc)
    }

    /// `cuGraphExecUpdate` with graph `raw` (whose nodes and description
    /// name the node CUDA blames).
    fn update_raw(
        &self,
        raw: crate::driver::CUgraph,
        nodes: &[crate::driver::CUgraphNode],
        desc: &GraphDesc,
    ) -> Result<()> {
        if let Err((e, refused)) = dg::exec_update(self.raw(), raw) {
            let Some(r) = refused else { return Err(e) };
            let at = nodes.iter().position(|&n| n == r.node);
            return Err(Error::new(
                ErrorKind::UpdateMismatch,
                match at {
                    Some(i) => format!(
                        "node {i} ({}): {}; the exec is unchanged",
                        desc.node(i).kind_name(),
                        r.reason
                    ),
                    None => format!("{}; the exec is unchanged", r.reason),
                },
            ));
        }
        Ok(())
    }

    /// Updates a fused exec: `graph` must fuse the same way (same chains,
    /// same number of launches each); its fused copy then updates the exec
    /// as a whole.
    fn update_fused(&self, graph: &Graph, current: &mut GraphDesc) -> Result<()> {
        if let Some(diff) = current.topology_difference(&graph.state().desc) {
            return Err(Error::new(ErrorKind::UpdateMismatch, diff.to_string()));
        }
        let mismatch = || {
            Error::new(
                ErrorKind::UpdateMismatch,
                "the graph fuses differently from the one this exec was instantiated from \
                 (other chains, or chains needing another number of launches); \
                 re-instantiate it; the exec is unchanged",
            )
        };
        let new = Fused::of(graph)?.ok_or_else(mismatch)?;
        // The graph as it was fused (it may have changed since the check).
        let theirs = &*new.source;
        if let Some(diff) = current.topology_difference(theirs) {
            return Err(Error::new(ErrorKind::UpdateMismatch, diff.to_string()));
        }
        let mut fused = lock(&self.inner.fused);
        let ours = fused.as_mut().expect("a fused exec");
        if !fuse::same_shape(&ours.plan, &new.plan) {
            return Err(mismatch());
        }
        self.inner.ctx.bind()?;
        self.update_raw(new.raw(), &new.nodes, &new.desc)?;
        ours.adopt(&new);
        *current = theirs.clone();
        *lock(&self.inner.updated_from) = Some(graph.clone());
        Ok(())
    }

    /// Sets new argument values for kernel node `node` (a node of the graph
    /// the exec was instantiated from); the values are copied now. In a
    /// fused exec, a node fused into a chain updates the chain kernel's
    /// program, as long as the chain stays the same (same buffers, count and
    /// number of launches); otherwise the error says to re-instantiate.
    ///
    /// # Safety
    /// `args` must hold one valid pointer per parameter of the node's
    /// kernel, each to a value of the parameter's type.
    pub unsafe fn set_kernel_args(&self, node: Node, args: *mut *mut c_void) -> Result<()> {
        let source = &self.inner.source;
        ensure_arg!(
            node.graph == source.id(),
            "`node` is not a node of the graph this exec was instantiated from (nodes inside \
             conditional bodies cannot be changed in an exec: set their arguments in the body \
             before instantiating, or pass device pointers whose contents change)"
        );
        let i = node.index as usize;
        let mut current = self.current();
        ensure_arg!(
            i < current.len(),
            "`node` {i} is not in this exec: the graph had {} nodes when it was instantiated",
            current.len()
        );
        ensure_arg!(
            matches!(current.node(i), NodeKind::Kernel { .. }),
            "node {i} is a {} node, not a kernel node",
            current.node(i).kind_name()
        );
        let (raw_node, read) = {
            let st = source.state();
            self.inner.ctx.bind()?;
            (st.nodes[i], dg::read_node(st.nodes[i])?)
        };
        let RawNode::Kernel {
            func,
            grid,
            block,
            shared_bytes,
            ..
        } = read
        else {
            unreachable!("node {i} is a kernel node");
        };
        // The node as it will be (built-ins only: their layout is known).
        let mut updated = current.node(i).clone();
        if let NodeKind::Kernel {
            builtin: Some(k),
            args: values,
            ..
        } = &mut updated
        {
            // SAFETY: one valid pointer per parameter of the node's kernel
            // (this function's contract).
            *values = unsafe { crate::graph::builtin_args(k, args) };
        }
        let mut fused = lock(&self.inner.fused);
        let exec_node = match fused.as_mut() {
            None => raw_node,
            Some(f) => {
                if let Some(c) = f.plan.chains.iter().position(|c| c.nodes.contains(&i)) {
                    return f.set_chain_args(
                        self.raw(),
                        Arc::make_mut(&mut current),
                        c,
                        i,
                        updated,
                    );
                }
                f.nodes[f.map[i].expect("a node outside chains is kept")]
            }
        };
        let params = KernelParams {
            func,
            grid,
            block,
            shared_bytes,
            args,
        };
        // The driver reads a node of the source under the source's lock (the
        // fused copy's nodes are under `fused`).
        let _source = fused.is_none().then(|| source.state());
        // SAFETY: as above; the driver copies the values.
        unsafe { dg::exec_set_kernel(self.raw(), exec_node, &params) }?;
        Arc::make_mut(&mut current).set_node(i, updated);
        Ok(())
    }
}
