//! Map ops: the elementwise kernels `y[i] = f(x[i], c)` over `n` floats,
//! declared once each (and zip ops, `z[i] = f(x[i], y[i])`: [`Zip`]).
//!
//! A map op is a kernel of the table ([`crate::Kernel`]) whose entry carries a
//! `map:` clause (a [`Map`]): its parameters are `(y, x, n)` or
//! `(y, x, n, c)` with `c` an `F32` named as the kernel names it (`alpha`
//! for scale). From that one entry come:
//!
//! - the typed operation ([`crate::ops::map`]) and its argument checks (the
//!   unary rule: y and x non-null, 4-byte aligned, n in range, y == x or
//!   apart);
//! - its meaning to fusion ([`Map::fuse`]: a chain opcode with the PTX that
//!   generated chain kernels emit for it, or a copy);
//! - the C export `gc_op_<name>(stream, y, x, n[, c])` and its
//!   `GC_CHAIN_<NAME>` opcode constant, the Python binding and the bad-input
//!   cases, all written by `ffi/src/ops/gen.rs` (a test: `GC_BLESS=1`
//!   rewrites what it generates, else it fails on any difference);
//! - the float64 reference ([`Map::reference`]) and bound ([`Map::tolerance`])
//!   the GPU test `kernels::map_ops_match_float64` checks every map op
//!   against, and the CPU emulator's bitwise checks (standalone kernel ==
//!   chain opcode, float4 path == scalar path, in place).

use crate::fusion::{ChainOp, Elementwise};
use crate::{Arg, Kernel, KernelInfo, Value};

/// What a map op means to fusion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fuse {
    /// The op is a copy (no operation of a chain).
    Copy,
    /// One chain operation.
    Op {
        /// The chain opcode (`OP_*`, and `#define GC_OP_<name>` in
        /// elementwise.cu).
        opcode: u32,
        /// Its name: `GC_CHAIN_<name>` in the C API, `CHAIN_<name>` in Python.
        name: &'static str,
        /// What the opcode computes, for the C constant's documentation.
        doc: &'static str,
        /// The PTX a generated chain kernel (core's fusion JIT) emits for it:
        /// `%v` is the value register (read and written), `%c` the
        /// constant's register, `%p2` a free predicate; more registers are
        /// declared in a `{ }` scope. It must compute bitwise what the
        /// standalone kernel computes.
        ptx: &'static str,
    },
}

/// The `map:` clause of a kernel's table entry.
#[derive(Clone, Copy, Debug)]
pub struct Map {
    /// What the op computes, one sentence in C terms (the first line of the
    /// export's documentation), e.g. "y = alpha * x (n floats).".
    pub what: &'static str,
    /// Its meaning to fusion.
    pub fuse: Fuse,
    /// The float64 reference: `y = reference(x, c)` (`c` is 0 for ops
    /// without a constant).
    pub reference: fn(f64, f64) -> f64,
    /// The bound on each output element: `|y - ref| <= rel * |ref| + abs`
    /// (`(2e-7, 0.0)`: one rounding).
    pub tolerance: (f64, f64),
}

/// A declared op: its kernel and its clause (`map` or `zip`, the field
/// named as the clause and as the [`Kernel`] method reading it), with what
/// map and zip ops share: `all`, `of`, `info` and `name`.
macro_rules! declared_op {
    ($op:ident, $clause:ident: $decl:ty) => {
        #[doc = concat!("One declared ", stringify!($clause), " op: its kernel and its `", stringify!($clause), ":` clause.")]
        #[derive(Clone, Copy, Debug)]
        pub struct $op {
            /// The kernel.
            pub kernel: Kernel,
            /// Its declaration.
            pub $clause: &'static $decl,
        }

        impl $op {
            #[doc = concat!("Every ", stringify!($clause), " op, in table order.")]
            pub fn all() -> impl Iterator<Item = $op> {
                Kernel::ALL.into_iter().filter_map($op::of)
            }

            #[doc = concat!("The ", stringify!($clause), " op of `kernel`, if its entry has a `", stringify!($clause), ":` clause.")]
            pub fn of(kernel: Kernel) -> Option<$op> {
                Some($op {
                    kernel,
                    $clause: kernel.$clause()?,
                })
            }

            /// The kernel's table entry.
            pub fn info(self) -> &'static KernelInfo {
                self.kernel.info()
            }

            /// The op's name: the kernel's entry name without `gc_` and
            /// `_f32` (`relu`, `relu_backward`); the C export is
            /// `gc_op_<name>`.
            pub fn name(self) -> &'static str {
                let n = self.info().name;
                let n = n.strip_prefix("gc_").unwrap_or(n);
                n.strip_suffix("_f32").unwrap_or(n)
            }
        }
    };
}

