//! Graphs: built node by node or captured from a stream, each with a pure
//! [`GraphDesc`] beside the CUDA graph (for validation, DOT output and
//! update checks) and the things it must keep alive (functions it launches,
//! pool memory its capture allocated).

mod build;
mod conditional;
mod desc;
mod dot;
pub mod fuse;

pub use conditional::ConditionalHandle;
use desc::DepList;
pub use desc::{Direction, EdgeKind, GraphDesc, NodeKind, TopologyDifference};
pub use dot::{to_dot, to_dot_nested, Nested};

use crate::arg::{check_new, ArgDecl};
use crate::context::Context;
use crate::driver::edges;
use crate::driver::graph::{self as dg, RawNode};
use crate::driver::memory::{memory_kind, MemoryKind, Memset};
use crate::driver::owned::{Nodes, Owned, Shared};
use crate::driver::{CUfunction, CUgraph, CUgraphNode};
use crate::error::{ensure_arg, Error, Result};
use crate::event::Event;
use crate::lock::{SpinGuard, SpinLock};
use crate::module::Function;
use crate::pool::{check_device_range, GraphMemory};
use graphcore_kernels::{KernelInfo, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// A node of a graph: which graph, and its index there (nodes are numbered
/// in the order they were added, or, for captured graphs, as CUDA lists
/// them). `#[repr(C)]`: laid out as the C API's `gc_node`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The id of the graph the node belongs to.
    pub graph: u64,
    /// The node's index in its graph.
    pub index: u32,
}

/// A CUDA graph under construction (or captured). Cheap to clone; calls on
/// one graph are serialized by its lock: CUDA requires every driver call on
/// a graph (and on its nodes) to be, so graphcore reaches the raw graph only
/// through the locked state ([`Graph::raw`] hands it out for interop).
/// Instantiate it with
/// [`Exec::new`](crate::Exec::new).
#[derive(Clone)]
pub struct Graph {
    inner: Arc<GraphInner>,
}

struct GraphInner {
    ctx: Context,
    id: u64,
    /// A spin lock: adding a node takes it, and is the hot path; calls that
    /// hold it long (instantiating, reading a capture back) are rare beside.
    state: SpinLock<GraphState>,
    /// For a conditional node's body: the graph holding the node (weak: the
    /// holder keeps its bodies, and CUDA destroys a body with its holder).
    holder: Option<Weak<GraphInner>>,
    /// Set when the graph is instantiated: its bodies cannot change after.
    instantiated: AtomicBool,
    /// Set once the graph holds conditional bodies (its state's `bodies`
    /// is not empty; it only grows), so asking takes no lock.
    conditionals: AtomicBool,
    /// Captures open into bodies this graph holds (nested ones included):
    /// CUDA writes into the hierarchy while one is open, so every driver
    /// call on this graph is refused until they end (see
    /// [`Graph::hold_for_capture`]).
    bodies_capturing: AtomicUsize,
}

impl Drop for GraphInner {
    /// Marks every body of its nodes (nested ones included) gone before
    /// the fields destroy the CUDA graph, which destroys the bodies with
    /// it: each body's lock is taken to mark it, so a call on a body still
    /// holding it finishes first, and every later call on it is refused.
    /// (The bodies kept for a copy, under `usize::MAX`, are another
    /// graph's: they stay.)
    fn drop(&mut self) {
        fn mark_gone(bodies: &[(usize, Vec<Graph>)]) {
            for (_, b) in bodies.iter().filter(|(i, _)| *i != usize::MAX) {
                for b in b {
                    let mut st = b.bookkeeping();
                    st.gone = true;
                    mark_gone(&st.bodies);
                }
            }
        }
        mark_gone(&self.state.get_mut().bodies);
    }
}

/// The error for a call on a conditional body whose holder was destroyed.
fn holder_gone() -> Error {
    Error::invalid_state(
        "the graph holding this conditional body was destroyed (CUDA destroyed the body with \
         it): the body can no longer be used",
    )
}

/// What the graph's lock guards: the CUDA graph and everything describing
/// it. Two graph locks are held at once only by [`lock_in_order`].
pub(crate) struct GraphState {
    /// The CUDA graph when graphcore destroys it (`None` for a borrowed
    /// one, and for a conditional node's body, which CUDA destroys with its
    /// holder). Destroyed first (fields drop in order), before the functions
    /// and memory its nodes use.
    owned: Option<Owned<CUgraph>>,
    /// The CUDA graph (driver calls on it or its nodes hold the lock).
    raw: Shared<CUgraph>,
    /// The description and nodes: from the start for a graph built node by
    /// node; for a captured graph, read back from CUDA under the lock by the
    /// first call that needs them ([`Graph::described`]), so ending a
    /// capture costs what CUDA's own end does.
    described: Option<Described>,
    /// Number of nodes: kept with the description; for a captured graph,
    /// `None` until a call needs it ([`GraphState::count`] reads it from
    /// CUDA), so that ending a capture makes no call past CUDA's own end.
    /// (A wrapped graph's is read when it is wrapped.)
    count: Option<usize>,
    /// A kernel launch is known to have gone into the capture that made
    /// the graph: not empty, though `count` may be unknown.
    launched_into: bool,
    /// Functions launched by kernel nodes (kept loaded).
    functions: Vec<Function>,
    /// Pool memory held by this graph's capture and its child graphs'.
    memory: Vec<Arc<GraphMemory>>,
    /// Events its (and its child graphs') event nodes record or wait on.
    events: Vec<Event>,
    /// Declared arguments, by index.
    pub(crate) args: Vec<ArgDecl>,
    /// The bodies of its conditional nodes, by node index (kept: what they
    /// launch and hold lives as long as this graph; `usize::MAX` for the
    /// originals of bodies copied with a child graph or a clone).
    bodies: Vec<(usize, Vec<Graph>)>,
    /// The conditional handles made for this graph, with the node each
    /// steers once one does.
    handles: Vec<(u64, Option<u32>)>,
    /// A capture into this body is open.
    capturing: bool,
    /// For a body: its holder was destroyed, and CUDA destroyed the body
    /// with it (set under this lock before the holder's CUDA graph goes;
    /// every call that reaches the driver through [`Graph::state`] is then
    /// refused).
    gone: bool,
}

