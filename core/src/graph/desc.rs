//! A graph's description: its nodes, what each does, and the edges between
//! them. Pure data, kept beside every CUDA graph graphcore builds or
//! captures, so graphs can be validated (no cycles, no foreign nodes),
//! compared (before an update) and written as DOT without asking CUDA.

use crate::driver::conditional::CondType;
use crate::error::{ensure_arg, Result};
use graphcore_kernels::{KernelInfo, Value};
use std::fmt;
use std::sync::Arc;

/// Which way a copy goes: between host and device memory, either side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
    /// Device to device.
    DeviceToDevice,
    /// Host to host.
    HostToHost,
}

impl Direction {
    /// The direction of a copy whose source and destination are (or are
    /// not) device memory.
    pub fn between(src_on_device: bool, dst_on_device: bool) -> Direction {
        match (src_on_device, dst_on_device) {
            (true, true) => Direction::DeviceToDevice,
            (true, false) => Direction::DeviceToHost,
            (false, true) => Direction::HostToDevice,
            (false, false) => Direction::HostToHost,
        }
    }
}

impl fmt::Display for Direction {
    /// CUDA's short names: "HtoD", "DtoH", "DtoD", "HtoH".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::HostToDevice => "HtoD",
            Direction::DeviceToHost => "DtoH",
            Direction::DeviceToDevice => "DtoD",
            Direction::HostToHost => "HtoH",
        })
    }
}

/// What an edge makes its target wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The target starts once the source has finished (CUDA's default).
    Full,
    /// Programmatic dependent launch between two kernels: the target may
    /// start launching once every block of the source has triggered
    /// (`griddepcontrol.launch_dependents`) or exited, and must wait
    /// (`griddepcontrol.wait`, `cudaGridDependencySynchronize`) before it
    /// reads what the source wrote.
    Programmatic,
    /// The target may start once every block of the source kernel has
    /// started (CUDA's launch-order port; read back from captures only).
    LaunchOrder,
}

impl EdgeKind {
    /// The source port CUDA gives such an edge (`CUgraphEdgeData.from_port`).
    pub(crate) fn port(self) -> u8 {
        match self {
            EdgeKind::Full => 0,
            EdgeKind::Programmatic => 1,
            EdgeKind::LaunchOrder => 2,
        }
    }

    /// The kind of an edge CUDA reports with source port `port`.
    pub(crate) fn of_port(port: u8) -> EdgeKind {
        match port {
            1 => EdgeKind::Programmatic,
            2 => EdgeKind::LaunchOrder,
            _ => EdgeKind::Full,
        }
    }
}

/// The first way two graphs' topologies differ (what an exec update
/// refuses), as [`GraphDesc::topology_difference`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyDifference {
    /// Another number of nodes.
    NodeCount {
        /// Nodes of the exec's graph.
        ours: usize,
        /// Nodes of the new graph.
        theirs: usize,
    },
    /// Node `node` is of another kind.
    NodeKind {
        /// The node's index.
        node: usize,
        /// Its kind in the exec's graph.
        ours: &'static str,
        /// Its kind in the new graph.
        theirs: &'static str,
    },
    /// Node `node` depends on other nodes.
    Dependencies {
        /// The node's index.
        node: usize,
        /// What it depends on in the exec's graph.
        ours: Vec<usize>,
        /// What it depends on in the new graph.
        theirs: Vec<usize>,
    },
    /// The edge `from -> to` is of another kind.
    EdgeKind {
        /// The edge's source node.
        from: usize,
        /// Its target node.
        to: usize,
        /// Its kind in the exec's graph.
        ours: EdgeKind,
        /// Its kind in the new graph.
        theirs: EdgeKind,
    },
}

impl fmt::Display for TopologyDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyDifference::NodeCount { ours, theirs } => write!(
                f,
                "the graph has {theirs} nodes; the exec was made from one with {ours}"
            ),
            TopologyDifference::NodeKind { node, ours, theirs } => write!(
                f,
                "node {node} is a {theirs} node; the exec has a {ours} node there"
            ),
            TopologyDifference::Dependencies { node, ours, theirs } => write!(
                f,
                "node {node} depends on nodes {theirs:?}; in the exec it depends on {ours:?}"
            ),
            TopologyDifference::EdgeKind {
                from,
                to,
                ours,
                theirs,
            } => write!(
                f,
                "the edge {from} -> {to} is {theirs:?}; in the exec it is {ours:?}"
            ),
        }
    }
}

