//! Graphs: built node by node or captured from a stream, each with a pure
//! [`GraphDesc`] beside the CUDA graph (for validation, DOT output and
//! update checks) and the things it must keep alive (functions it launches,
//! pool memory its capture allocated).

mod desc;
mod dot;
pub mod fuse;

pub use desc::{Direction, GraphDesc, NodeKind, TopologyDifference};
pub use dot::to_dot;

use crate::arg::{check_new, ArgDecl};
use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams, RawNode};
use crate::driver::memory::{memory_kind, MemoryKind, Memset};
use crate::driver::owned::{Nodes, Owned, Shared};
use crate::driver::{CUgraph, CUgraphNode};
use crate::error::{ensure_arg, Error, Result};
use crate::event::Event;
use crate::lock::lock;
use crate::module::{Function, LaunchConfig};
use crate::pool::{check_device_range, check_pool_range, GraphMemory};
use graphcore_kernels::{KernelInfo, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

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
    state: Mutex<GraphState>,
}

/// What the graph's lock guards: the CUDA graph and everything describing
/// it. Two graph locks are held at once only by [`lock_in_order`].
pub(crate) struct GraphState {
    /// The CUDA graph when graphcore destroys it (`None` for a borrowed
    /// one). Destroyed first (fields drop in order), before the functions
    /// and memory its nodes use.
    owned: Option<Owned<CUgraph>>,
    /// The CUDA graph (driver calls on it or its nodes hold the lock).
    raw: Shared<CUgraph>,
    /// The description and nodes: from the start for a graph built node by
    /// node; for a captured graph, read back from CUDA under the lock by the
    /// first call that needs them ([`Graph::described`]), so ending a
    /// capture costs what CUDA's own end does.
    described: Option<Described>,
    /// Number of nodes (kept with the description, and known for a captured
    /// graph before it is read back).
    count: usize,
    /// Functions launched by kernel nodes (kept loaded).
    functions: Vec<Function>,
    /// Pool memory held by this graph's capture and its child graphs'.
    memory: Vec<Arc<GraphMemory>>,
    /// Events its (and its child graphs') event nodes record or wait on.
    events: Vec<Event>,
    /// Declared arguments, by index.
    pub(crate) args: Vec<ArgDecl>,
}

/// A graph's description, and its CUDA nodes in the description's order.
struct Described {
    /// Shared with the execs instantiated from the graph (copied when the
    /// graph changes while they hold it).
    desc: Arc<GraphDesc>,
    nodes: Nodes,
    /// For a captured graph read back lazily: its description as captured,
    /// which execs instantiated before the read back stand on (see
    /// [`Graph::captured_desc`]); `None` for a graph built node by node.
    as_captured: Option<Arc<GraphDesc>>,
}

impl GraphState {
    /// The CUDA graph, for driver calls made under the lock.
    pub(crate) fn raw(&self) -> CUgraph {
        self.raw.raw()
    }

    /// The description and the nodes indexed as it, if they are there (a
    /// captured graph not read back has none yet).
    pub(crate) fn if_read(&self) -> Option<(&Arc<GraphDesc>, &Nodes)> {
        self.described.as_ref().map(|d| (&d.desc, &d.nodes))
    }

    /// Number of nodes.
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}

/// A graph's locked state whose description is there: what calls that read
/// or change the description hold ([`Graph::described`]).
pub(crate) struct DescribedState<'a> {
    st: MutexGuard<'a, GraphState>,
}

