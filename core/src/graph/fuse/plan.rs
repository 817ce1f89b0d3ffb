//! Elementwise fusion, planned on a graph's description (pure: no CUDA).
//!
//! graphcore knows what its elementwise kernels compute (each kernel's table
//! entry declares it: `graphcore_kernels::Kernel::elementwise`), so a chain of them
//! that works along one buffer can run as one launch: of the built-in chain
//! kernel (`gc_chain_f32`) for up to [`MAX_CHAIN_OPS`] operations, of a
//! kernel generated for the chain ([`jit`], up to
//! [`jit::MAX_OPS`] operations per launch) for longer ones; each operation
//! is bitwise equal to its standalone kernel. A chain is a maximal path
//! of built-in elementwise nodes (fill, copy, scale, add_scalar, relu, and
//! the chain kernel itself) over the same element count where each node
//! but the first works in place on the previous node's output, and each
//! link is the only edge out of its first node and into its second. Anything
//! else (other kernels, copies, branches, a second consumer, another buffer
//! or count) bounds a chain; a chain of one node stays as it is.

use super::jit;
use crate::graph::desc::{EdgeKind, GraphDesc, NodeKind};
use graphcore_kernels::ops::{self, MAX_CHAIN_OPS, OP_FILL};
use graphcore_kernels::{Call, SizeError, Value};

pub use graphcore_kernels::fusion::{ChainOp, Elementwise};

/// What node `kind` computes, if it is a built-in elementwise kernel
/// fusion understands (the kernel table declares what each means).
pub fn elementwise(kind: &NodeKind) -> Option<Elementwise> {
    let NodeKind::Kernel {
        builtin: Some(k),
        args,
        ..
    } = kind
    else {
        return None;
    };
    k.kernel.elementwise(args)
}

/// One launch of a chain kernel replacing part of a chain.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Output address.
    pub y: u64,
    /// Input address (`None` when the first operation is a fill).
    pub x: Option<u64>,
    /// Element count.
    pub n: u64,
    /// The operations (more than [`MAX_CHAIN_OPS`]: a generated kernel).
    pub ops: Vec<ChainOp>,
}

impl Segment {
    /// True when the segment runs as a kernel generated for it
    /// ([`jit::chain_ptx`]) rather than the built-in chain kernel.
    pub fn is_generated(&self) -> bool {
        self.ops.len() > MAX_CHAIN_OPS
    }
}

/// A fused chain: the nodes it replaces (in order) and the chain-kernel
/// launches that replace them.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// The source graph's nodes, first to last.
    pub nodes: Vec<usize>,
    /// The launches, first to last (at least one).
    pub segments: Vec<Segment>,
}

/// All chains of a graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FusionPlan {
    /// Chains of two nodes or more, in the order of their first node.
    pub chains: Vec<Chain>,
}

impl FusionPlan {
    /// Nodes removed by fusion.
    pub fn fused_away(&self) -> usize {
        self.chains
            .iter()
            .map(|c| c.nodes.len() - c.segments.len())
            .sum()
    }
}

/// Splits a chain's operations into launches (one, unless there are more
/// than [`jit::MAX_OPS`]); the first reads `x`, the rest work in place.
fn segments(y: u64, x: Option<u64>, n: u64, ops: &[ChainOp]) -> Vec<Segment> {
    if ops.is_empty() {
        return vec![Segment {
            y,
            x,
            n,
            ops: Vec::new(),
        }];
    }
    ops.chunks(jit::MAX_OPS)
        .enumerate()
        .map(|(i, part)| Segment {
            y,
            x: if i == 0 { x } else { Some(y) },
            n,
            ops: part.to_vec(),
        })
        .collect()
}