declared_op!(MapOp, map: Map);
declared_op!(ZipOp, zip: Zip);

impl MapOp {
    /// The map op whose name ([`MapOp::name`]) is `name`.
    pub fn by_name(name: &str) -> Option<MapOp> {
        Self::all().find(|m| m.name() == name)
    }

    /// The name of the constant parameter after `n` (`alpha` for scale), if
    /// the op has one.
    pub fn scalar(self) -> Option<&'static str> {
        self.info().args.get(3).map(|&(name, _)| name)
    }

    /// The chain operation this op is, given its constant (`None`: a copy).
    pub fn chain_op(self, c: f32) -> Option<ChainOp> {
        match self.map.fuse {
            Fuse::Copy => None,
            Fuse::Op { opcode, .. } => Some((opcode, c)),
        }
    }

    /// What a launch with argument `values` computes, read as fusion reads
    /// it; `None` when the values do not fit the parameter list.
    pub fn elementwise(self, values: &[Value]) -> Option<Elementwise> {
        let args = self.info().args;
        if values.len() != args.len() || values.iter().zip(args).any(|(v, a)| v.kind() != a.1) {
            return None;
        }
        let c = match values.get(3) {
            Some(&Value::F32(c)) => c,
            _ => 0.0,
        };
        match values[..3] {
            [Value::Ptr(y), Value::Ptr(x), Value::U64(n)] => {
                Some(Elementwise::unary(y, x, n, self.chain_op(c)))
            }
            _ => None,
        }
    }
}

/// The `zip:` clause of a kernel's table entry: a binary elementwise op
/// `out[i] = f(a[i], b[i])` over `n` floats, parameters `(out: Ptr, a: Ptr,
/// b: Ptr, n: U64)` named as the kernel names them (`z, x, y` for add). Its
/// typed op ([`crate::ops::zip`]: out may equal either input, not overlap it
/// partly), C export, Python binding, bad-input cases, emulator and GPU
/// checks come from the entry, as a map op's do; zip ops do not fuse.
#[derive(Clone, Copy, Debug)]
pub struct Zip {
    /// What the op computes, one sentence in C terms (the first line of the
    /// export's documentation), e.g. "z = x + y (n floats).".
    pub what: &'static str,
    /// The float64 reference: `out = reference(a, b)`.
    pub reference: fn(f64, f64) -> f64,
    /// The bound on each output element, as [`Map::tolerance`].
    pub tolerance: (f64, f64),
}

impl ZipOp {
    /// The names of the output and the two inputs (`["z", "x", "y"]`).
    pub fn names(self) -> [&'static str; 3] {
        let a = self.info().args;
        [a[0].0, a[1].0, a[2].0]
    }
}

/// Whether `args` is a zip op's parameter list: three `Ptr` and a `U64`.
pub(crate) const fn zip_params(args: &[(&str, Arg)]) -> bool {
    args.len() == 4
        && matches!(args[0].1, Arg::Ptr)
        && matches!(args[1].1, Arg::Ptr)
        && matches!(args[2].1, Arg::Ptr)
        && matches!(args[3].1, Arg::U64)
}

