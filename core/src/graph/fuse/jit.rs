//! PTX for a fused elementwise chain of any length (pure text generation).
//!
//! A chain longer than the built-in chain kernel holds becomes straight-line
//! code: each operation one or two instructions on a register, the
//! constants kernel parameters (so an update that changes only constants
//! keeps the function). Each operation is written exactly as graphcore's
//! standalone kernels compute it (`mul.rn`/`add.rn` without flush-to-zero,
//! ReLU/max/min by compare-and-select), so results are bitwise equal.

use graphcore_kernels::fusion::op_ptx;
use graphcore_kernels::ops::OP_FILL;
#[cfg(test)]
use graphcore_kernels::ops::{OP_ADD, OP_MAX, OP_MIN, OP_MUL, OP_RELU};
use std::fmt::Write;

pub use graphcore_kernels::fusion::ChainOp;

/// The entry name of generated chain kernels.
pub const ENTRY: &str = "gc_fused_chain";

/// Most operations one generated kernel applies (its constants are
/// parameters: 256 of them stay far inside CUDA 12.0's 4 KiB).
pub const MAX_OPS: usize = 256;

/// Threads per block of a generated kernel.
pub const BLOCK: u32 = 256;

/// PTX (ISA 7.0, sm_75, so any driver from CUDA 12.0 loads it) of a
/// grid-stride kernel `gc_fused_chain(y, x, n, c0, c1, ...)` computing
/// `y[i] = ops(x[i])` for `i < n`. `x` is not read when the first
/// operation is a fill. `ops.len()` must be at most [`MAX_OPS`].
pub fn chain_ptx(ops: &[ChainOp]) -> String {
    assert!(ops.len() <= MAX_OPS, "at most {MAX_OPS} operations");
    let reads_x = !matches!(ops.first(), Some(&(OP_FILL, _)));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// graphcore fused elementwise chain: {} operations",
        ops.len()
    );
    s.push_str(".version 7.0\n.target sm_75\n.address_size 64\n\n");
    let _ = write!(
        s,
        ".visible .entry {ENTRY}(\n    .param .u64 p_y,\n    .param .u64 p_x,\n    .param .u64 p_n"
    );
    for i in 0..ops.len() {
        let _ = write!(s, ",\n    .param .f32 p_c{i}");
    }
    s.push_str("\n)\n{\n");
    let _ = writeln!(s, "    .reg .pred %p<3>;");
    let _ = writeln!(s, "    .reg .b32 %r<5>;");
    let _ = writeln!(s, "    .reg .b64 %rd<12>;");
    let _ = writeln!(s, "    .reg .f32 %v;");
    if !ops.is_empty() {
        let _ = writeln!(s, "    .reg .f32 %c<{}>;", ops.len());
    }
    s.push_str("    ld.param.u64 %rd1, [p_y];\n    ld.param.u64 %rd2, [p_x];\n    ld.param.u64 %rd3, [p_n];\n");
    for i in 0..ops.len() {
        let _ = writeln!(s, "    ld.param.f32 %c{i}, [p_c{i}];");
    }
    s.push_str(concat!(
        "    cvta.to.global.u64 %rd1, %rd1;\n",
        "    cvta.to.global.u64 %rd2, %rd2;\n",
        "    mov.u32 %r1, %ctaid.x;\n",
        "    mov.u32 %r2, %ntid.x;\n",
        "    mov.u32 %r3, %tid.x;\n",
        "    mov.u32 %r4, %nctaid.x;\n",
        "    mul.wide.u32 %rd4, %r1, %r2;\n",
        "    cvt.u64.u32 %rd5, %r3;\n",
        "    add.u64 %rd4, %rd4, %rd5;\n",
        "    mul.wide.u32 %rd6, %r4, %r2;\n",
        "LOOP:\n",
        "    setp.ge.u64 %p1, %rd4, %rd3;\n",
        "    @%p1 bra DONE;\n",
        "    shl.b64 %rd7, %rd4, 2;\n",
    ));
    if reads_x {
        s.push_str("    add.u64 %rd8, %rd2, %rd7;\n    ld.global.f32 %v, [%rd8];\n");
    } else {
        s.push_str("    mov.f32 %v, 0f00000000;\n");
    }
    for (i, &(op, _)) in ops.iter().enumerate() {
        // Each opcode's PTX comes from its declaration (the map ops' entries
        // in the kernel table; fill, max and min in kernels/src/fusion.rs),
        // written as the standalone kernels compute it; the chain kernel
        // leaves v unchanged for other codes.
        if let Some(text) = op_ptx(op) {
            s.push_str(&text.replace("{c}", &format!("%c{i}")));
        }
    }
    s.push_str(concat!(
        "    add.u64 %rd9, %rd1, %rd7;\n",
        "    st.global.f32 [%rd9], %v;\n",
        "    add.u64 %rd4, %rd4, %rd6;\n",
        "    bra LOOP;\n",
        "DONE:\n",
        "    ret;\n",
        "}\n",
    ));
    s
}

