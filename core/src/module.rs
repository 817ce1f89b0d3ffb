//! Modules, functions (from a module, a built-in, or the caller's own
//! handle), and eager launches on a stream, of functions and of built-in
//! operations.

use crate::builtins;
use crate::context::Context;
use crate::driver::owned::{Owned, SharedFunction};
use crate::driver::{self, module as dm, CUfunction, CUmodule};
use crate::error::{ensure_arg, Result};
use crate::stream::{Stream, StreamOp};
use crate::timing::{self, Span};
use graphcore_kernels::{Call, KernelInfo, SizeError, Value, MAX_ARGS};
use std::ffi::c_void;
use std::sync::Arc;

/// A loaded module (PTX, cubin or fatbin). Functions taken from it keep it
/// loaded.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    ctx: Context,
    /// Unloaded when the last module value or function of it goes (`None`
    /// only in Drop).
    raw: Option<Owned<CUmodule>>,
    /// Unloaded only after the device was synchronized (see
    /// [`Module::load_generated`]).
    unload_when_idle: bool,
}

impl ModuleInner {
    fn raw(&self) -> CUmodule {
        self.raw.as_ref().expect("taken only in Drop").raw()
    }
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if let (true, Some(m)) = (self.unload_when_idle, self.raw.take()) {
            m.retire();
        }
    }
}

/// What an image handed to [`Module::load`] looks like.
fn image_kind(image: &[u8]) -> &'static str {
    const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
    const FATBIN_WRAPPER_MAGIC: [u8; 4] = 0x466243B1u32.to_le_bytes();
    match image.get(..4) {
        Some(b"\x7fELF") => "cubin",
        Some(m) if m == FATBIN_MAGIC || m == FATBIN_WRAPPER_MAGIC => "fatbin",
        _ => "ptx",
    }
}

impl Module {
    /// Loads a module image: PTX text (a terminating NUL is optional),
    /// a cubin (ELF) or a fatbin. Malformed PTX fails with the JIT's log in
    /// the message.
    pub fn load(ctx: &Context, image: &[u8]) -> Result<Module> {
        ensure_arg!(!image.is_empty(), "module image is empty");
        let owned;
        let image = if image_kind(image) == "ptx" {
            let text = match image.iter().position(|&b| b == 0) {
                Some(end) => &image[..end],
                None => image,
            };
            ensure_arg!(
                !text.is_empty() && std::str::from_utf8(text).is_ok(),
                "module image is neither PTX text, a cubin (ELF) nor a fatbin"
            );
            let mut v = text.to_vec();
            v.push(0);
            owned = v;
            &owned[..]
        } else {
            image
        };
        ctx.bind()?;
        let raw = {
            let _relaxed = driver::RelaxedCaptureMode::enter()?;
            dm::load(image)?
        };
        Ok(Module {
            inner: Arc::new(ModuleInner {
                ctx: ctx.clone(),
                raw: Some(Owned::new(raw, ctx.primary())),
                unload_when_idle: false,
            }),
        })
    }

    /// [`load`](Self::load) for a module graphcore generates and launches
    /// (fusion's chain kernels): when its last value or function goes, it
    /// is not unloaded then but after the next device-wide synchronize that
    /// begins later, or when the context goes, so a launch still in flight
    /// never runs a kernel of an unloaded module.
    pub(crate) fn load_generated(ctx: &Context, image: &[u8]) -> Result<Module> {
        let mut m = Self::load(ctx, image)?;
        Arc::get_mut(&mut m.inner)
            .expect("a module just loaded is not shared")
            .unload_when_idle = true;
        Ok(m)
    }

    /// The `extern "C"` function `name` of this module.
    pub fn function(&self, name: &str) -> Result<Function> {
        self.inner.ctx.bind()?;
        let raw = dm::function(self.inner.raw(), name)?;
        Ok(Function::from_parts(
            &self.inner.ctx,
            raw,
            name,
            Some(self.inner.clone()),
            None,
        ))
    }
}

/// A kernel that can be launched or added to a graph: from a module, a
/// built-in, or a `CUfunction`/`cudaFunction_t` the caller already has.
#[derive(Clone)]
pub struct Function {
    inner: Arc<FunctionInner>,
}

struct FunctionInner {
    ctx: Context,
    /// Kept loaded by `_module`, the context's built-ins, or the caller.
    raw: SharedFunction,
    /// Shared with the graph nodes that launch it.
    name: Arc<str>,
    builtin: Option<&'static KernelInfo>,
    _module: Option<Arc<ModuleInner>>,
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// Checks the configuration against CUDA's limits.
    #[inline]
    pub fn validate(&self) -> Result<()> {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        // The common case in one test (a zero wraps to u32::MAX, over every
        // limit): every dimension within CUDA's limits, at most 1024
        // threads. Otherwise the checks below say which rule failed.
        let within = (gx.wrapping_sub(1) < i32::MAX as u32)
            & (gy.wrapping_sub(1) < 65535)
            & (gz.wrapping_sub(1) < 65535)
            & (bx.wrapping_sub(1) < 1024)
            & (by.wrapping_sub(1) < 1024)
            & (bz.wrapping_sub(1) < 64)
            & ((bx as u64 * by as u64).saturating_mul(bz as u64) <= 1024);
        if within {
            return Ok(());
        }
        self.explain_invalid()
    }

