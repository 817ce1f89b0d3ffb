//! Devices and contexts: a [`Context`] is one device's primary context, the
//! one the CUDA runtime also uses, so pointers, streams and functions pass
//! freely between graphcore and runtime-API code in the same process.

use crate::device_pool::{Pool, PoolShared};
use crate::driver::{self, device, CUcontext, CUdevice};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::module::Builtins;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A device's primary context, retained for as long as any clone of this
/// value, or any object made from it, lives. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) ordinal: i32,
    pub(crate) device: CUdevice,
    pub(crate) raw: CUcontext,
    pub(crate) info: device::DeviceInfo,
    /// Built-in kernels, loaded on first use.
    pub(crate) builtins: OnceLock<Builtins>,
    /// Live pinned host allocations: address → bytes.
    host: Mutex<HashMap<usize, usize>>,
    /// Captures graphcore has open in this context. A device-wide
    /// synchronize (cuCtxSynchronize) from any thread invalidates every
    /// capture on the device, in any mode (measured: benches/cuda/
    /// capture_probe.cu; freeing pinned memory, unloading modules, mapping
    /// and unmapping memory do not), so graphcore synchronizes only under
    /// this lock with no capture open.
    open_captures: Mutex<usize>,
    /// The context's pools (registered by `Pool::new`) with their address
    /// ranges, so copies and sets can check their ranges against live pool
    /// blocks.
    pools: Mutex<Vec<(Range<u64>, Weak<PoolShared>)>>,
}

// SAFETY: CUDA contexts may be used from any thread; the raw handle is only
// passed to the driver.
unsafe impl Send for ContextInner {}
// SAFETY: as above; interior state is behind locks.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        if device::set_current(self.raw).is_ok() {
            let host = self.host.get_mut().unwrap_or_else(|e| e.into_inner());
            for (&p, _) in host.iter() {
                let _ = driver::memory::host_free(p as *mut c_void);
            }
        }
        // Builtin modules unload before the context goes.
        self.builtins.take();
        device::release_primary(self.device);
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
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
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
        let raw = device::retain_primary(dev)?;
        let inner = ContextInner {
            ordinal,
            device: dev,
            raw,
            info,
            builtins: OnceLock::new(),
            host: Mutex::new(HashMap::new()),
            open_captures: Mutex::new(0),
            pools: Mutex::new(Vec::new()),
        };
        device::set_current(raw)?;
        Ok(Context {
            inner: Arc::new(inner),
        })
    }

    /// Makes this context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        device::set_current(self.inner.raw)
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
    pub fn synchronize(&self) -> Result<()> {
        if self.synchronize_unless_capturing()? {
            return Ok(());
        }
        Err(Error::invalid_state(
            "a stream capture is open in this context, and a device-wide synchronize would \
             invalidate it: synchronize the streams whose work you need instead, or end the \
             capture first",
        ))
    }

    /// Registers `pool` with its context, so copies and sets refuse ranges
    /// that overrun its live blocks. `Pool::new` calls this once.
    pub(crate) fn register_pool(&self, pool: &Pool) {
        let mut pools = self.inner.pools.lock().unwrap_or_else(|e| e.into_inner());
        pools.retain(|(_, w)| w.strong_count() > 0);
        pools.push((pool.va_range(), Arc::downgrade(&pool.inner)));
    }

    /// The live block containing `addr` in any of the context's pools: its
    /// address and size. Allocates nothing; the registry lock is released
    /// before the pool is upgraded, so a pool dropped meanwhile is never
    /// torn down under it.
    pub(crate) fn pool_block_of(&self, addr: u64) -> Option<(u64, u64)> {
        let owner = {
            let pools = self.inner.pools.lock().unwrap_or_else(|e| e.into_inner());
            pools
                .iter()
                .find(|(range, _)| range.contains(&addr))
                .map(|(_, w)| w.clone())?
        };
        Pool {
            inner: owner.upgrade()?,
        }
        .block_of(addr)
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
        self.inner.host.lock().unwrap().insert(p as usize, bytes);
        Ok(p)
    }

    /// Frees pinned host memory from [`Context::host_alloc`]. A pointer that
    /// is not a live allocation of this context is an error.
    pub fn host_free(&self, p: *mut c_void) -> Result<()> {
        let mut host = self.inner.host.lock().unwrap();
        ensure_arg!(
            host.contains_key(&(p as usize)),
            "{p:p} is not pinned host memory from gc_host_alloc of this context (never allocated, or already freed)"
        );
        self.bind()?;
        driver::memory::host_free(p)?;
        host.remove(&(p as usize));
        Ok(())
    }

    /// Counts a capture as open while `f` begins it (`f` failing undoes it);
    /// waits while graphcore synchronizes the device.
    pub(crate) fn open_capture<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut open = self.inner.open_captures.lock().unwrap();
        let r = f();
        if r.is_ok() {
            *open += 1;
        }
        r
    }

    /// True while graphcore has a capture open in this context.
    pub(crate) fn capturing(&self) -> bool {
        *self.inner.open_captures.lock().unwrap() > 0
    }

    /// Counts a capture as closed.
    pub(crate) fn close_capture(&self) {
        let mut open = self.inner.open_captures.lock().unwrap();
        *open = open.saturating_sub(1);
    }

    /// Synchronizes the device unless a graphcore capture is open in this
    /// context (it would invalidate it). Returns whether it synchronized.
    pub(crate) fn synchronize_unless_capturing(&self) -> Result<bool> {
        let open = self.inner.open_captures.lock().unwrap();
        if *open > 0 {
            return Ok(false);
        }
        self.bind()?;
        device::synchronize()?;
        drop(open);
        Ok(true)
    }

    /// True when `self` and `other` are the same context.
    pub fn same(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
