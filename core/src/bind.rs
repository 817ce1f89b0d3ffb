//! An exec's bound arguments: where each declared argument's addresses
//! occur in the instantiated graph's nodes (found once, by the rule in
//! [`crate::arg`]), the address each argument is bound to now, and the
//! patching of exactly the nodes a new binding changes.
//!
//! Patching uses CUDA's exec setters (`cuGraphExecKernelNodeSetParams`,
//! the memcpy and memset ones, and `cuGraphExecChildGraphNodeSetParams`
//! with a patched copy of a child graph). CUDA documents them as affecting
//! later launches only: a launch already enqueued runs with the values it
//! was launched with.

use crate::arg::{
    check_scalar, check_size_for, find, match_scalar, scan, ArgDecl, Binding, Need, Slot,
};
use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams, RawNode};
use crate::driver::memory::Memset;
use crate::driver::owned::{Owned, Shared};
use crate::driver::{CUfunction, CUgraph, CUgraphExec, CUgraphNode};
use crate::error::{ensure_arg, Result};
use crate::pool::device_range;
use graphcore_kernels::KernelInfo;
use std::ffi::c_void;

/// One node whose parameters hold argument addresses.
struct Site {
    /// The node the setter names (of the graph the exec was instantiated
    /// from, or of a child graph's copy).
    node: Shared<CUgraphNode>,
    what: SiteKind,
    /// Where each use is: for a kernel the byte offset in `buf`, for a
    /// memcpy 0 (dst) or 1 (src), for a memset 0.
    slots: Vec<Slot>,
}

