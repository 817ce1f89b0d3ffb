//! A graph's fused copy: the CUDA graph that fusion made from a graph, the
//! plan it follows, the kernels generated for it, and how an exec made from
//! it is updated in place (new arguments for a node fused into a chain).

use super::jit;
use super::plan::{apply, generated_args, plan, same_shape, segment_call, FusionPlan, Segment};
use crate::context::Context;
use crate::driver::graph::{self as dg, KernelParams};
use crate::driver::owned::{Nodes, Owned};
use crate::driver::{CUgraph, CUgraphExec, CUgraphNode};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Graph, GraphDesc, NodeKind};
use crate::module::{Function, Module};
use std::ffi::c_void;
use std::sync::Arc;

/// A graph's fused copy: the CUDA graph, the plan it follows, its
/// description, and its nodes (indexed as the description).
pub(crate) struct Fused {
    /// Destroyed first (fields drop in order), before the kernels it runs.
    raw: Owned<CUgraph>,
    ctx: Context,
    /// The description of the graph it is a fused copy of, as it was then.
    pub(crate) source: Arc<GraphDesc>,
    pub(crate) plan: FusionPlan,
    pub(crate) desc: GraphDesc,
    pub(crate) nodes: Nodes,
    /// For each node of the source graph, its index in `desc` (`None`:
    /// fused away).
    pub(crate) map: Vec<Option<usize>>,
    /// Per chain and segment, the kernel generated for it (`None` for
    /// segments that run as the built-in chain kernel). Each is of a module
    /// loaded with `Module::load_generated`: when the last function of it
    /// goes (the exec was destroyed, or a chain changed and the fused graph
    /// and exec launch another kernel now), the module is unloaded only
    /// after the device was next synchronized, so launches still in flight
    /// never run a kernel of an unloaded module. The fused graph (`raw`)
    /// and the exec made from it launch the same kernels: both are set
    /// whenever a chain changes, so neither names a function that went.
    pub(crate) kernels: Vec<Vec<Option<Function>>>,
}

impl Fused {
    /// A copy of `graph` with its elementwise chains fused (see
    /// [`plan()`](super::plan())), or `None` when nothing fuses.
    pub(crate) fn of(graph: &Graph) -> Result<Option<Fused>> {
        let ctx = graph.context();
        let sms = ctx.sm_count();
        // The clone, and the lookups of the graph's nodes in it, read the
        // graph: under its lock. The rest works on the clone alone.
        let (desc, mut f, clones) = {
            let st = graph.described()?;
            let plan = plan(st.desc());
            if plan.chains.is_empty() {
                return Ok(None);
            }
            ctx.bind()?;
            let raw = dg::clone(st.raw())?;
            let f = Fused {
                raw: Owned::new(raw, ctx.primary()),
                ctx: ctx.clone(),
                source: st.desc().clone(),
                plan,
                desc: GraphDesc::new(),
                nodes: Nodes::default(),
                map: Vec::new(),
                kernels: Vec::new(),
            };
            let clones: Vec<CUgraphNode> = st
                .nodes()
                .iter()
                .map(|&n| dg::find_in_clone(n, raw))
                .collect::<Result<_>>()?;
            (st.desc().clone(), f, clones)
        };
        let raw = f.raw.raw();
        f.kernels = f
            .plan
            .chains
            .iter()
            .map(|c| c.segments.iter().map(|seg| f.kernel_for(seg)).collect())
            .collect::<Result<_>>()?;
        (f.desc, f.map) = apply(&desc, &f.plan, sms)?;
        for (ci, c) in f.plan.chains.iter().enumerate() {
            let carriers = c.segments.len();
            for (k, seg) in c.segments.iter().enumerate() {
                f.set_segment(clones[c.nodes[k]], seg, f.kernels[ci][k].as_ref(), None)?;
            }
            let last = *c.nodes.last().unwrap();
            let users: Vec<usize> = desc
                .edges()
                .filter(|&(from, _)| from == last)
                .map(|(_, to)| to)
                .collect();
            for &gone in &c.nodes[carriers..] {
                dg::destroy_node(clones[gone])?;
            }
            if carriers < c.nodes.len() {
                let keep = clones[c.nodes[carriers - 1]];
                for u in users {
                    dg::add_dependency(raw, keep, clones[u])?;
                }
            }
        }
        f.nodes = vec![std::ptr::null_mut(); f.desc.len()].into();
        for (old, new) in f.map.iter().enumerate() {
            if let Some(new) = new {
                f.nodes[*new] = clones[old];
            }
        }
        Ok(Some(f))
    }