/// What one node does.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    /// A kernel launch.
    Kernel {
        /// The function's name (shared with the function).
        name: Arc<str>,
        /// Grid dimensions.
        grid: [u32; 3],
        /// Block dimensions.
        block: [u32; 3],
        /// Dynamic shared memory in bytes.
        shared_bytes: u32,
        /// The built-in kernel it is, if it is one.
        builtin: Option<&'static KernelInfo>,
        /// The argument values, for built-in kernels (empty otherwise).
        args: Vec<Value>,
    },
    /// A 1-D copy of `bytes` bytes.
    Memcpy {
        /// Destination address.
        dst: u64,
        /// Source address.
        src: u64,
        /// Bytes copied.
        bytes: usize,
        /// Which way it copies.
        direction: Direction,
    },
    /// Setting `bytes` bytes, in elements of `elem_size` bytes, to `value`.
    Memset {
        /// Destination address.
        dst: u64,
        /// Element value (its low `elem_size` bytes).
        value: u32,
        /// Bytes per element: 1, 2 or 4.
        elem_size: u32,
        /// Bytes set.
        bytes: usize,
    },
    /// A host callback.
    Host,
    /// A child graph of `nodes` nodes.
    Child {
        /// Number of nodes in the child graph.
        nodes: usize,
    },
    /// A node that does nothing (a join point).
    Empty,
    /// A conditional node: runs its bodies (graphs of their own) as the
    /// condition set on the device says.
    Conditional {
        /// IF, IF/ELSE, WHILE or SWITCH.
        kind: CondType,
        /// Number of bodies.
        bodies: u32,
    },
    /// A kind graphcore does not build (found in a captured graph).
    Other(&'static str),
}

impl NodeKind {
    /// A short label: "kernel", "memcpy", ...
    pub fn kind_name(&self) -> &'static str {
        match self {
            NodeKind::Kernel { .. } => "kernel",
            NodeKind::Memcpy { .. } => "memcpy",
            NodeKind::Memset { .. } => "memset",
            NodeKind::Host => "host",
            NodeKind::Child { .. } => "child graph",
            NodeKind::Empty => "empty",
            NodeKind::Conditional { .. } => "conditional",
            NodeKind::Other(what) => what,
        }
    }
}

/// Dependencies a [`DepList`] holds without a heap allocation: a chain's
/// one, a join's few.
const INLINE_DEPS: usize = 3;

/// One node's dependencies (node indices, in the order given): a few
/// inline, more on the heap, so adding a node of a chain allocates nothing.
#[derive(Clone, Debug)]
pub(crate) enum DepList {
    /// The first `.0` entries are the dependencies.
    Inline(usize, [usize; INLINE_DEPS]),
    /// More than [`INLINE_DEPS`].
    Heap(Vec<usize>),
}

impl Default for DepList {
    fn default() -> Self {
        DepList::Inline(0, [0; INLINE_DEPS])
    }
}

impl DepList {
    /// Dependencies kept inline, without a heap allocation.
    pub(crate) const INLINE: usize = INLINE_DEPS;

    /// The dependencies, in order.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[usize] {
        match self {
            DepList::Inline(n, a) => &a[..*n],
            DepList::Heap(v) => v,
        }
    }

    /// The list `f(0), .., f(n - 1)`, written once (inline up to
    /// [`INLINE_DEPS`]).
    #[inline]
    pub(crate) fn from_fn(n: usize, f: impl Fn(usize) -> usize) -> DepList {
        if n <= INLINE_DEPS {
            let mut a = [0; INLINE_DEPS];
            for (i, x) in a[..n].iter_mut().enumerate() {
                *x = f(i);
            }
            DepList::Inline(n, a)
        } else {
            DepList::Heap((0..n).map(f).collect())
        }
    }

    /// Appends dependency `d`, moving to the heap past [`INLINE_DEPS`].
    #[inline]
    pub(crate) fn push(&mut self, d: usize) {
        match self {
            DepList::Inline(n, a) if *n < INLINE_DEPS => {
                a[*n] = d;
                *n += 1;
            }
            DepList::Inline(n, a) => {
                let mut v = Vec::with_capacity(2 * INLINE_DEPS);
                v.extend_from_slice(&a[..*n]);
                v.push(d);
                *self = DepList::Heap(v);
            }
            DepList::Heap(v) => v.push(d),
        }
    }
}