enum SiteKind {
    Kernel {
        func: Shared<CUfunction>,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        /// The parameter values, each at its offset.
        buf: Vec<u8>,
        /// Each parameter's (offset, size) in `buf`.
        layout: Vec<(usize, usize)>,
        /// The address of each parameter in `buf`, as the driver's
        /// `kernelParams` array wants them (`buf` is never resized).
        ptrs: Vec<usize>,
    },
    Memcpy {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    Memset(Memset),
    /// A child graph: `graph` owns the copy the exec is set to run (`None`
    /// for a child nested in such a copy, patched in place).
    Child {
        graph: Option<Owned<CUgraph>>,
        sites: Vec<Site>,
    },
}

/// An exec's declared arguments, their uses, and their current bindings.
pub(crate) struct ArgTable {
    ctx: Context,
    decls: Vec<ArgDecl>,
    /// Each argument's current first address.
    bound: Vec<u64>,
    /// Top-level sites (a child graph's sites are inside its site).
    sites: Vec<Site>,
    /// For each argument, the top-level sites using it.
    users: Vec<Vec<usize>>,
    /// For each argument, the number of uses (child graphs' included).
    uses: Vec<usize>,
    /// For each argument, whether a copy node (child graphs' included)
    /// has an endpoint in it: CUDA rebinds a copy's endpoint only to memory
    /// of the kind it had (graphcore pool memory, or other allocations).
    copied: Vec<bool>,
    /// Scratch, preallocated: sites to patch, their flags, old bindings.
    dirty: Vec<usize>,
    marked: Vec<bool>,
    saved: Vec<u64>,
    /// Allocations outside graphcore's pools that bindings were checked
    /// against (`start .. end`, the last [`KNOWN`]): a binding inside one
    /// needs no driver query. Freeing such memory and binding it again is
    /// the caller's error, not detected.
    known: [(u64, u64); KNOWN],
    known_next: usize,
}

/// How many checked allocations an exec remembers.
const KNOWN: usize = 8;

/// Each parameter's (offset, size) for a built-in kernel: its table's
/// kinds, each at its natural alignment.
fn builtin_layout(k: &KernelInfo) -> Vec<(usize, usize)> {
    let mut at = 0usize;
    k.args
        .iter()
        .map(|(_, kind)| {
            let size = kind.size();
            at = at.next_multiple_of(size);
            let slot = (at, size);
            at += size;
            slot
        })
        .collect()
}

/// Finds the uses in node `read`; `None` when it has none. The site names
/// `node` (the node setters name: `read` itself, or the exec graph's node
/// corresponding to it). `nested`: a node of a child graph.
fn site_of(
    ctx: &Context,
    decls: &[ArgDecl],
    read: CUgraphNode,
    node: CUgraphNode,
    nested: bool,
) -> Result<Option<Site>> {
    let mut slots = Vec::new();
    // A kernel's parameter values are copied out of the driver's copy while
    // the graph-call lock is held (the driver frees it when the node
    // changes).
    let read = dg::read_node_with(read, |raw| match raw {
        RawNode::Kernel(p) => {
            if p.args.is_null() {
                // Parameters packed in `extra`: not scanned.
                return None;
            }
            let builtin = ctx.builtin_of(p.func);
            let layout = match builtin {
                Some(k) => builtin_layout(k),
                None if decls.iter().all(|d| d.exact) => return None,
                None => dg::param_layout(p.func)?,
            };
            let len = layout.iter().map(|&(o, s)| o + s).max().unwrap_or(0);
            let mut buf = vec![0u8; len];
            // SAFETY: the driver's copy of the node's parameters holds one
            // pointer per parameter of the function whose layout this is,
            // valid in this hold of the lock.
            unsafe { fill(&mut buf, &layout, p.args) };
            Some(Read::Kernel(p, builtin, layout, buf))
        }
        other => Some(Read::Other(other)),
    })?;
    let Some(read) = read else {
        return Ok(None);
    };
    let what = match read {
        Read::Kernel(
            KernelParams {
                func,
                grid,
                block,
                shared_bytes,
                ..
            },
            builtin,
            layout,
            buf,
        ) => {
            find_kernel_slots(decls, builtin, &layout, &buf, &mut slots);
            let ptrs = layout
                .iter()
                .map(|&(o, _)| buf.as_ptr() as usize + o)
                .collect();
            SiteKind::Kernel {
                func: Shared::new(func),
                grid,
                block,
                shared_bytes,
                buf,
                layout,
                ptrs,
            }
        }
        Read::Other(RawNode::Memcpy { dst, src, bytes }) => {
            for (at, addr) in [(0, dst), (1, src)] {
                if let Some((arg, delta)) = find(decls, addr) {
                    slots.push(Slot {
                        at,
                        arg,
                        delta,
                        size: 8,
                    });
                }
            }
            SiteKind::Memcpy { dst, src, bytes }
        }
        Read::Other(RawNode::Memset(m)) => {
            if let Some((arg, delta)) = find(decls, m.dst) {
                slots.push(Slot {
                    at: 0,
                    arg,
                    delta,
                    size: 8,
                });
            }
            SiteKind::Memset(m)
        }
        Read::Other(RawNode::Child { graph: g, .. }) => {
            // The exec runs a copy of the child we patch and set whole; a
            // child nested in that copy is patched in place.
            let (graph, inner) = if nested {
                (None, g)
            } else {
                let c = Owned::new(dg::clone(g)?, ctx.primary());
                let raw = c.raw();
                (Some(c), raw)
            };
            let mut sites = Vec::new();
            for n in dg::nodes(inner)? {
                if let Some(s) = site_of(ctx, decls, n, n, true)? {
                    slots.extend(s.all_slots());
                    sites.push(s);
                }
            }
            SiteKind::Child { graph, sites }
        }
        Read::Other(
            RawNode::Kernel(_) | RawNode::Host { .. } | RawNode::Empty | RawNode::Other(_),
        ) => return Ok(None),
    };
    Ok((!slots.is_empty()).then_some(Site {
        node: Shared::new(node),
        what,
        slots,
    }))
}

/// A node as [`site_of`] reads it: a kernel's launch with its built-in
/// kernel, parameter layout and values (copied), or another node.
enum Read {
    Kernel(
        KernelParams,
        Option<&'static KernelInfo>,
        Vec<(usize, usize)>,
        Vec<u8>,
    ),
    Other(RawNode),
}

/// Copies each parameter's value from `args` into `buf` at its offset.
///
/// # Safety
/// `args` must hold one pointer per entry of `layout`, each NULL or to as
/// many bytes as the entry's size.
unsafe fn fill(buf: &mut [u8], layout: &[(usize, usize)], args: *mut *mut c_void) {
    for (i, &(o, s)) in layout.iter().enumerate() {
        // SAFETY: entry `i` exists (this function's contract).
        let p = unsafe { *args.add(i) } as *const u8;
        if !p.is_null() {
            // SAFETY: `p` points to `s` bytes (this function's contract).
            buf[o..o + s].copy_from_slice(unsafe { std::slice::from_raw_parts(p, s) });
        }
    }
}

/// A kernel's uses: a built-in's pointer parameters exactly, any other
/// kernel's by the scan (non-exact arguments only); scalar arguments in
/// a built-in's other parameters, and in another kernel's parameters the
/// scan found no address in (see [`match_scalar`]).
fn find_kernel_slots(
    decls: &[ArgDecl],
    builtin: Option<&KernelInfo>,
    layout: &[(usize, usize)],
    buf: &[u8],
    out: &mut Vec<Slot>,
) {
    match builtin {
        Some(k) => {
            for (i, (_, kind)) in k.args.iter().enumerate() {
                let (at, size) = layout[i];
                if *kind != graphcore_kernels::Arg::Ptr {
                    match_scalar(buf, at, size, decls, out);
                    continue;
                }
                let v = u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
                if let Some((arg, delta)) = find(decls, v) {
                    out.push(Slot {
                        at,
                        arg,
                        delta,
                        size: 8,
                    });
                }
            }
        }
        None => {
            for &(o, s) in layout {
                let before = out.len();
                scan(buf, o, o + s, decls, out);
                if out.len() == before {
                    match_scalar(buf, o, s, decls, out);
                }
            }
        }
    }
}

impl Site {
    /// Every use, a child graph's included (its slots are its sites').
    fn all_slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.slots.iter().copied()
    }

