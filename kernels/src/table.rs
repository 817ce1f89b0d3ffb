//! The table of built-in kernels: embedded PTX modules, and one declaration
//! per kernel (the `kernels!` macro) giving its entry name, module, parameter list
//! (exactly the C signature in `kernels/*.cu`), documentation and, for
//! elementwise kernels, its meaning to fusion. The [`Kernel`] enum, the
//! [`KERNELS`] slice, the typed argument structs in [`args`],
//! [`Kernel::elementwise`] and [`Kernel::map`] are all generated from these
//! declarations. A kernel with a `map:` clause is a map op (`y = f(x, c)`,
//! [`crate::map`]): its C export, Python binding, bad-input cases, fusion
//! meaning and float64 reference all come from its entry here.

use crate::fusion::{Elementwise, OP_ADD, OP_MUL, OP_RELU};
use crate::map::{map_params, zip_params, Fuse, Map, MapOp, Zip};
use crate::{Arg, KernelInfo, ModuleInfo, Value, MAX_ARGS};

/// Index of `elementwise.ptx` in [`MODULES`].
pub(crate) const ELEMENTWISE: usize = 0;
/// Index of `linear.ptx` in [`MODULES`].
pub(crate) const LINEAR: usize = 1;
/// Index of `reduce.ptx` in [`MODULES`].
pub(crate) const REDUCE: usize = 2;
/// Index of `control.ptx` in [`MODULES`].
pub(crate) const CONTROL: usize = 3;
/// Index of `linear_tf32.ptx` in [`MODULES`].
pub(crate) const LINEAR_TF32: usize = 4;

/// The embedded PTX modules (PTX ISA 8.0, `compute_75`: loads on any driver
/// from CUDA 12.0 and any GPU from sm_75). `control` calls the device
/// runtime (`cudaGraphSetConditional`, CUDA 12.3): it is linked with
/// libcudadevrt and loaded only when one of its kernels is asked for.
/// `linear_tf32` targets `compute_80` (TF32 tensor cores) and is loaded
/// only on GPUs of compute capability 8.0 or later. Each module also has a
/// `compute_90` variant (`kernels/ptx/sm90/`), loaded from
/// [`crate::PDL_ARCH`] on, whose kernels wait on and trigger programmatic
/// dependent launches.
pub static MODULES: &[ModuleInfo] = &[
    ModuleInfo {
        name: "elementwise",
        ptx: concat!(include_str!("../ptx/elementwise.ptx"), "\0"),
        device_runtime: false,
        min_arch: 75,
        ptx_sm90: concat!(include_str!("../ptx/sm90/elementwise.ptx"), "\0"),
    },
    ModuleInfo {
        name: "linear",
        ptx: concat!(include_str!("../ptx/linear.ptx"), "\0"),
        device_runtime: false,
        min_arch: 75,
        ptx_sm90: concat!(include_str!("../ptx/sm90/linear.ptx"), "\0"),
    },
    ModuleInfo {
        name: "reduce",
        ptx: concat!(include_str!("../ptx/reduce.ptx"), "\0"),
        device_runtime: false,
        min_arch: 75,
        ptx_sm90: concat!(include_str!("../ptx/sm90/reduce.ptx"), "\0"),
    },
    ModuleInfo {
        name: "control",
        ptx: concat!(include_str!("../ptx/control.ptx"), "\0"),
        device_runtime: true,
        min_arch: 75,
        ptx_sm90: concat!(include_str!("../ptx/sm90/control.ptx"), "\0"),
    },
    ModuleInfo {
        name: "linear_tf32",
        ptx: concat!(include_str!("../ptx/linear_tf32.ptx"), "\0"),
        device_runtime: false,
        min_arch: 80,
        ptx_sm90: concat!(include_str!("../ptx/sm90/linear_tf32.ptx"), "\0"),
    },
];

/// The argument values of one built-in kernel, as a typed struct (one field
/// per parameter, in order): what [`crate::Call::new`] launches. Each
/// kernel's struct is generated in [`args`] from its declaration, so an
/// argument list is written once and checked by the compiler.
pub trait KernelArgs {
    /// The kernel these are the arguments of.
    const KERNEL: Kernel;
    /// The values in parameter order, in the first slots of the array;
    /// returns how many there are.
    fn values(&self, out: &mut [Value; MAX_ARGS]) -> usize;
}

/// The Rust type of a parameter kind.
macro_rules! rust_type {
    (Ptr) => {
        u64
    };
    (F32) => {
        f32
    };
    (U32) => {
        u32
    };
    (I32) => {
        i32
    };
    (U64) => {
        u64
    };
}

/// A kernel's `map:` clause, if it has one.
macro_rules! map_of {
    () => {
        None
    };
    ($map:expr) => {{
        static MAP: Map = $map;
        Some(&MAP)
    }};
}

/// A kernel's `zip:` clause, if it has one.
macro_rules! zip_of {
    () => {
        None
    };
    ($zip:expr) => {{
        static ZIP: Zip = $zip;
        Some(&ZIP)
    }};
}

/// Whether a kernel has a `map:` (or `zip:`) clause.
macro_rules! is_map {
    () => {
        false
    };
    ($map:expr) => {
        true
    };
}

/// What a kernel means to fusion: `None` without a `fuse:` clause.
macro_rules! fusion_of {
    ($values:ident) => {{
        let _ = $values;
        None
    }};
    ($values:ident $fuse:expr) => {{
        let meaning: fn(&Self) -> Option<Elementwise> = $fuse;
        meaning(&Self::from_values($values)?)
    }};
}

