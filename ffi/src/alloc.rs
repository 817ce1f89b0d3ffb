//! graphcore as an engine's allocator: alloc and free exports with the
//! signatures allocator interfaces plug in, backed by graphcore pools, so
//! an engine (or PyTorch, through CUDAPluggableAllocator) allocates from a
//! pool without changing how it calls its allocator.
//!
//! Two pairs. gc_torch_alloc / gc_torch_free have PyTorch's pluggable
//! allocator signatures (`void *alloc(size_t size, int device,
//! cudaStream_t stream)`, `void free(void *ptr, size_t size, int device,
//! cudaStream_t stream)`) and allocate from the pool set for `device` with
//! gc_allocator_set_pool. gc_engine_alloc / gc_engine_free take a user
//! pointer first, for interfaces that carry one (a struct of function
//! pointers and a `void *user`): pass a gc_pool handle as `user` to
//! allocate from that pool, or NULL for the pool set for `device`.
//!
//! No status: these calls return a pointer (or nothing), as the interfaces
//! they plug into expect. A failed alloc returns NULL and sets the calling
//! thread's gc_last_error() (and gc_last_cuda_result()); PyTorch turns the
//! NULL into its out-of-memory error. A failed free (a pointer no pool of
//! the device handed out, a double free) changes nothing and sets
//! gc_last_error(). Panics never cross: they are caught and reported the
//! same way. Without a pool for the device, an alloc returns NULL and the
//! last error says so: GC_ERROR_NO_DRIVER's message on a machine without
//! the driver, GC_ERROR_INVALID_ARGUMENT's for a device that does not
//! exist, GC_ERROR_INVALID_STATE's ("no pool set for device N") otherwise.
//! gc_last_error() names the export and the status (for example
//! "gc_torch_alloc: GC_ERROR_NO_DRIVER: ...").
//!
//! Size 0: an alloc of 0 bytes returns NULL and sets no error (PyTorch
//! allocates nothing for an empty tensor); freeing NULL is a no-op.
//!
//! What "stream-ordered" means here: graphcore's pool frees at once. The
//! block goes back to the pool when the free is called and may be handed
//! to the very next allocation, whatever its stream; the `stream`
//! arguments are accepted for the interface and not used. That is safe
//! when the work that used the block and the work of the next allocation
//! run in order: on one stream (PyTorch's usual case: one current stream
//! per device), or on streams the caller has ordered (an event, a
//! synchronize). It is not PyTorch's caching allocator's per-stream reuse:
//! work still running on another stream may see its memory handed out
//! again, and graphcore does not record streams (Tensor.record_stream has
//! no effect through these exports). Use one stream per pool, or order the
//! streams before freeing.
//!
//! Captures: an allocation made on a thread that has a capture open into
//! the pool (gc_capture_begin with that pool, or a gc_runner_capture into
//! it) belongs to that capture, exactly as gc_pool_alloc's does (see the
//! pool section: blocks freed in the capture are reused by later captures
//! into the pool; blocks kept at its end are the caller's). A capture that
//! CUDA or another library opened without graphcore (torch.cuda.graph's
//! own) is not seen: allocations during it are eager ones.
//!
//! Thread safety: every call may run from any thread at once;
//! gc_allocator_set_pool may run concurrently with allocations (an
//! allocation uses the pool set before or after it, never a mix).

use crate::pool::{gc_pool, POOLS};
use crate::status::{boundary, gc_status};
use graphcore_core::{Error, Pool, Result};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// A pool set for a device, with the count of blocks allocated from it
/// through the device-keyed exports and not freed yet.
struct Held {
    pool: Pool,
    live: AtomicI64,
}

/// The pools the device-keyed exports use, by device ordinal.
#[derive(Default)]
struct Slot {
    /// The pool set with gc_allocator_set_pool.
    current: Option<Arc<Held>>,
    /// Pools set before, replaced or unset while blocks allocated through
    /// the allocator were live: frees of those blocks still find their
    /// pool. Dropped when those blocks are all freed.
    retired: Vec<Arc<Held>>,
}

static SLOTS: RwLock<Vec<Slot>> = RwLock::new(Vec::new());

/// The most devices the allocator tracks (ordinals 0 to this - 1).
pub const GC_ALLOCATOR_MAX_DEVICES: c_int = 64;