impl PartialEq for DepList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl From<Vec<usize>> for DepList {
    /// Keeps a long list's allocation; a short one goes inline.
    fn from(v: Vec<usize>) -> Self {
        if v.len() <= INLINE_DEPS {
            v.as_slice().into()
        } else {
            DepList::Heap(v)
        }
    }
}

impl From<&[usize]> for DepList {
    fn from(d: &[usize]) -> Self {
        if d.len() <= INLINE_DEPS {
            let mut a = [0; INLINE_DEPS];
            a[..d.len()].copy_from_slice(d);
            DepList::Inline(d.len(), a)
        } else {
            DepList::Heap(d.to_vec())
        }
    }
}

/// A graph's nodes (indexed in the order they were added) and edges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphDesc {
    nodes: Vec<NodeKind>,
    /// For each node, the nodes it depends on.
    deps: Vec<DepList>,
    /// The edges that are not [`EdgeKind::Full`] (few), as (from, to, kind).
    kinds: Vec<(usize, usize, EdgeKind)>,
}

/// Checks dependencies `deps` of a new node of a graph of `nodes` nodes:
/// each is one of them, none repeats.
pub(crate) fn check_dep_indices(nodes: usize, deps: &[usize]) -> Result<()> {
    for (i, &d) in deps.iter().enumerate() {
        ensure_arg!(
            d < nodes,
            "dependency {i} is node {d}, but the graph has {nodes} nodes"
        );
        ensure_arg!(!deps[..i].contains(&d), "dependency {i} repeats node {d}");
    }
    Ok(())
}

