//! Graphviz DOT output of a graph description: one box per node (kernel
//! name and launch geometry, copy direction and size, ...) and its edges.

use super::desc::{EdgeKind, GraphDesc, NodeKind};
use std::fmt::Write;

fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

fn label(kind: &NodeKind) -> String {
    match kind {
        NodeKind::Kernel {
            name, grid, block, ..
        } => {
            let d = |v: &[u32; 3]| format!("{}x{}x{}", v[0], v[1], v[2]);
            format!("{name}\\ngrid {} block {}", d(grid), d(block))
        }
        NodeKind::Memcpy {
            bytes: n,
            direction,
            ..
        } => format!("memcpy {direction}\\n{}", bytes(*n)),
        NodeKind::Memset {
            bytes: n,
            value,
            elem_size,
            ..
        } => {
            let w = 2 * *elem_size as usize;
            format!("memset 0x{value:0w$x}\\n{}", bytes(*n))
        }
        NodeKind::Host => "host callback".into(),
        NodeKind::Child { nodes } => format!("child graph\\n{nodes} nodes"),
        NodeKind::Empty => "empty".into(),
        NodeKind::Conditional { kind, bodies } => {
            format!("conditional {}\\n{bodies} bodies", kind.name())
        }
        NodeKind::Other(what) => what.to_string(),
    }
}

fn shape(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Kernel { .. } => "box",
        NodeKind::Memcpy { .. } | NodeKind::Memset { .. } => "parallelogram",
        NodeKind::Child { .. } => "box3d",
        NodeKind::Empty => "point",
        NodeKind::Conditional { .. } => "diamond",
        NodeKind::Host | NodeKind::Other(_) => "ellipse",
    }
}

/// `text` as the inside of a DOT string (quotes and backslashes escaped;
/// `\n` line breaks kept).
fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace("\\\\n", "\\n")
        .replace('"', "\\\"")
}

/// A graph description with its conditional nodes' bodies: for each
/// conditional node (by index), its bodies, each nested the same way.
#[derive(Clone, Debug, Default)]
pub struct Nested {
    /// The graph's own nodes and edges.
    pub desc: GraphDesc,
    /// (conditional node index, its bodies).
    pub bodies: Vec<(usize, Vec<Nested>)>,
}

/// Writes `g`'s nodes and edges, node names prefixed with `prefix`, and
/// each body as a cluster linked from its node by a dashed edge.
fn write_graph(s: &mut String, g: &Nested, prefix: &str, indent: usize) {
    let pad = " ".repeat(indent);
    let desc = &g.desc;
    for i in 0..desc.len() {
        let k = desc.node(i);
        let _ = writeln!(
            s,
            "{pad}{prefix}n{i} [shape={}, label=\"{i}: {}\"];",
            shape(k),
            quoted(&label(k))
        );
    }
    for (from, to) in desc.edges() {
        let style = match desc.edge_kind(from, to) {
            EdgeKind::Full => "",
            EdgeKind::Programmatic => " [style=dashed, label=\"programmatic\"]",
            EdgeKind::LaunchOrder => " [style=dotted, label=\"launch order\"]",
        };
        let _ = writeln!(s, "{pad}{prefix}n{from} -> {prefix}n{to}{style};");
    }
    for (node, bodies) in &g.bodies {
        for (b, body) in bodies.iter().enumerate() {
            let inner = format!("{prefix}n{node}_b{b}_");
            let _ = writeln!(s, "{pad}subgraph \"cluster_{inner}\" {{");
            let _ = writeln!(s, "{pad}  label=\"node {node} body {b}\"; style=dashed;");
            if body.desc.is_empty() {
                let _ = writeln!(
                    s,
                    "{pad}  {inner}none [shape=plaintext, label=\"(empty)\"];"
                );
            }
            write_graph(s, body, &inner, indent + 2);
            let _ = writeln!(s, "{pad}}}");
            let first = (0..body.desc.len())
                .find(|&i| body.desc.deps(i).is_empty())
                .map_or("none".to_string(), |i| format!("n{i}"));
            let _ = writeln!(
                s,
                "{pad}{prefix}n{node} -> {inner}{first} [style=dashed, label=\"body {b}\"];"
            );
        }
    }
}

