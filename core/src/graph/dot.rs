//! Graphviz DOT output of a graph description: one box per node (kernel
//! name and launch geometry, copy direction and size, ...) and its edges.

use super::desc::{GraphDesc, NodeKind};
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
        NodeKind::Other(what) => what.to_string(),
    }
}

fn shape(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Kernel { .. } => "box",
        NodeKind::Memcpy { .. } | NodeKind::Memset { .. } => "parallelogram",
        NodeKind::Child { .. } => "box3d",
        NodeKind::Empty => "point",
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

/// The graph as a DOT digraph named `name`.
pub fn to_dot(desc: &GraphDesc, name: &str) -> String {
    let mut s = String::new();
    let name = quoted(name);
    let _ = writeln!(s, "digraph \"{name}\" {{");
    let _ = writeln!(s, "  rankdir=TB;");
    let _ = writeln!(s, "  node [fontname=\"monospace\", fontsize=10];");
    for i in 0..desc.len() {
        let k = desc.node(i);
        let _ = writeln!(
            s,
            "  n{i} [shape={}, label=\"{i}: {}\"];",
            shape(k),
            quoted(&label(k))
        );
    }
    for (from, to) in desc.edges() {
        let _ = writeln!(s, "  n{from} -> n{to};");
    }
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
}
