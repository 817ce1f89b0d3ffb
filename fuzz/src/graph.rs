//! Graph descriptions against the validator's rules.
//!
//! The model is a list of node kinds and, per node, the set of nodes it
//! depends on. The rules (`GraphDesc::check_deps` / `check_edge`):
//!
//! - a new node's dependencies are nodes of the graph (index < length),
//!   each at most once;
//! - an edge `from -> to` joins two nodes of the graph, is not a self-loop,
//!   is not there yet, and closes no cycle (`from` must not already depend,
//!   transitively, on `to`);
//!
//! and each refusal names the first rule broken and changes nothing. After
//! every step the description must match the model (nodes, dependency
//! sets, edges), be acyclic (it has a topological order), and compare with
//! a second description (`topology_difference`) exactly as the model says:
//! equal lengths, kinds and dependency sets, or the first difference named.

use crate::Input;
use graphcore_core::graph::{Direction, GraphDesc, NodeKind};
use std::collections::BTreeSet;

/// Most operations one input runs.
const MAX_OPS: usize = 300;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// A node kind from the input (kernels with odd names, too).
fn kind(input: &mut Input) -> NodeKind {
    match input.below(7) {
        0 => NodeKind::Kernel {
            name: ["k", "gc_fill_f32", "", "a \"quoted\" {name}", "x\\"][input.below(5) as usize]
                .into(),
            grid: [input.u32(), 1, 1],
            block: [input.below(1025) as u32, 1, 1],
            shared_bytes: input.u32(),
            builtin: None,
            args: Vec::new(),
        },
        1 => NodeKind::Memcpy {
            dst: input.u64(),
            src: input.u64(),
            bytes: input.u64() as usize,
            direction: Direction::DeviceToDevice,
        },
        2 => NodeKind::Memset {
            dst: input.u64(),
            value: input.u32(),
            elem_size: [1, 2, 4][input.below(3) as usize],
            bytes: input.u32() as usize,
        },
        3 => NodeKind::Host,
        4 => NodeKind::Child {
            nodes: input.below(100) as usize,
        },
        5 => NodeKind::Empty,
        _ => NodeKind::Other("conditional"),
    }
}

/// The model: kinds and dependency sets.
#[derive(Clone, Default)]
struct Model {
    kinds: Vec<NodeKind>,
    deps: Vec<BTreeSet<usize>>,
}

impl Model {
    /// True when `node` depends, directly or not, on `on`.
    fn depends(&self, node: usize, on: usize) -> bool {
        let mut seen = vec![false; self.kinds.len()];
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            for &d in &self.deps[n] {
                if d == on {
                    return true;
                }
                if !seen[d] {
                    seen[d] = true;
                    stack.push(d);
                }
            }
        }
        false
    }

    /// The rule a new node with `deps` breaks: (dependency position, what).
    fn deps_rule(&self, deps: &[usize]) -> Option<(usize, &'static str)> {
        for (i, &d) in deps.iter().enumerate() {
            if d >= self.kinds.len() {
                return Some((i, "but the graph has"));
            }
            if deps[..i].contains(&d) {
                return Some((i, "repeats"));
            }
        }
        None
    }

    /// The rule an edge breaks, as a phrase its message contains.
    fn edge_rule(&self, from: usize, to: usize) -> Option<&'static str> {
        let n = self.kinds.len();
        if from >= n {
            Some("`from` is node")
        } else if to >= n {
            Some("`to` is node")
        } else if from == to {
            Some("cannot depend on itself")
        } else if self.deps[to].contains(&from) {
            Some("already depends on")
        } else if self.depends(from, to) {
            Some("would close a cycle")
        } else {
            None
        }
    }

    /// What `a.topology_difference(b)` must say: `None`, or how it starts.
    fn difference(a: &Model, b: &Model) -> Option<String> {
        if a.kinds.len() != b.kinds.len() {
            return Some(format!("the graph has {} nodes", b.kinds.len()));
        }
        for i in 0..a.kinds.len() {
            if a.kinds[i].kind_name() != b.kinds[i].kind_name() || a.deps[i] != b.deps[i] {
                return Some(format!("node {i} "));
            }
        }
        None
    }
}

/// A description and its model, built side by side.
#[derive(Clone, Default)]
struct Pair {
    desc: GraphDesc,
    model: Model,
}

impl Pair {
    /// An index for a node: usually one of the graph's, sometimes past it.
    fn index(&self, input: &mut Input) -> usize {
        let n = self.model.kinds.len() as u64;
        match input.below(8) {
            0 => (n + input.below(4)) as usize,
            1 => usize::MAX - input.below(2) as usize,
            _ => input.below(n.max(1)) as usize,
        }
    }