/// The graph as a DOT digraph named `name`.
pub fn to_dot(desc: &GraphDesc, name: &str) -> String {
    to_dot_nested(
        &Nested {
            desc: desc.clone(),
            bodies: Vec::new(),
        },
        name,
    )
}

/// The graph and its conditional bodies (as clusters) as a DOT digraph
/// named `name`.
pub fn to_dot_nested(g: &Nested, name: &str) -> String {
    let mut s = String::new();
    let name = quoted(name);
    let _ = writeln!(s, "digraph \"{name}\" {{");
    let _ = writeln!(s, "  rankdir=TB;");
    let _ = writeln!(s, "  node [fontname=\"monospace\", fontsize=10];");
    write_graph(&mut s, g, "", 2);
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_has_every_node_and_edge() {
        let mut g = GraphDesc::new();
        let a = g.push(
            NodeKind::Memcpy {
                dst: 1,
                src: 2,
                bytes: 4096,
                direction: crate::graph::Direction::HostToDevice,
            },
            [],
        );
        let b = g.push(
            NodeKind::Kernel {
                name: graphcore_kernels::Kernel::Scale.name().into(),
                grid: [4, 1, 1],
                block: [256, 1, 1],
                shared_bytes: 0,
                builtin: None,
                args: vec![],
            },
            [a],
        );
        g.push(NodeKind::Empty, [a, b]);
        let dot = to_dot(&g, "fb");
        assert!(dot.starts_with("digraph \"fb\" {"));
        assert_eq!(dot.lines().filter(|l| l.contains("[shape=")).count(), 3);
        assert_eq!(dot.lines().filter(|l| l.contains("->")).count(), 3);
        assert!(dot.contains("gc_scale_f32\\ngrid 4x1x1 block 256x1x1"));
        assert!(dot.contains("memcpy HtoD\\n4 KiB"));
        // Names with quotes and backslashes stay valid DOT strings.
        let odd = to_dot(&g, "a\"b\\");
        assert!(odd.starts_with("digraph \"a\\\"b\\\\\" {"), "{odd}");
    }

    #[test]
    fn memsets_show_their_value_at_the_element_width() {
        let label_of = |value, elem_size| {
            label(&NodeKind::Memset {
                dst: 1,
                value,
                elem_size,
                bytes: 4096,
            })
        };
        assert_eq!(label_of(0xab, 1), "memset 0xab\\n4 KiB");
        assert_eq!(label_of(0xbe, 2), "memset 0x00be\\n4 KiB");
        assert_eq!(label_of(0xdead_beef, 4), "memset 0xdeadbeef\\n4 KiB");
    }

    #[test]
    fn conditional_bodies_are_clusters() {
        use crate::driver::conditional::CondType;
        let mut body = GraphDesc::new();
        let k = body.push(NodeKind::Empty, []);
        body.push(NodeKind::Empty, [k]);
        let mut inner = GraphDesc::new();
        inner.push(
            NodeKind::Conditional {
                kind: CondType::If,
                bodies: 1,
            },
            [],
        );
        let mut root = GraphDesc::new();
        let c = root.push(
            NodeKind::Conditional {
                kind: CondType::While,
                bodies: 1,
            },
            [],
        );
        let g = Nested {
            desc: root,
            bodies: vec![(
                c,
                vec![Nested {
                    desc: inner,
                    bodies: vec![(
                        0,
                        vec![Nested {
                            desc: body,
                            bodies: vec![],
                        }],
                    )],
                }],
            )],
        };
        let dot = to_dot_nested(&g, "loop");
        assert!(dot.contains("subgraph \"cluster_n0_b0_\""), "{dot}");
        assert!(dot.contains("subgraph \"cluster_n0_b0_n0_b0_\""), "{dot}");
        assert!(dot.contains("n0_b0_n0_b0_n0 -> n0_b0_n0_b0_n1;"), "{dot}");
        assert!(dot.contains("conditional WHILE"), "{dot}");
        assert!(dot.contains("n0 -> n0_b0_n0 [style=dashed"), "{dot}");
    }
}