/// Grid size of a generated kernel over `n` elements on `sms`
/// multiprocessors (a grid-stride loop: at most 8 blocks per SM).
pub fn grid(n: u64, sms: u32) -> u32 {
    let want = n.div_ceil(BLOCK as u64);
    want.clamp(1, sms.max(1) as u64 * 8) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_instruction_per_arithmetic_operation() {
        let ops = [
            (OP_MUL, 2.0),
            (OP_ADD, 1.0),
            (OP_RELU, 0.0),
            (OP_MAX, 0.5),
            (OP_MIN, 3.0),
        ];
        let ptx = chain_ptx(&ops);
        assert!(ptx.contains(".visible .entry gc_fused_chain("));
        assert_eq!(ptx.matches(".param .f32 p_c").count(), 5);
        assert_eq!(ptx.matches("mul.rn.f32").count(), 1);
        assert_eq!(ptx.matches("add.rn.f32 %v").count(), 1);
        assert_eq!(ptx.matches("selp.f32").count(), 3);
        assert!(ptx.contains("ld.global.f32 %v"));
        assert!(
            !ptx.contains(".ftz"),
            "no flush-to-zero: bitwise as the built-ins"
        );
    }

    /// Every declared opcode has its PTX, each with its own constant
    /// register; an operation that needs registers declares them in a
    /// scope of its own (GELU: its ex2.approx and div.rn, as gc_gelu_f32).
    #[test]
    fn every_declared_opcode_is_emitted() {
        use graphcore_kernels::map::MapOp;
        for m in MapOp::all() {
            let Some(op) = m.chain_op(1.0) else { continue };
            let ptx = chain_ptx(&[(OP_MUL, 2.0), op, op]);
            let own = op_ptx(op.0).unwrap();
            assert!(ptx.contains(&own.replace("{c}", "%c1")), "{}", m.name());
            assert!(ptx.contains(&own.replace("{c}", "%c2")), "{}", m.name());
            assert!(!ptx.contains("{c}"));
        }
        let gelu = chain_ptx(&[(7, 0.0), (7, 0.0)]);
        assert_eq!(gelu.matches("ex2.approx.f32").count(), 2);
        assert_eq!(gelu.matches("div.rn.f32 %v").count(), 2);
        assert_eq!(gelu.matches("    {\n").count(), 2, "a scope each");
    }

    #[test]
    fn a_leading_fill_reads_no_input() {
        let ptx = chain_ptx(&[(OP_FILL, 1.0), (OP_MUL, 3.0)]);
        assert!(!ptx.contains("ld.global"));
        assert!(ptx.contains("mov.f32 %v, %c0;"));
    }

    #[test]
    fn grids_cover_small_and_large_counts() {
        assert_eq!(grid(1, 132), 1);
        assert_eq!(grid(1024, 132), 4);
        assert_eq!(grid(1 << 30, 132), 132 * 8);
    }
}
