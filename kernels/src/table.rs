//! The table of built-in kernels: embedded PTX modules, entry names, parameter
//! lists (exactly the C signatures in `kernels/*.cu`) and launch rules.
use crate::{Arg, KernelInfo, ModuleInfo};

use Arg::{Ptr, F32, U32, U64};

/// Index of `elementwise.ptx` in [`MODULES`].
pub(crate) const ELEMENTWISE: usize = 0;
/// Index of `linear.ptx` in [`MODULES`].
pub(crate) const LINEAR: usize = 1;
/// Index of `reduce.ptx` in [`MODULES`].
pub(crate) const REDUCE: usize = 2;

/// The embedded PTX modules (PTX ISA 8.0, `compute_75`: loads on any driver
/// from CUDA 12.0 and any GPU from sm_75).
pub static MODULES: &[ModuleInfo] = &[
    ModuleInfo {
        name: "elementwise",
        ptx: concat!(include_str!("../ptx/elementwise.ptx"), "\0"),
    },
    ModuleInfo {
        name: "linear",
        ptx: concat!(include_str!("../ptx/linear.ptx"), "\0"),
    },
    ModuleInfo {
        name: "reduce",
        ptx: concat!(include_str!("../ptx/reduce.ptx"), "\0"),
    },
];

/// The launch rule shared by the elementwise kernels.
macro_rules! grid_stride {
    () => {
        " Launch: block 256 (any multiple of 32 up to 1024 is correct), any grid: a grid-stride \
loop covers all n. float4 loads/stores when every pointer is 16-byte aligned (decided inside the \
kernel), a scalar path otherwise. In-place use (output == an input) is allowed; partly \
overlapping ranges are not."
    };
}