    /// Writes the current bindings into the node's values and sets them:
    /// in `exec` for a top-level site, in the (copied) graph otherwise.
    fn patch(&mut self, bound: &[u64], exec: Option<CUgraphExec>, ctx: &Context) -> Result<()> {
        let n = self.node.raw();
        let addr = |s: &Slot| bound[s.arg].wrapping_add(s.delta);
        match &mut self.what {
            SiteKind::Kernel {
                func,
                grid,
                block,
                shared_bytes,
                buf,
                ptrs,
                ..
            } => {
                for s in &self.slots {
                    // An address's 8 bytes, or a scalar's value.
                    buf[s.at..s.at + s.size].copy_from_slice(&addr(s).to_le_bytes()[..s.size]);
                }
                let p = KernelParams {
                    func: func.raw(),
                    grid: *grid,
                    block: *block,
                    shared_bytes: *shared_bytes,
                    args: ptrs.as_mut_ptr() as *mut *mut c_void,
                };
                match exec {
                    // SAFETY: `ptrs` holds one address per parameter of
                    // `func`, each into `buf` at the parameter's offset,
                    // with its bytes.
                    Some(e) => unsafe { dg::exec_set_kernel(e, n, &p) },
                    // SAFETY: as above.
                    None => unsafe { dg::set_kernel(n, &p) },
                }
            }
            SiteKind::Memcpy { dst, src, bytes } => {
                for s in &self.slots {
                    *(if s.at == 0 { &mut *dst } else { &mut *src }) = addr(s);
                }
                match exec {
                    Some(e) => dg::exec_set_memcpy(e, n, *dst, *src, *bytes, ctx.raw()),
                    None => dg::set_memcpy(n, *dst, *src, *bytes),
                }
            }
            SiteKind::Memset(m) => {
                for s in &self.slots {
                    // The new endpoint must keep the element alignment.
                    *m = Memset::new(addr(s), m.value, m.elem_size, m.count)?;
                }
                match exec {
                    Some(e) => dg::exec_set_memset(e, n, m, ctx.raw()),
                    None => dg::set_memset(n, m),
                }
            }
            SiteKind::Child { graph, sites } => {
                for s in sites.iter_mut() {
                    s.patch(bound, None, ctx)?;
                }
                match (exec, graph) {
                    (Some(e), Some(g)) => dg::exec_set_child(e, n, g.raw()),
                    _ => Ok(()),
                }
            }
        }
    }
}

