//! Pinned host memory and asynchronous copies and sets.
//!
//! Ownership: gc_host_alloc returns memory the caller frees with
//! gc_host_free on the same context; memory still allocated when the
//! context's last user goes is freed then. Copies and sets work on the
//! caller's memory and own nothing.
//!
//! Thread safety: all calls may run concurrently, on any streams and
//! contexts; the caller orders gc_host_free after the last work that uses
//! the memory.

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use std::ffi::{c_int, c_void};

/// Allocates `bytes` of pinned (page-locked) host memory, the kind copies
/// and graph memcpy nodes need. Free it with gc_host_free on the same
/// context; memory not freed is freed when the context's last user goes.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bytes is 0),
/// GC_ERROR_OUT_OF_MEMORY (the driver could not pin that much).
#[no_mangle]
pub extern "C" fn gc_host_alloc(
    ctx: *mut gc_context,
    bytes: usize,
    ptr: *mut *mut c_void,
) -> gc_status {
    boundary("gc_host_alloc", || {
        let out = Out::new(ptr, "ptr")?;
        out.set(context(ctx)?.host_alloc(bytes)?);
        Ok(())
    })
}

/// Frees memory from gc_host_alloc. A pointer that is not a live
/// allocation of this context (never allocated, or freed twice) is
/// GC_ERROR_INVALID_ARGUMENT and nothing happens. The memory must not be
/// in use by work still running (synchronize first).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (ptr is not a live allocation
/// of this context).
#[no_mangle]
pub extern "C" fn gc_host_free(ctx: *mut gc_context, ptr: *mut c_void) -> gc_status {
    boundary("gc_host_free", || context(ctx)?.host_free(ptr))
}

/// Copies `bytes` from `src` to `dst` on `stream`, in any direction (device
/// or host on either side: unified addressing). Asynchronous when host
/// memory is pinned. Zero bytes is a no-op. A range that starts in a live
/// pool block and runs past its end is refused, as is one that wraps around
/// the address space. Pool memory of another device needs that pool's peer
/// access for the stream's device (gc_pool_enable_peer_access). Recorded,
/// not run, when the stream captures.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a range overruns its pool
/// block or the address space, or is pool memory of another device without peer
/// access for the stream's device, naming both devices), GC_ERROR_CAPTURE (CUDA
/// refused the copy under capture, e.g. from pageable host memory; the capture
/// is invalid now), GC_ERROR_CUDA (e.g. an address CUDA does not know).
#[no_mangle]
pub extern "C" fn gc_memcpy_async(
    stream: *mut gc_stream,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
) -> gc_status {
    boundary("gc_memcpy_async", || {
        let s = self::stream(stream, "stream")?;
        // SAFETY: the caller's promise (this function's doc): `dst` and `src`
        // are valid for `bytes` bytes until the copy has run on the stream.
        unsafe { graphcore_core::copy_async(&s, dst as u64, src as u64, bytes) }
    })
}

/// Sets `bytes` bytes of device memory at `dst` to the byte `value` on
/// `stream`. Zero bytes is a no-op. A range that starts in a live pool block
/// and runs past its end is refused. Recorded, not run, when the stream
/// captures.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (the range overruns its pool
/// block or the address space, or is pool memory of another device without peer
/// access), GC_ERROR_CAPTURE (CUDA refused it under capture), GC_ERROR_CUDA
/// (e.g. dst is not device memory).
#[no_mangle]
pub extern "C" fn gc_memset_async(
    stream: *mut gc_stream,
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
) -> gc_status {
    boundary("gc_memset_async", || {
        let s = self::stream(stream, "stream")?;
        // SAFETY: the caller's promise (this function's doc): `dst` is device
        // memory valid for `bytes` bytes until the set has run on the stream.
        unsafe { graphcore_core::set_async(&s, dst as u64, value as u8, bytes) }
    })
}

/// Sets `count` elements of `elem_size` bytes (1, 2 or 4) of device memory
/// at `dst` to `value` (its low elem_size bytes) on `stream`, as
/// cuMemsetD8/D16/D32Async do. dst must be aligned to elem_size and value
/// must fit in an element. Zero elements is a no-op. A range that starts in
/// a live pool block and runs past its end is refused. Recorded, not run,
/// when the stream captures. gc_memset_async is this with elem_size 1.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (elem_size is not 1, 2 or 4,
/// dst is not aligned to it, value does not fit in an element, the range
/// overruns its pool block or the address space, or is pool memory of another
/// device without peer access), GC_ERROR_CAPTURE (CUDA refused it under
/// capture), GC_ERROR_CUDA (e.g. dst is not device memory).
#[no_mangle]
pub extern "C" fn gc_memset_async_elem(
    stream: *mut gc_stream,
    dst: *mut c_void,
    value: u32,
    elem_size: u32,
    count: usize,
) -> gc_status {
    boundary("gc_memset_async_elem", || {
        let s = self::stream(stream, "stream")?;
        // SAFETY: the caller's promise (this function's doc): `dst` is device
        // memory valid for `count * elem_size` bytes until the set has run.
        unsafe { graphcore_core::set_elements_async(&s, dst as u64, value, elem_size, count) }
    })
}
