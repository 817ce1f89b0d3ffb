//! Devices and contexts.
//!
//! Thread safety: a gc_context may be used from any number of threads at
//! once; gc_context_destroy must not race with other calls on the same handle.

use crate::args::{Out, Versioned, VersionedOut};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use graphcore_core::Context;
use std::ffi::{c_char, c_int};

/// A device's primary context (shared with the CUDA runtime API, so device
/// pointers, streams and functions pass freely between the two).
pub struct gc_context;

pub(crate) static CONTEXTS: Registry<Context> = Registry::new(1, "gc_context");

/// The context behind a handle.
pub(crate) fn context(h: *mut gc_context) -> graphcore_core::Result<Context> {
    CONTEXTS.get(h as u64, "ctx")
}

/// Facts about a context's device, filled in by gc_context_info.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct gc_device_info {
    /// Set to sizeof(gc_device_info) before the call.
    pub struct_size: usize,
    /// Device name, NUL-terminated.
    pub name: [c_char; 256],
    /// Device ordinal.
    pub ordinal: c_int,
    /// Compute capability, major part.
    pub cc_major: c_int,
    /// Compute capability, minor part.
    pub cc_minor: c_int,
    /// Number of multiprocessors.
    pub sm_count: c_int,
    /// Total device memory in bytes.
    pub total_bytes: u64,
    /// Free device memory in bytes at the time of the call.
    pub free_bytes: u64,
    /// The driver's CUDA version, 1000*major + 10*minor (12040 is 12.4).
    pub driver_version: c_int,
}

impl Default for gc_device_info {
    fn default() -> Self {
        gc_device_info {
            struct_size: std::mem::size_of::<Self>(),
            name: [0; 256],
            ordinal: 0,
            cc_major: 0,
            cc_minor: 0,
            sm_count: 0,
            total_bytes: 0,
            free_bytes: 0,
            driver_version: 0,
        }
    }
}

impl Versioned for gc_device_info {
    const V1_SIZE: usize = std::mem::size_of::<Self>();
}

/// Writes the number of CUDA devices to *count. Without a driver this is
/// GC_ERROR_NO_DRIVER (never a crash).
#[no_mangle]
pub extern "C" fn gc_device_count(count: *mut c_int) -> gc_status {
    boundary("gc_device_count", || {
        let out = Out::new(count, "count")?;
        out.set(graphcore_core::device_count()?);
        Ok(())
    })
}

/// Creates a context on device `device` (its primary context, retained).
/// Errors: GC_ERROR_NO_DRIVER, GC_ERROR_NO_DEVICE, GC_ERROR_INVALID_ARGUMENT
/// for an ordinal out of range.
#[no_mangle]
pub extern "C" fn gc_context_create(device: c_int, ctx: *mut *mut gc_context) -> gc_status {
    boundary("gc_context_create", || {
        let out = Out::new(ctx, "ctx")?;
        let c = Context::new(device)?;
        out.set(CONTEXTS.insert(c)? as *mut gc_context);
        Ok(())
    })
}

/// Fills *info (set info->struct_size = sizeof(gc_device_info) first).
#[no_mangle]
pub extern "C" fn gc_context_info(ctx: *mut gc_context, info: *mut gc_device_info) -> gc_status {
    boundary("gc_context_info", || {
        let out = VersionedOut::new(info, "info")?;
        let c = context(ctx)?;
        let mut v = gc_device_info::default();
        for (d, s) in v.name.iter_mut().zip(c.device_name().bytes().take(255)) {
            *d = s as c_char;
        }
        v.ordinal = c.ordinal();
        (v.cc_major, v.cc_minor) = c.compute_capability();
        v.sm_count = c.sm_count() as c_int;
        v.total_bytes = c.total_memory();
        v.free_bytes = c.memory_info()?.0;
        v.driver_version = graphcore_core::driver_version()?;
        out.set(&v);
        Ok(())
    })
}

/// Waits for all work on the context's device. While a graphcore capture is
/// open in the context this is GC_ERROR_INVALID_STATE and nothing happens:
/// a device-wide synchronize from any thread invalidates every capture on
/// the device (synchronize the streams you need instead).
#[no_mangle]
pub extern "C" fn gc_context_synchronize(ctx: *mut gc_context) -> gc_status {
    boundary("gc_context_synchronize", || context(ctx)?.synchronize())
}

/// Drops this handle. Objects made from the context (streams, pools,
/// modules, graphs) keep it alive until they are destroyed. NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_context_destroy(ctx: *mut gc_context) -> gc_status {
    boundary("gc_context_destroy", || {
        CONTEXTS.remove(ctx as u64, "ctx")?;
        Ok(())
    })
}