fn check_device(device: c_int) -> Result<usize> {
    if !(0..GC_ALLOCATOR_MAX_DEVICES).contains(&device) {
        return Err(Error::invalid_argument(format!(
            "`device` is {device}; devices 0 to {} are supported",
            GC_ALLOCATOR_MAX_DEVICES - 1
        )));
    }
    Ok(device as usize)
}

/// Allocates `size` bytes from the pool set for `device`. The block is
/// counted before the allocation (under the table's lock, so a
/// gc_allocator_set_pool racing with it sees it) and uncounted if it fails.
fn alloc_device(device: c_int, size: usize) -> Result<u64> {
    let d = check_device(device)?;
    let held = {
        let slots = SLOTS.read().unwrap_or_else(PoisonError::into_inner);
        let held = slots.get(d).and_then(|s| s.current.clone());
        if let Some(h) = &held {
            h.live.fetch_add(1, Ordering::Relaxed);
        }
        held
    };
    let Some(h) = held else {
        return Err(no_pool(device));
    };
    h.pool.alloc(size as u64).inspect_err(|_| {
        h.live.fetch_sub(1, Ordering::Relaxed);
    })
}

/// The error for a device with no pool: no driver, no such device, or no
/// pool set.
#[cold]
fn no_pool(device: c_int) -> Error {
    let count = match graphcore_core::device_count() {
        Ok(n) => n,
        Err(e) => return e,
    };
    if device >= count {
        return Error::invalid_argument(format!(
            "`device` is {device}, but the machine has {count} CUDA device(s)"
        ));
    }
    Error::invalid_state(format!(
        "no pool is set for device {device}: call gc_allocator_set_pool first"
    ))
}

/// The pool `user` names for a generic export, checked against `device`.
fn engine_pool(user: *mut c_void, device: c_int) -> Result<Pool> {
    let p = POOLS.get(user as u64, "user")?;
    let own = p.context().ordinal();
    if device != -1 && device != own {
        return Err(Error::invalid_argument(format!(
            "`device` is {device}, but the pool `user` is of device {own} (pass {own} or -1)"
        )));
    }
    Ok(p)
}

/// Runs an allocation: the pointer, or NULL with the last error set.
fn alloc_with(func: &str, size: usize, alloc: impl FnOnce() -> Result<u64>) -> *mut c_void {
    if size == 0 {
        return std::ptr::null_mut();
    }
    let mut out = 0u64;
    let st = boundary(func, || {
        out = alloc().map_err(named)?;
        Ok(())
    });
    if st == gc_status::GC_SUCCESS {
        out as *mut c_void
    } else {
        std::ptr::null_mut()
    }
}

/// Frees `ptr` into the pool of `device`'s slot it belongs to: the current
/// pool, else a retired one (dropped once its blocks are all freed).
fn free_device(device: c_int, ptr: u64) -> Result<()> {
    let d = check_device(device)?;
    let current = {
        let slots = SLOTS.read().unwrap_or_else(PoisonError::into_inner);
        let Some(s) = slots.get(d) else {
            return Err(not_ours(device, ptr));
        };
        match s
            .current
            .as_ref()
            .filter(|h| h.pool.block_of(ptr).is_some())
        {
            Some(h) => Some(h.clone()),
            None if s.retired.is_empty() => return Err(not_ours(device, ptr)),
            None => None,
        }
    };
    if let Some(h) = current {
        h.pool.free(ptr)?;
        h.live.fetch_sub(1, Ordering::Relaxed);
        return Ok(());
    }
    // Under the write lock, the current pool again: a gc_allocator_set_pool
    // between the two locks may have set the block's pool again (taking it
    // from the retired list).
    let mut slots = SLOTS.write().unwrap_or_else(PoisonError::into_inner);
    let s = &mut slots[d];
    if let Some(h) = s
        .current
        .as_ref()
        .filter(|h| h.pool.block_of(ptr).is_some())
    {
        h.pool.free(ptr)?;
        h.live.fetch_sub(1, Ordering::Relaxed);
        return Ok(());
    }
    let Some(i) = s
        .retired
        .iter()
        .position(|h| h.pool.block_of(ptr).is_some())
    else {
        return Err(not_ours(device, ptr));
    };
    s.retired[i].pool.free(ptr)?;
    if s.retired[i].live.fetch_sub(1, Ordering::Relaxed) <= 1 {
        let gone = s.retired.swap_remove(i);
        // The last reference to a pool waits for the device: not under
        // the table's lock.
        drop(slots);
        drop(gone);
    }
    Ok(())
}