/// Declares every built-in kernel, once each:
///
/// ```text
/// Variant = entry_name in MODULE (param: Kind, ...),
///     doc: "what it computes and how to launch it",
///     fuse: |a| Some(Elementwise::...);   // elementwise kernels only
/// ```
///
/// or, for a map op (`(y: Ptr, x: Ptr, n: U64[, c: F32])`, [`crate::map`]),
/// `map: Map { ... }` instead of `fuse:`; and generates [`Kernel`],
/// [`KERNELS`] (in the enum's order), the argument structs in [`args`],
/// [`Kernel::elementwise`] and [`Kernel::map`].
macro_rules! kernels {
    ($(
        $variant:ident = $entry:ident in $module:ident ( $( $arg:ident : $kind:ident ),* $(,)? ),
            doc: $doc:expr
            $(, fuse: $fuse:expr)?
            $(, map: $map:expr)?
            $(, zip: $zip:expr)? ;
    )*) => {
        /// A built-in kernel: an index into [`KERNELS`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Kernel {
            $(
                #[doc = concat!("`", stringify!($entry), "` (what it computes: [`Kernel::info`]).")]
                $variant,
            )*
        }

        const TABLE: [KernelInfo; Kernel::COUNT] = [$(
            KernelInfo {
                kernel: Kernel::$variant,
                name: stringify!($entry),
                module: $module,
                args: &[$( (stringify!($arg), Arg::$kind) ),*],
                doc: $doc,
            },
        )*];

        impl Kernel {
            /// Every kernel, in table order.
            pub const ALL: [Kernel; Kernel::COUNT] = [$(Kernel::$variant),*];
            /// Number of built-in kernels.
            pub const COUNT: usize = [$(stringify!($variant)),*].len();

            /// Whether each kernel (in table order) is a map op.
            const IS_MAP: [bool; Kernel::COUNT] = [$(is_map!($($map)?)),*];

            /// Whether each kernel (in table order) is a zip op.
            const IS_ZIP: [bool; Kernel::COUNT] = [$(is_map!($($zip)?)),*];

            /// The `zip:` clause of the kernel's entry, if it is a zip op
            /// ([`crate::map::Zip`]).
            pub fn zip(self) -> Option<&'static Zip> {
                match self {
                    $(Kernel::$variant => zip_of!($($zip)?),)*
                }
            }

            /// The `map:` clause of the kernel's entry, if it is a map op
            /// ([`crate::map`]).
            pub fn map(self) -> Option<&'static Map> {
                match self {
                    $(Kernel::$variant => map_of!($($map)?),)*
                }
            }

            /// What `self` computes if it is an elementwise kernel that
            /// fusion understands, read from its argument `values` (in
            /// parameter order); `None` for other kernels, or values that do
            /// not match the parameter list.
            pub fn elementwise(self, values: &[Value]) -> Option<Elementwise> {
                if let Some(map) = self.map() {
                    return MapOp { kernel: self, map }.elementwise(values);
                }
                match self {
                    $(Kernel::$variant => args::$variant::elementwise(values),)*
                }
            }
        }

        /// Typed argument lists, one struct per kernel (named as its
        /// [`Kernel`] variant), fields in parameter order.
        pub mod args {
            use super::*;
            $(
                #[doc = concat!("Arguments of `", stringify!($entry), "`.")]
                #[derive(::core::clone::Clone, ::core::marker::Copy, Debug, PartialEq)]
                pub struct $variant {
                    $(
                        #[doc = concat!("Parameter `", stringify!($arg), "`.")]
                        pub $arg: rust_type!($kind),
                    )*
                }

                impl KernelArgs for $variant {
                    const KERNEL: Kernel = Kernel::$variant;
                    fn values(&self, out: &mut [Value; MAX_ARGS]) -> usize {
                        let values = [$(Value::$kind(self.$arg)),*];
                        out[..values.len()].copy_from_slice(&values);
                        values.len()
                    }
                }

                impl $variant {
                    /// The arguments from values in parameter order, if
                    /// they match the parameter list in number and kinds.
                    pub fn from_values(values: &[Value]) -> Option<Self> {
                        let &[$($arg),*] = values else {
                            return None;
                        };
                        Some(Self {
                            $($arg: match $arg {
                                Value::$kind(v) => v,
                                _ => return None,
                            },)*
                        })
                    }

                    pub(super) fn elementwise(values: &[Value]) -> Option<Elementwise> {
                        fusion_of!(values $($fuse)?)
                    }
                }
            )*
        }
    };
}

// Every parameter list fits a launch's argument array, and every map op's
// is (y, x, n) or (y, x, n, c).
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(!TABLE[i].args.is_empty() && TABLE[i].args.len() <= MAX_ARGS);
        assert!(!Kernel::IS_MAP[i] || map_params(TABLE[i].args));
        assert!(!Kernel::IS_ZIP[i] || zip_params(TABLE[i].args));
        i += 1;
    }
};

/// Every built-in kernel, indexed by [`Kernel`].
pub static KERNELS: &[KernelInfo] = &TABLE;

impl Kernel {
    /// The kernel's table entry.
    pub fn info(self) -> &'static KernelInfo {
        &KERNELS[self.index()]
    }

    /// The kernel's entry name (`gc_scale_f32`, ...).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Position of the kernel in [`KERNELS`] and [`Kernel::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The built-in kernel whose entry name is `name`, if there is one (the
    /// only lookup by name: for `gc_kernel_builtin`).
    pub fn from_name(name: &str) -> Option<Kernel> {
        KERNELS.iter().find(|k| k.name == name).map(|k| k.kernel)
    }
}

/// The launch rule shared by the elementwise kernels.
macro_rules! grid_stride {
    () => {
        " Launch: block 256 (any multiple of 32 up to 1024 is correct), any grid: a grid-stride \
loop covers all n. float4 loads/stores when every pointer is 16-byte aligned (decided inside the \
kernel), a scalar path otherwise. In-place use (output == an input) is allowed; partly \
overlapping ranges are not."
    };
}