/// Plans the fusion of `desc`'s elementwise chains.
pub fn plan(desc: &GraphDesc) -> FusionPlan {
    let n = desc.len();
    let mut users = vec![Vec::new(); n];
    for (from, to) in desc.edges() {
        users[from].push(to);
    }
    let elems: Vec<Option<Elementwise>> = (0..n).map(|i| elementwise(desc.node(i))).collect();
    // `next[i]`: the node that continues a chain after `i`, if any.
    let link = |i: usize| -> Option<usize> {
        let a = elems[i].as_ref()?;
        let &[j] = users[i].as_slice() else {
            return None;
        };
        let b = elems[j].as_ref()?;
        let in_place = b.x.is_none() || b.x == Some(a.y);
        (desc.deps(j) == [i] && b.y == a.y && b.n == a.n && in_place).then_some(j)
    };
    let next: Vec<Option<usize>> = (0..n).map(link).collect();
    let mut has_prev = vec![false; n];
    for j in next.iter().flatten() {
        has_prev[*j] = true;
    }
    let mut chains = Vec::new();
    for start in 0..n {
        if has_prev[start] || next[start].is_none() {
            continue;
        }
        let mut nodes = vec![start];
        while let Some(j) = next[*nodes.last().unwrap()] {
            nodes.push(j);
        }
        let first = elems[start].as_ref().unwrap();
        let ops: Vec<ChainOp> = nodes
            .iter()
            .flat_map(|&i| elems[i].as_ref().unwrap().ops.iter().copied())
            .collect();
        // A fill anywhere makes the chain independent of its input.
        let last_fill = ops.iter().rposition(|&(op, _)| op == OP_FILL);
        let (x, ops) = match last_fill {
            Some(f) => (None, ops[f..].to_vec()),
            None => (first.x, ops),
        };
        chains.push(Chain {
            segments: segments(first.y, x, first.n, &ops),
            nodes,
        });
    }
    FusionPlan { chains }
}

/// The launch of a segment that runs as the built-in chain kernel, on a
/// device with `sms` multiprocessors.
pub fn segment_call(seg: &Segment, sms: u32) -> Result<Call, SizeError> {
    ops::chain(seg.y, seg.x.unwrap_or(0), seg.n, &seg.ops, sms)
}

/// The argument values of a generated segment's kernel: y, x, n, then one
/// constant per operation.
pub fn generated_args(seg: &Segment) -> Vec<Value> {
    let mut v = vec![
        Value::Ptr(seg.y),
        Value::Ptr(seg.x.unwrap_or(0)),
        Value::U64(seg.n),
    ];
    v.extend(seg.ops.iter().map(|&(_, c)| Value::F32(c)));
    v
}

/// What a segment's node does, for the fused graph's description.
fn segment_kind(seg: &Segment, nodes: &[usize], sms: u32) -> Result<NodeKind, SizeError> {
    let label = |name: &str| format!("{name} (fused nodes {nodes:?}, {} ops)", seg.ops.len());
    Ok(if seg.is_generated() {
        NodeKind::Kernel {
            name: label(jit::ENTRY).into(),
            grid: [jit::grid(seg.n, sms), 1, 1],
            block: [jit::BLOCK, 1, 1],
            shared_bytes: 0,
            builtin: None,
            args: generated_args(seg),
        }
    } else {
        let call = segment_call(seg, sms)?;
        NodeKind::Kernel {
            name: label(call.kernel.name()).into(),
            grid: call.grid,
            block: call.block,
            shared_bytes: call.shared_bytes,
            builtin: Some(call.kernel.info()),
            args: call.args().to_vec(),
        }
    })
}