/// Every built-in kernel.
pub static KERNELS: &[KernelInfo] = &[
    // ----------------------------------------------------------------- elementwise
    KernelInfo {
        name: "gc_fill_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("n", U64), ("value", F32)],
        doc: concat!("y[i] = value for i < n (bitwise equal to chain opcode FILL).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_copy_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("x", Ptr), ("n", U64)],
        doc: concat!("y[i] = x[i] for i < n.", grid_stride!()),
    },
    KernelInfo {
        name: "gc_scale_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("x", Ptr), ("n", U64), ("alpha", F32)],
        doc: concat!("y[i] = alpha * x[i] (one rounding, __fmul_rn; bitwise equal to chain opcode MUL).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_add_scalar_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("x", Ptr), ("n", U64), ("c", F32)],
        doc: concat!("y[i] = x[i] + c (__fadd_rn; bitwise equal to chain opcode ADD).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_axpy_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("x", Ptr), ("n", U64), ("alpha", F32)],
        doc: concat!("y[i] = fmaf(alpha, x[i], y[i]).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_add_f32",
        module: ELEMENTWISE,
        args: &[("z", Ptr), ("x", Ptr), ("y", Ptr), ("n", U64)],
        doc: concat!("z[i] = x[i] + y[i].", grid_stride!()),
    },
    KernelInfo {
        name: "gc_mul_f32",
        module: ELEMENTWISE,
        args: &[("z", Ptr), ("x", Ptr), ("y", Ptr), ("n", U64)],
        doc: concat!("z[i] = x[i] * y[i].", grid_stride!()),
    },
    KernelInfo {
        name: "gc_relu_f32",
        module: ELEMENTWISE,
        args: &[("y", Ptr), ("x", Ptr), ("n", U64)],
        doc: concat!("y[i] = x[i] <= 0 ? +0 : x[i] (NaN propagates, as in PyTorch; bitwise equal to chain \
opcode RELU).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_relu_backward_f32",
        module: ELEMENTWISE,
        args: &[("dx", Ptr), ("dy", Ptr), ("x", Ptr), ("n", U64)],
        doc: concat!("dx[i] = x[i] > 0 ? dy[i] : 0 (x is the ReLU's input or output).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_sgd_f32",
        module: ELEMENTWISE,
        args: &[("w", Ptr), ("g", Ptr), ("n", U64), ("lr", F32)],
        doc: concat!("w[i] = fmaf(-lr, g[i], w[i]) (SGD step, one rounding).", grid_stride!()),
    },
    KernelInfo {
        name: "gc_bias_add_f32",
        module: ELEMENTWISE,
        args: &[
            ("y", Ptr),
            ("x", Ptr),
            ("b", Ptr),
            ("rows", U32),
            ("cols", U32),
        ],
        doc: "y[r, c] = x[r, c] + b[c] for row-major rows x cols x and y (rows * cols < 2^32). \
float4 path when cols % 4 == 0 and y, x, b are 16-byte aligned. Launch: block 256, any grid \
(grid-stride over the flattened matrix). y == x is allowed.",
    },
    KernelInfo {
        name: "gc_chain_f32",
        module: ELEMENTWISE,
        args: &[
            ("y", Ptr),
            ("x", Ptr),
            ("n", U64),
            ("ops", U32),
            ("count", U32),
            ("c0", F32),
            ("c1", F32),
            ("c2", F32),
            ("c3", F32),
            ("c4", F32),
            ("c5", F32),
            ("c6", F32),
            ("c7", F32),
        ],
        doc: concat!("y[i] = op_{count-1}(...op_0(x[i])...), all in registers, one pass. Op k is the 4-bit \
opcode (ops >> 4k) & 15 with constant ck, count <= 8: 1 FILL v=c, 2 MUL v=v*c, 3 ADD v=v+c, \
4 RELU, 5 MAX v=max(v,c), 6 MIN v=min(v,c) (MAX/MIN propagate a NaN in v); other opcodes leave v \
unchanged. Each opcode is bitwise equal to its standalone kernel (fill, scale, add_scalar, relu). \
When op 0 is FILL, x is not read and may be null; count == 0 copies.", grid_stride!()),
    },
    // ----------------------------------------------------------------- linear
    KernelInfo {
        name: "gc_linear_small_f32",
        module: LINEAR,
        args: &[
            ("y", Ptr),
            ("x", Ptr),
            ("w", Ptr),
            ("b", Ptr),
            ("m", U32),
            ("n", U32),
            ("k", U32),
            ("flags", U32),
            ("config", U32),
        ],
        doc: "Small-batch linear: y[i, j] = act(sum_r x[i, r] * W(r, j) + b[j]) with x m x k, \
y m x n (row-major), W(r, j) = w[j * k + r] (w is n x k, PyTorch layout) or, with flags bit 1, \
w[r * n + j] (w is k x n: y = x . w, for the input gradient). flags bit 0: ReLU. b may be null. \
config = LR | LC << 2 | LGR << 4 | LGC << 6: thread tile 2^LR x 2^LC (rows x columns; n x k \
layout 1x1, 1x2, 4x1, 4x4 or 8x4, k x n layout 1x4, 4x4 or 8x4; other tiles do nothing) and \
2^LGR x 2^LGC tile groups per block (LGR + LGC <= 3); the threads of a group split K. float4 \
loads when k % 4 == 0 and x, w are 16-byte aligned (k x n layout: also n % 4 == 0), scalar \
otherwise; deterministic fixed-order reduction (warp shuffles, then shared memory). Launch: \
block 256, grid (ceil(n / 2^(LC+LGC)), ceil(m / 2^(LR+LGR))), no dynamic shared memory. \
y must not overlap x, w or b.",
    },
    KernelInfo {
        name: "gc_gemm_f32",
        module: LINEAR,
        args: &[
            ("c", Ptr),
            ("a", Ptr),
            ("b", Ptr),
            ("bias", Ptr),
            ("m", U32),
            ("n", U32),
            ("k", U32),
            ("lda", U32),
            ("ldb", U32),
            ("ldc", U32),
            ("flags", U32),
            ("alpha", F32),
            ("beta", F32),
            ("tile", U32),
        ],
        doc: "Tiled GEMM: C = act(alpha * op(A) . op(B) + beta * C + bias[col]), C m x n (ldc), \
op(A) m x k: a[i * lda + r], or a[r * lda + i] with flags bit 0 (A stored k x m); op(B) k x n: \
b[r * ldb + j], or b[j * ldb + r] with flags bit 1 (B stored n x k). flags bit 2: ReLU. bias may \
be null. beta == 0: C is not read; else the result is fmaf(alpha, acc, beta * C), so alpha = -lr, \
beta = 1 is bitwise the SGD step on the alpha = 1, beta = 0 result. Deterministic. Every \
rows * ld must be < 2^32. Launch: block 256, 1-D grid of ceil(m / T) * ceil(n / T) blocks with \
T = 128 for tile 0, 64 for tile 1 (each thread sums its outputs in increasing k: results do not \
depend on the tile), 32 for tile 2 (K split over 4 slices of the block); no dynamic shared \
memory. float4 loads and stores where leading dimensions are multiples of 4 and pointers \
16-byte aligned. C must not overlap A, B or bias.",
    },
    // ----------------------------------------------------------------- reduce
    KernelInfo {
        name: "gc_bias_grad_f32",
        module: REDUCE,
        args: &[("db", Ptr), ("dy", Ptr), ("rows", U32), ("cols", U32)],
        doc: "db[c] = sum over r of dy[r, c] (dy row-major rows x cols), summed in a fixed order \
(deterministic). Launch: block (32, TY, 1) with TY in 1..32, grid ceil(cols / 32).",
    },
    KernelInfo {
        name: "gc_bias_sgd_f32",
        module: REDUCE,
        args: &[
            ("b", Ptr),
            ("dy", Ptr),
            ("rows", U32),
            ("cols", U32),
            ("lr", F32),
        ],
        doc: "b[c] = fmaf(-lr, sum over r of dy[r, c], b[c]): bitwise equal to gc_bias_grad_f32 then \
gc_sgd_f32 with the same block shape. Launch: block (32, TY, 1) with TY in 1..32, grid \
ceil(cols / 32).",
    },
    KernelInfo {
        name: "gc_mse_f32",
        module: REDUCE,
        args: &[
            ("loss", Ptr),
            ("grad", Ptr),
            ("pred", Ptr),
            ("target", Ptr),
            ("n", U64),
            ("grad_scale", F32),
            ("workspace", Ptr),
        ],
        doc: "loss[0] = sum_i (pred[i] - target[i])^2 (PyTorch's (y_pred - y).pow(2).sum()); when grad \
is not null, grad[i] = (pred[i] - target[i]) * (2 * grad_scale). Deterministic: per-block partial \
sums in workspace, added in a fixed order by the last block to finish. workspace: a u32 counter \
at byte 0 that must be zero before the first launch (the kernel leaves it zero, so replays work), \
partial sums from byte 16: at least 16 + 4 * gridDim.x bytes. Launch: block 256, any grid. \
grad may equal pred or target.",
    },
];

/// The built-in kernel called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static KernelInfo> {
    KERNELS.iter().find(|k| k.name == name)
}

/// The built-in kernel called `name`; for names known to exist.
pub(crate) fn kernel(name: &str) -> &'static KernelInfo {
    match find(name) {
        Some(k) => k,
        None => panic!("no built-in kernel {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_ARGS;
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

    #[test]
    fn every_kernel_matches_its_ptx_entry() {
        for k in KERNELS {
            let module = &MODULES[k.module];
            let entries = ptx_entries(module.ptx);
            let params = entries
                .get(k.name)
                .unwrap_or_else(|| panic!("{} missing from {}.ptx", k.name, module.name));
            let want: Vec<&str> = k.args.iter().map(|&(_, a)| ptx_type(a)).collect();
            assert_eq!(params, &want, "{}: parameters differ from the PTX", k.name);
        }
    }

    #[test]
    fn every_ptx_entry_is_in_the_table() {
        for (i, m) in MODULES.iter().enumerate() {
            for name in ptx_entries(m.ptx).keys() {
                let k = find(name)
                    .unwrap_or_else(|| panic!("{name} ({}.ptx) is not in KERNELS", m.name));
                assert_eq!(k.module, i, "{name} is in module {}", m.name);
            }
        }
    }

    #[test]
    fn table_is_well_formed() {
        let mut names = HashSet::new();
        for k in KERNELS {
            assert!(names.insert(k.name), "{} twice", k.name);
            assert!(
                k.name.starts_with("gc_") && k.name.ends_with("_f32"),
                "{}",
                k.name
            );
            assert!(k.module < MODULES.len());
            assert!(!k.args.is_empty() && k.args.len() <= MAX_ARGS, "{}", k.name);
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
            assert!(
                m.ptx.contains(".target sm_75"),
                "{}: compute_75 expected",
                m.name
            );
        }
        assert_eq!(MODULES[ELEMENTWISE].name, "elementwise");
        assert_eq!(MODULES[LINEAR].name, "linear");
        assert_eq!(MODULES[REDUCE].name, "reduce");
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
}