    /// Which of CUDA's launch limits the configuration breaks (its
    /// [`validate`](Self::validate) failed).
    #[cold]
    #[inline(never)]
    fn explain_invalid(&self) -> Result<()> {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        ensure_arg!(
            gx > 0 && gy > 0 && gz > 0,
            "grid {gx}x{gy}x{gz} has a zero dimension"
        );
        ensure_arg!(
            bx > 0 && by > 0 && bz > 0,
            "block {bx}x{by}x{bz} has a zero dimension"
        );
        ensure_arg!(
            gx <= i32::MAX as u32 && gy <= 65535 && gz <= 65535,
            "grid {gx}x{gy}x{gz} exceeds CUDA's limits (2^31-1 x 65535 x 65535)"
        );
        ensure_arg!(
            bx <= 1024 && by <= 1024 && bz <= 64,
            "block {bx}x{by}x{bz} exceeds CUDA's limits (1024 x 1024 x 64)"
        );
        let threads = bx as u64 * by as u64 * bz as u64;
        ensure_arg!(
            threads <= 1024,
            "block {bx}x{by}x{bz} has {threads} threads; at most 1024"
        );
        Ok(())
    }
}

impl Function {
    fn from_parts(
        ctx: &Context,
        raw: CUfunction,
        name: &str,
        module: Option<Arc<ModuleInner>>,
        builtin: Option<&'static KernelInfo>,
    ) -> Function {
        Function {
            inner: Arc::new(FunctionInner {
                ctx: ctx.clone(),
                raw: SharedFunction::new(raw),
                name: name.into(),
                builtin,
                _module: module,
            }),
        }
    }

    /// Wraps a `CUfunction` (or a `cudaFunction_t` from
    /// `cudaGetFuncBySymbol`, the same handle) the caller already has.
    /// `name` is used in messages and DOT output.
    ///
    /// # Safety
    /// `raw` must be a function of `ctx`'s device that stays loaded for as
    /// long as this value (and any graph using it) lives.
    pub unsafe fn wrap(ctx: &Context, raw: CUfunction, name: &str) -> Result<Function> {
        ensure_arg!(!raw.is_null(), "function handle is NULL");
        ctx.bind()?;
        // Asking for an attribute checks that the handle is a function.
        dm::max_threads_per_block(raw)
            .map_err(|e| e.context("the handle is not a usable CUfunction"))?;
        let name = if name.is_empty() { "user_kernel" } else { name };
        let builtin = ctx.builtin_of(raw);
        Ok(Function::from_parts(ctx, raw, name, None, builtin))
    }

    /// The built-in kernel `name` of `ctx` (see `graphcore_kernels::KERNELS`),
    /// loading the built-ins into the context on first use.
    pub fn from_builtin(ctx: &Context, name: &str) -> Result<Function> {
        let kernel = builtins::find(name)?;
        let raw = ctx.builtin_raw(kernel)?;
        Ok(Function::from_parts(
            ctx,
            raw,
            kernel.name(),
            None,
            Some(kernel.info()),
        ))
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The function's name, shared (what its graph nodes record).
    pub(crate) fn shared_name(&self) -> Arc<str> {
        self.inner.name.clone()
    }

    /// True when both values are the same function (one handle's clones).
    pub(crate) fn same(&self, other: &Function) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The raw `CUfunction`.
    pub fn raw(&self) -> CUfunction {
        self.inner.raw.raw()
    }

    /// The built-in kernel this function is, if it is one.
    pub fn builtin(&self) -> Option<&'static KernelInfo> {
        self.inner.builtin
    }

    /// The function's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Launches the function on `stream`.
    ///
    /// # Safety
    /// `args` must hold one pointer per kernel parameter, each pointing to a
    /// value of that parameter's type (as `cuLaunchKernel` takes them). The
    /// values are copied before this returns.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        cfg: &LaunchConfig,
        args: *mut *mut c_void,
    ) -> Result<()> {
        let _timer = timing::start(Span::FunctionLaunch);
        cfg.validate()?;
        self.inner
            .ctx
            .ensure_same("the function", stream.context(), "the stream")?;
        // A launch on a stream of graphcore's or a borrowed one runs in the
        // stream's (and function's) context whichever is current, as an
        // exec's launch does: only the legacy default stream, NULL, needs
        // the context current.
        if stream.raw().is_null() {
            self.inner.ctx.bind()?;
        }
        stream.launch_noted(StreamOp::Launch, || {
            // SAFETY: one valid pointer per kernel parameter (this
            // function's contract); the driver copies the values.
            unsafe {
                dm::launch(
                    self.raw(),
                    cfg.grid,
                    cfg.block,
                    cfg.shared_bytes,
                    stream.raw(),
                    args,
                )
            }
        })?;
        // A captured launch is a kernel node of the capture's graph: the
        // graph keeps the function (and its module) loaded, as a node added
        // by building does.
        stream.keep_for_capture_of(self.raw() as usize, || Box::new(self.clone()));
        Ok(())
    }
}