impl ArgTable {
    /// Finds the uses of `decls` in the nodes `values` (read for their
    /// parameters); `exec_nodes` are the corresponding nodes of the graph
    /// the exec was instantiated from (what its setters name). Every
    /// argument starts bound to its declared range.
    pub(crate) fn new(
        ctx: &Context,
        decls: &[ArgDecl],
        values: &[CUgraphNode],
        exec_nodes: &[CUgraphNode],
    ) -> Result<ArgTable> {
        let mut sites = Vec::new();
        for (&v, &n) in values.iter().zip(exec_nodes) {
            if let Some(s) = site_of(ctx, decls, v, n, false)? {
                sites.push(s);
            }
        }
        let mut t = ArgTable {
            ctx: ctx.clone(),
            bound: decls.iter().map(|d| d.base).collect(),
            decls: decls.to_vec(),
            marked: vec![false; sites.len()],
            dirty: Vec::with_capacity(sites.len()),
            saved: vec![0; decls.len()],
            known: [(0, 0); KNOWN],
            known_next: 0,
            sites,
            users: vec![Vec::new(); decls.len()],
            uses: vec![0; decls.len()],
            copied: vec![false; decls.len()],
        };
        t.reindex();
        Ok(t)
    }

    /// Number of declared arguments.
    pub(crate) fn len(&self) -> usize {
        self.decls.len()
    }

    /// The uses found of argument `index` (child graphs' included).
    pub(crate) fn uses(&self, index: usize) -> Result<usize> {
        self.check_index(index)?;
        Ok(self.uses[index])
    }

    /// The declarations.
    pub(crate) fn decls(&self) -> &[ArgDecl] {
        &self.decls
    }

    fn check_index(&self, index: usize) -> Result<()> {
        ensure_arg!(
            index < self.decls.len(),
            "argument {index} is not declared: the exec's graph declares {}",
            self.decls.len()
        );
        Ok(())
    }

    /// Checks `bindings` (known arguments, each once, each a device range
    /// of this context at least as large as its declaration, or as
    /// `need(index, declaration)` bytes where that is given).
    fn check(&mut self, bindings: &[Binding], need: Option<Need<'_>>) -> Result<()> {
        for (k, b) in bindings.iter().enumerate() {
            self.check_index(b.index)
                .map_err(|e| e.context(&format!("binding {k}")))?;
            ensure_arg!(
                !bindings[..k].iter().any(|o| o.index == b.index),
                "binding {k}: argument {} is bound twice",
                b.index
            );
            let d = self.decls[b.index];
            if d.scalar {
                // A value: no memory to check.
                check_scalar(k, b, &d)?;
                continue;
            }
            // Before the unchanged-address shortcut: a smaller view at the
            // bound address is refused too.
            let bytes = need.map_or(d.bytes, |f| f(b.index, &d));
            check_size_for(k, b, &d, bytes)?;
            if b.ptr == self.bound[b.index] {
                continue;
            }
            if self.copied[b.index] {
                self.check_copy_kind(k, b, &d)?;
            }
            // The names are made only on failure (no allocation otherwise).
            let queried = device_range(&self.ctx, "ptr", b.ptr, bytes, &self.known)
                .map_err(|e| e.context(&format!("binding {k} (argument {})", b.index)))?;
            if let Some(extent) = queried {
                self.known[self.known_next] = extent;
                self.known_next = (self.known_next + 1) % KNOWN;
            }
        }
        Ok(())
    }

    /// Binds each argument of `bindings` to its new address and marks the
    /// nodes whose values change; [`apply`](Self::apply) then patches them.
    /// Returns whether any node must be patched. Bad bindings are refused
    /// before anything changes. No allocation.
    pub(crate) fn prepare(&mut self, bindings: &[Binding]) -> Result<bool> {
        self.prepare_for(bindings, None)
    }

