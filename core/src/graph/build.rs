//! Building a graph node by node: kernel, copy, memset, host, child and
//! empty nodes, and the edges between them.

use super::desc::{self, DepList};
use super::{
    allowed_in_body, builtin_args, desc_mut, direction, lock_in_order, memset_kind, DescribedState,
    EdgeKind, Graph, Node, NodeKind,
};
use crate::driver::edges;
use crate::driver::graph::{self as dg, KernelParams};
use crate::driver::memory::{memory_kind, MemoryKind, Memset};
use crate::driver::CUgraphNode;
use crate::error::{ensure_arg, Error, Result};
use crate::module::{ArgBuffer, Function, LaunchConfig};
use crate::pool::check_pool_range;
use crate::timing::{self, Span};
use graphcore_kernels::{Call, SizeError};
use std::ffi::c_void;
use std::sync::Arc;

/// Dependencies of a new node whose raw nodes are kept inline (no
/// allocation for the driver call): a chain's one, a join's few.
const INLINE_DEPS: usize = 4;

/// A new node's dependencies, checked: their indices (kept in the
/// description) and their CUDA nodes (for the driver call).
pub(super) struct Deps {
    pub(super) idx: DepList,
    /// The raw nodes when there are at most [`INLINE_DEPS`].
    inline: [CUgraphNode; INLINE_DEPS],
    /// The raw nodes when there are more.
    spilled: Vec<CUgraphNode>,
}

impl Deps {
    /// No dependencies yet: [`Graph::resolve_into`] fills it in place (built
    /// where it is used, the lists are not copied through memory on the
    /// way, which costs more than the rest of resolving a chain's one).
    #[inline]
    pub(super) fn empty() -> Deps {
        Deps {
            idx: DepList::default(),
            inline: [std::ptr::null_mut(); INLINE_DEPS],
            spilled: Vec::new(),
        }
    }

    /// Looks the CUDA nodes of the (checked) indices up in `nodes`.
    #[inline]
    fn gather(&mut self, nodes: &[CUgraphNode]) {
        let list = self.idx.as_slice();
        if list.len() <= INLINE_DEPS {
            for (r, &i) in self.inline.iter_mut().zip(list) {
                *r = nodes[i];
            }
        } else {
            self.spilled = list.iter().map(|&i| nodes[i]).collect();
        }
    }

    /// The CUDA nodes, in order.
    #[inline]
    pub(super) fn raw(&self) -> &[CUgraphNode] {
        let n = self.idx.as_slice().len();
        if n <= INLINE_DEPS {
            &self.inline[..n]
        } else {
            &self.spilled
        }
    }
}

/// The error for dependency `i` of a new node naming another graph's node.
#[cold]
#[inline(never)]
fn other_graph_dep(i: usize) -> Error {
    Error::invalid_argument(format!("dependency {i} is a node of another graph"))
}

impl Graph {
    /// The indices and raw nodes of `deps`, checking each belongs to this
    /// graph (and that the graph may change), into `out` (from
    /// [`Deps::empty`], where the caller uses it).
    #[inline(always)]
    pub(super) fn resolve_into(
        &self,
        st: &DescribedState<'_>,
        deps: &[Node],
        out: &mut Deps,
    ) -> Result<()> {
        self.check_changeable()?;
        let nodes = st.nodes();
        if deps.len() <= DepList::INLINE {
            // A chain's one dependency, a join's few: checked, numbered and
            // looked up in one pass (a refusal is explained by
            // `explain_deps`, off this path).
            let mut idx = [0; DepList::INLINE];
            for (k, d) in deps.iter().enumerate() {
                let i = d.index as usize;
                if d.graph != self.inner.id || i >= nodes.len() || idx[..k].contains(&i) {
                    return Err(self.explain_deps(st, deps));
                }
                idx[k] = i;
                out.inline[k] = nodes[i];
            }
            out.idx = DepList::Inline(deps.len(), idx);
            return Ok(());
        }
        if deps.iter().any(|d| d.graph != self.inner.id) {
            return Err(self.explain_deps(st, deps));
        }
        out.idx = DepList::from_fn(deps.len(), |i| deps[i].index as usize);
        desc::check_dep_indices(nodes.len(), out.idx.as_slice())?;
        out.gather(nodes);
        Ok(())
    }