    /// Re-plans chain `c` with node `i` as `updated` (new arguments), and
    /// sets the chain kernel's new program in `exec`, an exec made from
    /// this fused copy.
    pub(crate) fn set_chain_args(
        &mut self,
        exec: CUgraphExec,
        current: &mut GraphDesc,
        c: usize,
        i: usize,
        updated: NodeKind,
    ) -> Result<()> {
        let mut trial = current.clone();
        trial.set_node(i, updated);
        let plan = plan(&trial);
        if !same_shape(&self.plan, &plan) {
            return Err(Error::new(
                ErrorKind::UpdateMismatch,
                format!(
                    "node {i} was fused into a chain kernel with nodes {:?}, and the new arguments \
                     change that chain (its buffer, count or number of launches); instantiate \
                     without elementwise fusion to change them, or re-instantiate",
                    self.plan.chains[c].nodes
                ),
            ));
        }
        let sms = self.ctx.sm_count();
        let chain = &plan.chains[c];
        // A generated kernel takes its constants as arguments: a new one is
        // needed only when the operations themselves change.
        let mut kernels = Vec::with_capacity(chain.segments.len());
        for (k, seg) in chain.segments.iter().enumerate() {
            let old_ops = &self.plan.chains[c].segments[k].ops;
            let same_code = old_ops.iter().map(|o| o.0).eq(seg.ops.iter().map(|o| o.0));
            kernels.push(if same_code {
                self.kernels[c][k].clone()
            } else {
                self.kernel_for(seg)?
            });
        }
        for (k, seg) in chain.segments.iter().enumerate() {
            let node = self.nodes[self.map[chain.nodes[k]].expect("a chain carrier is kept")];
            self.set_segment(node, seg, kernels[k].as_ref(), Some(exec))?;
            // The fused graph too: it names no kernel the exec dropped.
            self.set_segment(node, seg, kernels[k].as_ref(), None)?;
        }
        self.kernels[c] = kernels;
        self.desc = apply(&trial, &plan, sms)?.0;
        self.plan = plan;
        *current = trial;
        Ok(())
    }

    /// The fused CUDA graph.
    pub(crate) fn raw(&self) -> CUgraph {
        self.raw.raw()
    }

    /// Takes over `other`'s plan, description and kernels (an exec made
    /// from `self` was updated with `other`); the fused graph's chain nodes
    /// are set to launch them too, so it names no kernel of `self`'s that
    /// goes now.
    pub(crate) fn adopt(&mut self, other: &Fused) -> Result<()> {
        for (c, chain) in other.plan.chains.iter().enumerate() {
            for (k, seg) in chain.segments.iter().enumerate() {
                let node = self.nodes[self.map[chain.nodes[k]].expect("a chain carrier is kept")];
                self.set_segment(node, seg, other.kernels[c][k].as_ref(), None)?;
            }
        }
        self.plan = other.plan.clone();
        self.desc = other.desc.clone();
        self.kernels = other.kernels.clone();
        Ok(())
    }

    /// The kernel generated for `seg`, if it needs one (see [`jit`]).
    pub(crate) fn kernel_for(&self, seg: &Segment) -> Result<Option<Function>> {
        if !seg.is_generated() {
            return Ok(None);
        }
        let ptx = jit::chain_ptx(&seg.ops);
        let module = Module::load_generated(&self.ctx, ptx.as_bytes())?;
        Ok(Some(module.function(jit::ENTRY)?))
    }

    /// Makes `node` launch `seg`: the generated `kernel`, or the built-in
    /// chain kernel when `kernel` is `None`; in the fused graph (`exec`
    /// `None`) or in an exec made from it.
    pub(crate) fn set_segment(
        &self,
        node: CUgraphNode,
        seg: &Segment,
        kernel: Option<&Function>,
        exec: Option<CUgraphExec>,
    ) -> Result<()> {
        let sms = self.ctx.sm_count();
        let (func, grid, block, shared_bytes, values) = match kernel {
            Some(k) => (
                k.raw(),
                [jit::grid(seg.n, sms), 1, 1],
                [jit::BLOCK, 1, 1],
                0,
                generated_args(seg),
            ),
            None => {
                let call = segment_call(seg, sms)?;
                let func = self.ctx.builtin_raw(call.kernel)?;
                (
                    func,
                    call.grid,
                    call.block,
                    call.shared_bytes,
                    call.args().to_vec(),
                )
            }
        };
        let mut slots: Vec<u64> = values.iter().map(|v| v.to_slot()).collect();
        let mut ptrs: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s as *mut u64 as *mut c_void)
            .collect();
        let p = KernelParams {
            func,
            grid,
            block,
            shared_bytes,
            args: ptrs.as_mut_ptr(),
        };
        // SAFETY: one slot per kernel parameter, each holding its value.
        unsafe {
            match exec {
                None => dg::set_kernel(node, &p),
                Some(e) => dg::exec_set_kernel(e, node, &p),
            }
        }
    }
}