impl GraphDesc {
    /// An empty description.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty description with room for `nodes` nodes.
    pub fn with_capacity(nodes: usize) -> Self {
        GraphDesc {
            nodes: Vec::with_capacity(nodes),
            deps: Vec::with_capacity(nodes),
            kinds: Vec::new(),
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node at `i`.
    pub fn node(&self, i: usize) -> &NodeKind {
        &self.nodes[i]
    }

    /// Replaces what node `i` does (same kind of node; used after updates).
    pub fn set_node(&mut self, i: usize, kind: NodeKind) {
        self.nodes[i] = kind;
    }

    /// The nodes node `i` depends on.
    pub fn deps(&self, i: usize) -> &[usize] {
        self.deps[i].as_slice()
    }

    /// Every edge (from, to), in node order.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.deps
            .iter()
            .enumerate()
            .flat_map(|(to, d)| d.as_slice().iter().map(move |&from| (from, to)))
    }

    /// Checks that adding a node depending on `deps` is valid (each index is
    /// a node of this graph, no repeats). Changes nothing.
    #[inline]
    pub fn check_deps(&self, deps: &[usize]) -> Result<()> {
        check_dep_indices(self.nodes.len(), deps)
    }

    /// Adds a node after [`check_deps`](Self::check_deps) passed; returns
    /// its index. `deps` is kept as given (a few inline; a long `Vec` moves
    /// in, no copy).
    pub fn push(&mut self, kind: NodeKind, deps: impl Into<Vec<usize>>) -> usize {
        self.push_deps(kind, deps.into().into())
    }

    /// [`push`](Self::push) of a ready [`DepList`] (no allocation for a
    /// few dependencies).
    #[inline]
    pub(crate) fn push_deps(&mut self, kind: NodeKind, deps: DepList) -> usize {
        debug_assert!(self.check_deps(deps.as_slice()).is_ok());
        self.nodes.push(kind);
        self.deps.push(deps);
        self.nodes.len() - 1
    }

    /// True when `to` can be reached from `from` along edges.
    fn reaches(&self, from: usize, to: usize) -> bool {
        // Walk backwards from `to` through dependencies.
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![to];
        while let Some(n) = stack.pop() {
            if n == from {
                return true;
            }
            for &d in self.deps[n].as_slice() {
                if !seen[d] {
                    seen[d] = true;
                    stack.push(d);
                }
            }
        }
        false
    }

    /// Checks that the edge `from → to` may be added: both are nodes here,
    /// it is not a self-loop, not already there, and closes no cycle.
    pub fn check_edge(&self, from: usize, to: usize) -> Result<()> {
        let n = self.nodes.len();
        ensure_arg!(
            from < n,
            "`from` is node {from}, but the graph has {n} nodes"
        );
        ensure_arg!(to < n, "`to` is node {to}, but the graph has {n} nodes");
        ensure_arg!(from != to, "node {from} cannot depend on itself");
        ensure_arg!(
            !self.deps[to].as_slice().contains(&from),
            "node {to} already depends on node {from}"
        );
        ensure_arg!(
            !self.reaches(to, from),
            "the edge {from} -> {to} would close a cycle (node {from} already depends on node {to})"
        );
        Ok(())
    }

    /// Adds an edge after [`check_edge`](Self::check_edge) passed.
    pub fn add_edge(&mut self, from: usize, to: usize) {
        debug_assert!(self.check_edge(from, to).is_ok());
        self.deps[to].push(from);
    }

    /// What the edge `from -> to` (an edge of the graph) waits for.
    pub fn edge_kind(&self, from: usize, to: usize) -> EdgeKind {
        self.kinds
            .iter()
            .find(|&&(f, t, _)| (f, t) == (from, to))
            .map_or(EdgeKind::Full, |&(_, _, k)| k)
    }

    /// Records that the edge `from -> to` (an edge of the graph) is of
    /// kind `kind`.
    pub fn set_edge_kind(&mut self, from: usize, to: usize, kind: EdgeKind) {
        debug_assert!(self.deps[to].as_slice().contains(&from));
        self.kinds.retain(|&(f, t, _)| (f, t) != (from, to));
        if kind != EdgeKind::Full {
            self.kinds.push((from, to, kind));
        }
    }

    /// The first difference that stops `other` from updating an exec made
    /// from `self`: node count, a node's kind (or kernel), or its edges.
    /// `None` when the topologies match.
    pub fn topology_difference(&self, other: &GraphDesc) -> Option<TopologyDifference> {
        if self.nodes.len() != other.nodes.len() {
            return Some(TopologyDifference::NodeCount {
                ours: self.nodes.len(),
                theirs: other.nodes.len(),
            });
        }
        for (i, (a, b)) in self.nodes.iter().zip(&other.nodes).enumerate() {
            if a.kind_name() != b.kind_name() {
                return Some(TopologyDifference::NodeKind {
                    node: i,
                    ours: a.kind_name(),
                    theirs: b.kind_name(),
                });
            }
            let (da, db) = (self.deps[i].as_slice(), other.deps[i].as_slice());
            // Dependency lists are short and repeat-free: compare as sets.
            if da.len() != db.len() || !da.iter().all(|d| db.contains(d)) {
                return Some(TopologyDifference::Dependencies {
                    node: i,
                    ours: da.to_vec(),
                    theirs: db.to_vec(),
                });
            }
        }
        let special = self.kinds.iter().chain(&other.kinds);
        for &(from, to, _) in special {
            let (ours, theirs) = (self.edge_kind(from, to), other.edge_kind(from, to));
            if ours != theirs {
                return Some(TopologyDifference::EdgeKind {
                    from,
                    to,
                    ours,
                    theirs,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> GraphDesc {
        let mut g = GraphDesc::new();
        for i in 0..n {
            let deps: Vec<usize> = if i == 0 { vec![] } else { vec![i - 1] };
            g.check_deps(&deps).unwrap();
            g.push(NodeKind::Empty, deps);
        }
        g
    }

    #[test]
    fn rejects_cycles_self_loops_and_repeats() {
        let mut g = chain(3);
        assert!(g.check_edge(2, 0).unwrap_err().message().contains("cycle"));
        assert!(g.check_edge(1, 1).is_err());
        assert!(g.check_edge(0, 1).is_err(), "edge already there");
        g.check_edge(0, 2).unwrap();
        g.add_edge(0, 2);
        assert_eq!(g.edges().count(), 3);
    }

    #[test]
    fn dep_lists_keep_a_few_inline_and_spill_the_rest() {
        let mut d = DepList::default();
        let mut want = Vec::new();
        for i in 0..2 * INLINE_DEPS {
            d.push(i * 7);
            want.push(i * 7);
            assert_eq!(d.as_slice(), &want[..]);
            assert_eq!(matches!(d, DepList::Inline(..)), want.len() <= INLINE_DEPS);
            // Written at once, the same list in the same form.
            let f = DepList::from_fn(want.len(), |k| want[k]);
            assert_eq!(f.as_slice(), &want[..]);
            assert_eq!(matches!(f, DepList::Inline(..)), want.len() <= INLINE_DEPS);
        }
        // Equal by contents, whichever form holds them.
        assert_eq!(DepList::Heap(vec![1, 2]), DepList::from(vec![1, 2]));
        assert_eq!(DepList::from(want.clone()).as_slice(), &want[..]);
        assert_eq!(DepList::from(&want[..2]).as_slice(), &want[..2]);
    }

    #[test]
    fn rejects_unknown_nodes() {
        let g = chain(2);
        assert!(g.check_deps(&[2]).is_err());
        assert!(g.check_deps(&[0, 0]).is_err());
        assert!(g.check_edge(0, 5).is_err());
        g.check_deps(&[0, 1]).unwrap();
    }

    #[test]
    fn edge_kinds_are_kept_and_compared() {
        let mut a = chain(3);
        let b = a.clone();
        assert_eq!(a.edge_kind(0, 1), EdgeKind::Full);
        a.set_edge_kind(0, 1, EdgeKind::Programmatic);
        assert_eq!(a.edge_kind(0, 1), EdgeKind::Programmatic);
        assert_eq!(a.edge_kind(1, 2), EdgeKind::Full);
        for (x, y, ours) in [(&a, &b, EdgeKind::Programmatic), (&b, &a, EdgeKind::Full)] {
            let d = x.topology_difference(y).unwrap();
            assert_eq!(
                d.to_string(),
                format!(
                    "the edge 0 -> 1 is {:?}; in the exec it is {ours:?}",
                    if ours == EdgeKind::Full {
                        EdgeKind::Programmatic
                    } else {
                        EdgeKind::Full
                    }
                )
            );
        }
        a.set_edge_kind(0, 1, EdgeKind::Full);
        assert_eq!(a, b);
        assert_eq!(
            EdgeKind::of_port(EdgeKind::LaunchOrder.port()),
            EdgeKind::LaunchOrder
        );
    }

    #[test]
    fn topology_difference_names_the_node() {
        let a = chain(3);
        assert_eq!(a.topology_difference(&chain(3)), None);
        let d = a.topology_difference(&chain(4)).unwrap();
        assert_eq!(d, TopologyDifference::NodeCount { ours: 3, theirs: 4 });
        assert!(d.to_string().contains("4 nodes"), "{d}");
        let mut b = GraphDesc::new();
        b.push(NodeKind::Empty, []);
        b.push(NodeKind::Host, [0]);
        b.push(NodeKind::Empty, [1]);
        let d = a.topology_difference(&b).unwrap();
        assert_eq!(
            d,
            TopologyDifference::NodeKind {
                node: 1,
                ours: "empty",
                theirs: "host"
            }
        );
        assert!(d.to_string().starts_with("node 1"), "{d}");
        let mut c = chain(2);
        c.push(NodeKind::Empty, [0]);
        let d = a.topology_difference(&c).unwrap();
        assert_eq!(
            d,
            TopologyDifference::Dependencies {
                node: 2,
                ours: vec![1],
                theirs: vec![0]
            }
        );
        assert!(d.to_string().starts_with("node 2"), "{d}");
    }

    #[test]
    fn directions_read_as_cuda_names_them() {
        assert_eq!(Direction::between(false, true).to_string(), "HtoD");
        assert_eq!(Direction::between(true, false).to_string(), "DtoH");
        assert_eq!(Direction::between(true, true).to_string(), "DtoD");
        assert_eq!(Direction::between(false, false).to_string(), "HtoH");
    }
}
