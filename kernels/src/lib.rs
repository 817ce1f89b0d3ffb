//! graphcore's built-in kernels.
//!
//! The CUDA C sources live in `kernels/*.cu`; `kernels/gen_ptx.py` turns them
//! into the PTX files in `kernels/ptx/` (committed), which this crate embeds.
//! This crate holds no CUDA calls: it names each kernel, describes its
//! arguments, and decides launch configurations ([`Call`]) for the typed
//! operations in [`ops`]. The driver layer in `graphcore-core` loads the PTX
//! and launches what a [`Call`] says.
//!
//! Each kernel is declared once, in the table (`src/table.rs`): entry name,
//! module, parameters (names and kinds), documentation and, for elementwise
//! kernels, what it means to fusion. From that declaration come the
//! [`Kernel`] enum (which indexes [`KERNELS`]), the typed argument struct in
//! [`args`] that [`Call::new`] takes (so an argument list is checked by the
//! compiler, never at run time), [`Kernel::elementwise`], which core's
//! fusion planner reads, and [`Kernel::map`] for the map ops. Kernels are found by name only for the C call
//! `gc_kernel_builtin` ([`Kernel::from_name`]); a test keeps kernel names out
//! of string literals elsewhere.
//!
//! Adding a map op (`y = f(x[, c])`, elementwise: [`map`]) takes two
//! files: the CUDA source in `kernels/elementwise.cu` (the kernel and, if it
//! fuses, its chain opcode `GC_OP_<NAME>` with a case in `gc_op` and
//! `gc_op4`) and one entry in `src/table.rs` with a `map:` clause (what it
//! computes, its chain opcode and the PTX generated chains emit, its float64
//! reference and bound). The typed op ([`ops::map`]), fusion's meaning, the
//! C export, the Python binding, the bad-input cases and the GPU and
//! emulator checks all follow from the entry (`ffi/src/ops/gen.rs` writes
//! the generated files: `GC_BLESS=1 cargo test -p graphcore-ffi
//! generated_files`; then `make ptx` and `make header`). A zip op
//! (`z = f(x, y)`: [`map::Zip`], [`ops::zip`]) is added the same way, with
//! a `zip:` clause (it does not fuse).
//!
//! Adding another kernel takes three steps:
//! 1. the CUDA source: an `extern "C" __global__` function in
//!    `kernels/<module>.cu` (then `python3 kernels/gen_ptx.py` and
//!    `python3 kernels/emu/run.py`);
//! 2. one entry in the `kernels!` invocation in `src/table.rs`, with its
//!    parameters exactly as the C signature has them (tests compare the table
//!    with the `.cu` signatures and the PTX entries) and, if fusion may
//!    chain it, a `fuse:` clause saying which chain opcodes it is and which
//!    arguments are output, input, count and constant;
//! 3. one typed operation in [`ops`] that checks sizes and builds the
//!    [`Call`] from the generated argument struct, and one C wrapper in
//!    `ffi/src/ops/` (the header's kernel list follows from the table; the
//!    Python binding's prototype list gains the export, as its drift test
//!    demands). `docs/kernels.md` says more.
//!
//! Tools (none needs a GPU):
//! - `python3 kernels/gen_ptx.py` regenerates the PTX with NVRTC 12.0
//!   (`--check` compares instead, as CI does; `--stats 90` prints ptxas
//!   register, spill and shared-memory use for sm_90);
//! - `python3 kernels/emu/run.py` runs every kernel's CUDA source on the CPU
//!   (one OS thread per CUDA thread) against a float64 reference, over odd
//!   sizes, misaligned pointers and every launch variant, and checks the
//!   bitwise promises (chain == standalone kernels, fused SGD == unfused).

#![forbid(unsafe_code)]

mod error;
pub mod fusion;
pub mod map;
pub mod ops;
mod table;

pub use error::SizeError;
pub use table::{args, Kernel, KernelArgs, KERNELS, MODULES};

