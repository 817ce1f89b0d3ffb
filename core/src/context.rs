//! Devices and contexts: a [`Context`] is one device's primary context, the
//! one the CUDA runtime also uses, so pointers, streams and functions pass
//! freely between graphcore and runtime-API code in the same process.

use crate::builtins::Builtins;
use crate::driver::owned::PrimaryContext;
use crate::driver::{self, device, CUcontext, CUdevice, CUfunction};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::lock::{get_mut, lock};
use crate::timing::{timed, Span};
use graphcore_kernels::{Kernel, KernelInfo};
use std::collections::HashMap;
use std::ffi::c_void;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// What the context's pool registry asks of a pool (pools sit above the
/// context, so the registry holds them through this trait).
pub(crate) trait PoolBlocks: Send + Sync {
    /// The live block containing `addr`: its address and size.
    fn block_of(&self, addr: u64) -> Option<(u64, u64)>;

    /// True when device `ordinal` may access the pool's memory: the pool's
    /// own device, or a peer it granted access.
    fn accessible_from(&self, ordinal: i32) -> bool;
}

/// A pool in the registry: the addresses it reserved, its device's
/// ordinal, and the pool (weakly: the registry does not keep it alive).
type RegisteredPool = (Range<u64>, i32, Weak<dyn PoolBlocks>);

/// Every live pool of the process, on every device (addresses are unique
/// process-wide under unified addressing), so a copy can tell pool memory
/// of another device from memory graphcore does not know.
static POOLS: Mutex<Vec<RegisteredPool>> = Mutex::new(Vec::new());

/// The pool whose reservation holds `addr`: its device and the pool's
/// block table. What the registry holds (weakly) and this hands out is the
/// table a pool keeps apart for it, not the pool: a lookup that holds it
/// last when the pool goes frees host memory only, and never synchronizes
/// or makes a context current on the caller's thread.
fn registered_pool_at(addr: u64) -> Option<(i32, Arc<dyn PoolBlocks>)> {
    let pools = lock(&POOLS);
    let (_, ordinal, pool) = pools.iter().find(|(range, _, _)| range.contains(&addr))?;
    Some((*ordinal, pool.upgrade()?))
}

/// A live pool block holding an address, as a context sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolBlock {
    /// The block's address.
    pub start: u64,
    /// The block's bytes.
    pub size: u64,
    /// The ordinal of the pool's device.
    pub device: i32,
    /// True when the asking context's device may use it: its own pool, or
    /// a pool that granted it peer access.
    pub accessible: bool,
}

/// A device's primary context, retained for as long as any clone of this
/// value, or any object made from it, lives. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    ordinal: i32,
    /// The retained primary context; every handle made in it keeps it too.
    primary: Arc<PrimaryContext>,
    info: device::DeviceInfo,
    /// Built-in kernels, loaded on first use.
    builtins: OnceLock<Builtins>,
    /// Held while the built-ins load, so they load once: a second,
    /// discarded set would unload its modules on its thread, and unloading
    /// is not permitted while that thread captures (its capture would be
    /// invalidated).
    builtins_loading: Mutex<()>,
    /// Live pinned host allocations: address → bytes.
    host: Mutex<HashMap<usize, usize>>,
    /// Captures graphcore has open in this context. A device-wide
    /// synchronize (cuCtxSynchronize) from any thread invalidates every
    /// capture on the device, in any mode (measured: perf/cuda/
    /// capture_probe.cu; freeing pinned memory, unloading modules, mapping
    /// and unmapping memory do not), so graphcore synchronizes only under
    /// this lock with no capture open.
    open_captures: Mutex<usize>,
}

impl Drop for ContextInner {
    /// Frees the pinned host memory still allocated (the built-ins unload
    /// as their fields drop; the primary context is released when the last
    /// handle made in it is gone). Nothing is left to report errors to.
    fn drop(&mut self) {
        if self.primary.bind().is_ok() {
            for (&p, _) in get_mut(&mut self.host).iter() {
                let _ = driver::memory::host_free(p as *mut c_void);
            }
        }
    }
}