/// A graph's description, and its CUDA nodes in the description's order.
///
/// Kernel nodes added to a graph built node by node are described lazily,
/// as a captured graph is: `pending` keeps their dependencies, CUDA keeps
/// the rest, and [`DescribedState::new`] reads their kinds back when a call
/// first needs the description. A kernel node added costs then about what
/// the driver's own call does (perf/results/h200/lazy_build_ab.json).
struct Described {
    /// Shared with the execs instantiated from the graph (copied when the
    /// graph changes while they hold it). It describes the first
    /// `desc.len()` nodes; the `pending.len()` after them are not described
    /// yet.
    desc: Arc<GraphDesc>,
    /// Every node, described or pending, in order.
    nodes: Nodes,
    /// The dependencies of the kernel nodes added after `desc`'s.
    pending: Vec<DepList>,
    /// Set when an exec was made from (or updated with) the graph while
    /// nodes were pending: it stands on them as they are, so the next
    /// description of them is kept in `as_captured`, and no node is added
    /// undescribed again.
    stood_on: bool,
    /// For a captured graph read back lazily (and a built one that an exec
    /// stood on while nodes were pending): its description as it was then,
    /// which those execs stand on (see [`Graph::captured_desc`]); `None`
    /// for a graph built node by node.
    as_captured: Option<Arc<GraphDesc>>,
}

impl Described {
    /// The description of a graph with no nodes yet, built node by node,
    /// with room for [`Described::FIRST_NODES`] nodes.
    fn empty() -> Described {
        Described {
            pending: Vec::with_capacity(Self::FIRST_NODES),
            ..Described::of(Arc::default(), Vec::with_capacity(Self::FIRST_NODES))
        }
    }

    /// `desc` with `nodes` (one per node of `desc`), nothing pending.
    fn of(desc: Arc<GraphDesc>, nodes: Vec<CUgraphNode>) -> Described {
        Described {
            desc,
            nodes: nodes.into(),
            pending: Vec::new(),
            stood_on: false,
            as_captured: None,
        }
    }

    /// Nodes a new graph has room for before its vectors first grow: a
    /// graph's first kernel nodes then cost no reallocations (two vectors
    /// grow together, each from 4 slots, doubling, had the graph started
    /// empty). Not more: over the no-op driver, room for 16 node
    /// descriptions made a one-node graph 25% slower to create (1280 bytes
    /// are past the size glibc serves from its per-thread cache), where 8
    /// made every length from 1 to 1000 nodes faster.
    const FIRST_NODES: usize = 8;

    /// True when a kernel node may be added undescribed: nothing has stood
    /// on pending nodes, and no description as captured is kept (a graph
    /// that keeps one is described node by node, as before).
    fn takes_pending(&self) -> bool {
        !self.stood_on && self.as_captured.is_none()
    }
}

impl GraphState {
    /// The state of CUDA graph `raw` (`owned` when graphcore destroys it)
    /// with `count` nodes (`None`: not read yet), described or not yet,
    /// keeping nothing alive yet.
    fn new(
        owned: Option<Owned<CUgraph>>,
        raw: CUgraph,
        described: Option<Described>,
        count: Option<usize>,
    ) -> GraphState {
        GraphState {
            owned,
            raw: Shared::new(raw),
            described,
            count,
            launched_into: false,
            functions: Vec::new(),
            memory: Vec::new(),
            events: Vec::new(),
            args: Vec::new(),
            bodies: Vec::new(),
            handles: Vec::new(),
            capturing: false,
            gone: false,
        }
    }

    /// The CUDA graph, for driver calls made under the lock.
    pub(crate) fn raw(&self) -> CUgraph {
        self.raw.raw()
    }

    /// The bodies of its conditional nodes, for a copy of the graph (as a
    /// child, or a clone) to keep alive: the copy's bodies are CUDA's
    /// copies, and what they launch and hold lives through the originals.
    fn kept_bodies(&self) -> Vec<Graph> {
        self.bodies
            .iter()
            .flat_map(|(_, b)| b.iter().cloned())
            .collect()
    }

    /// The description and the nodes indexed as it, if every node is
    /// described (a captured graph not read back has none yet, a built one
    /// may have nodes pending).
    pub(crate) fn if_read(&self) -> Option<(&Arc<GraphDesc>, &Nodes)> {
        self.described
            .as_ref()
            .filter(|d| d.pending.is_empty())
            .map(|d| (&d.desc, &d.nodes))
    }