/// The kind of one kernel parameter, as the kernel's C signature declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arg {
    /// A device pointer (`float *`, `const float *`), 8 bytes.
    Ptr,
    /// `float`.
    F32,
    /// `unsigned int`.
    U32,
    /// `int`.
    I32,
    /// `unsigned long long`.
    U64,
}

impl Arg {
    /// Size in bytes of the parameter in the kernel's parameter buffer.
    pub const fn size(self) -> usize {
        match self {
            Arg::Ptr | Arg::U64 => 8,
            Arg::F32 | Arg::U32 | Arg::I32 => 4,
        }
    }
}

/// One argument value, typed as the kernel declares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A device address.
    Ptr(u64),
    /// A `float`.
    F32(f32),
    /// An `unsigned int`.
    U32(u32),
    /// An `int`.
    I32(i32),
    /// An `unsigned long long`.
    U64(u64),
}

impl Value {
    /// The parameter kind this value fills.
    pub const fn kind(self) -> Arg {
        match self {
            Value::Ptr(_) => Arg::Ptr,
            Value::F32(_) => Arg::F32,
            Value::U32(_) => Arg::U32,
            Value::I32(_) => Arg::I32,
            Value::U64(_) => Arg::U64,
        }
    }

    /// The value as the 8-byte slot a launch passes a pointer to (the low
    /// bytes hold 4-byte values, little-endian, as the GPU reads them).
    pub fn to_slot(self) -> u64 {
        match self {
            Value::Ptr(v) | Value::U64(v) => v,
            Value::F32(v) => v.to_bits() as u64,
            Value::U32(v) => v as u64,
            Value::I32(v) => v as u32 as u64,
        }
    }

    /// Reads a value of kind `kind` back from its parameter bytes (at least
    /// `kind.size()` bytes, little-endian), as a graph node stores them.
    pub fn from_bytes(kind: Arg, bytes: &[u8]) -> Option<Value> {
        let b = bytes.get(..kind.size())?;
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        let v = u64::from_le_bytes(w);
        Some(match kind {
            Arg::Ptr => Value::Ptr(v),
            Arg::U64 => Value::U64(v),
            Arg::F32 => Value::F32(f32::from_bits(v as u32)),
            Arg::U32 => Value::U32(v as u32),
            Arg::I32 => Value::I32(v as u32 as i32),
        })
    }
}

/// Which embedded PTX module a kernel lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModuleInfo {
    /// Module name (the `.cu` file's stem).
    pub name: &'static str,
    /// The PTX text, NUL-terminated so it can be handed to the driver as is.
    pub ptx: &'static str,
    /// It calls the CUDA device runtime: it must be linked with
    /// libcudadevrt (not loaded as is), on a driver of CUDA 12.3 or newer.
    pub device_runtime: bool,
    /// The PTX target's compute capability, major * 10 + minor (75 or 80):
    /// the module is loaded only on GPUs of at least that capability.
    pub min_arch: u32,
    /// The same source compiled for `compute_90` (NUL-terminated): its
    /// kernels wait on and trigger programmatic dependent launches
    /// (`GC_PDL_WAIT` / `GC_PDL_TRIGGER` in `common.cuh`).
    pub ptx_sm90: &'static str,
}

/// The compute capability (major * 10 + minor) from which the `compute_90`
/// modules are loaded, and so from which every built-in kernel waits on
/// programmatic dependencies: launching them with programmatic stream
/// serialization, or as the target of a programmatic edge, is safe there.
pub const PDL_ARCH: u32 = 90;

impl ModuleInfo {
    /// The PTX to load on a GPU of compute capability `arch` (major * 10 +
    /// minor): the `compute_90` variant from [`PDL_ARCH`] on, else the
    /// module's own; `None` below its `min_arch`.
    pub fn ptx_for(&self, arch: u32) -> Option<&'static str> {
        if arch < self.min_arch {
            None
        } else if arch >= PDL_ARCH {
            Some(self.ptx_sm90)
        } else {
            Some(self.ptx)
        }
    }
}

