//! Executable graphs: instantiate once, upload, launch many times, update
//! parameters in place.

use crate::arg::{ArgDecl, Binding, Need};
use crate::bind::{ArgTable, UseWhat};
use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams, RawNode};
use crate::driver::owned::Owned;
use crate::driver::{CUgraphExec, CUgraphNode};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::graph::fuse::{self, Fused};
use crate::graph::{Graph, GraphDesc, GraphState, Node, NodeKind};
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

/// What a use of a declared argument is (see [`Exec::arg_use_list`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgUseKind {
    /// A kernel parameter.
    Kernel,
    /// A copy's destination.
    MemcpyDst,
    /// A copy's source.
    MemcpySrc,
    /// A memset's destination.
    Memset,
}

/// One use of a declared argument an exec found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgUse {
    /// The node's index in the graph the exec was instantiated from (its
    /// DOT id `n{node}`); `usize::MAX` for a fused chain's kernel.
    pub node: usize,
    /// Whether the use is inside the child graph that node `node` runs.
    pub nested: bool,
    /// What it is.
    pub kind: ArgUseKind,
    /// The kernel's name, for a kernel use.
    pub kernel: Option<Arc<str>>,
    /// A kernel use's byte offset in the kernel's parameter buffer (0
    /// otherwise).
    pub offset: usize,
    /// The used address's offset from the argument's first address.
    pub delta: u64,
}

/// An instantiated graph. Launching is lock-free and allocation-free;
/// launches of one exec may come from several threads but run one after
/// another on the device only if they share a stream.
#[derive(Clone)]
pub struct Exec {
    inner: Arc<ExecInner>,
}

/// Lock order: `current`, then `fused`, then `args` (a thread holding one
/// of them takes only those after it); graph locks (the source's or an
/// update's) come after all of them.
struct ExecInner {
    /// Destroyed first (fields drop in order), before the graphs it runs.
    raw: Owned<CUgraphExec>,
    ctx: Context,
    /// The graph it was instantiated from (its nodes name the exec's nodes).
    source: Graph,
    /// What the exec runs now, and the graph it was last updated from: one
    /// lock, which an update holds throughout.
    current: Mutex<Now>,
    /// The fused copy that was instantiated, when fusion applied (boxed,
    /// as `args`: an exec without them is small to make).
    fused: Mutex<Option<Box<Fused>>>,
    /// Whether `fused` holds a copy: fixed at instantiation (an update
    /// changes the copy, never whether there is one), so asking takes no
    /// lock.
    is_fused: bool,
    /// The declared arguments' uses and bindings (`None`: the graph
    /// declared none, and launches never lock).
    args: Option<Box<Mutex<ArgTable>>>,
}

/// What an exec runs now (behind its `current` lock).
struct Now {
    /// What each node does (the source's description as instantiated, then
    /// each update's): lets an update skip nodes whose parameters stay the
    /// same. (Shared with the source until either changes, or read back
    /// from a captured graph only when needed, to keep instantiation and
    /// update lean.)
    does: Current,
    /// The graph of the last update, kept alive for the memory it uses.
    updated_from: Option<Graph>,
}

/// What each node of an exec does now.
enum Current {
    /// This description.
    Known(Arc<GraphDesc>),
    /// What the graph the exec last took its work from did as captured:
    /// the last update's graph, or the source (see [`Now::graph`]), a
    /// captured graph not read back yet, read back when first needed (see
    /// [`Graph::captured_desc`]).
    AsCaptured,
}

impl Current {
    /// What the graph whose locked state is `st` does now (the caller
    /// makes that graph the one [`Now::graph`] names).
    fn of(st: &mut GraphState) -> Current {
        match st.stood_on() {
            Some(d) => Current::Known(d),
            None => Current::AsCaptured,
        }
    }
}

impl Now {
    /// The graph the exec last took its work from: the last update's, or
    /// `source`, the one it was instantiated from.
    fn graph<'a>(&'a self, source: &'a Graph) -> &'a Graph {
        self.updated_from.as_ref().unwrap_or(source)
    }