    /// The description an exec made from (or updated with) the graph now
    /// stands on, if every node is described. `None` for a captured graph
    /// not read back, or a built one with nodes pending: the exec reads it
    /// when it first needs it ([`Graph::captured_desc`]), and the pending
    /// nodes are kept as they are for it.
    pub(crate) fn stood_on(&mut self) -> Option<Arc<GraphDesc>> {
        let d = self.described.as_mut()?;
        if d.pending.is_empty() {
            return Some(Arc::clone(&d.desc));
        }
        d.stood_on = true;
        None
    }

    /// Describes the pending kernel nodes from CUDA's copies of their
    /// parameters, each named after the function of `functions` it
    /// launches (the graph keeps every one), as when it was added. On
    /// failure nothing changes.
    #[cold]
    #[inline(never)]
    fn describe_pending(&mut self, ctx: &Context) -> Result<()> {
        let GraphState {
            described: Some(d),
            functions,
            ..
        } = self
        else {
            return Ok(());
        };
        ctx.bind()?;
        let launched: HashMap<CUfunction, &Function> =
            functions.iter().map(|f| (f.raw(), f)).collect();
        let kinds = d.nodes[d.desc.len()..]
            .iter()
            .map(|&n| dg::read_node_with(n, |raw| describe(ctx, raw, &launched)))
            .collect::<Result<Vec<_>>>()?;
        let desc = desc_mut(&mut d.desc);
        for (kind, deps) in kinds.into_iter().zip(d.pending.drain(..)) {
            desc.push_deps(kind, deps);
        }
        if d.stood_on {
            d.as_captured = Some(Arc::clone(&d.desc));
        }
        Ok(())
    }

    /// True when the graph has no nodes; for a captured graph whose count
    /// was not read, CUDA is asked for one node only, unless a kernel
    /// launch is known to have gone into its capture.
    pub(crate) fn is_empty(&self) -> Result<bool> {
        match self.count {
            Some(n) => Ok(n == 0),
            None if self.launched_into => Ok(false),
            None => Ok(!dg::has_nodes(self.raw())?),
        }
    }

    /// Number of nodes, read from CUDA the first time for a captured graph
    /// (the lock held makes the read a call on the graph that nothing else
    /// overlaps).
    pub(crate) fn count(&mut self) -> Result<usize> {
        match self.count {
            Some(n) => Ok(n),
            None => {
                let n = dg::node_count(self.raw())?;
                self.count = Some(n);
                Ok(n)
            }
        }
    }
}

/// A graph's locked state whose description is there: what calls that read
/// or change the description hold ([`Graph::described`]).
pub(crate) struct DescribedState<'a> {
    st: SpinGuard<'a, GraphState>,
}

impl<'a> DescribedState<'a> {
    /// The locked state `st` with its description there: a captured
    /// graph's is read back now if no call has needed it before, and a
    /// built graph's pending kernel nodes are described.
    fn new(mut st: SpinGuard<'a, GraphState>, ctx: &Context) -> Result<Self> {
        match &st.described {
            None => {
                let d = Graph::read_back(ctx, st.raw())?;
                st.count = Some(d.desc.len());
                st.described = Some(d);
            }
            Some(d) if !d.pending.is_empty() => st.describe_pending(ctx)?,
            Some(_) => {}
        }
        Ok(DescribedState { st })
    }

    /// The locked state `st` to add a kernel node to: as
    /// [`new`](Self::new), except that where the graph takes pending nodes
    /// (built node by node, not a conditional body: `body` false) they stay
    /// pending; with it, true when the new node may be added pending too.
    #[inline]
    fn for_kernel(
        st: SpinGuard<'a, GraphState>,
        ctx: &Context,
        body: bool,
    ) -> Result<(Self, bool)> {
        if !body && st.described.as_ref().is_some_and(Described::takes_pending) {
            return Ok((DescribedState { st }, true));
        }
        Ok((Self::new(st, ctx)?, false))
    }

    fn described(&self) -> &Described {
        self.st
            .described
            .as_ref()
            .expect("a DescribedState is made only once described")
    }

    fn described_mut(&mut self) -> &mut Described {
        self.st
            .described
            .as_mut()
            .expect("a DescribedState is made only once described")
    }

    /// The CUDA graph, for driver calls made under the lock.
    pub(crate) fn raw(&self) -> CUgraph {
        self.st.raw()
    }

    /// The description (shared with execs).
    pub(crate) fn desc(&self) -> &Arc<GraphDesc> {
        &self.described().desc
    }

    /// The CUDA nodes, indexed as the description.
    pub(crate) fn nodes(&self) -> &Nodes {
        &self.described().nodes
    }

    /// The declared arguments, by index.
    pub(crate) fn args(&self) -> &[ArgDecl] {
        &self.st.args
    }
}

/// The description to change, copied first if an exec shares it: what
/// `Arc::make_mut` does, without its compare-exchange when `desc` is the
/// only reference (a graph being built, whose description no exec holds
/// yet): two loads instead, which cost a fraction of a read-modify-write on
/// the hot path of adding nodes.
fn desc_mut(desc: &mut Arc<GraphDesc>) -> &mut GraphDesc {
    if Arc::strong_count(desc) == 1 && Arc::weak_count(desc) == 0 {
        // Pairs with the Release decrement of a clone dropped on another
        // thread (an exec's): its reads of the description happen before
        // the writes through the reference returned here.
        fence(Ordering::Acquire);
        // SAFETY: no other Arc or Weak of this description exists (the
        // counts), and none can be made while `desc`, the only one, is
        // borrowed mutably here; so the returned reference is the only one
        // to the value for as long as it lives. `Arc::as_ptr` points into
        // the allocation with the provenance of the Arc's own pointer.
        unsafe { &mut *Arc::as_ptr(desc).cast_mut() }
    } else {
        Arc::make_mut(desc)
    }
}