kernels! {
    // ----------------------------------------------------------------- elementwise
    Fill = gc_fill_f32 in ELEMENTWISE (y: Ptr, n: U64, value: F32),
        doc: concat!("y[i] = value for i < n (bitwise equal to chain opcode FILL).", grid_stride!()),
        fuse: |a| Some(Elementwise::fill(a.y, a.n, a.value));
    Copy = gc_copy_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64),
        doc: concat!("y[i] = x[i] for i < n.", grid_stride!()),
        map: Map {
            what: "y = x (n floats).",
            fuse: Fuse::Copy,
            reference: |x, _| x,
            tolerance: (0.0, 0.0),
        };
    Scale = gc_scale_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64, alpha: F32),
        doc: concat!("y[i] = alpha * x[i] (one rounding, __fmul_rn; bitwise equal to chain opcode MUL).", grid_stride!()),
        map: Map {
            what: "y = alpha * x (n floats).",
            fuse: Fuse::Op {
                opcode: OP_MUL,
                name: "MUL",
                doc: "v = v * value (bitwise as gc_op_scale).",
                ptx: "    mul.rn.f32 %v, %v, {c};\n",
            },
            reference: |x, c| x * c,
            tolerance: (2e-7, 0.0),
        };
    AddScalar = gc_add_scalar_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64, c: F32),
        doc: concat!("y[i] = x[i] + c (__fadd_rn; bitwise equal to chain opcode ADD).", grid_stride!()),
        map: Map {
            what: "y = x + c (n floats).",
            fuse: Fuse::Op {
                opcode: OP_ADD,
                name: "ADD",
                doc: "v = v + value (bitwise as gc_op_add_scalar).",
                ptx: "    add.rn.f32 %v, %v, {c};\n",
            },
            reference: |x, c| x + c,
            tolerance: (2e-7, 1e-45),
        };
    Axpy = gc_axpy_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64, alpha: F32),
        doc: concat!("y[i] = fmaf(alpha, x[i], y[i]).", grid_stride!());
    Add = gc_add_f32 in ELEMENTWISE (z: Ptr, x: Ptr, y: Ptr, n: U64),
        doc: concat!("z[i] = x[i] + y[i].", grid_stride!()),
        zip: Zip {
            what: "z = x + y (n floats).",
            reference: |x, y| x + y,
            tolerance: (2e-7, 1e-45),
        };
    Mul = gc_mul_f32 in ELEMENTWISE (z: Ptr, x: Ptr, y: Ptr, n: U64),
        doc: concat!("z[i] = x[i] * y[i].", grid_stride!()),
        zip: Zip {
            what: "z = x * y (n floats).",
            reference: |x, y| x * y,
            tolerance: (2e-7, 1e-45),
        };
    Relu = gc_relu_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64),
        doc: concat!("y[i] = x[i] <= 0 ? +0 : x[i] (NaN propagates, as in PyTorch; bitwise equal to chain \
opcode RELU).", grid_stride!()),
        map: Map {
            what: "y = max(x, 0) (n floats; NaN propagates, -0 becomes +0).",
            fuse: Fuse::Op {
                opcode: OP_RELU,
                name: "RELU",
                doc: "v = max(v, 0) (bitwise as gc_op_relu).",
                // v <= 0 ? +0 : v (a NaN stays, -0 becomes +0).
                ptx: "    setp.le.f32 %p2, %v, 0f00000000;\n    selp.f32 %v, 0f00000000, %v, %p2;\n",
            },
            reference: |x, _| if x <= 0.0 { 0.0 } else { x },
            tolerance: (0.0, 0.0),
        };
    Gelu = gc_gelu_f32 in ELEMENTWISE (y: Ptr, x: Ptr, n: U64),
        doc: concat!("y[i] = gelu(x[i]), the tanh approximation (PyTorch's gelu(approximate=\"tanh\")) \
computed as x / (1 + 2^(K * (x + 0.044715 x^3))) with K = -2 sqrt(2/pi) log2(e): explicit roundings \
and ex2.approx.f32, bitwise equal to chain opcode GELU.", grid_stride!()),
        map: Map {
            what: "y = gelu(x) (n floats), the tanh approximation: \
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as PyTorch's gelu(approximate=\"tanh\"), \
within 2e-5 relative (or 1e-30 absolute: the tail below x = -9).",
            fuse: Fuse::Op {
                opcode: 7,
                name: "GELU",
                doc: "v = gelu(v), the tanh approximation (bitwise as gc_op_gelu).",
                ptx: "    {\n    .reg .f32 %g;\n    mul.rn.f32 %g, %v, %v;\n    mul.rn.f32 %g, %g, 0f3D372713;\n\
    fma.rn.f32 %g, %g, %v, %v;\n    mul.rn.f32 %g, %g, 0fC0135761;\n    ex2.approx.f32 %g, %g;\n\
    add.rn.f32 %g, %g, 0f3F800000;\n    div.rn.f32 %v, %v, %g;\n    }\n",
            },
            // 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), the form without
            // cancellation where tanh(u) is near -1.
            reference: |x, _| {
                let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                x / (1.0 + (-2.0 * u).exp())
            },
            // The error grows with the exponent's size (about 1e-5
            // relative at x = -9, 3e-6 for |x| <= 6).
            tolerance: (2e-5, 1e-30),
        };
    ReluBackward = gc_relu_backward_f32 in ELEMENTWISE (dx: Ptr, dy: Ptr, x: Ptr, n: U64),
        doc: concat!("dx[i] = x[i] > 0 ? dy[i] : 0 (x is the ReLU's input or output).", grid_stride!()),
        zip: Zip {
            what: "dx = x > 0 ? dy : 0 (n floats).",
            reference: |dy, x| if x > 0.0 { dy } else { 0.0 },
            tolerance: (0.0, 0.0),
        };
    Sgd = gc_sgd_f32 in ELEMENTWISE (w: Ptr, g: Ptr, n: U64, lr: F32),
        doc: concat!("w[i] = fmaf(-lr, g[i], w[i]) (SGD step, one rounding).", grid_stride!());
    BiasAdd = gc_bias_add_f32 in ELEMENTWISE (y: Ptr, x: Ptr, b: Ptr, rows: U32, cols: U32),
        doc: "y[r, c] = x[r, c] + b[c] for row-major rows x cols x and y (rows * cols < 2^32). \
float4 path when cols % 4 == 0 and y, x, b are 16-byte aligned. Launch: block 256, any grid \
(grid-stride over the flattened matrix). y == x is allowed.";
    Chain = gc_chain_f32 in ELEMENTWISE (
        y: Ptr, x: Ptr, n: U64, ops: U32, count: U32,
        c0: F32, c1: F32, c2: F32, c3: F32, c4: F32, c5: F32, c6: F32, c7: F32,
    ),
        doc: concat!("y[i] = op_{count-1}(...op_0(x[i])...), all in registers, one pass. Op k is the 4-bit \
opcode (ops >> 4k) & 15 with constant ck, count <= 8: 1 FILL v=c, 2 MUL v=v*c, 3 ADD v=v+c, \
4 RELU, 5 MAX v=max(v,c), 6 MIN v=min(v,c) (MAX/MIN propagate a NaN in v), 7 GELU; other opcodes \
leave v unchanged. Each opcode is bitwise equal to its standalone kernel (fill, scale, add_scalar, relu, \
gelu). \
When op 0 is FILL, x is not read and may be null; count == 0 copies.", grid_stride!()),
        fuse: |a| Elementwise::chain(
            a.y, a.x, a.n, a.ops, a.count,
            [a.c0, a.c1, a.c2, a.c3, a.c4, a.c5, a.c6, a.c7],
        );
    // ----------------------------------------------------------------- linear
    LinearSmall = gc_linear_small_f32 in LINEAR (
        y: Ptr, x: Ptr, w: Ptr, b: Ptr, m: U32, n: U32, k: U32, flags: U32, config: U32,
    ),
        doc: "Small-batch linear: y[i, j] = act(sum_r x[i, r] * W(r, j) + b[j]) with x m x k, \
y m x n (row-major), W(r, j) = w[j * k + r] (w is n x k, PyTorch layout) or, with flags bit 1, \
w[r * n + j] (w is k x n: y = x . w, for the input gradient). flags bit 0: ReLU. b may be null. \
config = LR | LC << 2 | LGR << 4 | LGC << 6: thread tile 2^LR x 2^LC (rows x columns; n x k \
layout 1x1, 1x2, 4x1, 4x4 or 8x4, k x n layout 1x4, 4x4 or 8x4; other tiles do nothing) and \
2^LGR x 2^LGC tile groups per block (LGR + LGC <= 3); the threads of a group split K. float4 \
loads when k % 4 == 0 and x, w are 16-byte aligned (k x n layout: also n % 4 == 0), scalar \
otherwise; deterministic fixed-order reduction (warp shuffles, then shared memory). Launch: \
block 256, grid (ceil(n / 2^(LC+LGC)), ceil(m / 2^(LR+LGR))), no dynamic shared memory. \
y must not overlap x, w or b.";
    LinearSmallRows = gc_linear_small_rows_f32 in LINEAR (
        y: Ptr, x: Ptr, w: Ptr, b: Ptr, rows: Ptr, max_m: U32, n: U32, k: U32, flags: U32, config: U32,
    ),
        doc: "gc_linear_small_f32 with m = min(*rows, max_m), read from device memory (a u32) when the \
kernel runs: a count above max_m is clamped to max_m. Grid and config as gc_linear_small_f32's for \
max_m rows; the first m rows of y are bitwise that launch's; x is read and y written below row m \
only. rows must not overlap y.";
    Gemm = gc_gemm_f32 in LINEAR (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "Tiled GEMM: C = act(alpha * op(A) . op(B) + beta * C + bias[col]), C m x n (ldc), \
op(A) m x k: a[i * lda + r], or a[r * lda + i] with flags bit 0 (A stored k x m); op(B) k x n: \
b[r * ldb + j], or b[j * ldb + r] with flags bit 1 (B stored n x k). flags bit 2: ReLU. bias may \
be null. beta == 0: C is not read; else the result is fmaf(alpha, acc, beta * C), so alpha = -lr, \
beta = 1 is bitwise the SGD step on the alpha = 1, beta = 0 result. Deterministic. Every \
rows * ld must be < 2^32. Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with \
T = 128 for tile 0, 64 for tile 1 (each thread sums its outputs in increasing k: results do not \
depend on the tile), 32 for tile 2 (K split over 4 slices of the block); no dynamic shared \
memory. float4 loads and stores where leading dimensions are multiples of 4 and pointers \
16-byte aligned. C must not overlap A, B or bias.";
    GemmWide = gc_gemm_wide_f32 in LINEAR (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "gc_gemm_f32 (same arguments and result) for the linear layer's layout only \
(transpose bits 2: A m x k, B n x k; other layouts do nothing), one block per SM: tile 0: 128 x \
256 (rows x columns of C), tile 1: 128 x 128 (both bitwise gc_gemm_f32's tiles 0 and 1), tile 2: \
64 x 64 with K split over 4 slices (bitwise gc_gemm_f32's tile 2). Launch: block 256, 1-D grid of \
ceil(m / TM) * ceil(n / TN) blocks for the tile's TM x TN; no dynamic shared memory. C must not \
overlap A, B or bias.";
    Gemm128x256 = gc_gemm_128x256_f32 in LINEAR (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "gc_gemm_wide_f32's tile 0 as a kernel of its own (same arguments, bits and launch; \
tile must be 0, other values do nothing): 128 x 256 tiles of C, one block per SM, with the \
registers that tile alone needs (faster than inside gc_gemm_wide_f32). Launch: block 256, 1-D \
grid of ceil(m / 128) * ceil(n / 256) blocks; no dynamic shared memory. C must not overlap A, B \
or bias.";
    GemmMid = gc_gemm_mid_f32 in LINEAR (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "gc_gemm_f32 (same arguments, bitwise its tiles 0 and 1) for the linear layer's layout \
only (transpose bits 2: A m x k, B n x k; other layouts do nothing), two blocks per SM: tile 0 (the \
only one): 64 x 128 (rows x columns of C). Launch: block 256, 1-D grid of ceil(m / 64) * ceil(n / \
128) blocks; no dynamic shared memory. C must not overlap A, B or bias.";
    LinearCluster = gc_linear_cluster_f32 in LINEAR (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "What gc_gemm_f32 computes (same arguments; the sums in another order) for the linear \
layer's layout (transpose bits 2: A m x k, B n x k) and, with tiles 0 and 2 only, the plain one \
(transpose bits 0: A m x k, B k x n; the input gradient dy . W); other layouts do nothing. K is split over the S \
blocks of a thread-block cluster (compute capability 9.0; it traps on older GPUs): block s of a \
cluster sums its slice of K chunks, the partial tiles are added in rank order through \
distributed shared memory (deterministic for a given shape and S). tile 0: 128 x 64 (rows x \
columns of C), tile 1: 64 x 64, tile 2: 64 x 64 with K chunks of 32 instead of 16 (tile 1's \
products in the same order), tile 3: tile 2's products and bits with its chunks copied into shared \
memory by cp.async two stages deep where k, lda and ldb are multiples of 4 and a, b are 16-byte \
aligned (tile 2 elsewhere). Launch: block 256, 1-D grid of S * ceil(m / TM) * ceil(n / TN) \
blocks with the cluster dimension (S, 1, 1), S from 1 to 8; no dynamic shared memory. C must not \
overlap A, B or bias.";
    GemmTf32 = gc_gemm_tf32 in LINEAR_TF32 (
        c: Ptr, a: Ptr, b: Ptr, bias: Ptr, m: U32, n: U32, k: U32,
        lda: U32, ldb: U32, ldc: U32, flags: U32, alpha: F32, beta: F32, tile: U32,
    ),
        doc: "TF32 tensor-core GEMM (compute capability 8.0 or later): C = act(alpha * A . B^T + \
beta * C + bias[col]) with A m x k (a[i * lda + r]) and B n x k (b[j * ldb + r]); flags as \
gc_gemm_f32's, whose transpose bits must be 2 (B stored n x k; anything else does nothing); bias \
may be null; beta == 0: C is not read. A and B are rounded to TF32 (10 mantissa bits, to nearest) \
and multiplied with mma.sync m16n8k8, f32 sums in a fixed order (deterministic; results differ \
from gc_gemm_f32 by the TF32 rounding). Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) \
blocks with T = 128 for tile 0, 64 for tile 1; no dynamic shared memory. C must not overlap A, B \
or bias.";
    Mlp = gc_mlp_f32 in LINEAR (
        y: Ptr, x: Ptr, bar: Ptr, act: Ptr,
        w0: Ptr, b0: Ptr, w1: Ptr, b1: Ptr, w2: Ptr, b2: Ptr, w3: Ptr, b3: Ptr,
        d01: U32, d23: U32, d4rows: U32, flags: U32,
    ),
        doc: "Fused MLP forward, up to 4 layers in one launch: h_0 = x (rows x d0), h_{l+1} = \
act_l(h_l . W_l^T + b_l) (rows x d_{l+1}, W_l d_{l+1} x d_l as PyTorch stores it, b_l may be null), \
y = h_L. d01 = d0 | d1 << 16, d23 = d2 | d3 << 16, d4rows = d4 | rows << 16 (all below 2^16); \
flags bits 0..3: ReLU after layer l; bits 4..6: L; bits 8 + 2 l: layer l's warp tile (0: 1 x 1, \
1: 4 x 1, 2: 4 x 4, 3: 8 x 4). The grid's warps take each layer's tiles round-robin and compute \
them as gc_linear_small_f32's one-warp tile groups (bitwise equal to per-layer launches with those \
tiles and 8 groups per block). No barrier between layers: the intermediates are 64-bit tagged \
slots (value, launch tag) and a tile waits until the slots it reads carry this launch's tag. bar: \
8 bytes, an arrival count (zero before the first launch, left zero by every launch) and the epoch \
(any value; each launch advances it). act: the L - 1 intermediates, one after the other, each \
rows * d slots (8 bytes) rounded up to a multiple of 32. Launch: cooperative, block 256, any 1-D \
grid that is resident at once (one block per SM). y must not overlap any input or act.";
    LinearMse = gc_linear_mse_f32 in LINEAR (
        grad: Ptr, pred: Ptr, partials: Ptr, x: Ptr, w: Ptr, b: Ptr, target: Ptr,
        m: U32, n: U32, k: U32, config: U32, grad_scale: F32,
    ),
        doc: "Training step, launch 1 (linear layer + summed squared error): the forward pass of \
gc_linear_small_f32 (w n x k, no ReLU, same config and launch shape, bitwise its outputs p) with a \
loss epilogue: d = p - target[i, j], grad[i, j] = d * (2 * grad_scale) (bitwise gc_mse_f32's \
gradient), pred[i, j] = p when pred is not null, and each block's sum of d^2 (fixed order) in \
partials[blockIdx.y * gridDim.x + blockIdx.x], which gc_linear_sgd_f32 adds into the loss. \
Outputs must not overlap the inputs.";
    LinearSgd = gc_linear_sgd_f32 in LINEAR (
        w: Ptr, b: Ptr, dy: Ptr, x: Ptr, m: U32, n: U32, k: U32, lr: F32, tile: U32, bias_ty: U32,
        loss: Ptr, partials: Ptr, parts: U32,
    ),
        doc: "Training step, launch 2 (SGD of a linear layer): W (n x k) = fmaf(-lr, dy^T . x, W) and \
b[j] = fmaf(-lr, sum_i dy[i, j], b[j]) (b may be null) for dy m x n, x m x k, in one launch; when \
loss is not null, role 0 writes loss[0] = the sum of partials[0 .. parts) in a fixed order \
(gc_linear_mse_f32's block sums). The next ceil(n / 32) roles (none when b is null) update b, \
bitwise gc_bias_sgd_f32 with block (32, bias_ty); the others are the output tiles of gc_gemm_f32 \
with tile `tile` (the fused weight-gradient SGD, bitwise; tile 3: tile 1 with the reduction, up to \
64 rows, staged whole in shared memory, where n % 4 == 0, k % 4 == 0 and w, dy, x are 16-byte \
aligned, else tile 1; bitwise tile 1). Block b takes role b, or with bit 2 of `tile` set (4: \
the weight tiles handed out first) role G - 1 - b; the results do not depend on it. Launch: \
block 256, grid (loss ? 1 : 0) + ceil(n / 32) + \
ceil(n / T) * ceil(k / T) with T = 128, 64, 32, 64 for tile 0, 1, 2, 3; no dynamic shared memory. w, b and loss must not overlap dy, x or partials.";
    Mlp2Mse = gc_mlp2_mse_f32 in LINEAR (
        x: Ptr, w1: Ptr, b1: Ptr, w2: Ptr, b2: Ptr, target: Ptr, h: Ptr, dp: Ptr, dh: Ptr,
        partials: Ptr, bar: Ptr, d01: U32, d2m: U32, tiles: U32, grad_scale: F32,
    ),
        doc: "Training step of a 2-layer MLP (ReLU hidden layer, summed squared error), launch 1: \
h = relu(x . W1^T + b1), then p = h . W2^T + b2 with dp = (p - target) * (2 * grad_scale) and each \
block's sum of (p - target)^2 in partials[blockIdx.x], then dh = h > 0 ? (dp . W2) : 0; a grid \
barrier (bar, 16 bytes, first 4 zero, left zero) between the phases. W1 k1 x k0, W2 k2 x k1 \
(PyTorch layout), x m x k0; d01 = k0 | k1 << 16, d2m = k2 | m << 16 (below 2^16); tiles: bits 0-1 \
and 2-3 the warp tiles of the forward phases (0: 1 x 1, 1: 4 x 1, 2: 4 x 4, 3: 8 x 4), bits 4-5 \
the input gradient's (0: 1 x 4, 1: 4 x 4, 2: 8 x 4). Launch: cooperative, block 256, a 1-D grid \
of at most two blocks per SM.";
    Mlp2Sgd = gc_mlp2_sgd_f32 in LINEAR (
        w1: Ptr, b1: Ptr, w2: Ptr, b2: Ptr, x: Ptr, h: Ptr, dp: Ptr, dh: Ptr, loss: Ptr,
        partials: Ptr, d01: U32, d2m: U32, lr: F32, cfg: U32,
    ),
        doc: "Training step of a 2-layer MLP, launch 2: role 0 writes loss[0] (the sum of \
partials[0 .. parts) in a fixed order), then layer 2's update (W2 -= lr dp^T . h, b2 -= lr \
colsum dp) and layer 1's (W1 -= lr dh^T . x, b1 -= lr colsum dh), each as gc_linear_sgd_f32's \
bias blocks and weight tiles. d01, d2m as gc_mlp2_mse_f32's; cfg: bits 0-1 layer 1's GEMM tile, \
bits 2-3 layer 2's, bits 4-9 the column sums' TY, bit 10 roles in reverse (as \
gc_linear_sgd_f32's tile bit 2), bits 16-31 parts. b1 and b2 may be null. \
Launch: block 256, grid 1 + both layers' blocks (ceil(n / 32) bias blocks when b is not null, \
then ceil(n / T) * ceil(k / T) tiles).";
    // ----------------------------------------------------------------- reduce
    BiasGrad = gc_bias_grad_f32 in REDUCE (db: Ptr, dy: Ptr, rows: U32, cols: U32),
        doc: "db[c] = sum over r of dy[r, c] (dy row-major rows x cols), summed in a fixed order \
(deterministic). Launch: block (32, TY, 1) with TY in 1..32, grid ceil(cols / 32).";
    BiasSgd = gc_bias_sgd_f32 in REDUCE (b: Ptr, dy: Ptr, rows: U32, cols: U32, lr: F32),
        doc: "b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to gc_bias_grad_f32 then \
gc_sgd_f32 with the same block shape. Launch: block (32, TY, 1) with TY in 1..32, grid \
ceil(cols / 32).";
    Mse = gc_mse_f32 in REDUCE (
        loss: Ptr, grad: Ptr, pred: Ptr, target: Ptr, n: U64, grad_scale: F32, workspace: Ptr,
    ),
        doc: "loss[0] = sum_i (pred[i] - target[i])^2 (PyTorch's (y_pred - y).pow(2).sum()); when grad \
is not null, grad[i] = (pred[i] - target[i]) * (2 * grad_scale). Deterministic: per-block partial \
sums in workspace, added in a fixed order by the last block to finish. workspace: a u32 counter \
at byte 0 that must be zero before the first launch (the kernel leaves it zero, so replays work), \
partial sums from byte 16: at least 16 + 4 * gridDim.x bytes. Launch: block 256, any grid. \
grad may equal pred or target.";
    MseScaled = gc_mse_scaled_f32 in REDUCE (
        loss: Ptr, grad: Ptr, pred: Ptr, target: Ptr, n: U64, grad_scale: F32, loss_scale: F32,
        workspace: Ptr,
    ),
        doc: "gc_mse_f32 with loss[0] = (sum_i (pred[i] - target[i])^2) * loss_scale, one float multiply \
rounded to nearest: loss_scale 1.0f / n is the mean as PyTorch's CUDA mean computes it (nn.MSELoss()). \
grad, workspace and launch as gc_mse_f32's.";
    // ----------------------------------------------------------------- control
    CondSetU32 = gc_cond_set_u32 in CONTROL (handle: U64, value: Ptr),
        doc: "Sets conditional handle `handle` to *value (a u32 in device memory; for SWITCH the \
case index). Needs CUDA 12.3 and libcudadevrt (see gc_graph_conditional_handle_create). Launch: \
grid 1, block 1.";
    CondCount = gc_cond_count in CONTROL (handle: U64, counter: Ptr, limit: U32),
        doc: "*counter += 1, then sets `handle` to (*counter < limit): before a WHILE node (counter \
zeroed) and at the end of its body, the body runs at most `limit` times. Launch: grid 1, block 1.";
    CondSetF32 = gc_cond_set_f32 in CONTROL (
        handle: U64, x: Ptr, threshold: F32, cmp: U32, counter: Ptr, limit: U32,
    ),
        doc: "Sets `handle` to (*x cmp threshold), cmp 0: <, 1: <=, 2: >, 3: >= (NaN compares \
false); when counter is not null, also *counter += 1 and the value is 0 once *counter >= limit \
(a WHILE's iteration cap). Launch: grid 1, block 1.";
    CondSetBucket = gc_cond_set_bucket in CONTROL (handle: U64, rows: Ptr, sizes: Ptr, count: U32),
        doc: "Sets `handle` to the first i < count with sizes[i] >= *rows (sizes ascending: a \
runner's bucket sizes), or count when none fits: the SWITCH case of the bucket for a row count \
held in device memory. Launch: grid 1, block 1.";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::{OP_FILL, OP_MAX};
    use std::collections::{BTreeMap, HashSet};

    /// `.entry` name -> parameter types (`u64`, `f32`, `u32`, `s32`, ...) from a PTX text.
    fn ptx_entries(ptx: &str) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        let mut lines = ptx.lines();
        while let Some(line) = lines.next() {
            let Some(pos) = line.find(".entry ") else {
                continue;
            };
            let name = line[pos + 7..]
                .trim()
                .trim_end_matches('(')
                .trim()
                .to_string();
            let mut params = Vec::new();
            for l in lines.by_ref() {
                let l = l.trim();
                if l.starts_with(')') {
                    break;
                }
                let l = l.strip_prefix(".param").expect("parameter line").trim();
                let ty = l.split_whitespace().next().expect("type");
                params.push(ty.trim_start_matches('.').to_string());
            }
            out.insert(name, params);
        }
        out
    }

    fn ptx_type(arg: Arg) -> &'static str {
        match arg {
            Arg::Ptr | Arg::U64 => "u64",
            Arg::F32 => "f32",
            Arg::U32 => "u32",
            Arg::I32 => "s32",
        }
    }

    /// Both PTX texts of a module: its own and the `compute_90` variant.
    fn both(m: &ModuleInfo) -> [(&'static str, &'static str); 2] {
        [("", m.ptx), ("sm90/", m.ptx_sm90)]
    }

    #[test]
    fn every_kernel_matches_its_ptx_entry() {
        for k in KERNELS {
            let module = &MODULES[k.module];
            for (dir, ptx) in both(module) {
                let entries = ptx_entries(ptx);
                let params = entries
                    .get(k.name)
                    .unwrap_or_else(|| panic!("{} missing from {dir}{}.ptx", k.name, module.name));
                let want: Vec<&str> = k.args.iter().map(|&(_, a)| ptx_type(a)).collect();
                assert_eq!(params, &want, "{}: parameters differ from the PTX", k.name);
            }
        }
    }

    #[test]
    fn every_ptx_entry_is_in_the_table() {
        for (i, m) in MODULES.iter().enumerate() {
            for (dir, ptx) in both(m) {
                for name in ptx_entries(ptx).keys() {
                    let k = Kernel::from_name(name)
                        .map(Kernel::info)
                        .unwrap_or_else(|| {
                            panic!("{name} ({dir}{}.ptx) is not in KERNELS", m.name)
                        });
                    assert_eq!(k.module, i, "{name} is in module {}", m.name);
                }
            }
        }
    }

    /// The body of each `.entry` of a PTX text (up to the next `.entry`).
    fn entry_bodies(ptx: &str) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        let starts: Vec<usize> = ptx.match_indices(".entry ").map(|(i, _)| i).collect();
        for (n, &at) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(ptx.len());
            let body = &ptx[at..end];
            let name = body[7..].split(['(', '\n']).next().unwrap_or("").trim();
            out.push((name, body));
        }
        out
    }

    /// Every kernel of the `compute_90` modules waits on its programmatic
    /// dependencies before anything else that touches memory (its first
    /// global or generic load or store comes after `griddepcontrol.wait`;
    /// prefetches may come before) and before any return, so launching any
    /// of them with programmatic stream serialization is safe; the other
    /// modules hold no griddepcontrol at all (they must load on GPUs below
    /// sm_90).
    #[test]
    fn every_sm90_kernel_waits_first_and_the_others_never() {
        let mut waits = 0;
        for m in MODULES {
            assert!(!m.ptx.contains("griddepcontrol"), "{}", m.name);
            for (name, body) in entry_bodies(m.ptx_sm90) {
                let wait = body
                    .find("griddepcontrol.wait;")
                    .unwrap_or_else(|| panic!("{name} ({}) does not wait", m.name));
                // Parameter and shared-memory accesses are the block's own.
                let touches = |l: &str| {
                    ["ld.", "st.", "atom.", "red.", "call"]
                        .iter()
                        .any(|op| l.starts_with(op))
                        && !["ld.param", "st.param", "ld.shared", "st.shared"]
                            .iter()
                            .any(|op| l.starts_with(op))
                };
                // A block that returned before waiting would let the grid
                // finish before the kernels it depends on (common.cuh).
                let touches = |l: &str| touches(l) || l.starts_with("ret;");
                let early = body[..wait].lines().map(str::trim).find(|l| touches(l));
                assert!(
                    early.is_none(),
                    "{name} ({}) touches memory before it waits: {early:?}",
                    m.name
                );
                waits += 1;
            }
        }
        assert_eq!(waits, KERNELS.len());
    }

    #[test]
    fn the_compute_90_variants_are_loaded_from_sm_90_on() {
        for m in MODULES {
            assert_eq!(m.ptx_for(m.min_arch), Some(m.ptx), "{}", m.name);
            assert_eq!(m.ptx_for(89), (m.min_arch <= 89).then_some(m.ptx));
            assert_eq!(m.ptx_for(74), None);
            assert_eq!(m.ptx_for(crate::PDL_ARCH), Some(m.ptx_sm90));
            assert_eq!(m.ptx_for(100), Some(m.ptx_sm90));
        }
    }

    #[test]
    fn table_is_well_formed() {
        let mut names = HashSet::new();
        for k in KERNELS {
            assert!(names.insert(k.name), "{} twice", k.name);
            // Setters of conditional handles work on u32 values.
            assert!(
                k.name.starts_with("gc_")
                    && (k.name.ends_with("_f32")
                        || k.name.ends_with("_tf32")
                        || k.module == CONTROL),
                "{}",
                k.name
            );
            assert!(k.module < MODULES.len());
            assert!(!k.doc.is_empty());
            let mut arg_names = HashSet::new();
            for (a, _) in k.args {
                assert!(arg_names.insert(a), "{}: argument {a} twice", k.name);
            }
        }
        for m in MODULES {
            assert!(m.ptx.ends_with('\0'));
            assert_eq!(m.ptx.matches('\0').count(), 1, "{}", m.name);
            assert!(
                m.ptx.contains(".version 8.0"),
                "{}: PTX ISA 8.0 expected",
                m.name
            );
            let target = format!(".target sm_{}", m.min_arch);
            assert!(m.ptx.contains(&target), "{}: {target} expected", m.name);
            assert!(m.ptx_sm90.ends_with('\0'));
            assert_eq!(m.ptx_sm90.matches('\0').count(), 1, "{}", m.name);
            assert!(m.ptx_sm90.contains(".version 8.0"), "{}", m.name);
            assert!(m.ptx_sm90.contains(".target sm_90\n"), "{}", m.name);
        }
        assert_eq!(MODULES[ELEMENTWISE].name, "elementwise");
        assert_eq!(MODULES[LINEAR].name, "linear");
        assert_eq!(MODULES[REDUCE].name, "reduce");
        assert_eq!(MODULES[CONTROL].name, "control");
        assert_eq!(MODULES[LINEAR_TF32].name, "linear_tf32");
        // Only the TF32 tensor-core module needs more than compute_75.
        assert!(MODULES
            .iter()
            .all(|m| m.min_arch == if m.name == "linear_tf32" { 80 } else { 75 }));
        assert!(MODULES
            .iter()
            .all(|m| m.device_runtime == (m.name == "control")));
    }

    /// The C signature of kernel `name` in `src` (its `extern "C" __global__`
    /// definition): (parameter name, kind) pairs.
    fn c_signature(src: &str, name: &str) -> Option<Vec<(String, Arg)>> {
        let pat = format!("{name}(");
        let def = src.split("extern \"C\" __global__").skip(1).find_map(|d| {
            let at = d.find(&pat)?;
            // The name must be in this definition's head, not further on.
            (!d[..at].contains(['{', ';'])).then_some(())?;
            let start = at + pat.len();
            Some(&d[start..start + d[start..].find(')')?])
        })?;
        let mut out = Vec::new();
        for p in def.split(',') {
            let p = p.split_whitespace().collect::<Vec<_>>().join(" ");
            let (ty, id) = p.rsplit_once([' ', '*']).expect("type and name");
            let kind = if p.contains('*') {
                Arg::Ptr
            } else {
                match ty.trim() {
                    "float" => Arg::F32,
                    "u32" | "unsigned" | "unsigned int" => Arg::U32,
                    "int" => Arg::I32,
                    "u64" | "unsigned long long" => Arg::U64,
                    other => panic!("{name}: unexpected parameter type {other}"),
                }
            };
            out.push((id.trim().to_string(), kind));
        }
        Some(out)
    }

    #[test]
    fn every_kernel_matches_its_c_signature() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for k in KERNELS {
            let path = dir.join(format!("{}.cu", MODULES[k.module].name));
            let src = std::fs::read_to_string(&path).expect("kernel source");
            let sig =
                c_signature(&src, k.name).unwrap_or_else(|| panic!("{} not in {path:?}", k.name));
            let want: Vec<(String, Arg)> =
                k.args.iter().map(|&(n, a)| (n.to_string(), a)).collect();
            assert_eq!(sig, want, "{}: table differs from the C signature", k.name);
        }
    }

    #[test]
    fn the_enum_indexes_the_table() {
        assert_eq!(KERNELS.len(), Kernel::COUNT);
        for (i, &k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(KERNELS[i].kernel, k);
            assert!(std::ptr::eq(k.info(), &KERNELS[i]));
            assert_eq!(Kernel::from_name(k.name()), Some(k));
        }
        assert_eq!(Kernel::from_name(""), None);
        assert_eq!(Kernel::from_name(&format!("gc_{}_f32", "nope")), None);
        assert_eq!(Kernel::from_name("gc_scale_f3"), None);
    }

    /// Values that fill every parameter of `k`, distinct per position.
    fn sample_values(k: Kernel) -> Vec<Value> {
        k.info()
            .args
            .iter()
            .enumerate()
            .map(|(i, &(_, kind))| {
                let i = i as u64 + 1;
                match kind {
                    Arg::Ptr => Value::Ptr(i << 12),
                    Arg::U64 => Value::U64(i),
                    Arg::F32 => Value::F32(i as f32 / 2.0),
                    Arg::U32 => Value::U32(i as u32),
                    Arg::I32 => Value::I32(-(i as i32)),
                }
            })
            .collect()
    }

    #[test]
    fn argument_structs_follow_the_parameter_lists() {
        let s = args::Scale {
            y: 8,
            x: 16,
            n: 3,
            alpha: 2.0,
        };
        let mut out = [Value::U64(0); MAX_ARGS];
        assert_eq!(s.values(&mut out), 4);
        assert_eq!(
            out[..4],
            [
                Value::Ptr(8),
                Value::Ptr(16),
                Value::U64(3),
                Value::F32(2.0)
            ]
        );
        assert_eq!(args::Scale::from_values(&out[..4]), Some(s));
        // Wrong count or kind: not this kernel's arguments.
        assert_eq!(args::Scale::from_values(&out[..3]), None);
        assert_eq!(args::Scale::from_values(&out[..5]), None);
        let swapped = [
            Value::Ptr(8),
            Value::Ptr(16),
            Value::F32(2.0),
            Value::U64(3),
        ];
        assert_eq!(args::Scale::from_values(&swapped), None);
        for k in Kernel::ALL {
            let v = sample_values(k);
            // Reading fails on a shortened list, for every kernel.
            assert_eq!(k.elementwise(&v[..v.len() - 1]), None, "{}", k.name());
        }
    }

    #[test]
    fn elementwise_meanings() {
        let fused: Vec<Kernel> = Kernel::ALL
            .into_iter()
            .filter(|&k| k.elementwise(&sample_values(k)).is_some())
            .collect();
        assert_eq!(
            fused,
            [
                Kernel::Fill,
                Kernel::Copy,
                Kernel::Scale,
                Kernel::AddScalar,
                Kernel::Relu,
                Kernel::Gelu,
                Kernel::Chain
            ]
        );
        let e = |k: Kernel| k.elementwise(&sample_values(k)).unwrap();
        // Fill (y, n, value): no input.
        let f = e(Kernel::Fill);
        assert_eq!((f.y, f.x, f.n), (1 << 12, None, 2));
        assert_eq!(f.ops, [(OP_FILL, 1.5)]);
        // Unary (y, x, n, c): y, x, n and the constant in its place.
        let s = e(Kernel::Scale);
        assert_eq!((s.y, s.x, s.n), (1 << 12, Some(2 << 12), 3));
        assert_eq!(s.ops, [(OP_MUL, 2.0)]);
        assert_eq!(e(Kernel::AddScalar).ops, [(OP_ADD, 2.0)]);
        assert_eq!(e(Kernel::Relu).ops, [(OP_RELU, 0.0)]);
        assert!(e(Kernel::Copy).ops.is_empty());
        // The chain kernel: opcodes packed 4 bits each, constants c0..c7.
        let mut v = sample_values(Kernel::Chain);
        v[3] = Value::U32(OP_FILL | OP_MAX << 4);
        v[4] = Value::U32(2);
        v[1] = Value::Ptr(0);
        let c = Kernel::Chain.elementwise(&v).unwrap();
        assert_eq!(c.ops, [(OP_FILL, 3.0), (OP_MAX, 3.5)]);
        assert_eq!(c.x, None, "a leading fill with a null x reads nothing");
        v[4] = Value::U32(9);
        assert_eq!(Kernel::Chain.elementwise(&v), None, "count > 8");
    }

    /// Kernels are named only by their declaration: no string literal
    /// spelling a kernel's entry name in the Rust sources of kernels, core
    /// or ffi (code finds kernels through [`Kernel`]).
    #[test]
    fn no_kernel_name_literals() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let quote_gc = format!("{}gc_", '"');
        let f32_quote = format!("_f32{}", '"');
        let mut found = Vec::new();
        let mut dirs = vec![
            root.join("kernels/src"),
            root.join("core/src"),
            root.join("ffi/src"),
        ];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("source directory") {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    for (at, _) in line.match_indices(&quote_gc) {
                        let rest = &line[at + 1..];
                        let word_end = rest
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(rest.len());
                        if rest[..word_end + 1].ends_with(&f32_quote) {
                            found.push(format!("{}:{}", path.display(), i + 1));
                        }
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "kernel names as string literals: {found:?}"
        );
    }
}