    /// The error for dependencies [`resolve_into`](Self::resolve_into)
    /// refused: the first of another graph, out of range or repeated.
    #[cold]
    #[inline(never)]
    fn explain_deps(&self, st: &DescribedState<'_>, deps: &[Node]) -> Error {
        if let Some(i) = deps.iter().position(|d| d.graph != self.inner.id) {
            return other_graph_dep(i);
        }
        let idx: Vec<usize> = deps.iter().map(|d| d.index as usize).collect();
        match desc::check_dep_indices(st.nodes().len(), &idx) {
            Err(e) => e,
            Ok(()) => {
                unreachable!("explain_deps is called only for dependencies that fail a check")
            }
        }
    }

    /// Records a node the driver added (after `deps`) in the description.
    #[inline]
    pub(super) fn push(
        &self,
        st: &mut DescribedState<'_>,
        kind: NodeKind,
        deps: DepList,
        raw: CUgraphNode,
    ) -> Node {
        let d = st.described_mut();
        debug_assert!(d.pending.is_empty(), "described nodes follow pending ones");
        let index = desc_mut(&mut d.desc).push_deps(kind, deps);
        d.nodes.push(raw);
        st.st.count = Some(index + 1);
        Node {
            graph: self.inner.id,
            index: index as u32,
        }
    }

    /// Records a kernel node the driver added (after `deps`) as pending:
    /// described when a call first needs it.
    #[inline]
    fn push_pending(&self, st: &mut DescribedState<'_>, deps: DepList, raw: CUgraphNode) -> Node {
        let d = st.described_mut();
        d.pending.push(deps);
        d.nodes.push(raw);
        let index = d.nodes.len() - 1;
        st.st.count = Some(index + 1);
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
        let _timer = timing::start(Span::GraphAddKernel);
        cfg.validate()?;
        self.inner
            .ctx
            .ensure_same("the graph", f.context(), "the function")?;
        let (mut st, pending) =
            DescribedState::for_kernel(self.state()?, &self.inner.ctx, self.is_body())?;
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        // The driver needs the context current even though the node names
        // its function: without it, a thread that never made one current
        // crashes in the driver, also when the parameters' `ctx` names the
        // context (perf/cuda/context_free_probe.cu).
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
        let raw = unsafe { dg::add_kernel(st.raw(), resolved.raw(), &params) }?;
        // Consecutive nodes of one function keep it once.
        if !st.st.functions.last().is_some_and(|g| g.same(f)) {
            st.st.functions.push(f.clone());
        }
        if pending {
            return Ok(self.push_pending(&mut st, resolved.idx, raw));
        }
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
        Ok(self.push(&mut st, kind, resolved.idx, raw))
    }