    /// [`prepare`](Self::prepare) where argument `i` (declared `d`) needs
    /// `need(i, d)` bytes instead of its declared size, if `need` is given.
    pub(crate) fn prepare_for(
        &mut self,
        bindings: &[Binding],
        need: Option<Need<'_>>,
    ) -> Result<bool> {
        self.check(bindings, need)?;
        self.saved.copy_from_slice(&self.bound);
        self.clear_marks();
        for b in bindings {
            if self.bound[b.index] == b.ptr {
                continue;
            }
            self.bound[b.index] = b.ptr;
            for &s in &self.users[b.index] {
                if !self.marked[s] {
                    self.marked[s] = true;
                    self.dirty.push(s);
                }
            }
        }
        Ok(!self.dirty.is_empty())
    }

    /// Patches, in `exec`, the nodes [`prepare`](Self::prepare) marked. If
    /// the driver refuses one, the old bindings are put back (and the nodes
    /// patched so far restored).
    pub(crate) fn apply(&mut self, exec: CUgraphExec) -> Result<()> {
        let r = self.ctx.bind().and_then(|()| self.patch_dirty(exec));
        if let Err(e) = r {
            self.bound.copy_from_slice(&self.saved);
            let restored = self.patch_dirty(exec);
            self.clear_marks();
            return Err(match restored {
                Ok(()) => e.context("binding failed and was undone; the exec is unchanged"),
                Err(_) => e.context(
                    "binding failed and could not be undone; the exec may be partly rebound: \
                     bind the arguments again or re-instantiate",
                ),
            });
        }
        self.clear_marks();
        Ok(())
    }

    /// The bindings that differ from the declared ranges (to carry over to
    /// a table made after an update).
    pub(crate) fn moved(&self) -> Vec<Binding> {
        (0..self.decls.len())
            .filter(|&i| self.bound[i] != self.decls[i].base)
            .map(|i| Binding {
                index: i,
                ptr: self.bound[i],
                bytes: 0,
            })
            .collect()
    }

    /// Kernel node `node` (a top-level node of the exec) took new values
    /// `args` (`Exec::set_kernel_args`): its uses are found again in them
    /// and the current bindings set in `exec`. A node with no uses before
    /// stays without.
    ///
    /// # Safety
    /// `args` must hold one valid pointer per parameter of the node's
    /// kernel, each to a value of the parameter's type.
    pub(crate) unsafe fn refresh_kernel(
        &mut self,
        exec: CUgraphExec,
        node: CUgraphNode,
        args: *mut *mut c_void,
    ) -> Result<()> {
        let Some(i) = self.sites.iter().position(|s| s.node.raw() == node) else {
            return Ok(());
        };
        let decls = &self.decls;
        let site = &mut self.sites[i];
        let SiteKind::Kernel {
            func, buf, layout, ..
        } = &mut site.what
        else {
            return Ok(());
        };
        // SAFETY: one valid pointer per parameter (this function's contract).
        unsafe { fill(buf, layout, args) };
        site.slots.clear();
        let builtin = self.ctx.builtin_of(func.raw());
        find_kernel_slots(decls, builtin, layout, buf, &mut site.slots);
        self.reindex();
        self.ctx.bind()?;
        // The node now holds the values as given: set the bindings in it.
        let site = &mut self.sites[i];
        if site.slots.is_empty() {
            return Ok(());
        }
        site.patch(&self.bound, Some(exec), &self.ctx)
    }

    /// Refuses binding `k` of an argument a copy node uses to memory of
    /// another kind than the declared range's (graphcore pool memory, or
    /// memory allocated otherwise): CUDA refuses such a copy node change
    /// (measured on an H100, both ways), so it is refused before anything
    /// changes. Off the hot path: only bindings that move a copied argument.
    #[cold]
    fn check_copy_kind(&self, k: usize, b: &Binding, d: &ArgDecl) -> Result<()> {
        let kind = |p: u64| {
            if self.ctx.in_pool_range(p) {
                "graphcore pool memory"
            } else {
                "memory allocated outside graphcore's pools"
            }
        };
        let (was, now) = (kind(d.base), kind(b.ptr));
        ensure_arg!(
            was == now,
            "binding {k}: argument {} is an endpoint of a copy node, declared on {was}, and \
             0x{:x} is {now}: CUDA rebinds a copy node's endpoint only to memory of the kind \
             it was made with (bind it to {was}, or make the copy a kernel)",
            b.index,
            b.ptr
        );
        Ok(())
    }