/// Argument values of a built-in launch in the 8-byte slots the driver reads
/// them from (no heap allocation).
pub(crate) struct ArgBuffer {
    slots: [u64; MAX_ARGS],
}

impl ArgBuffer {
    /// The slots for `values`.
    pub(crate) fn new(values: &[Value]) -> ArgBuffer {
        let mut slots = [0u64; MAX_ARGS];
        for (s, v) in slots.iter_mut().zip(values) {
            *s = v.to_slot();
        }
        ArgBuffer { slots }
    }

    /// One pointer per slot, as `void **kernelParams`; valid while `self`
    /// stays where it is.
    pub(crate) fn pointers(&mut self) -> [*mut c_void; MAX_ARGS] {
        let mut p = [std::ptr::null_mut(); MAX_ARGS];
        for (p, s) in p.iter_mut().zip(self.slots.iter_mut()) {
            *p = s as *mut u64 as *mut c_void;
        }
        p
    }
}

/// Launches a built-in operation decided by `graphcore_kernels::ops` on
/// `stream` (eagerly, or recorded when the stream captures). A `call` that
/// failed its size checks is [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
///
/// # Safety
/// Every buffer the call names (the device addresses in its arguments) must
/// be device memory of the stream's context holding at least the elements
/// the call reads or writes, and stay allocated until the launch has run on
/// the stream (or, when it is captured, for as long as the graph runs).
pub unsafe fn launch_op(stream: &Stream, call: std::result::Result<Call, SizeError>) -> Result<()> {
    let call = call?;
    let ctx = stream.context();
    let raw = ctx.builtin_raw(call.kernel)?;
    // Cooperative kernels are launched in full order: one started early
    // could not have every block resident while the kernel before it still
    // holds SMs (they wait on their dependencies all the same, and trigger
    // nothing early: their blocks hold a whole SM's registers to the end).
    // Calls marked in order (GEMM grids that fill the SMs) too: started
    // early, their blocks would double up on the few SMs still free.
    // Cluster calls are planned only for devices that have clusters.
    let attrs = dm::LaunchAttrs {
        cooperative: call.cooperative,
        programmatic: !call.cooperative
            && !call.in_order
            && ctx.launches_builtins_programmatically()?,
        cluster: call.cluster,
    };
    let mut args = ArgBuffer::new(call.args());
    let mut ptrs = args.pointers();
    // As in `Function::launch`: only the legacy default stream needs the
    // context current.
    if stream.raw().is_null() {
        ctx.bind()?;
    }
    // SAFETY: the slots hold one value per parameter, typed by the kernel
    // table; `args` outlives the call, which copies them; the buffers they
    // name are valid by this function's contract; a programmatic launch
    // is one of a kernel that waits on its programmatic dependencies first
    // (the compute_90 modules, `launches_builtins_programmatically`).
    stream.launch_noted(StreamOp::BuiltinLaunch, || unsafe {
        if attrs == dm::LaunchAttrs::default() {
            dm::launch(
                raw,
                call.grid,
                call.block,
                call.shared_bytes,
                stream.raw(),
                ptrs.as_mut_ptr(),
            )
        } else {
            dm::launch_ex(
                raw,
                call.grid,
                call.block,
                call.shared_bytes,
                stream.raw(),
                ptrs.as_mut_ptr(),
                attrs,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::LaunchConfig;

    /// The one-test fast path of `validate` accepts exactly what the
    /// rule-by-rule checks accept, at and around every limit.
    #[test]
    fn validate_fast_path_agrees_with_the_rules() {
        let grid_x = [
            0,
            1,
            2,
            i32::MAX as u32 - 1,
            i32::MAX as u32,
            i32::MAX as u32 + 1,
            u32::MAX,
        ];
        let grid_yz = [0, 1, 65534, 65535, 65536, u32::MAX];
        let block_xy = [0, 1, 32, 1023, 1024, 1025, u32::MAX];
        let block_z = [0, 1, 2, 63, 64, 65, u32::MAX];
        let mut accepted = 0;
        for &gx in &grid_x {
            for &gy in &grid_yz {
                for &gz in &grid_yz {
                    for &bx in &block_xy {
                        for &by in &block_xy {
                            for &bz in &block_z {
                                let cfg = LaunchConfig {
                                    grid: [gx, gy, gz],
                                    block: [bx, by, bz],
                                    shared_bytes: 0,
                                };
                                let ok = cfg.validate().is_ok();
                                assert_eq!(ok, cfg.explain_invalid().is_ok(), "{cfg:?}");
                                accepted += usize::from(ok);
                            }
                        }
                    }
                }
            }
        }
        assert!(accepted > 0);
    }
}