/// Locks two distinct graphs' states (`a.1`, `b.1` are their ids), the lower
/// id first whichever is asked first: the one order for holding two graph
/// locks, so two threads locking the same pair cannot deadlock. Returns the
/// guards in the order asked.
fn lock_in_order<'a, T>(
    a: (&'a SpinLock<T>, u64),
    b: (&'a SpinLock<T>, u64),
) -> (SpinGuard<'a, T>, SpinGuard<'a, T>) {
    debug_assert_ne!(a.1, b.1, "two locks of one graph");
    if a.1 < b.1 {
        let ga = a.0.acquire();
        (ga, b.0.acquire())
    } else {
        let gb = b.0.acquire();
        (a.0.acquire(), gb)
    }
}

fn next_graph_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Reads the values of a built-in kernel's parameters from `args`.
///
/// # Safety
/// `args` must hold one valid pointer per parameter of `k`.
pub(crate) unsafe fn builtin_args(k: &KernelInfo, args: *mut *mut c_void) -> Vec<Value> {
    if args.is_null() {
        return Vec::new();
    }
    k.args
        .iter()
        .enumerate()
        .filter_map(|(i, (_, kind))| {
            // SAFETY: `args` holds one pointer per parameter of `k` (this
            // function's contract), so entry `i` is in bounds.
            let p = unsafe { *args.add(i) } as *const u8;
            if p.is_null() {
                return None;
            }
            // SAFETY: the pointer points to a value of parameter `i`'s type,
            // `kind.size()` bytes (this function's contract).
            let bytes = unsafe { std::slice::from_raw_parts(p, kind.size()) };
            Value::from_bytes(*kind, bytes)
        })
        .collect()
}

/// The direction of a copy from `src` to `dst`.
fn direction(dst: MemoryKind, src: MemoryKind) -> Direction {
    Direction::between(src == MemoryKind::Device, dst == MemoryKind::Device)
}

impl Graph {
    fn wrap(ctx: &Context, state: GraphState, holder: Option<Weak<GraphInner>>) -> Graph {
        Graph {
            inner: Arc::new(GraphInner {
                ctx: ctx.clone(),
                id: next_graph_id(),
                conditionals: AtomicBool::new(!state.bodies.is_empty()),
                state: SpinLock::new(state),
                holder,
                instantiated: AtomicBool::new(false),
                bodies_capturing: AtomicUsize::new(0),
            }),
        }
    }

    /// Records bodies `kept` under node `index` (`usize::MAX`: copies' originals).
    fn keep_bodies(&self, st: &mut GraphState, index: usize, kept: Vec<Graph>) {
        st.bodies.push((index, kept));
        self.inner.conditionals.store(true, Ordering::Release);
    }

    /// An empty graph.
    pub fn new(ctx: &Context) -> Result<Graph> {
        ctx.bind()?;
        let raw = Owned::new(dg::create()?, ctx.primary());
        let cuda = raw.raw();
        let state = GraphState::new(Some(raw), cuda, Some(Described::empty()), Some(0));
        Ok(Self::wrap(ctx, state, None))
    }

    /// Wraps a graph CUDA captured; it keeps `events` (those of its event
    /// nodes) and `functions` (those its kernel nodes launch, beyond
    /// graphcore's built-ins) alive; `launched_into` says a kernel launch is known to have
    /// gone into the capture (the graph is not empty). Nothing is read from
    /// CUDA now: its node count, nodes, edges and parameters are read back
    /// when first needed.
    pub(crate) fn from_captured(
        ctx: &Context,
        raw: CUgraph,
        memory: Option<GraphMemory>,
        events: Vec<Event>,
        args: Vec<ArgDecl>,
        functions: Vec<Function>,
        launched_into: bool,
    ) -> Graph {
        let owned = Owned::new(raw, ctx.primary());
        let mut state = GraphState::new(Some(owned), raw, None, None);
        state.memory = memory.map(Arc::new).into_iter().collect();
        state.events = events;
        state.functions = functions;
        state.args = args;
        state.launched_into = launched_into;
        Self::wrap(ctx, state, None)
    }

    /// Marks an empty conditional body as the target of a capture
    /// (`cuStreamBeginCaptureToGraph` runs under its lock, in `begin`).
    /// Anything else is refused: a graph that is not a body, a body with
    /// nodes, or one already being captured into.
    pub(crate) fn begin_capture_into(
        &self,
        begin: impl FnOnce(CUgraph) -> Result<()>,
    ) -> Result<()> {
        ensure_arg!(
            self.is_body(),
            "the graph is not a conditional node's body: capture into bodies only (or capture \
             a new graph)"
        );
        self.check_changeable()?;
        // A body a capture fills already is refused here (InvalidState).
        let mut st = self.state()?;
        let count = st.count()?;
        ensure_arg!(
            count == 0,
            "the body already has {count} nodes: capture only into an empty body"
        );
        begin(st.raw())?;
        st.capturing = true;
        Ok(())
    }

    /// Ends a capture into this body: reads back the nodes CUDA added,
    /// keeps the events its event nodes use and the functions its kernel
    /// nodes launch, and gives the capture's pool memory to the outermost
    /// graph.
    pub(crate) fn end_capture_into(
        &self,
        memory: Option<GraphMemory>,
        events: Vec<Event>,
        functions: Vec<Function>,
    ) -> Result<()> {
        let memory = memory.map(Arc::new);
        {
            let mut st = self.bookkeeping();
            st.capturing = false;
            self.check_usable(&st)?;
            let mut d = Graph::read_back(&self.inner.ctx, st.raw())?;
            // A body is built, not instantiated: no as-captured state.
            d.as_captured = None;
            st.count = Some(d.desc.len());
            st.described = Some(d);
            st.events.extend(events);
            st.functions.extend(functions);
            st.memory.extend(memory.clone());
        }
        if let Some(m) = memory {
            let root = self.root()?;
            root.bookkeeping().memory.push(m);
        }
        Ok(())
    }

    /// Clears the capture mark after a failed capture into this body and
    /// removes the nodes it left.
    pub(crate) fn abandon_capture_into(&self) {
        let mut st = self.bookkeeping();
        st.capturing = false;
        if st.gone {
            return;
        }
        if let Ok(nodes) = dg::nodes(st.raw()) {
            for n in nodes {
                let _ = dg::destroy_node(n);
            }
        }
    }

    /// Wraps a `CUgraph` (a `cudaGraph_t`) made outside graphcore; its
    /// nodes and edges are read back when first needed, as a captured
    /// graph's are. With `adopt`, graphcore destroys it when the last value
    /// using it goes (also when this fails); otherwise the caller keeps it
    /// alive and destroys it.
    ///
    /// # Safety
    /// `raw` must be a live graph of `ctx`'s device. Borrowed, it must stay
    /// alive while this value (or an exec made from it) is used; adopted,
    /// nothing else may destroy it. Either way it must not be changed
    /// outside graphcore afterwards (the description would go stale), and
    /// whatever its nodes use (functions, memory) is the caller's to keep
    /// alive.
    pub unsafe fn wrap_raw(ctx: &Context, raw: CUgraph, adopt: bool) -> Result<Graph> {
        ensure_arg!(!raw.is_null(), "`raw` is NULL");
        // Adopted first, so that a failure below destroys it too.
        let owned = adopt.then(|| Owned::new(raw, ctx.primary()));
        // Its node count is read now: a graph CUDA does not know fails
        // here, not at a later call.
        ctx.bind()?;
        let count = dg::node_count(raw)?;
        let state = GraphState::new(owned, raw, None, Some(count));
        Ok(Self::wrap(ctx, state, None))
    }

    /// A new graph with the same nodes, parameters and edges (CUDA's
    /// clone), numbered as this one's. It keeps this graph's functions,
    /// pool memory and events alive too; later changes to either graph
    /// leave the other as it is.
    pub fn duplicate(&self) -> Result<Graph> {
        let ctx = &self.inner.ctx;
        let st = self.described()?;
        ctx.bind()?;
        let raw = Owned::new(dg::clone(st.raw())?, ctx.primary());
        let nodes = st
            .nodes()
            .iter()
            .map(|&n| dg::find_in_clone(n, raw.raw()))
            .collect::<Result<Vec<_>>>()?;
        let cuda = raw.raw();
        let described = Described::of(Arc::clone(st.desc()), nodes);
        let mut state = GraphState::new(Some(raw), cuda, Some(described), st.st.count);
        state.functions = st.st.functions.clone();
        state.memory = st.st.memory.clone();
        state.events = st.st.events.clone();
        state.args = st.st.args.clone();
        let kept = st.st.kept_bodies();
        if !kept.is_empty() {
            state.bodies.push((usize::MAX, kept));
        }
        Ok(Self::wrap(ctx, state, None))
    }

    /// True when the caller owns the CUDA graph ([`Graph::wrap_raw`]
    /// without adopting it).
    pub fn is_borrowed(&self) -> bool {
        !self.is_body() && self.bookkeeping().owned.is_none()
    }

    /// Reads a captured graph's nodes and edges back: its description, and
    /// its nodes in the description's order.
    fn read_back(ctx: &Context, raw: CUgraph) -> Result<Described> {
        ctx.bind()?;
        let nodes = dg::nodes(raw)?;
        let index: HashMap<CUgraphNode, usize> =
            nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut deps = vec![Vec::new(); nodes.len()];
        let mut special = Vec::new();
        for (from, to, port) in edges::all(raw)? {
            let (from, to) = (index[&from], index[&to]);
            deps[to].push(from);
            if port != 0 {
                special.push((from, to, EdgeKind::of_port(port)));
            }
        }
        // Edges may point backwards in CUDA's listing: add nodes in a
        // topological order, then renumber.
        let order = topological(&deps);
        let mut desc = GraphDesc::new();
        let mut new_index = vec![0usize; nodes.len()];
        let mut ordered = Vec::with_capacity(nodes.len());
        for &i in &order {
            let kind = dg::read_node_with(nodes[i], |raw| describe(ctx, raw, &HashMap::new()))?;
            let d: Vec<usize> = deps[i].iter().map(|&j| new_index[j]).collect();
            new_index[i] = desc.push(kind, d);
            ordered.push(nodes[i]);
        }
        for (from, to, kind) in special {
            desc.set_edge_kind(new_index[from], new_index[to], kind);
        }
        let desc = Arc::new(desc);
        Ok(Described {
            as_captured: Some(desc.clone()),
            ..Described::of(desc, ordered)
        })
    }

    /// The graph's state with its description there: a captured graph is
    /// read back now, under the lock, if no call has needed it before.
    pub(crate) fn described(&self) -> Result<DescribedState<'_>> {
        DescribedState::new(self.state()?, &self.inner.ctx)
    }

    /// The description of a captured graph as it was captured (what an exec
    /// instantiated from it, or updated with it, before it was read back
    /// stands on: a graph is read back before anything changes it). For a
    /// graph built node by node, its description now.
    pub(crate) fn captured_desc(&self) -> Result<Arc<GraphDesc>> {
        let st = self.described()?;
        let d = st.described();
        Ok(d.as_captured.as_ref().unwrap_or(&d.desc).clone())
    }

    /// The number of nodes of [`captured_desc`](Self::captured_desc),
    /// without reading the graph back.
    pub(crate) fn captured_count(&self) -> Result<usize> {
        let mut st = self.state()?;
        match &st.described {
            Some(d) => Ok(d.as_captured.as_ref().map_or(d.nodes.len(), |a| a.len())),
            None => st.count(),
        }
    }

    /// The graph's unique id (what [`Node::graph`] holds).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The graph's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The raw `CUgraph` (for interop; graphcore still owns it). Driver
    /// calls on it must not overlap graphcore's calls on this graph. A body
    /// whose holder was destroyed is
    /// [`ErrorKind::InvalidState`](crate::error::ErrorKind::InvalidState).
    pub fn raw(&self) -> Result<CUgraph> {
        Ok(self.state()?.raw())
    }

    /// The graph's locked state, for calls that reach the driver: refused
    /// ([`ErrorKind::InvalidState`](crate::error::ErrorKind::InvalidState))
    /// for a body whose holder was destroyed (CUDA destroyed the body with
    /// it). The lock is held across the driver call, so a holder being
    /// destroyed waits for it (see `GraphInner`'s drop).
    pub(crate) fn state(&self) -> Result<SpinGuard<'_, GraphState>> {
        let st = self.inner.state.acquire();
        self.check_usable(&st)?;
        Ok(st)
    }

    /// Refuses driver calls on this graph, whose locked state is `st`,
    /// while CUDA may be writing into it or has destroyed it: a body whose
    /// holder was destroyed, a body a capture is filling, or a graph
    /// holding such a body. A graph lock's cost is one more load.
    #[inline]
    fn check_usable(&self, st: &GraphState) -> Result<()> {
        if st.gone || st.capturing || self.inner.bodies_capturing.load(Ordering::SeqCst) != 0 {
            return Err(self.unusable(st));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn unusable(&self, st: &GraphState) -> Error {
        if st.gone {
            holder_gone()
        } else if st.capturing {
            Error::invalid_state(
                "a capture into this conditional body is open: the body cannot be read or \
                 changed until it ends (end the capture on the stream that began it)",
            )
        } else {
            Error::invalid_state(
                "a capture into one of this graph's conditional bodies is open: the graph \
                 cannot be read, changed, cloned or instantiated until it ends",
            )
        }
    }

    /// Keeps the graphs holding this body (`holders`, from
    /// [`holders`](Self::holders)) from every driver call while a capture
    /// fills the body: counted on each, then each one's lock is taken once,
    /// so a call already holding it finishes before the capture begins and
    /// a later one sees the count. [`release_from_capture`](Self::release_from_capture)
    /// undoes it.
    pub(crate) fn hold_for_capture(holders: &[Graph]) {
        for h in holders {
            h.inner.bodies_capturing.fetch_add(1, Ordering::SeqCst);
            drop(h.bookkeeping());
        }
    }

    /// Ends [`hold_for_capture`](Self::hold_for_capture) on `holders`.
    pub(crate) fn release_from_capture(holders: &[Graph]) {
        for h in holders {
            h.inner.bodies_capturing.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The locked state for bookkeeping that calls no driver function
    /// (held memory, declared arguments): valid for a body whose holder
    /// is gone too.
    fn bookkeeping(&self) -> SpinGuard<'_, GraphState> {
        self.inner.state.acquire()
    }

    /// Number of nodes (of a captured graph, read from CUDA the first
    /// time).
    pub fn node_count(&self) -> Result<usize> {
        self.state()?.count()
    }

    /// A copy of the graph's description (a captured graph is read back
    /// from CUDA the first time).
    pub fn desc(&self) -> Result<GraphDesc> {
        Ok((**self.described()?.desc()).clone())
    }

    /// Pool bytes this graph holds: what its capture (and its child graphs'
    /// captures) allocated and had not freed when it ended.
    pub fn pool_bytes(&self) -> u64 {
        self.bookkeeping()
            .memory
            .iter()
            .map(|m| m.held_bytes())
            .sum()
    }

    /// The highest pool bytes its capture had allocated at once.
    pub fn pool_peak_bytes(&self) -> u64 {
        self.bookkeeping()
            .memory
            .iter()
            .map(|m| m.peak_bytes())
            .sum()
    }

    /// Declares `base .. base + bytes` an argument of the graph (see
    /// [`crate::arg`]): execs made later find its uses in the nodes and can
    /// bind it to another range at launch. Returns its index (declaration
    /// order; a captured graph's arguments declared during its capture come
    /// first). The range must be device memory of the graph's device and
    /// overlap no argument declared before.
    pub fn declare_arg(&self, base: u64, bytes: usize, exact: bool) -> Result<usize> {
        let mut st = self.state()?;
        let d = ArgDecl::range(base, bytes, exact);
        let index = check_new(&st.args, &d)?;
        self.inner.ctx.bind()?;
        check_device_range(&self.inner.ctx, "ptr", base, bytes)?;
        st.args.push(d);
        Ok(index)
    }

    /// Declares a scalar argument of the graph marked by `marker`'s bytes
    /// (1 to 8, not all zero; see [`crate::arg`]): execs made later find
    /// its uses, the kernel parameters of exactly that size holding exactly
    /// those bytes, and a binding sets their value. Returns its index,
    /// numbered with the range arguments. The same marker of the same
    /// size declared twice is refused.
    pub fn declare_scalar_arg(&self, marker: &[u8]) -> Result<usize> {
        let d = ArgDecl::scalar(marker)?;
        let mut st = self.state()?;
        let index = check_new(&st.args, &d)?;
        st.args.push(d);
        Ok(index)
    }

    /// The declared arguments, by index.
    pub fn args(&self) -> Vec<ArgDecl> {
        self.bookkeeping().args.clone()
    }

    /// True for a conditional node's body.
    pub fn is_body(&self) -> bool {
        self.inner.holder.is_some()
    }

    /// The graphs holding this body, innermost first (empty for a graph
    /// that is not a body). A holder that is gone is
    /// [`ErrorKind::InvalidState`](crate::error::ErrorKind::InvalidState).
    pub(crate) fn holders(&self) -> Result<Vec<Graph>> {
        let mut out = Vec::new();
        let mut next = self.inner.holder.clone();
        while let Some(w) = next {
            let inner = w.upgrade().ok_or_else(holder_gone)?;
            next = inner.holder.clone();
            out.push(Graph { inner });
        }
        Ok(out)
    }

    /// The outermost graph: the one instantiated (itself when it is not a
    /// body).
    fn root(&self) -> Result<Graph> {
        Ok(self.holders()?.pop().unwrap_or_else(|| self.clone()))
    }

    /// Refuses changes to a body whose holder is gone or was instantiated
    /// (the exec would not see them).
    #[inline]
    fn check_changeable(&self) -> Result<()> {
        if !self.is_body() {
            return Ok(());
        }
        self.check_body_changeable()
    }

    /// [`check_changeable`](Self::check_changeable) of a body.
    #[cold]
    #[inline(never)]
    fn check_body_changeable(&self) -> Result<()> {
        for h in self.holders()? {
            if h.inner.instantiated.load(Ordering::Acquire) {
                return Err(Error::invalid_state(
                    "this conditional body's graph was already instantiated: a body cannot \
                     change after that (an exec would not see the change); fill bodies before \
                     instantiating",
                ));
            }
        }
        Ok(())
    }

    /// Refuses to instantiate a conditional node's body on its own.
    pub(crate) fn check_instantiable(&self) -> Result<()> {
        ensure_arg!(
            !self.is_body(),
            "the graph is a conditional node's body: it runs only inside its node (instantiate \
             the graph holding the node)"
        );
        Ok(())
    }

    /// Records that the graph was instantiated: its bodies cannot change
    /// from now on.
    pub(crate) fn mark_instantiated(&self) {
        self.inner.instantiated.store(true, Ordering::Release);
    }

    /// True when the graph (or a body nested in it) has conditional nodes.
    pub fn has_conditionals(&self) -> bool {
        self.inner.conditionals.load(Ordering::Acquire)
    }

    /// The description with its bodies', for DOT.
    fn nested(&self) -> Result<Nested> {
        let (desc, bodies) = {
            let st = self.described()?;
            ((**st.desc()).clone(), st.st.bodies.clone())
        };
        Ok(Nested {
            desc,
            bodies: bodies
                .into_iter()
                .filter(|(i, _)| *i != usize::MAX)
                .map(|(i, b)| Ok((i, b.iter().map(Graph::nested).collect::<Result<_>>()?)))
                .collect::<Result<_>>()?,
        })
    }

    /// The graph in Graphviz DOT, conditional bodies as clusters (a
    /// captured graph is read back from CUDA the first time).
    pub fn to_dot(&self, name: &str) -> Result<String> {
        Ok(to_dot_nested(&self.nested()?, name))
    }

    /// Writes the graph in Graphviz DOT to `path`.
    pub fn write_dot(&self, path: &std::path::Path) -> Result<()> {
        let name = path
            .file_stem()
            .map_or("graph".into(), |s| s.to_string_lossy().into_owned());
        std::fs::write(path, self.to_dot(&name)?)
            .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", path.display())))
    }
}

/// Whether CUDA allows a node of this kind in a conditional body.
fn allowed_in_body(k: &NodeKind) -> bool {
    !matches!(k, NodeKind::Host | NodeKind::Other(_))
}

/// Describes a node CUDA reports; a kernel of `launched` is named after its
/// function, another after its built-in kernel, else by the name the driver
/// gives (`cuFuncGetName`, CUDA 12.3) or its address. Runs inside
/// [`dg::read_node_with`] (the parameter values are the driver's copy): no
/// CUDA call here on a graph (only `cuFuncGetName`, on a function).
fn describe(ctx: &Context, raw: RawNode, launched: &HashMap<CUfunction, &Function>) -> NodeKind {
    match raw {
        RawNode::Kernel(p) => {
            let f = launched.get(&p.func);
            let builtin = f.map_or_else(|| ctx.builtin_of(p.func), |f| f.builtin());
            NodeKind::Kernel {
                name: match f {
                    Some(f) => f.shared_name(),
                    None => builtin.map_or_else(
                        || {
                            crate::driver::module::func_name(p.func)
                                .unwrap_or_else(|| format!("kernel@{:p}", p.func))
                                .into()
                        },
                        |k| k.name.into(),
                    ),
                },
                grid: p.grid,
                block: p.block,
                shared_bytes: p.shared_bytes,
                builtin,
                // SAFETY: the driver's copy holds one value per parameter.
                args: builtin.map_or(Vec::new(), |k| unsafe { builtin_args(k, p.args) }),
            }
        }
        RawNode::Memcpy { dst, src, bytes } => NodeKind::Memcpy {
            dst,
            src,
            bytes,
            direction: direction(memory_kind(dst), memory_kind(src)),
        },
        RawNode::Memset(m) => memset_kind(&m),
        RawNode::Host { .. } => NodeKind::Host,
        RawNode::Child { nodes, .. } => NodeKind::Child { nodes },
        RawNode::Empty => NodeKind::Empty,
        RawNode::Other(what) => NodeKind::Other(what),
    }
}

/// The description of memset `m`.
fn memset_kind(m: &Memset) -> NodeKind {
    NodeKind::Memset {
        dst: m.dst,
        value: m.value,
        elem_size: m.elem_size,
        bytes: m.bytes(),
    }
}

/// A topological order of nodes given each node's dependencies (stable:
/// among ready nodes, the lowest index first).
fn topological(deps: &[Vec<usize>]) -> Vec<usize> {
    let n = deps.len();
    let mut indegree: Vec<usize> = deps.iter().map(|d| d.len()).collect();
    let mut users = vec![Vec::new(); n];
    for (to, d) in deps.iter().enumerate() {
        for &from in d {
            users[from].push(to);
        }
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| indegree[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            indegree[u] -= 1;
            if indegree[u] == 0 {
                ready.push(std::cmp::Reverse(u));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::lock_in_order;
    use crate::lock::SpinLock;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// `desc_mut` changes a description no one shares in place, and copies
    /// one that another holder shares, which keeps what it had.
    #[test]
    fn desc_mut_copies_only_a_shared_description() {
        use super::{desc_mut, DepList, GraphDesc, NodeKind};
        let mut d = Arc::new(GraphDesc::with_capacity(4));
        let at = Arc::as_ptr(&d);
        desc_mut(&mut d).push_deps(NodeKind::Host, DepList::default());
        assert_eq!((Arc::as_ptr(&d), d.len()), (at, 1), "changed in place");
        let held = Arc::clone(&d);
        desc_mut(&mut d).push_deps(NodeKind::Host, DepList::default());
        assert_ne!(Arc::as_ptr(&d), at, "copied");
        assert_eq!((d.len(), held.len()), (2, 1));
        let weak = Arc::downgrade(&held);
        let mut held = held;
        desc_mut(&mut held).push_deps(NodeKind::Host, DepList::default());
        assert_eq!(held.len(), 2);
        assert_eq!(
            weak.upgrade().map(|w| w.len()),
            None,
            "a weak reference made it copy"
        );
    }

    #[test]
    fn lock_in_order_returns_the_guards_as_asked() {
        let (a, b) = (SpinLock::new('a'), SpinLock::new('b'));
        for (ia, ib) in [(1, 2), (2, 1)] {
            let (ga, gb) = lock_in_order((&a, ia), (&b, ib));
            assert_eq!((*ga, *gb), ('a', 'b'));
        }
    }

    /// Two threads locking one pair, each naming it in the other order,
    /// many times over: no deadlock (a watchdog fails the test instead).
    #[test]
    fn lock_in_order_never_deadlocks_on_one_pair() {
        let pair = Arc::new((SpinLock::new(0u64), SpinLock::new(0u64)));
        let (tx, rx) = mpsc::channel();
        for flip in [false, true] {
            let (pair, tx) = (pair.clone(), tx.clone());
            std::thread::spawn(move || {
                for _ in 0..100_000 {
                    let (x, y) = ((&pair.0, 1), (&pair.1, 2));
                    let (mut g0, mut g1) = if flip {
                        let (g1, g0) = lock_in_order(y, x);
                        (g0, g1)
                    } else {
                        lock_in_order(x, y)
                    };
                    *g0 += 1;
                    *g1 += 1;
                }
                tx.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("two threads locking one pair deadlocked");
        }
        assert_eq!(*pair.0.acquire(), 200_000);
    }

    #[test]
    fn topological_orders_dependencies_first() {
        let deps = vec![vec![2], vec![], vec![1], vec![0, 1]];
        assert_eq!(super::topological(&deps), vec![1, 2, 0, 3]);
    }
}