    /// Recounts each argument's users and uses from the sites, and which
    /// arguments copy nodes use.
    fn reindex(&mut self) {
        for u in &mut self.users {
            u.clear();
        }
        self.uses.iter_mut().for_each(|u| *u = 0);
        self.copied.iter_mut().for_each(|c| *c = false);
        fn mark_copies(sites: &[Site], copied: &mut [bool]) {
            for s in sites {
                match &s.what {
                    SiteKind::Memcpy { .. } => s.slots.iter().for_each(|sl| copied[sl.arg] = true),
                    SiteKind::Child { sites, .. } => mark_copies(sites, copied),
                    _ => {}
                }
            }
        }
        mark_copies(&self.sites, &mut self.copied);
        for (i, s) in self.sites.iter().enumerate() {
            for slot in s.all_slots() {
                self.uses[slot.arg] += 1;
                if self.users[slot.arg].last() != Some(&i) {
                    self.users[slot.arg].push(i);
                }
            }
        }
    }

    fn patch_dirty(&mut self, exec: CUgraphExec) -> Result<()> {
        for &s in &self.dirty {
            self.sites[s].patch(&self.bound, Some(exec), &self.ctx)?;
        }
        Ok(())
    }

    fn clear_marks(&mut self) {
        for &s in &self.dirty {
            self.marked[s] = false;
        }
        self.dirty.clear();
    }
}

/// What one use of an argument is (read back by [`ArgTable::each_use`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UseWhat {
    /// A kernel parameter word of `func`.
    Kernel(CUfunction),
    /// A copy's destination.
    MemcpyDst,
    /// A copy's source.
    MemcpySrc,
    /// A memset's destination.
    Memset,
}

/// One use of an argument, as found when the exec was instantiated or
/// last updated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UseAt {
    /// The top-level node the use is in (a child graph's node for a use
    /// inside the child).
    pub node: CUgraphNode,
    /// Whether the use is inside a child graph of `node`.
    pub nested: bool,
    /// What it is.
    pub what: UseWhat,
    /// A kernel use's byte offset in the parameter buffer (0 otherwise).
    pub offset: usize,
    /// The used address's offset from the argument's first address.
    pub delta: u64,
}

impl ArgTable {
    /// Calls `each` with every use of argument `index`, in node order (a
    /// child graph's uses in its nodes' order). Read-only.
    pub(crate) fn each_use(&self, index: usize, mut each: impl FnMut(UseAt)) -> Result<()> {
        self.check_index(index)?;
        fn walk(
            top: CUgraphNode,
            nested: bool,
            sites: &[Site],
            index: usize,
            each: &mut dyn FnMut(UseAt),
        ) {
            for s in sites {
                let top = if nested { top } else { s.node.raw() };
                if let SiteKind::Child { sites, .. } = &s.what {
                    walk(top, true, sites, index, each);
                    continue;
                }
                for sl in s.slots.iter().filter(|sl| sl.arg == index) {
                    let (what, offset) = match &s.what {
                        SiteKind::Kernel { func, .. } => (UseWhat::Kernel(func.raw()), sl.at),
                        SiteKind::Memcpy { .. } if sl.at == 0 => (UseWhat::MemcpyDst, 0),
                        SiteKind::Memcpy { .. } => (UseWhat::MemcpySrc, 0),
                        _ => (UseWhat::Memset, 0),
                    };
                    each(UseAt {
                        node: top,
                        nested,
                        what,
                        offset,
                        delta: sl.delta,
                    });
                }
            }
        }
        walk(std::ptr::null_mut(), false, &self.sites, index, &mut each);
        Ok(())
    }
}