/// Whether `args` is a map op's parameter list: `(y: Ptr, x: Ptr, n: U64)`
/// and at most one `F32` after it (checked for every `map:` entry).
pub(crate) const fn map_params(args: &[(&str, Arg)]) -> bool {
    let base = args.len() >= 3
        && matches!(args[0].1, Arg::Ptr)
        && matches!(args[1].1, Arg::Ptr)
        && matches!(args[2].1, Arg::U64);
    base && (args.len() == 3 || (args.len() == 4 && matches!(args[3].1, Arg::F32)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::{is_opcode, op_ptx, OP_FILL, OP_MAX, OP_MIN};
    use std::collections::HashSet;

    #[test]
    fn map_ops_are_well_formed() {
        let mut names = HashSet::new();
        let mut opcodes = HashSet::from([OP_FILL, OP_MAX, OP_MIN]);
        let mut seen = 0;
        for m in MapOp::all() {
            seen += 1;
            assert!(map_params(m.info().args), "{}", m.name());
            assert!(names.insert(m.name()), "{} twice", m.name());
            assert_eq!(MapOp::by_name(m.name()).map(|o| o.kernel), Some(m.kernel));
            assert!(m.map.what.ends_with('.'), "{}", m.name());
            let (rel, abs) = m.map.tolerance;
            assert!((0.0..1e-3).contains(&rel) && (0.0..=1e-30).contains(&abs));
            if let Fuse::Op {
                opcode,
                name,
                doc,
                ptx,
            } = m.map.fuse
            {
                assert!((1..16).contains(&opcode), "{}: opcode {opcode}", m.name());
                assert!(opcodes.insert(opcode), "opcode {opcode} twice");
                assert!(is_opcode(opcode));
                assert_eq!(op_ptx(opcode), Some(ptx));
                assert!(name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
                assert!(!doc.is_empty() && ptx.contains("%v"), "{}", m.name());
            }
        }
        assert!(seen >= 5, "only {seen} map ops");
        for z in ZipOp::all() {
            assert!(zip_params(z.info().args), "{}", z.name());
            assert!(names.insert(z.name()), "{} twice", z.name());
            assert!(z.kernel.map().is_none() && z.kernel.elementwise(&[]).is_none());
            assert!(z.zip.what.ends_with('.'), "{}", z.name());
        }
        assert!(ZipOp::all().count() >= 3);
        // Every opcode the chain kernel knows is FILL, MAX, MIN or a map op's.
        for op in 0..16 {
            assert_eq!(is_opcode(op), opcodes.contains(&op), "opcode {op}");
        }
    }

    /// elementwise.cu defines each declared opcode as `GC_OP_<name>` with
    /// its value, and handles it in the chain kernel's two switches.
    #[test]
    fn the_cu_defines_every_declared_opcode() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(dir.join("elementwise.cu")).unwrap();
        for m in MapOp::all() {
            if let Fuse::Op { opcode, name, .. } = m.map.fuse {
                let def = format!("#define GC_OP_{name} {opcode}u\n");
                assert!(src.contains(&def), "elementwise.cu lacks {def:?}");
                let case = format!("case GC_OP_{name}:");
                assert_eq!(src.matches(&case).count(), 2, "{case} in gc_op and gc_op4");
            }
        }
    }

    #[test]
    fn references_are_sane() {
        let check = |name: &str, x: f64, c: f64, want: f64| {
            let m = MapOp::by_name(name).unwrap();
            let got = (m.map.reference)(x, c);
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{name}({x}, {c}) = {got}, want {want}"
            );
        };
        check("copy", -1.5, 0.0, -1.5);
        check("scale", -1.5, 2.0, -3.0);
        check("add_scalar", -1.5, 2.0, 0.5);
        check("relu", -1.5, 0.0, 0.0);
        check("relu", 1.5, 0.0, 1.5);
        // PyTorch's gelu(approximate="tanh") at a few points.
        check("gelu", 0.0, 0.0, 0.0);
        check("gelu", 1.0, 0.0, 0.841_191_990_608_276_8);
        check("gelu", -1.0, 0.0, -0.158_808_009_391_723_24);
        check("gelu", 3.0, 0.0, 2.996_362_607_918_227);
        assert!((MapOp::by_name("relu").unwrap().map.reference)(f64::NAN, 0.0).is_nan());
        let zip = |name: &str, a: f64, b: f64| {
            let z = ZipOp::all().find(|z| z.name() == name).unwrap();
            (z.zip.reference)(a, b)
        };
        assert_eq!(zip("add", 1.5, 2.0), 3.5);
        assert_eq!(zip("mul", 1.5, 2.0), 3.0);
        assert_eq!(zip("relu_backward", 1.5, 2.0), 1.5);
        assert_eq!(zip("relu_backward", 1.5, -2.0), 0.0);
    }
}
