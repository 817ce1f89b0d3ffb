//! Devices and contexts. A gc_context is a device's primary context, the
//! one the CUDA runtime API uses too, so device pointers, streams
//! (cudaStream_t) and functions (cudaFunction_t) pass freely between
//! graphcore and runtime-API code in the same process.
//!
//! The calling thread's current context: every graphcore call that reaches
//! the driver first makes its object's context current on the calling
//! thread (cuCtxSetCurrent) and leaves it current when it returns. The
//! exceptions are launches on a non-NULL stream and captures, which run in
//! the stream's context whichever is current: gc_exec_launch,
//! gc_runner_replay, gc_launch, gc_capture_begin and gc_capture_end need no
//! current context and leave the thread's as it was, and so do the kernel
//! launches of the gc_op_* calls (a gc_op_* call still makes its context
//! current for what else it asks of the driver: the first one on a context
//! loads the built-in kernels). gc_capture_begin, gc_capture_begin_into and
//! gc_capture_end leave the thread's current context as it was in every
//! case, failures included: a context they make current for their own
//! calls (capturing into a conditional body, cleaning up a failed capture)
//! is put back before they return (none, if none was current). Do not rely
//! on a launch or a capture to make a device current. (Checked on CUDA 13
//! drivers: a driver that still wants a current context for these makes
//! them fail with GC_ERROR_CUDA on a thread where none is; make one current
//! first, e.g. with any call that binds.) For the runtime API a call that binds
//! is as if it ran cudaSetDevice on its device. An
//! engine that drives several GPUs from one thread with cudaSetDevice must
//! call cudaSetDevice again after a graphcore call on another device's
//! objects, before runtime calls that use the current device (cudaMalloc,
//! kernel launches, cudaStreamCreate, library handles). Code that keeps one
//! device per thread, or passes explicit streams everywhere, is unaffected.

use crate::args::{Out, Versioned, VersionedOut};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use graphcore_core::Context;
use std::ffi::{c_char, c_int};

/// A device's primary context (shared with the CUDA runtime API).
///
/// Ownership: gc_context_create returns a handle the caller destroys with
/// gc_context_destroy. Everything made from it (streams, pools, modules,
/// functions, graphs, execs, runners) holds the context too, so
/// the handle may be destroyed before them; the primary context is released
/// when the last of them goes, and with it any gc_host_alloc memory not
/// freed. Two handles of one device share one state.
///
/// Memory a context keeps: beyond the objects made from it, a device's
/// context holds graphcore's built-in kernels, loaded on first use (the
/// conditional setters, linked with libcudadevrt, on the first use of
/// one), and the kernels fusion generated (GC_INSTANTIATE_FUSE_ELEMENTWISE)
/// for execs that are gone, until the next gc_context_synchronize (or
/// another call that waits for the whole device). CUDA keeps memory of its
/// own per context too (such as local memory sized for the largest kernel
/// run). So free device memory read after destroying objects, with a
/// context of the device alive, stays below what it was before their first
/// use, by a steady amount (a few MiB), not one that grows. All of it goes
/// when the device's last gc_context handle and every object made from it
/// are destroyed: graphcore unloads its kernels and releases its retain of
/// the primary context (CUDA frees the context's own memory once nothing
/// else, such as the CUDA runtime, retains it).
///
/// Thread safety: every call may run concurrently with any other on the
/// same handle, except gc_context_destroy, which must not race with other
/// calls on that handle (objects made from it are unaffected).
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

/// Writes the number of CUDA devices to *count. Needs no context; valid
/// ordinals for gc_context_create are 0 to *count - 1.
/// Errors: GC_ERROR_INVALID_ARGUMENT (count is NULL), GC_ERROR_NO_DRIVER (no
/// libcuda.so; never a crash), GC_ERROR_NOT_SUPPORTED (a driver older than
/// CUDA 12.0), GC_ERROR_NO_DEVICE (the driver loaded but found no device),
/// GC_ERROR_CUDA (cuInit or cuDeviceGetCount failed otherwise).
#[no_mangle]
pub extern "C" fn gc_device_count(count: *mut c_int) -> gc_status {
    boundary("gc_device_count", || {
        let out = Out::new(count, "count")?;
        out.set(graphcore_core::device_count()?);
        Ok(())
    })
}

/// Creates a context on device `device` (its primary context, retained).
/// The caller destroys the handle with gc_context_destroy.
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx is NULL, or device is negative or
/// not below gc_device_count), GC_ERROR_NO_DRIVER (no libcuda.so),
/// GC_ERROR_NOT_SUPPORTED (a driver older than CUDA 12.0), GC_ERROR_NO_DEVICE
/// (the machine has no CUDA device), GC_ERROR_OUT_OF_MEMORY (too many live
/// handles), GC_ERROR_CUDA (the driver refused the device or its context),
/// GC_ERROR_DEVICE_FAULT (the device's context is broken by an earlier fault).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a wrong struct_size),
/// GC_ERROR_DEVICE_FAULT (reading free memory failed).
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
/// Errors: common, and GC_ERROR_INVALID_STATE (a graphcore capture is open in
/// the context), GC_ERROR_DEVICE_FAULT (work on the device faulted),
/// GC_ERROR_CUDA (another failure of the wait).
#[no_mangle]
pub extern "C" fn gc_context_synchronize(ctx: *mut gc_context) -> gc_status {
    boundary("gc_context_synchronize", || context(ctx)?.synchronize())
}

/// Drops this handle. Objects made from the context (streams, pools,
/// modules, graphs) keep it alive until they are destroyed. NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (ctx already destroyed, or not a context).
#[no_mangle]
pub extern "C" fn gc_context_destroy(ctx: *mut gc_context) -> gc_status {
    boundary("gc_context_destroy", || {
        CONTEXTS.remove(ctx as u64, "ctx")?;
        Ok(())
    })
}