/// The error with its status's name in front: these exports return no
/// status, so gc_last_error() carries it.
#[cold]
fn named(e: Error) -> Error {
    let name = e.kind().status_name().to_string_lossy().into_owned();
    e.context(&name)
}

#[cold]
fn not_ours(device: c_int, ptr: u64) -> Error {
    Error::invalid_argument(format!(
        "`ptr` 0x{ptr:x} is not a live block of a pool set for device {device} (freed twice, \
         or not allocated through this allocator)"
    ))
}

/// Sets the pool that gc_torch_alloc (and gc_engine_alloc with a NULL
/// `user`) allocate from on device `device`; NULL unsets it (later
/// allocations on the device return NULL). The allocator holds the pool:
/// the handle may be destroyed afterwards, and the pool lives until it is
/// unset or replaced. Blocks allocated from a pool that is then replaced
/// or unset may still be freed with gc_torch_free: the allocator keeps
/// that pool until the blocks it handed out from it are all freed.
/// Setting the pool already set is a no-op. Needs no driver to unset.
/// Errors: GC_ERROR_INVALID_ARGUMENT (device is negative or not below
/// GC_ALLOCATOR_MAX_DEVICES, or the pool is of another device),
/// GC_ERROR_INVALID_HANDLE (pool destroyed, or not a pool).
/// Thread safety: may run concurrently with allocations and frees.
#[no_mangle]
pub extern "C" fn gc_allocator_set_pool(device: c_int, pool: *mut gc_pool) -> gc_status {
    boundary("gc_allocator_set_pool", || {
        let d = check_device(device)?;
        let new = if pool.is_null() {
            None
        } else {
            let p = POOLS.get(pool as u64, "pool")?;
            let own = p.context().ordinal();
            if own != device {
                return Err(Error::invalid_argument(format!(
                    "`pool` is of device {own}, not of `device` {device}"
                )));
            }
            Some(p)
        };
        let mut slots = SLOTS.write().unwrap_or_else(PoisonError::into_inner);
        if slots.len() <= d {
            slots.resize_with(d + 1, Slot::default);
        }
        let s = &mut slots[d];
        if let Some(old) = s.current.take() {
            if new.as_ref().is_some_and(|n| n.same(&old.pool)) {
                s.current = Some(old);
                return Ok(());
            }
            s.retired.push(old);
        }
        // A pool set again takes its count back from the retired list.
        let back = new.as_ref().and_then(|n| {
            let i = s.retired.iter().position(|h| h.pool.same(n))?;
            Some(s.retired.swap_remove(i))
        });
        let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut s.retired)
            .into_iter()
            .partition(|h| h.live.load(Ordering::Relaxed) > 0);
        s.retired = keep;
        let new = new.map(|pool| {
            back.unwrap_or_else(|| {
                Arc::new(Held {
                    pool,
                    live: AtomicI64::new(0),
                })
            })
        });
        s.current = new;
        // Pools let go are released (a wait for the device) after the lock.
        drop(slots);
        drop(gone);
        Ok(())
    })
}

/// PyTorch's pluggable allocator alloc: `size` bytes (rounded up to 256,
/// 256-byte aligned) from the pool set for `device` with
/// gc_allocator_set_pool. `stream` (a cudaStream_t) is not used: see
/// "stream-ordered" in the section above. On a thread capturing into that
/// pool the block belongs to the capture, as with gc_pool_alloc. Returns
/// the block, NULL for size 0 (no error set), or NULL on failure with
/// gc_last_error() saying why: no driver (GC_ERROR_NO_DRIVER), no such
/// device or a size that overflows (GC_ERROR_INVALID_ARGUMENT), no pool
/// set (GC_ERROR_INVALID_STATE), the pool's max_bytes or the device's
/// memory reached (GC_ERROR_OUT_OF_MEMORY). The caller frees the block with
/// gc_torch_free (or gc_pool_free on its pool). Thread safety: any thread,
/// concurrently.
///
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_torch_alloc(size: usize, device: c_int, stream: *mut c_void) -> *mut c_void {
    let _ = stream;
    alloc_with("gc_torch_alloc", size, || alloc_device(device, size))
}