/// The description of the fused graph: each chain's nodes replaced by its
/// segments (chained in place), everything else as it was. Also returns,
/// for each node of `desc`, its index in the fused graph (`None` for nodes
/// fused away).
pub fn apply(
    desc: &GraphDesc,
    plan: &FusionPlan,
    sms: u32,
) -> Result<(GraphDesc, Vec<Option<usize>>), SizeError> {
    let n = desc.len();
    // Where each node sits in a chain: (chain, position).
    let mut place = vec![None; n];
    for (c, chain) in plan.chains.iter().enumerate() {
        for (k, &i) in chain.nodes.iter().enumerate() {
            place[i] = Some((c, k));
        }
    }
    let mut map: Vec<Option<usize>> = vec![None; n];
    // The new index standing for a node as a dependency: a chain's last
    // carrier stands for every node of the chain.
    let mut stands_for = vec![0usize; n];
    let mut out = GraphDesc::new();
    for i in 0..n {
        match place[i] {
            Some((c, k)) => {
                let chain = &plan.chains[c];
                let s = chain.segments.len();
                if k < s {
                    let seg = &chain.segments[k];
                    let deps: Vec<usize> = if k == 0 {
                        desc.deps(i).iter().map(|&d| stands_for[d]).collect()
                    } else {
                        vec![stands_for[chain.nodes[k - 1]]]
                    };
                    let kind = segment_kind(seg, &chain.nodes, sms)?;
                    let new = out.push(kind, deps);
                    map[i] = Some(new);
                    stands_for[i] = new;
                } else {
                    stands_for[i] = stands_for[chain.nodes[s - 1]];
                }
                if k + 1 == chain.nodes.len() {
                    let last = stands_for[chain.nodes[s - 1]];
                    for &j in &chain.nodes {
                        stands_for[j] = last;
                    }
                }
            }
            None => {
                let deps: Vec<usize> = desc.deps(i).iter().map(|&d| stands_for[d]).collect();
                let new = out.push(desc.node(i).clone(), deps);
                map[i] = Some(new);
                stands_for[i] = new;
                // An edge from a node that stays itself keeps its kind (the
                // fused copy keeps CUDA's edge); one from a node fused away
                // is replaced by a full edge from its chain's carrier.
                for &d in desc.deps(i) {
                    let kind = desc.edge_kind(d, i);
                    if kind != EdgeKind::Full && map[d] == Some(stands_for[d]) {
                        out.set_edge_kind(stands_for[d], new, kind);
                    }
                }
            }
        }
    }
    Ok((out, map))
}