    fn add_node(&mut self, input: &mut Input) -> Result<(), String> {
        let k = kind(input);
        let count = input.below(5) as usize;
        let deps: Vec<usize> = (0..count).map(|_| self.index(input)).collect();
        let before = self.desc.clone();
        let rule = self.model.deps_rule(&deps);
        match (self.desc.check_deps(&deps), rule) {
            (Ok(()), None) => {
                let i = self.desc.push(k.clone(), deps.clone());
                ensure!(
                    i == self.model.kinds.len(),
                    "push returned {i}, want {}",
                    self.model.kinds.len()
                );
                self.model.kinds.push(k);
                self.model.deps.push(deps.into_iter().collect());
            }
            (Err(e), Some((pos, phrase))) => {
                let m = e.message();
                ensure!(
                    m.starts_with(&format!("dependency {pos} ")) && m.contains(phrase),
                    "deps {deps:?} refused with \"{m}\"; want dependency {pos}: {phrase}"
                );
                ensure!(self.desc == before, "a refused node changed the graph");
            }
            (got, want) => {
                return Err(format!(
                    "check_deps({deps:?}) on {} nodes gave {got:?}, want {want:?}",
                    self.model.kinds.len()
                ))
            }
        }
        Ok(())
    }

    fn add_edge(&mut self, input: &mut Input) -> Result<(), String> {
        // Bias towards edges that could close cycles: from a later node to
        // an earlier one, or back along an existing path.
        let (from, to) = (self.index(input), self.index(input));
        let rule = self.model.edge_rule(from, to);
        let before = self.desc.clone();
        match (self.desc.check_edge(from, to), rule) {
            (Ok(()), None) => {
                self.desc.add_edge(from, to);
                self.model.deps[to].insert(from);
            }
            (Err(e), Some(phrase)) => {
                ensure!(
                    e.message().contains(phrase),
                    "edge {from} -> {to} refused with \"{}\"; want \"{phrase}\"",
                    e.message()
                );
                ensure!(self.desc == before, "a refused edge changed the graph");
            }
            (got, want) => {
                return Err(format!(
                    "check_edge({from}, {to}) on {} nodes gave {got:?}, want {want:?}",
                    self.model.kinds.len()
                ))
            }
        }
        Ok(())
    }

    /// The description matches the model and is acyclic.
    fn check(&self) -> Result<(), String> {
        let (d, m) = (&self.desc, &self.model);
        ensure!(
            d.len() == m.kinds.len() && d.is_empty() == m.kinds.is_empty(),
            "{} nodes, model has {}",
            d.len(),
            m.kinds.len()
        );
        let mut indegree = vec![0usize; d.len()];
        let mut users = vec![Vec::new(); d.len()];
        for i in 0..d.len() {
            ensure!(d.node(i) == &m.kinds[i], "node {i} is {:?}", d.node(i));
            let deps: BTreeSet<usize> = d.deps(i).iter().copied().collect();
            ensure!(
                deps.len() == d.deps(i).len() && deps == m.deps[i],
                "node {i} depends on {:?}, model says {:?}",
                d.deps(i),
                m.deps[i]
            );
        }
        let edges: Vec<(usize, usize)> = d.edges().collect();
        let want: usize = m.deps.iter().map(|s| s.len()).sum();
        ensure!(
            edges.len() == want,
            "{} edges, model has {want}",
            edges.len()
        );
        for &(from, to) in &edges {
            ensure!(
                m.deps[to].contains(&from),
                "edge {from} -> {to} is not in the model"
            );
            indegree[to] += 1;
            users[from].push(to);
        }
        // Kahn: every node gets ordered, or there is a cycle.
        let mut ready: Vec<usize> = (0..d.len()).filter(|&i| indegree[i] == 0).collect();
        let mut ordered = 0;
        while let Some(i) = ready.pop() {
            ordered += 1;
            for &u in &users[i] {
                indegree[u] -= 1;
                if indegree[u] == 0 {
                    ready.push(u);
                }
            }
        }
        ensure!(ordered == d.len(), "the graph has a cycle");
        Ok(())
    }
}

/// Compares two descriptions' topologies with the model's verdict.
fn compare(a: &Pair, b: &Pair) -> Result<(), String> {
    let got = a.desc.topology_difference(&b.desc);
    match (got, Model::difference(&a.model, &b.model)) {
        (None, None) => Ok(()),
        (Some(g), Some(w)) if g.to_string().starts_with(&w) => Ok(()),
        (g, w) => Err(format!("topology_difference gave {g:?}, want {w:?}")),
    }
}

/// Runs the operations `data` encodes; `Err` describes the first mismatch.
pub fn run(data: &[u8]) -> Result<(), String> {
    let mut input = Input::new(data);
    let mut a = Pair::default();
    let mut b = Pair::default();
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        ops += 1;
        // Most steps build graph A; some build B, or make B a copy of A, so
        // comparisons see equal topologies as well as different ones.
        let target = match input.below(8) {
            0 => &mut b,
            1 => {
                b = a.clone();
                continue;
            }
            _ => &mut a,
        };
        match input.below(10) {
            0..=4 => target.add_node(&mut input)?,
            5..=8 => target.add_edge(&mut input)?,
            _ => {
                // Same topology, other parameters: kinds keep their names.
                if !target.model.kinds.is_empty() {
                    let i = input.below(target.model.kinds.len() as u64) as usize;
                    let k = kind(&mut input);
                    if k.kind_name() == target.model.kinds[i].kind_name() {
                        target.desc.set_node(i, k.clone());
                        target.model.kinds[i] = k;
                    }
                }
            }
        }
        target.check()?;
        compare(&a, &b)?;
        compare(&b, &a)?;
    }
    a.check()?;
    b.check()
}