/// A built-in kernel's table entry: its entry name, module, parameters and
/// documentation.
#[derive(Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The kernel this entry describes (`KERNELS[kernel.index()]` is this entry).
    pub kernel: Kernel,
    /// The `extern "C" __global__` entry name (`gc_scale_f32`, ...).
    pub name: &'static str,
    /// Index into [`MODULES`].
    pub module: usize,
    /// Parameters in order: name and kind.
    pub args: &'static [(&'static str, Arg)],
    /// What it computes and how it must be launched.
    pub doc: &'static str,
}

/// Maximum number of parameters any built-in kernel takes.
pub const MAX_ARGS: usize = 16;

/// A decided launch of a built-in kernel: which kernel, the grid, the block,
/// dynamic shared memory, and the argument values in parameter order.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The kernel to launch.
    pub kernel: Kernel,
    /// Grid dimensions (blocks).
    pub grid: [u32; 3],
    /// Block dimensions (threads).
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_bytes: u32,
    /// Argument values; `args[..nargs]` are used.
    pub args: [Value; MAX_ARGS],
    /// Number of arguments in `args`.
    pub nargs: usize,
    /// Launched cooperatively: every block resident at once (the kernel
    /// synchronizes its whole grid); the grid must fit the device.
    pub cooperative: bool,
    /// Launched in full order even where graphcore launches its kernels
    /// with programmatic dependent launch: the call's blocks must not start
    /// while the kernel before it still holds the SMs (see
    /// [`Call::in_order`]).
    pub in_order: bool,
    /// Launched as thread-block clusters of these dimensions (compute
    /// capability 9.0; the grid is a whole number of clusters), `None` for
    /// a plain launch (see [`Call::clustered`]).
    pub cluster: Option<[u32; 3]>,
}

impl Call {
    /// A launch of the kernel whose typed arguments are `args` (a struct of
    /// [`args`]: the compiler checks the parameter list).
    pub fn new<A: KernelArgs>(args: A, grid: [u32; 3], block: [u32; 3], shared_bytes: u32) -> Call {
        let mut values = [Value::U64(0); MAX_ARGS];
        let nargs = args.values(&mut values);
        Call {
            kernel: A::KERNEL,
            grid,
            block,
            shared_bytes,
            args: values,
            nargs,
            cooperative: false,
            in_order: false,
            cluster: None,
        }
    }

    /// The same launch, never started early by a programmatic dependent
    /// launch. For grids of about one wave or more: blocks started while the
    /// kernel before still holds most SMs double up on the few free ones,
    /// and the kernel then takes up to twice as long (an H100 ran
    /// `gc_gemm_mid_f32` at 1024 x 4096 -> 1024 in 412 us started early,
    /// 275 us in order; perf/TUNING.md).
    pub fn in_order(self) -> Call {
        Call {
            in_order: true,
            ..self
        }
    }

    /// The same launch as thread-block clusters of `dims` blocks (the
    /// kernel synchronizes each cluster and reads its blocks' shared
    /// memory). Only for GPUs of compute capability 9.0 and later: the
    /// operation that plans it checks the device.
    pub fn clustered(self, dims: [u32; 3]) -> Call {
        Call {
            cluster: Some(dims),
            ..self
        }
    }

    /// The same launch, made cooperative (see [`Call::cooperative`]).
    pub fn cooperatively(self) -> Call {
        Call {
            cooperative: true,
            ..self
        }
    }

    /// Total threads launched (grid x block), for coverage checks.
    pub fn threads(&self) -> u64 {
        self.grid
            .iter()
            .chain(&self.block)
            .map(|&d| d as u64)
            .product()
    }

    /// The arguments in use.
    pub fn args(&self) -> &[Value] {
        &self.args[..self.nargs]
    }
}