    /// Number of nodes (a captured graph's count is read from CUDA if no
    /// call has read it yet). Takes the graph's lock: call it holding no
    /// graph lock.
    fn len(&self, source: &Graph) -> Result<usize> {
        match &self.does {
            Current::Known(d) => Ok(d.len()),
            Current::AsCaptured => self.graph(source).captured_count(),
        }
    }

    /// The description, read back now if it was not. Takes the graph's
    /// lock: call it holding no graph lock.
    fn known(&mut self, source: &Graph) -> Result<&mut Arc<GraphDesc>> {
        if let Current::AsCaptured = self.does {
            self.does = Current::Known(self.graph(source).captured_desc()?);
        }
        match &mut self.does {
            Current::Known(d) => Ok(d),
            Current::AsCaptured => unreachable!("read back above"),
        }
    }
}

/// The nodes an update sets one by one: each one's index and new
/// description, and the new graph's CUDA nodes, in the same order.
struct NodeUpdates {
    changed: Vec<(usize, NodeKind)>,
    new_nodes: Vec<CUgraphNode>,
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
        Self::instantiate(graph.clone(), flags)
    }

    /// [`new`](Self::new), keeping `graph` (a clone the caller made for
    /// this) as the graph the exec was instantiated from.
    pub fn instantiate(graph: Graph, flags: u32) -> Result<Exec> {
        ensure_arg!(
            flags & !flags::ALL == 0,
            "unknown instantiate flags 0x{:x}",
            flags & !flags::ALL
        );
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
        // bodies are instantiated as they are. An empty graph fuses nothing.
        let fused = if flags & flags::FUSE_ELEMENTWISE != 0 && !graph.has_conditionals() {
            Fused::of(&graph)?.map(Box::new)
        } else {
            None
        };
        // CUDA reads the graph while it instantiates it: under its lock,
        // with the description of the graph it instantiates.
        // The arguments' uses are found in the graph that is instantiated,
        // under its lock (the fused copy is ours alone); a captured graph
        // that declares arguments is read back for them now.
        let table = |decls: &[ArgDecl], nodes: &[CUgraphNode]| {
            (!decls.is_empty())
                .then(|| ArgTable::new(&ctx, decls, nodes, nodes).map(|t| Box::new(Mutex::new(t))))
                .transpose()
        };
        let (raw, current, args) = match &fused {
            Some(f) => {
                let decls = graph.args();
                let raw = dg::instantiate(f.raw(), cuda)
                    .map_err(|r| not_instantiated(r, &f.nodes, &f.desc))?;
                (
                    raw,
                    Current::Known(f.source.clone()),
                    table(&decls, &f.nodes),
                )
            }
            None => {
                // Checked under the lock the instantiation takes (one lock).
                let mut st = graph.state()?;
                ensure_arg!(!st.is_empty()?, "the graph has no nodes");
                if st.args.is_empty() {
                    let raw = match dg::instantiate(st.raw(), cuda) {
                        Ok(raw) => raw,
                        Err(r) => {
                            // Cold: the nodes are read back to name the one
                            // CUDA blames.
                            drop(st);
                            return Err(match graph.described() {
                                Ok(d) => not_instantiated(r, d.nodes(), d.desc()),
                                Err(_) => not_instantiated(r, &[], &GraphDesc::default()),
                            });
                        }
                    };
                    (raw, Current::of(&mut st), Ok(None))
                } else {
                    drop(st);
                    let st = graph.described()?;
                    let raw = dg::instantiate(st.raw(), cuda)
                        .map_err(|r| not_instantiated(r, st.nodes(), st.desc()))?;
                    let args = table(st.args(), st.nodes());
                    (raw, Current::Known(st.desc().clone()), args)
                }
            }
        };
        // Owned from here: a failed search destroys the exec.
        let owned = Owned::new(raw, ctx.primary());
        let args = args?;
        graph.mark_instantiated();
        let exec = Exec {
            inner: Arc::new(ExecInner {
                raw: owned,
                ctx,
                source: graph,
                current: Mutex::new(Now {
                    does: current,
                    updated_from: None,
                }),
                is_fused: fused.is_some(),
                fused: Mutex::new(fused),
                args,
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

    /// What the exec runs now: the source's description as instantiated,
    /// until the first update or argument change.
    fn current(&self) -> MutexGuard<'_, Now> {
        lock(&self.inner.current)
    }

    /// Node counts before and after fusion.
    pub fn stats(&self) -> Result<ExecStats> {
        let graph_nodes = self.current().len(&self.inner.source)?;
        Ok(match &*lock(&self.inner.fused) {
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
        })
    }

    /// The graph that was instantiated (fused, if fusion applied), in DOT.
    pub fn to_dot(&self, name: &str) -> Result<String> {
        // One lock at a time: `fused` is released before `current` is taken
        // (see the lock order at `ExecInner`).
        if let Some(f) = &*lock(&self.inner.fused) {
            return Ok(crate::graph::to_dot(&f.desc, name));
        }
        Ok(crate::graph::to_dot(
            self.current().known(&self.inner.source)?,
            name,
        ))
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
        self.inner
            .ctx
            .ensure_same("the exec", stream.context(), "the stream")?;
        Ok(())
    }

    /// Launches the exec on `stream`: no allocation; no lock unless its
    /// graph declares arguments (then the argument lock, so that the
    /// launch runs with one whole set of bindings, never a set another
    /// thread is patching in). The stream names the context, so no context
    /// is made current for a launch on a stream of graphcore's or a
    /// borrowed one (the legacy default stream, NULL, needs it).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        match &self.inner.args {
            None => self.enqueue(stream),
            Some(table) => {
                let _bindings = lock(table);
                self.enqueue(stream)
            }
        }
    }

    /// Enqueues a launch (the caller holds the argument lock, if any).
    #[inline]
    fn enqueue(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        if stream.raw().is_null() {
            self.inner.ctx.bind()?;
        }
        stream.note(StreamOp::ExecLaunch, dg::launch(self.raw(), stream.raw()))
    }

    /// Binds arguments to new ranges (see [`crate::arg`]), patching only the
    /// nodes whose values change, then launches the exec on `stream`.
    /// Bindings persist: later launches (with or without bindings) use
    /// them. Bad bindings (unknown index, NULL, host memory, memory of
    /// another device, a range smaller than declared) are
    /// [`ErrorKind::InvalidArgument`] naming the binding, and the exec is
    /// unchanged. A binding affects the launches after it; a launch already
    /// enqueued runs with the addresses it was launched with. No heap
    /// allocation. The exec's argument lock is held from the binding to
    /// the launch's enqueue: launches from several threads, with or
    /// without bindings, each run with one whole set of bindings.
    pub fn launch_with(&self, stream: &Stream, bindings: &[Binding]) -> Result<()> {
        self.launch_with_for(stream, bindings, None)
    }

    /// [`launch_with`](Self::launch_with) where binding a range argument
    /// `i` declared as `d` needs `need(i, d)` bytes instead of its
    /// declared size, if `need` is given (an exact-size replay binds fewer
    /// rows than a runner's bucket declared: see
    /// [`Runner::replay_exact`](crate::Runner::replay_exact)). The caller
    /// answers for the launch reading no more than that.
    pub(crate) fn launch_with_for(
        &self,
        stream: &Stream,
        bindings: &[Binding],
        need: Option<Need<'_>>,
    ) -> Result<()> {
        if bindings.is_empty() {
            return self.launch(stream);
        }
        self.check_stream(stream)?;
        let Some(table) = &self.inner.args else {
            return Err(Error::invalid_argument(
                "the exec's graph declares no arguments: nothing can be bound",
            ));
        };
        let fused = lock(&self.inner.fused);
        let mut t = lock(table);
        // The setters name nodes of the graph that was instantiated: the
        // source's (under its lock, taken before anything changes) or the
        // fused copy's (under `fused`).
        let source = fused
            .is_none()
            .then(|| self.inner.source.state())
            .transpose()?;
        if t.prepare_for(bindings, need)? {
            t.apply(self.raw())?;
        }
        drop(source);
        drop(fused);
        self.enqueue(stream)
    }

    /// Number of arguments the exec's graph declared.
    pub fn arg_count(&self) -> usize {
        self.inner.args.as_ref().map_or(0, |t| lock(t).len())
    }

    /// How many uses of argument `index` were found in the exec's nodes
    /// (child graphs' included): 0 means binding it changes nothing.
    pub fn arg_uses(&self, index: usize) -> Result<usize> {
        match &self.inner.args {
            Some(t) => lock(t).uses(index),
            None => Err(Error::invalid_argument(format!(
                "argument {index} is not declared: the exec's graph declares none"
            ))),
        }
    }

    /// Every use of argument `index` the exec found (as [`Exec::arg_uses`]
    /// counts them), in node order: the node, what it is, the kernel's
    /// name and where in its parameters. A caller checks the scan found
    /// what it expected and nothing else.
    pub fn arg_use_list(&self, index: usize) -> Result<Vec<ArgUse>> {
        let Some(table) = &self.inner.args else {
            return Err(Error::invalid_argument(format!(
                "argument {index} is not declared: the exec's graph declares none"
            )));
        };
        // The lock order: `fused`, the table, then the source.
        let fused = lock(&self.inner.fused);
        let t = lock(table);
        let mut found = Vec::new();
        t.each_use(index, |u| found.push(u))?;
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let source = self.inner.source.described()?;
        // The node's index in the source graph and its description.
        let node_of = |n: CUgraphNode| -> (usize, Option<NodeKind>) {
            match fused.as_ref() {
                None => match source.nodes().iter().position(|&s| s == n) {
                    Some(i) => (i, Some(source.desc().node(i).clone())),
                    None => (usize::MAX, None),
                },
                Some(f) => match f.nodes.iter().position(|&s| s == n) {
                    Some(fi) => (
                        f.map
                            .iter()
                            .position(|&m| m == Some(fi))
                            .unwrap_or(usize::MAX),
                        Some(f.desc.node(fi).clone()),
                    ),
                    None => (usize::MAX, None),
                },
            }
        };
        let ctx = &self.inner.ctx;
        Ok(found
            .into_iter()
            .map(|u| {
                let (node, desc) = node_of(u.node);
                let (kind, kernel) = match u.what {
                    UseWhat::Kernel(func) => {
                        let name = match (&desc, u.nested) {
                            (Some(NodeKind::Kernel { name, .. }), false) => name.clone(),
                            _ => ctx.builtin_of(func).map_or_else(
                                || {
                                    crate::driver::module::func_name(func)
                                        .unwrap_or_else(|| format!("kernel@{func:p}"))
                                        .into()
                                },
                                |k| k.name.into(),
                            ),
                        };
                        (ArgUseKind::Kernel, Some(name))
                    }
                    UseWhat::MemcpyDst => (ArgUseKind::MemcpyDst, None),
                    UseWhat::MemcpySrc => (ArgUseKind::MemcpySrc, None),
                    UseWhat::Memset => (ArgUseKind::Memset, None),
                };
                ArgUse {
                    node,
                    nested: u.nested,
                    kind,
                    kernel,
                    offset: u.offset,
                    delta: u.delta,
                }
            })
            .collect())
    }

    /// After an update: the arguments' uses found again by `values` (in
    /// the nodes whose parameters the exec now has, read under their
    /// graph's lock and named as the exec's setters name them), and the
    /// current bindings set in them, under the source's lock when the
    /// setters name the source's nodes (`source_nodes`). `t` is the exec's
    /// argument table, locked before any graph lock (the lock order).
    fn rebind_after_update(
        &self,
        t: &mut ArgTable,
        values: impl FnOnce(&[ArgDecl]) -> Result<ArgTable>,
        source_nodes: bool,
    ) -> Result<()> {
        let moved = t.moved();
        let mut new = values(t.decls())?;
        if new.prepare(&moved)? {
            let _source = source_nodes
                .then(|| self.inner.source.state())
                .transpose()?;
            new.apply(self.raw())?;
        }
        *t = new;
        Ok(())
    }

    /// Updates the exec in place with `graph`'s parameters. `graph` must
    /// have the same topology (nodes of the same kinds, same edges); the
    /// first difference is named in the error and the exec is unchanged.
    /// When few nodes change, only they are set (CUDA's per-node exec
    /// setters); otherwise, with child or other nodes, or when either side
    /// is a captured graph not read back (reading it costs more than CUDA's
    /// own comparison), the whole graph goes through `cuGraphExecUpdate`.
    pub fn update(&self, graph: &Graph) -> Result<()> {
        self.inner
            .ctx
            .ensure_same("the exec", graph.context(), "the graph")?;
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
        let mut now = self.current();
        if self.inner.is_fused {
            self.update_fused(graph, Arc::make_mut(now.known(&self.inner.source)?))?;
            now.updated_from = Some(graph.clone());
            return Ok(());
        }
        // The exec's record and the new graph are separate locks (the new
        // graph may be the source itself: its lock is taken only here).
        let mut st = graph.state()?;
        let by_node = match (&now.does, st.if_read()) {
            (Current::Known(ours), Some((theirs, nodes))) => {
                Self::plan_update(ours, theirs, nodes)?
            }
            _ => None,
        };
        self.inner.ctx.bind()?;
        match by_node {
            Some(NodeUpdates { changed, new_nodes }) => {
                drop(st);
                self.update_nodes(graph, &changed, &new_nodes)?;
                let current = Arc::make_mut(now.known(&self.inner.source)?);
                for (i, kind) in changed {
                    current.set_node(i, kind);
                }
            }
            // The whole graph, under its lock (CUDA reads it), which also
            // gives what the exec does from now on. The lock is released
            // here: rebinding arguments below locks the argument table
            // first, then the graph again.
            None => {
                let updated = dg::exec_update(self.raw(), st.raw());
                // What `graph` does: `updated_from` names it just below.
                if updated.is_ok() {
                    now.does = Current::of(&mut st);
                }
                drop(st);
                if let Err(failed) = updated {
                    return Err(self.update_refused(graph, &mut now, failed));
                }
            }
        }
        now.updated_from = Some(graph.clone());
        if let Some(table) = &self.inner.args {
            // The exec has the graph's values now: find the uses in them.
            let exec_nodes: Vec<CUgraphNode> = self.inner.source.described()?.nodes().to_vec();
            let ctx = &self.inner.ctx;
            let values = |decls: &[ArgDecl]| {
                let st = graph.described()?;
                ArgTable::new(ctx, decls, st.nodes(), &exec_nodes)
            };
            self.rebind_after_update(&mut lock(table), values, true)
                .map_err(|e| {
                    e.context("the exec was updated but its arguments could not be rebound")
                })?;
        }
        Ok(())
    }

    /// Compares the exec's description `ours` with the new graph's
    /// `theirs` (whose CUDA nodes are `nodes`): the nodes to set one by one,
    /// or `None` when the whole graph should go through `cuGraphExecUpdate`
    /// (many nodes change, or child or other nodes are there). A topology
    /// difference is refused.
    fn plan_update(
        ours: &GraphDesc,
        theirs: &GraphDesc,
        nodes: &[CUgraphNode],
    ) -> Result<Option<NodeUpdates>> {
        if let Some(diff) = ours.topology_difference(theirs) {
            return Err(Error::new(ErrorKind::UpdateMismatch, diff.to_string()));
        }
        let n = theirs.len();
        if (0..n).any(|i| matches!(theirs.node(i), NodeKind::Child { .. } | NodeKind::Other(_))) {
            return Ok(None);
        }
        // Host callbacks and user kernels carry parameters the description
        // does not record: always set them.
        let changes = |i: &usize| {
            matches!(
                theirs.node(*i),
                NodeKind::Host | NodeKind::Kernel { builtin: None, .. }
            ) || ours.node(*i) != theirs.node(*i)
        };
        // Count first: a whole update needs no copies of the changes.
        if (0..n).filter(changes).count() * 4 > n.max(4) {
            return Ok(None);
        }
        let changed: Vec<(usize, NodeKind)> = (0..n)
            .filter(changes)
            .map(|i| (i, theirs.node(i).clone()))
            .collect();
        let new_nodes = changed.iter().map(|(i, _)| nodes[*i]).collect();
        Ok(Some(NodeUpdates { changed, new_nodes }))
    }

    /// Sets the parameters of the `changed` nodes (read from `graph`'s
    /// `new_nodes`). A kernel node may launch another function of the
    /// context, as CUDA's whole-graph update lets it (and its node setter).
    fn update_nodes(
        &self,
        graph: &Graph,
        changed: &[(usize, NodeKind)],
        new_nodes: &[CUgraphNode],
    ) -> Result<()> {
        // Driver calls on a graph's nodes hold that graph's lock, one graph
        // at a time (`graph` may be the source itself): the source's nodes
        // are looked up first; each new node is then read and its values
        // set in the exec under `graph`'s lock, in one hold of the
        // graph-call lock (a kernel node's values are the driver's copy,
        // valid only there).
        let source_nodes: Vec<CUgraphNode> = {
            let source = self.inner.source.described()?;
            changed.iter().map(|(i, _)| source.nodes()[*i]).collect()
        };
        let ctx = self.inner.ctx.raw();
        let e = self.raw();
        let mut failed = None;
        {
            let _graph = graph.state()?;
            for (k, &from) in new_nodes.iter().enumerate() {
                if let Err(err) = dg::exec_set_like(e, source_nodes[k], from, ctx) {
                    failed = Some((k, err));
                    break;
                }
            }
        }
        if let Some((k, err)) = failed {
            // Leave the exec consistent: try CUDA's whole-graph update.
            let st = graph.state()?;
            return dg::exec_update(self.raw(), st.raw()).map_err(|_| {
                err.context(&format!(
                    "node {}: the exec may be partly updated; update it again or re-instantiate",
                    changed[k].0
                ))
            });
        }
        Ok(())
    }

    /// The error of a failed `cuGraphExecUpdate` with the whole of `graph`
    /// (called holding no graph lock): a refusal names the first topology
    /// difference from what the exec runs now (`now`), else the node CUDA blames (reading
    /// descriptions back only then).
    #[cold]
    fn update_refused(
        &self,
        graph: &Graph,
        now: &mut Now,
        (e, refused): (Error, Option<dg::UpdateRefused>),
    ) -> Error {
        let Some(r) = refused else { return e };
        // Ours first: it may be `graph`'s own description, read under the
        // graph's lock, which must not be held then.
        let ours = match now.known(&self.inner.source) {
            Ok(d) => d.clone(),
            Err(e) => return e,
        };
        let st = match graph.described() {
            Ok(st) => st,
            Err(e) => return e,
        };
        if let Some(diff) = ours.topology_difference(st.desc()) {
            return Error::new(ErrorKind::UpdateMismatch, diff.to_string());
        }
        refusal(&r, st.nodes(), st.desc())
    }

    /// Updates a fused exec: `graph` must fuse the same way (same chains,
    /// same number of launches each); its fused copy then updates the exec
    /// as a whole.
    fn update_fused(&self, graph: &Graph, current: &mut GraphDesc) -> Result<()> {
        if let Some(diff) = current.topology_difference(graph.described()?.desc()) {
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
        dg::exec_update(self.raw(), new.raw()).map_err(|(e, refused)| match refused {
            Some(r) => refusal(&r, &new.nodes, &new.desc),
            None => e,
        })?;
        ours.adopt(&new)
            .map_err(|e| e.context("the exec was updated but its fused copy could not follow"))?;
        if let Some(table) = &self.inner.args {
            let ctx = &self.inner.ctx;
            let values = |decls: &[ArgDecl]| ArgTable::new(ctx, decls, &new.nodes, &ours.nodes);
            self.rebind_after_update(&mut lock(table), values, false)
                .map_err(|e| {
                    e.context("the exec was updated but its arguments could not be rebound")
                })?;
        }
        *current = theirs.clone();
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
        let mut now = self.current();
        let current = now.known(source)?;
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
            let st = source.described()?;
            self.inner.ctx.bind()?;
            (st.nodes()[i], dg::read_node(st.nodes()[i])?)
        };
        let RawNode::Kernel(read) = read else {
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
        ensure_arg!(
            fused.is_none() || self.inner.args.is_none(),
            "a fused exec whose graph declares arguments cannot take new kernel arguments: \
             update it with a graph instead, or instantiate without fusion"
        );
        let exec_node = match fused.as_mut() {
            None => raw_node,
            Some(f) => {
                if let Some(c) = f.plan.chains.iter().position(|c| c.nodes.contains(&i)) {
                    return f.set_chain_args(self.raw(), Arc::make_mut(current), c, i, updated);
                }
                f.nodes[f.map[i].expect("a node outside chains is kept")]
            }
        };
        // The node's launch with the new argument values.
        let params = KernelParams { args, ..read };
        // The argument table is locked before the source (the lock order
        // `launch_with` follows too).
        let mut table = self.inner.args.as_deref().map(lock);
        // The driver reads a node of the source under the source's lock (the
        // fused copy's nodes are under `fused`).
        let _source = fused.is_none().then(|| source.state()).transpose()?;
        // SAFETY: as above; the driver copies the values.
        unsafe { dg::exec_set_kernel(self.raw(), exec_node, &params) }?;
        Arc::make_mut(current).set_node(i, updated);
        if let Some(t) = table.as_mut() {
            // SAFETY: as above.
            unsafe { t.refresh_kernel(self.raw(), exec_node, args) }?;
        }
        Ok(())
    }
}

/// Names node `i` of a graph as failures and DOT output do (DOT's node
/// `n{i}`, labelled "{i}: ..."): "node 3 (kernel `scale_f32`)".
pub(crate) fn node_label(i: usize, kind: &NodeKind) -> String {
    match kind {
        NodeKind::Kernel { name, .. } => format!("node {i} (kernel `{name}`)"),
        k => format!("node {i} ({})", k.kind_name()),
    }
}

/// The node `node` of `desc` (whose nodes are `nodes`) as
/// [`node_label`] names it; `None` when it is not one of them (NULL: CUDA
/// blamed none).
fn blamed(node: CUgraphNode, nodes: &[CUgraphNode], desc: &GraphDesc) -> Option<String> {
    if node.is_null() {
        return None;
    }
    let i = nodes.iter().position(|&n| n == node)?;
    (i < desc.len()).then(|| node_label(i, desc.node(i)))
}

/// The error for an update CUDA refused: CUDA's reason
/// (`cuGraphExecUpdate`'s result info), naming the node it blames by its
/// index in `desc` (whose nodes are `nodes`).
fn refusal(r: &dg::UpdateRefused, nodes: &[CUgraphNode], desc: &GraphDesc) -> Error {
    Error::new(
        ErrorKind::UpdateMismatch,
        match blamed(r.node, nodes, desc) {
            Some(at) => format!("{at}: {}; the exec is unchanged", r.reason),
            None => format!("{}; the exec is unchanged", r.reason),
        },
    )
}

/// The error for a failed instantiation: the driver's error, with CUDA's
/// result info (`cuGraphInstantiateWithParams`: the reason, and the node it
/// blames, named by its index in `desc`, whose nodes are `nodes`).
#[cold]
fn not_instantiated(
    (e, r): (Error, dg::InstantiateRefused),
    nodes: &[CUgraphNode],
    desc: &GraphDesc,
) -> Error {
    instantiate_message(e, r.reason, blamed(r.node, nodes, desc))
}

/// [`not_instantiated`]'s message (pure, for the tests): the driver's
/// error, then CUDA's reason and the node, where CUDA gave them.
fn instantiate_message(e: Error, reason: Option<&str>, node: Option<String>) -> Error {
    let mut what = String::from("instantiating the graph failed");
    if let Some(n) = node {
        what = format!("{what} at {n}");
    }
    if let Some(r) = reason {
        what = format!("{what}; CUDA's result: {r}");
    }
    e.context(&what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::to_dot;

    fn kernel(name: &str) -> NodeKind {
        NodeKind::Kernel {
            name: name.into(),
            grid: [1, 1, 1],
            block: [2048, 1, 1],
            shared_bytes: 0,
            builtin: None,
            args: vec![],
        }
    }

    #[test]
    fn failures_name_the_node_as_dot_does() {
        let mut g = GraphDesc::new();
        g.push(NodeKind::Empty, []);
        g.push(NodeKind::Host, [0]);
        g.push(kernel("_Z6my_addPfS_i"), [1]);
        assert_eq!(node_label(2, g.node(2)), "node 2 (kernel `_Z6my_addPfS_i`)");
        assert_eq!(node_label(1, g.node(1)), "node 1 (host)");
        // DOT's node id and label carry the same index.
        let dot = to_dot(&g, "g");
        assert!(
            dot.contains("n2 [shape=box, label=\"2: _Z6my_addPfS_i"),
            "{dot}"
        );
        // The node CUDA blames is found by its handle among the graph's.
        let nodes: Vec<CUgraphNode> = (1..=3usize).map(|i| i as CUgraphNode).collect();
        assert_eq!(
            blamed(3 as CUgraphNode, &nodes, &g).as_deref(),
            Some("node 2 (kernel `_Z6my_addPfS_i`)")
        );
        assert_eq!(blamed(std::ptr::null_mut(), &nodes, &g), None);
        assert_eq!(blamed(9 as CUgraphNode, &nodes, &g), None);
    }

    #[test]
    fn instantiate_failures_carry_cuda_result_info() {
        let cuda = Error::from_cuda(
            ErrorKind::Cuda,
            1,
            "cuGraphInstantiateWithParams failed: CUDA_ERROR_INVALID_VALUE: invalid argument",
        );
        let e = instantiate_message(
            cuda.clone(),
            dg::instantiate_reason(3),
            Some(node_label(2, &kernel("fill"))),
        );
        assert_eq!(e.kind(), ErrorKind::Cuda);
        assert_eq!(e.cuda_result(), Some(1));
        assert!(
            e.message().starts_with(
                "instantiating the graph failed at node 2 (kernel `fill`); CUDA's result: \
                 CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED"
            ),
            "{}",
            e.message()
        );
        assert!(e
            .message()
            .ends_with("CUDA_ERROR_INVALID_VALUE: invalid argument"));
        // Without a node or a reason CUDA knows, the driver's error stays.
        let e = instantiate_message(cuda, dg::instantiate_reason(0), None);
        assert!(e
            .message()
            .starts_with("instantiating the graph failed: cuGraphInstantiateWithParams failed"));
        assert_eq!(dg::instantiate_reason(99), None);
        for r in 1..=5 {
            assert!(dg::instantiate_reason(r)
                .unwrap()
                .starts_with("CUDA_GRAPH_INSTANTIATE_"));
        }
    }

    #[test]
    fn update_refusals_name_the_kernel() {
        let mut g = GraphDesc::new();
        g.push(kernel("scale"), []);
        let nodes = [7 as CUgraphNode];
        let r = dg::UpdateRefused {
            reason: "a kernel's function changed",
            node: 7 as CUgraphNode,
        };
        let e = refusal(&r, &nodes, &g);
        assert_eq!(e.kind(), ErrorKind::UpdateMismatch);
        assert_eq!(
            e.message(),
            "node 0 (kernel `scale`): a kernel's function changed; the exec is unchanged"
        );
    }
}