    /// Adds a kernel node running a built-in operation planned by
    /// `graphcore_kernels::ops` (a call that failed its checks, a
    /// cooperative one or one launched as thread-block clusters is
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument):
    /// capture those on a stream).
    ///
    /// # Safety
    /// The buffers the call names must be device memory of this graph's
    /// context, valid for what the call reads and writes whenever the graph
    /// runs.
    pub unsafe fn add_op(
        &self,
        call: std::result::Result<Call, SizeError>,
        deps: &[Node],
    ) -> Result<Node> {
        let call = call?;
        // A kernel node built here has no cooperative attribute: a grid
        // barrier in it could hang (capture such a launch instead).
        ensure_arg!(
            !call.cooperative,
            "`{}` is a cooperative launch: graphs built node by node cannot hold it (capture \
             the operation on a stream instead)",
            call.kernel.name()
        );
        // Nor a cluster launch: a node built here has no cluster dimension
        // (the kernel would then sum each tile in one block, other bits
        // than the same call captured from a stream).
        ensure_arg!(
            call.cluster.is_none(),
            "`{}` is launched as thread-block clusters: graphs built node by node cannot hold it \
             (capture the operation on a stream instead)",
            call.kernel.name()
        );
        let f = Function::from_builtin(&self.inner.ctx, call.kernel.name())?;
        let mut args = ArgBuffer::new(call.args());
        let mut ptrs = args.pointers();
        let cfg = LaunchConfig {
            grid: call.grid,
            block: call.block,
            shared_bytes: call.shared_bytes,
        };
        // SAFETY: one slot per parameter, typed by the kernel table; the
        // buffers are valid by this function's contract.
        unsafe { self.add_kernel(&f, &cfg, ptrs.as_mut_ptr(), deps) }
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
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        let raw = dg::add_memcpy(
            st.raw(),
            resolved.raw(),
            dst,
            src,
            bytes,
            self.inner.ctx.raw(),
        )?;
        let kind = NodeKind::Memcpy {
            dst,
            src,
            bytes,
            direction: direction(kd, ks),
        };
        Ok(self.push(&mut st, kind, resolved.idx, raw))
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
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        let raw = dg::add_memset(st.raw(), resolved.raw(), &m, self.inner.ctx.raw())?;
        Ok(self.push(&mut st, memset_kind(&m), resolved.idx, raw))
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
        ensure_arg!(
            !self.is_body(),
            "CUDA does not allow host nodes in a conditional node's body"
        );
        let mut st = self.described()?;
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_host(st.raw(), resolved.raw(), f, user_data)?;
        Ok(self.push(&mut st, NodeKind::Host, resolved.idx, raw))
    }

    /// Adds a node running a copy of `child` (its pool memory and
    /// functions are kept alive with this graph).
    pub fn add_child(&self, child: &Graph, deps: &[Node]) -> Result<Node> {
        ensure_arg!(
            !Arc::ptr_eq(&self.inner, &child.inner),
            "a graph cannot be its own child"
        );
        self.inner
            .ctx
            .ensure_same("the graph", child.context(), "the child graph")?;
        // CUDA reads the child while it copies it: both locks are held.
        let (st, mut c) = lock_in_order(
            (&self.inner.state, self.inner.id),
            (&child.inner.state, child.inner.id),
        );
        self.check_usable(&st)?;
        child.check_usable(&c)?;
        let nodes = c.count()?;
        ensure_arg!(nodes > 0, "the child graph has no nodes");
        ensure_arg!(
            !child.is_body(),
            "the child graph is a conditional node's body (a body belongs to its node)"
        );
        let mut st = DescribedState::new(st, &self.inner.ctx)?;
        let c = if self.is_body() {
            // Only a body's children are read back here, to check them.
            let c = DescribedState::new(c, &self.inner.ctx)?;
            let d = c.desc();
            if let Some(i) = (0..nodes).find(|&i| !allowed_in_body(d.node(i))) {
                return Err(Error::invalid_argument(format!(
                    "the child graph's node {i} is a {} node: CUDA allows only kernel, copy, \
                     memset, empty, child-graph and conditional nodes in a conditional body",
                    d.node(i).kind_name()
                )));
            }
            c.st
        } else {
            c
        };
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_child(st.raw(), resolved.raw(), c.raw())?;
        st.st.functions.extend(c.functions.iter().cloned());
        st.st.memory.extend(c.memory.iter().cloned());
        st.st.events.extend(c.events.iter().cloned());
        let kept = c.kept_bodies();
        drop(c);
        if !kept.is_empty() {
            // The copy's bodies are CUDA's copies; the originals' functions
            // and memory are kept alive through them.
            self.keep_bodies(&mut st.st, usize::MAX, kept);
        }
        Ok(self.push(&mut st, NodeKind::Child { nodes }, resolved.idx, raw))
    }

    /// Adds a node that does nothing: a join point for dependencies.
    pub fn add_empty(&self, deps: &[Node]) -> Result<Node> {
        let mut st = self.described()?;
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        self.inner.ctx.bind()?;
        let raw = dg::add_empty(st.raw(), resolved.raw())?;
        Ok(self.push(&mut st, NodeKind::Empty, resolved.idx, raw))
    }

    /// Makes `to` depend on `from`. Nodes of another graph, self-loops,
    /// repeated edges and cycles are refused.
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        self.add_edge(from, to, false)
    }

    /// Adds a programmatic edge `from -> to` between two kernel nodes
    /// (programmatic dependent launch, CUDA 12.3 on compute capability 9.0
    /// or newer): `to` may start launching once every block of `from` has
    /// executed `griddepcontrol.launch_dependents` (or exited), so its
    /// launch overlaps `from`'s tail. `to` must wait
    /// (`griddepcontrol.wait`, `cudaGridDependencySynchronize()`) before
    /// it reads what `from` wrote: graphcore's built-in kernels do (their
    /// `compute_90` modules, loaded from compute capability 9.0 on, wait
    /// first), a user kernel must. Refused as [`add_dependency`] refuses
    /// edges, too. Below compute capability 9.0 or without CUDA 12.3's edge
    /// calls (checked at run time) the edge is a full one: `to` then runs
    /// after `from` ends, with the same results and no overlap.
    ///
    /// [`add_dependency`]: Self::add_dependency
    pub fn add_programmatic_dependency(&self, from: Node, to: Node) -> Result<()> {
        self.add_edge(from, to, true)
    }

    /// [`add_dependency`](Self::add_dependency), or with `programmatic`
    /// [`add_programmatic_dependency`](Self::add_programmatic_dependency).
    fn add_edge(&self, from: Node, to: Node, programmatic: bool) -> Result<()> {
        for (name, n) in [("from", from), ("to", to)] {
            ensure_arg!(
                n.graph == self.inner.id,
                "`{name}` is a node of another graph"
            );
        }
        self.check_changeable()?;
        let mut st = self.described()?;
        let (f, t) = (from.index as usize, to.index as usize);
        st.desc().check_edge(f, t)?;
        if programmatic {
            for (name, i) in [("from", f), ("to", t)] {
                ensure_arg!(
                    matches!(st.desc().node(i), NodeKind::Kernel { .. }),
                    "`{name}` (node {i}) is a {} node: a programmatic edge joins two kernel nodes",
                    st.desc().node(i).kind_name()
                );
            }
        }
        self.inner.ctx.bind()?;
        let (from_raw, to_raw) = (st.nodes()[f], st.nodes()[t]);
        // Below compute capability 9.0 or CUDA 12.3 a programmatic edge is
        // a full one.
        let kind = if programmatic
            && self.inner.ctx.compute_capability().0 >= 9
            && edges::programmatic_edges()
        {
            EdgeKind::Programmatic
        } else {
            EdgeKind::Full
        };
        match kind {
            EdgeKind::Programmatic => {
                edges::add_programmatic(st.raw(), from_raw, to_raw, kind.port())?
            }
            _ => dg::add_dependency(st.raw(), from_raw, to_raw)?,
        }
        let desc = desc_mut(&mut st.described_mut().desc);
        desc.add_edge(f, t);
        if kind != EdgeKind::Full {
            desc.set_edge_kind(f, t, kind);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn deps_keep_few_raw_nodes_inline_and_spill_the_rest() {
        let nodes: Vec<super::CUgraphNode> = (1..=10usize).map(|i| i as _).collect();
        for idx in [vec![], vec![3], vec![9, 0, 4, 2], vec![1, 8, 2, 7, 5, 0]] {
            let want: Vec<_> = idx.iter().map(|&i| nodes[i]).collect();
            let mut deps = super::Deps::empty();
            deps.idx = idx.clone().into();
            deps.gather(&nodes);
            assert_eq!(deps.raw(), &want[..], "dependencies {idx:?}");
            assert_eq!(deps.idx.as_slice(), &idx[..]);
        }
    }
}
