//! What the elementwise kernels mean to fusion.
//!
//! Each elementwise kernel's table entry says how its arguments read as
//! `y = ops(x)` over `n` floats ([`Elementwise`]), with `ops` in the chain
//! kernel's opcodes (`OP_*`); [`crate::Kernel::elementwise`] reads a node's
//! argument values that way. Every opcode gives bitwise the result of its
//! standalone kernel, so a fusion planner may replace a run of such nodes by
//! one chain launch.

/// Chain opcode: `v = c` (same result as [`crate::ops::fill`]).
pub const OP_FILL: u32 = 1;
/// Chain opcode: `v = v * c` (same result as [`crate::ops::scale`]).
pub const OP_MUL: u32 = 2;
/// Chain opcode: `v = v + c` (same result as [`crate::ops::add_scalar`]).
pub const OP_ADD: u32 = 3;
/// Chain opcode: `v = relu(v)`; the constant is ignored (same result as [`crate::ops::relu`]).
pub const OP_RELU: u32 = 4;
/// Chain opcode: `v = max(v, c)` (clamp from below; a NaN in `v` propagates).
pub const OP_MAX: u32 = 5;
/// Chain opcode: `v = min(v, c)` (clamp from above; a NaN in `v` propagates).
pub const OP_MIN: u32 = 6;
/// The PTX of [`OP_FILL`], [`OP_MAX`] and [`OP_MIN`] in a generated chain
/// kernel (the map ops declare theirs: [`crate::map::Fuse::Op`]).
const OWN_PTX: [(u32, &str); 3] = [
    (OP_FILL, "    mov.f32 %v, {c};\n"),
    // max: v <= c ? c : v; min: v >= c ? c : v (a NaN in v stays).
    (
        OP_MAX,
        "    setp.le.f32 %p2, %v, {c};\n    selp.f32 %v, {c}, %v, %p2;\n",
    ),
    (
        OP_MIN,
        "    setp.ge.f32 %p2, %v, {c};\n    selp.f32 %v, {c}, %v, %p2;\n",
    ),
];

/// Whether `op` is an opcode of the chain kernel: [`OP_FILL`], [`OP_MAX`],
/// [`OP_MIN`] or a map op's ([`crate::map::Fuse::Op`]).
pub fn is_opcode(op: u32) -> bool {
    op_ptx(op).is_some()
}

/// The PTX that a generated chain kernel emits for opcode `op` (`None`: not
/// an opcode). In the text, `%v` is the value register (read and written),
/// `{c}` stands for the operation's constant register and `%p2` is a free
/// predicate; further registers are declared inside a `{ }` scope. Each
/// computes bitwise what the chain kernel's opcode computes.
pub fn op_ptx(op: u32) -> Option<&'static str> {
    if let Some(&(_, ptx)) = OWN_PTX.iter().find(|&&(o, _)| o == op) {
        return Some(ptx);
    }
    crate::map::MapOp::all().find_map(|m| match m.map.fuse {
        crate::map::Fuse::Op { opcode, ptx, .. } if opcode == op => Some(ptx),
        _ => None,
    })
}

/// Most operations one chain-kernel launch applies.
pub const MAX_CHAIN_OPS: usize = 8;

/// One elementwise operation as a fused chain applies it: opcode (`OP_*`)
/// and constant.
pub type ChainOp = (u32, f32);

/// What an elementwise kernel launch computes: `y = ops(x)` over `n` floats.
#[derive(Clone, Debug, PartialEq)]
pub struct Elementwise {
    /// Output address.
    pub y: u64,
    /// Input address (`None`: the launch reads no input).
    pub x: Option<u64>,
    /// Element count.
    pub n: u64,
    /// The operations, in order (empty: a copy).
    pub ops: Vec<ChainOp>,
}

impl Elementwise {
    /// `y = op(x)`; `None` is a copy.
    pub(crate) fn unary(y: u64, x: u64, n: u64, op: Option<ChainOp>) -> Elementwise {
        Elementwise {
            y,
            x: Some(x),
            n,
            ops: op.into_iter().collect(),
        }
    }

    /// `y = value`, reading no input.
    pub(crate) fn fill(y: u64, n: u64, value: f32) -> Elementwise {
        Elementwise {
            y,
            x: None,
            n,
            ops: vec![(OP_FILL, value)],
        }
    }

    /// The chain kernel's `count` operations, packed 4 bits each in
    /// `packed`, with their constants; `None` when `count` is out of range.
    /// `x` is absent when the first operation is a fill and `x` is null.
    pub(crate) fn chain(
        y: u64,
        x: u64,
        n: u64,
        packed: u32,
        count: u32,
        consts: [f32; MAX_CHAIN_OPS],
    ) -> Option<Elementwise> {
        let count = count as usize;
        if count > MAX_CHAIN_OPS {
            return None;
        }
        let ops: Vec<ChainOp> = (0..count)
            .map(|i| ((packed >> (4 * i)) & 15, consts[i]))
            .collect();
        let reads = !matches!(ops.first(), Some(&(OP_FILL, _)));
        Some(Elementwise {
            y,
            x: (reads || x != 0).then_some(x),
            n,
            ops,
        })
    }
}