/// The number of CUDA devices (an error when there is no driver).
pub fn device_count() -> Result<i32> {
    device::count()
}

/// The driver's CUDA version as 1000·major + 10·minor (12040 is 12.4).
pub fn driver_version() -> Result<i32> {
    driver::driver_version()
}

impl Context {
    /// The context of device `ordinal`: its primary context, retained. All
    /// `Context` values of one device share one state (built-in kernels,
    /// open captures), as they share the primary context.
    pub fn new(ordinal: i32) -> Result<Context> {
        // The primary context is process-wide in CUDA; so is this table.
        static LIVE: Mutex<Vec<(i32, std::sync::Weak<ContextInner>)>> = Mutex::new(Vec::new());
        let mut live = lock(&LIVE);
        live.retain(|(_, w)| w.strong_count() > 0);
        if let Some(inner) = live
            .iter()
            .find(|(o, _)| *o == ordinal)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(Context { inner });
        }
        let ctx = Self::create(ordinal)?;
        live.push((ordinal, Arc::downgrade(&ctx.inner)));
        Ok(ctx)
    }

    fn create(ordinal: i32) -> Result<Context> {
        let n = device::count()?;
        if n == 0 {
            return Err(Error::new(ErrorKind::NoDevice, "no CUDA device is present"));
        }
        ensure_arg!(
            (0..n).contains(&ordinal),
            "device ordinal {ordinal} is out of range: there are {n} device(s)"
        );
        let dev = device::get(ordinal)?;
        let info = device::info(dev)?;
        let primary = PrimaryContext::retain(dev)?;
        primary.bind()?;
        let inner = ContextInner {
            ordinal,
            primary,
            info,
            builtins: OnceLock::new(),
            builtins_loading: Mutex::new(()),
            host: Mutex::new(HashMap::new()),
            open_captures: Mutex::new(0),
        };
        Ok(Context {
            inner: Arc::new(inner),
        })
    }

    /// Makes this context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        timed(Span::ContextBind, || self.inner.primary.bind())
    }

    /// The raw primary context (passed to driver calls that name one).
    pub(crate) fn raw(&self) -> CUcontext {
        self.inner.primary.raw()
    }

    /// The raw device.
    pub(crate) fn device(&self) -> CUdevice {
        self.inner.primary.device()
    }

    /// The retained primary context, for the handles made in it.
    pub(crate) fn primary(&self) -> &Arc<PrimaryContext> {
        &self.inner.primary
    }

    /// True when the device supports virtual memory management.
    pub(crate) fn vmm_supported(&self) -> bool {
        self.inner.info.vmm_supported
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> i32 {
        self.inner.ordinal
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.inner.info.name
    }

    /// The device's multiprocessor count.
    pub fn sm_count(&self) -> u32 {
        self.inner.info.sm_count
    }

    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.inner.info.compute_capability
    }

    /// Whether the device launches thread-block clusters (compute
    /// capability 9.0 or later): what `graphcore_kernels::ops` plans take
    /// as `clusters`.
    pub fn has_clusters(&self) -> bool {
        self.compute_capability().0 >= 9
    }

    /// The device's total memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.inner.info.total_bytes
    }

    /// Free and total device memory, as `cuMemGetInfo` reports them.
    pub fn memory_info(&self) -> Result<(u64, u64)> {
        self.bind()?;
        device::mem_info()
    }

    /// Waits for all work on the device in this context. While a graphcore
    /// capture is open in the context this is [`ErrorKind::InvalidState`]
    /// and nothing happens: a device-wide synchronize (cuCtxSynchronize)
    /// from any thread invalidates every capture on the device.
    ///
    /// This is also where a failure to destroy a driver object (a stream,
    /// module, graph or exec dropped earlier in this context; a Drop cannot
    /// fail) is reported: the first such error is returned once, after the
    /// wait.
    pub fn synchronize(&self) -> Result<()> {
        if self.synchronize_unless_capturing()? {
            return self.inner.primary.take_deferred().map_or(Ok(()), Err);
        }
        Err(Error::invalid_state(
            "a stream capture is open in this context, and a device-wide synchronize would \
             invalidate it: synchronize the streams whose work you need instead, or end the \
             capture first",
        ))
    }

    /// Registers a pool of this context owning addresses `range`, so
    /// copies and sets refuse ranges that overrun its live blocks.
    /// `Pool::new` calls this once.
    pub(crate) fn register_pool(&self, range: Range<u64>, pool: Weak<dyn PoolBlocks>) {
        let mut pools = lock(&POOLS);
        pools.retain(|(_, _, w)| w.strong_count() > 0);
        pools.push((range, self.ordinal(), pool));
    }

    /// Removes the pool that reserved `range` from the registry: its Drop
    /// calls this before it gives the addresses back.
    pub(crate) fn unregister_pool(&self, range: Range<u64>) {
        lock(&POOLS).retain(|(r, _, w)| *r != range && w.strong_count() > 0);
    }

    /// The live block containing `addr` in any of the context's pools: its
    /// address and size. Allocates nothing.
    pub(crate) fn pool_block_of(&self, addr: u64) -> Option<(u64, u64)> {
        match registered_pool_at(addr)? {
            (ordinal, pool) if ordinal == self.ordinal() => pool.block_of(addr),
            _ => None,
        }
    }

    /// Whether `addr` lies in the address range a pool of this context's
    /// device reserved, live block or not. Allocates nothing.
    pub(crate) fn in_pool_range(&self, addr: u64) -> bool {
        matches!(registered_pool_at(addr), Some((ordinal, _)) if ordinal == self.ordinal())
    }

    /// The live block containing `addr` in a pool of any device, with
    /// whether this context's device may use it. Allocates nothing.
    pub(crate) fn pool_block_at(&self, addr: u64) -> Option<PoolBlock> {
        let (device, pool) = registered_pool_at(addr)?;
        let (start, size) = pool.block_of(addr)?;
        Some(PoolBlock {
            start,
            size,
            device,
            accessible: device == self.ordinal() || pool.accessible_from(self.ordinal()),
        })
    }

    /// Allocates `bytes` of pinned host memory (usable in copies and in
    /// graph memcpy nodes). Free it with [`Context::host_free`].
    pub fn host_alloc(&self, bytes: usize) -> Result<*mut c_void> {
        ensure_arg!(bytes > 0, "host allocation of 0 bytes");
        self.bind()?;
        let p = {
            let _relaxed = driver::RelaxedCaptureMode::enter()?;
            driver::memory::host_alloc(bytes)?
        };
        lock(&self.inner.host).insert(p as usize, bytes);
        Ok(p)
    }

    /// Frees pinned host memory from [`Context::host_alloc`]. A pointer that
    /// is not a live allocation of this context is an error.
    pub fn host_free(&self, p: *mut c_void) -> Result<()> {
        let mut host = lock(&self.inner.host);
        ensure_arg!(
            host.contains_key(&(p as usize)),
            "{p:p} is not pinned host memory allocated by this context (never allocated, or already freed)"
        );
        self.bind()?;
        driver::memory::host_free(p)?;
        host.remove(&(p as usize));
        Ok(())
    }

    /// Counts a capture as open while `f` begins it (`f` failing undoes it);
    /// waits while graphcore synchronizes the device.
    pub(crate) fn open_capture<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut open = lock(&self.inner.open_captures);
        let r = f();
        if r.is_ok() {
            *open += 1;
        }
        r
    }

    /// True while graphcore has a capture open in this context.
    pub(crate) fn capturing(&self) -> bool {
        *lock(&self.inner.open_captures) > 0
    }

    /// Counts a capture as closed.
    pub(crate) fn close_capture(&self) {
        let mut open = lock(&self.inner.open_captures);
        *open = open.saturating_sub(1);
    }

    /// Synchronizes the device unless a graphcore capture is open in this
    /// context (it would invalidate it). Returns whether it synchronized.
    /// Generated modules retired before the wait began are unloaded after
    /// it (no launch that may run their kernels is left).
    pub(crate) fn synchronize_unless_capturing(&self) -> Result<bool> {
        let open = lock(&self.inner.open_captures);
        if *open > 0 {
            return Ok(false);
        }
        self.bind()?;
        let retired = self.inner.primary.take_retired();
        if let Err(e) = device::synchronize() {
            self.inner.primary.keep_retired(retired);
            return Err(e);
        }
        self.inner.primary.unload(retired);
        drop(open);
        Ok(true)
    }

    /// True when `self` and `other` are the same context.
    pub fn same(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Objects of two devices never mix: [`ErrorKind::InvalidArgument`]
    /// naming both devices unless `other` (the context of `other_what`) is
    /// this one (the context of `what`). There is one context per device,
    /// so two contexts are two devices.
    pub(crate) fn ensure_same(&self, what: &str, other: &Context, other_what: &str) -> Result<()> {
        if self.same(other) {
            return Ok(());
        }
        Err(Error::invalid_argument(mixed_devices(
            what,
            self.ordinal(),
            other_what,
            other.ordinal(),
        )))
    }

    fn builtins(&self) -> Result<&Builtins> {
        if let Some(b) = self.inner.builtins.get() {
            return Ok(b);
        }
        let _loading = lock(&self.inner.builtins_loading);
        if let Some(b) = self.inner.builtins.get() {
            return Ok(b); // another thread loaded them meanwhile
        }
        self.bind()?;
        let loaded = Builtins::load(&self.inner.primary, self.inner.info.compute_capability)?;
        Ok(self.inner.builtins.get_or_init(|| loaded))
    }

    /// The built-in kernel whose loaded function is `raw`, if any (how
    /// graphcore recognises its kernels in captured graphs).
    pub(crate) fn builtin_of(&self, raw: CUfunction) -> Option<&'static KernelInfo> {
        self.inner.builtins.get()?.kernel_of(raw)
    }

    /// The loaded function of a built-in kernel (loading the built-ins on
    /// first use).
    pub(crate) fn builtin_raw(&self, kernel: Kernel) -> Result<CUfunction> {
        let b = self.builtins()?;
        match b.loaded(kernel) {
            Some(f) => Ok(f),
            None => {
                // Linking the built-in modules needs the context current.
                self.bind()?;
                b.function(kernel)
            }
        }
    }

    /// Whether graphcore launches its built-in kernels on streams of this
    /// context with programmatic stream serialization (programmatic
    /// dependent launch; captured, such launches become programmatic
    /// edges): compute capability 9.0 or newer, a CUDA 12.3 driver, and
    /// `GC_PDL` not `0` (see `set_programmatic_launch`). Loads the built-ins
    /// on first use.
    pub fn launches_builtins_programmatically(&self) -> Result<bool> {
        Ok(self.builtins()?.launch_programmatically())
    }
}

/// The message for objects of two devices used together.
fn mixed_devices(what: &str, device: i32, other_what: &str, other_device: i32) -> String {
    format!(
        "{what} is on device {device} and {other_what} on device {other_device}: objects of two \
         devices are never used together"
    )
}

#[cfg(test)]
mod mixing_tests {
    #[test]
    fn mixing_names_both_objects_and_both_devices() {
        let m = super::mixed_devices("the pool", 1, "the stream", 0);
        assert!(
            m.starts_with("the pool is on device 1 and the stream on device 0"),
            "{m}"
        );
    }
}