impl<'a> DescribedState<'a> {
    /// The locked state `st` with its description there: a captured
    /// graph's is read back now if no call has needed it before.
    fn new(mut st: MutexGuard<'a, GraphState>, ctx: &Context) -> Result<Self> {
        if st.described.is_none() {
            st.described = Some(Graph::read_back(ctx, st.raw())?);
        }
        Ok(DescribedState { st })
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

/// Dependencies of a new node whose raw nodes are kept inline (no
/// allocation for the driver call): a chain's one, a join's few.
const INLINE_DEPS: usize = 4;

/// A new node's dependencies, checked: their indices (kept in the
/// description) and their CUDA nodes (for the driver call).
struct Deps {
    idx: Vec<usize>,
    /// The raw nodes when there are at most [`INLINE_DEPS`].
    inline: [CUgraphNode; INLINE_DEPS],
    /// The raw nodes when there are more.
    spilled: Vec<CUgraphNode>,
}

impl Deps {
    /// The dependencies `idx` (checked) of a graph whose CUDA nodes are
    /// `nodes`.
    fn new(idx: Vec<usize>, nodes: &[CUgraphNode]) -> Deps {
        let mut inline = [std::ptr::null_mut(); INLINE_DEPS];
        let spilled = if idx.len() <= INLINE_DEPS {
            for (r, &i) in inline.iter_mut().zip(&idx) {
                *r = nodes[i];
            }
            Vec::new()
        } else {
            idx.iter().map(|&i| nodes[i]).collect()
        };
        Deps {
            idx,
            inline,
            spilled,
        }
    }

    /// The CUDA nodes, in order.
    fn raw(&self) -> &[CUgraphNode] {
        if self.idx.len() <= INLINE_DEPS {
            &self.inline[..self.idx.len()]
        } else {
            &self.spilled
        }
    }
}

/// Locks two distinct graphs' states (`a.1`, `b.1` are their ids), the lower
/// id first whichever is asked first: the one order for holding two graph
/// locks, so two threads locking the same pair cannot deadlock. Returns the
/// guards in the order asked.
fn lock_in_order<'a, T>(
    a: (&'a Mutex<T>, u64),
    b: (&'a Mutex<T>, u64),
) -> (MutexGuard<'a, T>, MutexGuard<'a, T>) {
    debug_assert_ne!(a.1, b.1, "two locks of one graph");
    if a.1 < b.1 {
        let ga = lock(a.0);
        (ga, lock(b.0))
    } else {
        let gb = lock(b.0);
        (lock(a.0), gb)
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
    fn wrap(ctx: &Context, state: GraphState) -> Graph {
        Graph {
            inner: Arc::new(GraphInner {
                ctx: ctx.clone(),
                id: next_graph_id(),
                state: Mutex::new(state),
            }),
        }
    }

    /// An empty graph.
    pub fn new(ctx: &Context) -> Result<Graph> {
        ctx.bind()?;
        let raw = Owned::new(dg::create()?, ctx.primary());
        Ok(Self::wrap(
            ctx,
            GraphState {
                raw: Shared::new(raw.raw()),
                owned: Some(raw),
                described: Some(Described {
                    desc: Arc::new(GraphDesc::new()),
                    nodes: Nodes::default(),
                    as_captured: None,
                }),
                count: 0,
                functions: Vec::new(),
                memory: Vec::new(),
                events: Vec::new(),
                args: Vec::new(),
            },
        ))
    }

    /// Wraps a graph CUDA captured; it keeps `events` (those of its event
    /// nodes) alive. Only its node count is read now; its nodes, edges and
    /// parameters are read back when first needed.
    pub(crate) fn from_captured(
        ctx: &Context,
        raw: CUgraph,
        memory: Option<GraphMemory>,
        events: Vec<Event>,
        args: Vec<ArgDecl>,
    ) -> Result<Graph> {
        // On failure, dropping `owned` destroys the graph.
        let owned = Owned::new(raw, ctx.primary());
        let count = dg::node_count(raw)?;
        Ok(Self::wrap(
            ctx,
            GraphState {
                owned: Some(owned),
                raw: Shared::new(raw),
                described: None,
                count,
                functions: Vec::new(),
                memory: memory.map(Arc::new).into_iter().collect(),
                events,
                args,
            },
        ))
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
        ctx.bind()?;
        let count = dg::node_count(raw)?;
        Ok(Self::wrap(
            ctx,
            GraphState {
                owned,
                raw: Shared::new(raw),
                described: None,
                count,
                functions: Vec::new(),
                memory: Vec::new(),
                events: Vec::new(),
                args: Vec::new(),
            },
        ))
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
        Ok(Self::wrap(
            ctx,
            GraphState {
                raw: Shared::new(raw.raw()),
                owned: Some(raw),
                described: Some(Described {
                    desc: Arc::clone(st.desc()),
                    nodes: nodes.into(),
                    as_captured: None,
                }),
                count: st.st.count,
                functions: st.st.functions.clone(),
                memory: st.st.memory.clone(),
                events: st.st.events.clone(),
                args: st.st.args.clone(),
            },
        ))
    }

    /// True when the caller owns the CUDA graph ([`Graph::wrap_raw`]
    /// without adopting it).
    pub fn is_borrowed(&self) -> bool {
        self.state().owned.is_none()
    }

    /// Reads a captured graph's nodes and edges back: its description, and
    /// its nodes in the description's order.
    fn read_back(ctx: &Context, raw: CUgraph) -> Result<Described> {
        ctx.bind()?;
        let nodes = dg::nodes(raw)?;
        let index: HashMap<CUgraphNode, usize> =
            nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut deps = vec![Vec::new(); nodes.len()];
        for (from, to) in dg::edges(raw)? {
            deps[index[&to]].push(index[&from]);
        }
        // Edges may point backwards in CUDA's listing: add nodes in a
        // topological order, then renumber.
        let order = topological(&deps);
        let mut desc = GraphDesc::new();
        let mut new_index = vec![0usize; nodes.len()];
        let mut ordered = Vec::with_capacity(nodes.len());
        for &i in &order {
            let kind = describe(ctx, dg::read_node(nodes[i])?)?;
            let d: Vec<usize> = deps[i].iter().map(|&j| new_index[j]).collect();
            new_index[i] = desc.push(kind, d);
            ordered.push(nodes[i]);
        }
        let desc = Arc::new(desc);
        Ok(Described {
            as_captured: Some(desc.clone()),
            desc,
            nodes: ordered.into(),
        })
    }

    /// The graph's state with its description there: a captured graph is
    /// read back now, under the lock, if no call has needed it before.
    pub(crate) fn described(&self) -> Result<DescribedState<'_>> {
        DescribedState::new(self.state(), &self.inner.ctx)
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

    /// The graph's unique id (what [`Node::graph`] holds).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The graph's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The raw `CUgraph` (for interop; graphcore still owns it). Driver
    /// calls on it must not overlap graphcore's calls on this graph.
    pub fn raw(&self) -> CUgraph {
        self.state().raw()
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, GraphState> {
        lock(&self.inner.state)
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.state().count
    }

    /// A copy of the graph's description (a captured graph is read back
    /// from CUDA the first time).
    pub fn desc(&self) -> Result<GraphDesc> {
        Ok((**self.described()?.desc()).clone())
    }

    /// Pool bytes this graph holds: what its capture (and its child graphs'
    /// captures) allocated and had not freed when it ended.
    pub fn pool_bytes(&self) -> u64 {
        self.state().memory.iter().map(|m| m.held_bytes()).sum()
    }

    /// The highest pool bytes its capture had allocated at once.
    pub fn pool_peak_bytes(&self) -> u64 {
        self.state().memory.iter().map(|m| m.peak_bytes()).sum()
    }

    /// Declares `base .. base + bytes` an argument of the graph (see
    /// [`crate::arg`]): execs made later find its uses in the nodes and can
    /// bind it to another range at launch. Returns its index (declaration
    /// order; a captured graph's arguments declared during its capture come
    /// first). The range must be device memory of the graph's device and
    /// overlap no argument declared before.
    pub fn declare_arg(&self, base: u64, bytes: usize, exact: bool) -> Result<usize> {
        let mut st = self.state();
        let d = ArgDecl { base, bytes, exact };
        let index = check_new(&st.args, &d)?;
        self.inner.ctx.bind()?;
        check_device_range(&self.inner.ctx, "ptr", base, bytes)?;
        st.args.push(d);
        Ok(index)
    }

    /// The declared arguments, by index.
    pub fn args(&self) -> Vec<ArgDecl> {
        self.state().args.clone()
    }

    /// The indices and raw nodes of `deps`, checking each belongs to this
    /// graph.
    fn resolve(&self, st: &DescribedState<'_>, deps: &[Node]) -> Result<Deps> {
        let mut idx = Vec::with_capacity(deps.len());
        for (i, d) in deps.iter().enumerate() {
            ensure_arg!(
                d.graph == self.inner.id,
                "dependency {i} is a node of another graph"
            );
            idx.push(d.index as usize);
        }
        st.desc().check_deps(&idx)?;
        Ok(Deps::new(idx, st.nodes()))
    }

    /// Records a node the driver added (after `deps`) in the description.
    fn push(
        &self,
        st: &mut DescribedState<'_>,
        kind: NodeKind,
        deps: Vec<usize>,
        raw: CUgraphNode,
    ) -> Node {
        let d = st.described_mut();
        let index = Arc::make_mut(&mut d.desc).push(kind, deps);
        d.nodes.push(raw);
        st.st.count = index + 1;
        Node {
            graph: self.inner.id,
            index: index as u32,
        }
    }

    /// Adds a kernel node launching `f` with `cfg` after `deps`. The
    /// argument values are copied now.
    ///
    /// # Safety
    /// `args` must hold one valid pointer per parameter of `f`, each to a
    /// value of the parameter's type.
    pub unsafe fn add_kernel(
        &self,
        f: &Function,
        cfg: &LaunchConfig,
        args: *mut *mut c_void,
        deps: &[Node],
    ) -> Result<Node> {
        cfg.validate()?;
        ensure_arg!(
            f.context().same(&self.inner.ctx),
            "the function belongs to another context"
        );
        let mut st = self.described()?;
        let deps = self.resolve(&st, deps)?;
        // The driver needs the context current even though the node names
        // its function (without it, a thread that never made one current
        // crashes in the driver).
        self.inner.ctx.bind()?;
        let params = KernelParams {
            func: f.raw(),
            grid: cfg.grid,
            block: cfg.block,
            shared_bytes: cfg.shared_bytes,
            args,
        };
        // SAFETY: `args` holds one valid pointer per parameter of `f` (this
        // function's contract); the driver copies the values.
        let raw = unsafe { dg::add_kernel(st.raw(), deps.raw(), &params) }?;
        let builtin = f.builtin();
        let kind = NodeKind::Kernel {
            name: f.shared_name(),
            grid: cfg.grid,
            block: cfg.block,
            shared_bytes: cfg.shared_bytes,
            builtin,
            // SAFETY: as above, one valid pointer per parameter of `k`.
            args: builtin.map_or(Vec::new(), |k| unsafe { builtin_args(k, args) }),
        };
        // Consecutive nodes of one function keep it once.
        if !st.st.functions.last().is_some_and(|g| g.same(f)) {
            st.st.functions.push(f.clone());
        }
        Ok(self.push(&mut st, kind, deps.idx, raw))
    }

    /// Adds a copy of `bytes` bytes from `src` to `dst`. Each side must be
    /// device memory or pinned host memory (pageable host memory cannot be
    /// copied by a graph node and is refused here).
    ///
    /// # Safety
    /// `dst` and `src` must each be valid for `bytes` bytes whenever the
    /// graph (or an exec made from it) runs; ranges outside graphcore's
    /// pools cannot be checked.
    pub unsafe fn add_memcpy(
        &self,
        dst: u64,
        src: u64,
        bytes: usize,
        deps: &[Node],
    ) -> Result<Node> {
        ensure_arg!(dst != 0, "`dst` is NULL");
        ensure_arg!(src != 0, "`src` is NULL");
        ensure_arg!(bytes > 0, "a memcpy node of 0 bytes");
        self.inner.ctx.bind()?;
        let (kd, ks) = (memory_kind(dst), memory_kind(src));
        for (name, k, p) in [("dst", kd, dst), ("src", ks, src)] {
            ensure_arg!(
                k != MemoryKind::Unknown,
                "`{name}` (0x{p:x}) is pageable host memory or memory CUDA does not know; graph copies need device memory or pinned host memory (a context's host allocation)"
            );
        }
        let ctx = &self.inner.ctx;
        check_pool_range(ctx, "dst", dst, bytes)?;
        check_pool_range(ctx, "src", src, bytes)?;
        let mut st = self.described()?;
        let deps = self.resolve(&st, deps)?;
        let raw = dg::add_memcpy(st.raw(), deps.raw(), dst, src, bytes, self.inner.ctx.raw())?;
        let kind = NodeKind::Memcpy {
            dst,
            src,
            bytes,
            direction: direction(kd, ks),
        };
        Ok(self.push(&mut st, kind, deps.idx, raw))
    }

    /// Adds a node setting `bytes` bytes of device memory at `dst` to
    /// `value`: [`add_memset_elements`](Self::add_memset_elements) of bytes.
    ///
    /// # Safety
    /// As for [`add_memset_elements`](Self::add_memset_elements).
    pub unsafe fn add_memset(
        &self,
        dst: u64,
        value: u8,
        bytes: usize,
        deps: &[Node],
    ) -> Result<Node> {
        // SAFETY: this function's contract is the callee's.
        unsafe { self.add_memset_elements(dst, value as u32, 1, bytes, deps) }
    }

    /// Adds a node setting `count` elements of `elem_size` bytes (1, 2 or
    /// 4) of device memory at `dst` to `value`. `dst` must be aligned to
    /// `elem_size` and `value` must fit in an element.
    ///
    /// # Safety
    /// `dst` must be device memory valid for `count * elem_size` bytes
    /// whenever the graph (or an exec made from it) runs.
    pub unsafe fn add_memset_elements(
        &self,
        dst: u64,
        value: u32,
        elem_size: u32,
        count: usize,
        deps: &[Node],
    ) -> Result<Node> {
        let m = Memset::new(dst, value, elem_size, count)?;
        ensure_arg!(count > 0, "a memset node of 0 elements");
        self.inner.ctx.bind()?;
        ensure_arg!(
            memory_kind(dst) == MemoryKind::Device,
            "`dst` (0x{dst:x}) is not device memory"
        );
        check_pool_range(&self.inner.ctx, "dst", dst, m.bytes())?;
        let mut st = self.described()?;
        let deps = self.resolve(&st, deps)?;
        let raw = dg::add_memset(st.raw(), deps.raw(), &m, self.inner.ctx.raw())?;
        Ok(self.push(&mut st, memset_kind(&m), deps.idx, raw))
    }

    /// Adds a node calling `f(user_data)` on a CPU thread when it runs.
    ///
    /// # Safety
    /// `f` must be safe to call with `user_data` whenever the graph runs.
    pub unsafe fn add_host(
        &self,
        f: dg::HostFn,
        user_data: *mut c_void,
        deps: &[Node],
    ) -> Result<Node> {
        let mut st = self.described()?;
        let deps = self.resolve(&st, deps)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_host(st.raw(), deps.raw(), f, user_data)?;
        Ok(self.push(&mut st, NodeKind::Host, deps.idx, raw))
    }

    /// Adds a node running a copy of `child` (its pool memory and
    /// functions are kept alive with this graph).
    pub fn add_child(&self, child: &Graph, deps: &[Node]) -> Result<Node> {
        ensure_arg!(
            !Arc::ptr_eq(&self.inner, &child.inner),
            "a graph cannot be its own child"
        );
        ensure_arg!(
            child.context().same(&self.inner.ctx),
            "the child graph belongs to another context"
        );
        // CUDA reads the child while it copies it: both locks are held.
        let (st, c) = lock_in_order(
            (&self.inner.state, self.inner.id),
            (&child.inner.state, child.inner.id),
        );
        let nodes = c.count;
        ensure_arg!(nodes > 0, "the child graph has no nodes");
        let mut st = DescribedState::new(st, &self.inner.ctx)?;
        let deps = self.resolve(&st, deps)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_child(st.raw(), deps.raw(), c.raw())?;
        st.st.functions.extend(c.functions.iter().cloned());
        st.st.memory.extend(c.memory.iter().cloned());
        st.st.events.extend(c.events.iter().cloned());
        drop(c);
        Ok(self.push(&mut st, NodeKind::Child { nodes }, deps.idx, raw))
    }

    /// Adds a node that does nothing: a join point for dependencies.
    pub fn add_empty(&self, deps: &[Node]) -> Result<Node> {
        let mut st = self.described()?;
        let deps = self.resolve(&st, deps)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_empty(st.raw(), deps.raw())?;
        Ok(self.push(&mut st, NodeKind::Empty, deps.idx, raw))
    }

    /// Makes `to` depend on `from`. Nodes of another graph, self-loops,
    /// repeated edges and cycles are refused.
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        for (name, n) in [("from", from), ("to", to)] {
            ensure_arg!(
                n.graph == self.inner.id,
                "`{name}` is a node of another graph"
            );
        }
        let mut st = self.described()?;
        let (f, t) = (from.index as usize, to.index as usize);
        st.desc().check_edge(f, t)?;
        self.inner.ctx.bind()?;
        dg::add_dependency(st.raw(), st.nodes()[f], st.nodes()[t])?;
        Arc::make_mut(&mut st.described_mut().desc).add_edge(f, t);
        Ok(())
    }

    /// The graph in Graphviz DOT (a captured graph is read back from CUDA
    /// the first time).
    pub fn to_dot(&self, name: &str) -> Result<String> {
        Ok(to_dot(self.described()?.desc(), name))
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

/// Describes a node CUDA reports.
fn describe(ctx: &Context, raw: RawNode) -> Result<NodeKind> {
    Ok(match raw {
        RawNode::Kernel {
            func,
            grid,
            block,
            shared_bytes,
            args,
        } => {
            let builtin = ctx.builtin_of(func);
            NodeKind::Kernel {
                name: builtin.map_or_else(|| format!("kernel@{func:p}").into(), |k| k.name.into()),
                grid,
                block,
                shared_bytes,
                builtin,
                // SAFETY: the driver's copy holds one value per parameter.
                args: builtin.map_or(Vec::new(), |k| unsafe { builtin_args(k, args) }),
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
        RawNode::Child(g) => NodeKind::Child {
            nodes: dg::node_count(g)?,
        },
        RawNode::Empty => NodeKind::Empty,
        RawNode::Other(what) => NodeKind::Other(what),
    })
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
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn lock_in_order_returns_the_guards_as_asked() {
        let (a, b) = (Mutex::new('a'), Mutex::new('b'));
        for (ia, ib) in [(1, 2), (2, 1)] {
            let (ga, gb) = lock_in_order((&a, ia), (&b, ib));
            assert_eq!((*ga, *gb), ('a', 'b'));
        }
    }

    /// Two threads locking one pair, each naming it in the other order,
    /// many times over: no deadlock (a watchdog fails the test instead).
    #[test]
    fn lock_in_order_never_deadlocks_on_one_pair() {
        let pair = Arc::new((Mutex::new(0u64), Mutex::new(0u64)));
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
        assert_eq!(*crate::lock::lock(&pair.0), 200_000);
    }

    #[test]
    fn deps_keep_few_raw_nodes_inline_and_spill_the_rest() {
        let nodes: Vec<super::CUgraphNode> = (1..=10usize).map(|i| i as _).collect();
        for idx in [vec![], vec![3], vec![9, 0, 4, 2], vec![1, 8, 2, 7, 5, 0]] {
            let want: Vec<_> = idx.iter().map(|&i| nodes[i]).collect();
            let deps = super::Deps::new(idx.clone(), &nodes);
            assert_eq!(deps.raw(), &want[..], "dependencies {idx:?}");
            assert_eq!(deps.idx, idx);
        }
    }

    #[test]
    fn topological_orders_dependencies_first() {
        let deps = vec![vec![2], vec![], vec![1], vec![0, 1]];
        assert_eq!(super::topological(&deps), vec![1, 2, 0, 3]);
    }
}