/// PyTorch's pluggable allocator free: returns `ptr` to the pool of
/// `device` it came from (the pool set now, or one set before and replaced
/// while the block was live). The block may be handed out again by the
/// next allocation at once (see "stream-ordered" above); `size` and
/// `stream` are not used. NULL is a no-op. A pointer no such pool handed
/// out, or one freed already, changes nothing and sets gc_last_error()
/// (GC_ERROR_INVALID_ARGUMENT). Thread safety: any thread, concurrently.
///
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_torch_free(ptr: *mut c_void, size: usize, device: c_int, stream: *mut c_void) {
    let _ = (size, stream);
    if ptr.is_null() {
        return;
    }
    boundary("gc_torch_free", || {
        free_device(device, ptr as u64).map_err(named)
    });
}

/// The generic alloc, for allocator interfaces that pass a user pointer:
/// `user` is a gc_pool handle to allocate from (then `device` must be the
/// pool's device or -1), or NULL for the pool set for `device` with
/// gc_allocator_set_pool. Otherwise as gc_torch_alloc: `stream` is not
/// used, a capture into the pool on this thread owns the block, NULL for
/// size 0 (no error) or on failure (gc_last_error() says why; a `user`
/// that is not a live pool handle is GC_ERROR_INVALID_HANDLE's message).
/// Free the block with gc_engine_free (same `user`) or gc_pool_free.
/// Thread safety: any thread, concurrently.
///
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_engine_alloc(
    user: *mut c_void,
    size: usize,
    device: c_int,
    stream: *mut c_void,
) -> *mut c_void {
    let _ = stream;
    alloc_with("gc_engine_alloc", size, || {
        if user.is_null() {
            return alloc_device(device, size);
        }
        engine_pool(user, device)?.alloc(size as u64)
    })
}

/// The generic free: returns `ptr` to the pool `user` (a gc_pool handle),
/// or with a NULL `user` as gc_torch_free does for `device`. `size` and
/// `stream` are not used; NULL is a no-op; a pointer the pool did not hand
/// out, or one freed already, changes nothing and sets gc_last_error()
/// (a `user` that is not a live pool handle: GC_ERROR_INVALID_HANDLE's
/// message). Thread safety: any thread, concurrently.
///
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_engine_free(
    user: *mut c_void,
    ptr: *mut c_void,
    size: usize,
    device: c_int,
    stream: *mut c_void,
) {
    let _ = (size, stream);
    if ptr.is_null() {
        return;
    }
    boundary("gc_engine_free", || {
        if user.is_null() {
            return free_device(device, ptr as u64).map_err(named);
        }
        engine_pool(user, device)
            .and_then(|p| p.free(ptr as u64))
            .map_err(named)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphcore_core::ErrorKind;

    /// The kind of error the last failed call on this thread named.
    fn last_kind() -> Option<ErrorKind> {
        // SAFETY: gc_last_error returns this thread's NUL-terminated message.
        let msg = unsafe { std::ffi::CStr::from_ptr(crate::status::gc_last_error()) };
        let m = msg.to_string_lossy();
        ErrorKind::ALL
            .iter()
            .copied()
            .find(|k| m.contains(k.status_name().to_str().unwrap()))
    }

    #[test]
    fn without_a_pool_allocations_are_null_and_say_why() {
        assert!(gc_torch_alloc(0, 0, std::ptr::null_mut()).is_null());
        assert!(gc_torch_alloc(256, -1, std::ptr::null_mut()).is_null());
        assert_eq!(last_kind(), Some(ErrorKind::InvalidArgument));
        assert!(gc_torch_alloc(256, 0, std::ptr::null_mut()).is_null());
        assert!(last_kind().is_some());
        gc_torch_free(std::ptr::null_mut(), 0, 0, std::ptr::null_mut());
        assert_eq!(
            gc_allocator_set_pool(0, std::ptr::null_mut()),
            gc_status::GC_SUCCESS
        );
        assert_eq!(
            gc_allocator_set_pool(GC_ALLOCATOR_MAX_DEVICES, std::ptr::null_mut()),
            gc_status::GC_ERROR_INVALID_ARGUMENT
        );
    }
}