/// True when `a` and `b` fuse the same nodes into the same number of
/// launches (so an exec fused by one can be updated with the other).
pub fn same_shape(a: &FusionPlan, b: &FusionPlan) -> bool {
    a.chains.len() == b.chains.len()
        && a.chains
            .iter()
            .zip(&b.chains)
            .all(|(x, y)| x.nodes == y.nodes && x.segments.len() == y.segments.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphcore_kernels::ops::{OP_MUL, OP_RELU};
    use graphcore_kernels::Kernel;

    fn kernel(k: Kernel, args: Vec<Value>) -> NodeKind {
        NodeKind::Kernel {
            name: k.name().into(),
            grid: [1, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            builtin: Some(k.info()),
            args,
        }
    }
    fn scale(y: u64, x: u64, n: u64, a: f32) -> NodeKind {
        kernel(
            Kernel::Scale,
            vec![Value::Ptr(y), Value::Ptr(x), Value::U64(n), Value::F32(a)],
        )
    }
    fn relu(y: u64, x: u64, n: u64) -> NodeKind {
        kernel(
            Kernel::Relu,
            vec![Value::Ptr(y), Value::Ptr(x), Value::U64(n)],
        )
    }
    fn fill(y: u64, n: u64, v: f32) -> NodeKind {
        kernel(
            Kernel::Fill,
            vec![Value::Ptr(y), Value::U64(n), Value::F32(v)],
        )
    }
    /// A linear graph of `kinds`, each depending on the previous.
    fn line(kinds: Vec<NodeKind>) -> GraphDesc {
        let mut g = GraphDesc::new();
        for (i, k) in kinds.into_iter().enumerate() {
            let deps: Vec<usize> = if i == 0 { vec![] } else { vec![i - 1] };
            g.push(k, deps);
        }
        g
    }

    #[test]
    fn a_linear_chain_becomes_one_launch() {
        let g = line(vec![
            scale(200, 100, 64, 2.0),
            scale(200, 200, 64, 0.5),
            relu(200, 200, 64),
        ]);
        let p = plan(&g);
        assert_eq!(p.chains.len(), 1);
        assert_eq!(p.chains[0].nodes, vec![0, 1, 2]);
        assert_eq!(
            p.chains[0].segments,
            vec![Segment {
                y: 200,
                x: Some(100),
                n: 64,
                ops: vec![(OP_MUL, 2.0), (OP_MUL, 0.5), (OP_RELU, 0.0)]
            }]
        );
        assert_eq!(p.fused_away(), 2);
    }

    #[test]
    fn long_chains_use_as_few_launches_as_possible() {
        let g = line((0..20).map(|i| scale(8, 8, 4, i as f32)).collect());
        let p = plan(&g);
        let lens: Vec<usize> = p.chains[0].segments.iter().map(|s| s.ops.len()).collect();
        assert_eq!(lens, vec![20], "one generated launch");
        assert!(p.chains[0].segments[0].is_generated());
        assert_eq!(p.fused_away(), 19);
        let g = line(
            (0..jit::MAX_OPS + 3)
                .map(|i| scale(8, 8, 4, i as f32))
                .collect(),
        );
        let segs = &plan(&g).chains[0].segments;
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[1].ops.len(), 3);
        assert!(!segs[1].is_generated());
        assert_eq!(segs[1].x, Some(8), "later launches work in place");
    }

    #[test]
    fn fills_start_chains_without_input() {
        let g = line(vec![fill(8, 4, 1.0), scale(8, 8, 4, 3.0)]);
        let s = &plan(&g).chains[0].segments[0];
        assert_eq!(s.x, None);
        assert_eq!(s.ops, vec![(OP_FILL, 1.0), (OP_MUL, 3.0)]);
        // A fill in the middle drops what came before it.
        let g = line(vec![scale(8, 8, 4, 3.0), fill(8, 4, 1.0), relu(8, 8, 4)]);
        let s = &plan(&g).chains[0].segments[0];
        assert_eq!(s.ops, vec![(OP_FILL, 1.0), (OP_RELU, 0.0)]);
    }

    #[test]
    fn other_buffers_counts_and_kernels_bound_chains() {
        // Output to another buffer: the intermediate would be lost.
        assert!(plan(&line(vec![scale(8, 8, 4, 2.0), scale(16, 8, 4, 2.0)]))
            .chains
            .is_empty());
        // Another count.
        assert!(plan(&line(vec![scale(8, 8, 4, 2.0), scale(8, 8, 5, 2.0)]))
            .chains
            .is_empty());
        // A user kernel in between splits the chain.
        let user = NodeKind::Kernel {
            name: "mine".into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_bytes: 0,
            builtin: None,
            args: vec![],
        };
        let g = line(vec![
            scale(8, 8, 4, 2.0),
            scale(8, 8, 4, 2.0),
            user,
            scale(8, 8, 4, 2.0),
            scale(8, 8, 4, 2.0),
        ]);
        let p = plan(&g);
        let nodes: Vec<Vec<usize>> = p.chains.iter().map(|c| c.nodes.clone()).collect();
        assert_eq!(nodes, vec![vec![0, 1], vec![3, 4]]);
    }

    #[test]
    fn branches_and_second_consumers_bound_chains() {
        let mut g = GraphDesc::new();
        let a = g.push(scale(8, 8, 4, 2.0), []);
        let b = g.push(scale(8, 8, 4, 2.0), [a]);
        g.push(scale(8, 8, 4, 2.0), [a]); // a second consumer of `a`
        let d = g.push(scale(8, 8, 4, 2.0), [b]);
        let p = plan(&g);
        assert_eq!(p.chains.len(), 1);
        assert_eq!(p.chains[0].nodes, vec![b, d]);
        // A join: a node with two predecessors starts no link into it.
        let mut g = GraphDesc::new();
        let a = g.push(scale(8, 8, 4, 2.0), []);
        let e = g.push(NodeKind::Empty, []);
        g.push(scale(8, 8, 4, 2.0), [a, e]);
        assert!(plan(&g).chains.is_empty());
    }

    #[test]
    fn chain_kernels_are_read_back() {
        let mut args = vec![
            Value::Ptr(8),
            Value::Ptr(8),
            Value::U64(4),
            Value::U32(OP_MUL | OP_RELU << 4),
            Value::U32(2),
        ];
        args.extend((0..8).map(|i| Value::F32(i as f32)));
        let k = kernel(Kernel::Chain, args);
        let e = elementwise(&k).unwrap();
        assert_eq!(e.ops, vec![(OP_MUL, 0.0), (OP_RELU, 1.0)]);
        let g = line(vec![k, scale(8, 8, 4, 3.0)]);
        assert_eq!(plan(&g).chains[0].segments[0].ops.len(), 3);
    }
}

#[cfg(test)]
mod apply_tests {
    use super::*;
    use graphcore_kernels::Kernel;

    fn scale(y: u64, x: u64, n: u64, a: f32) -> NodeKind {
        NodeKind::Kernel {
            name: Kernel::Scale.name().into(),
            grid: [1, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            builtin: Some(Kernel::Scale.info()),
            args: vec![Value::Ptr(y), Value::Ptr(x), Value::U64(n), Value::F32(a)],
        }
    }

    #[test]
    fn the_fused_graph_keeps_the_other_nodes_and_edges() {
        // memcpy -> s0 -> s1 -> ... -> s9 -> memcpy, plus a branch from the
        // first copy to an empty node.
        let mut g = GraphDesc::new();
        let copy = NodeKind::Memcpy {
            dst: 8,
            src: 1,
            bytes: 16,
            direction: crate::graph::Direction::HostToDevice,
        };
        let a = g.push(copy.clone(), []);
        let mut prev = a;
        for i in 0..10 {
            prev = g.push(scale(8, 8, 4, i as f32), [prev]);
        }
        let out = g.push(copy, [prev]);
        let side = g.push(NodeKind::Empty, [a]);
        let p = plan(&g);
        assert_eq!(p.chains[0].segments.len(), 1);
        let (f, map) = apply(&g, &p, 132).unwrap();
        assert_eq!(f.len(), g.len() - 9);
        assert_eq!(f.edges().count(), 3);
        let last = map[1].unwrap();
        assert_eq!(f.deps(map[out].unwrap()), &[last]);
        assert_eq!(f.deps(map[side].unwrap()), &[map[a].unwrap()]);
        assert!(map[5].is_none());
        assert!(
            matches!(f.node(last), NodeKind::Kernel { name, .. } if name.starts_with("gc_fused_chain"))
        );
        assert!(same_shape(&p, &plan(&g)));
    }

    #[test]
    fn programmatic_edges_keep_their_kind_only_from_nodes_that_stay() {
        // user -> [s0 -> s1] (a chain) -> user2, with programmatic edges
        // into s0's chain's consumer and between the two user kernels.
        let user = NodeKind::Kernel {
            name: "user".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_bytes: 0,
            builtin: None,
            args: vec![],
        };
        let mut g = GraphDesc::new();
        let u = g.push(user.clone(), []);
        let s0 = g.push(scale(8, 8, 4, 2.0), [u]);
        let s1 = g.push(scale(8, 8, 4, 3.0), [s0]);
        let u2 = g.push(user.clone(), [s1, u]);
        g.set_edge_kind(s1, u2, EdgeKind::Programmatic);
        g.set_edge_kind(u, u2, EdgeKind::Programmatic);
        let p = plan(&g);
        assert_eq!(p.chains[0].nodes, vec![s0, s1]);
        let (f, map) = apply(&g, &p, 132).unwrap();
        let (fu, fs0, fu2) = (map[u].unwrap(), map[s0].unwrap(), map[u2].unwrap());
        assert!(map[s1].is_none());
        // u stays itself: its edge stays programmatic. s1 is fused away: its
        // chain's carrier stands in through a full edge.
        assert_eq!(f.edge_kind(fu, fu2), EdgeKind::Programmatic);
        assert_eq!(f.edge_kind(fs0, fu2), EdgeKind::Full);
    }
}
