//! Asynchronous copies and sets on a stream. Before anything is enqueued,
//! each range is checked against the live blocks of the context's pools
//! (see `pool::check_pool_range`).

use crate::driver::memory::{self as dm, Memset};
use crate::error::{ensure_arg, Result};
use crate::pool::check_pool_range;
use crate::stream::{Stream, StreamOp};

/// Copies `bytes` from `src` to `dst` on `stream`. Either side may be
/// device memory or host memory (unified addressing); pinned host memory
/// keeps the copy asynchronous. Zero bytes is a no-op. A range that starts
/// in a live pool block and runs past its end is refused, as is one that
/// wraps around the address space.
///
/// # Safety
/// `dst` and `src` must each be valid for `bytes` bytes (device memory of
/// the stream's context, or host memory), and stay valid until the copy
/// has run on the stream (or, when the stream captures, for as long as the
/// graph runs). Ranges outside graphcore's pools cannot be checked.
pub unsafe fn copy_async(stream: &Stream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    ensure_arg!(dst != 0, "`dst` is NULL");
    ensure_arg!(src != 0, "`src` is NULL");
    if bytes == 0 {
        return Ok(());
    }
    check_pool_range(stream.context(), "dst", dst, bytes)?;
    check_pool_range(stream.context(), "src", src, bytes)?;
    stream.context().bind()?;
    stream.note(
        StreamOp::Copy,
        dm::copy_async(dst, src, bytes, stream.raw()),
    )
}

/// Sets `bytes` bytes at device address `dst` to `value` on `stream`: a
/// [`set_elements_async`] of bytes.
///
/// # Safety
/// As for [`set_elements_async`].
pub unsafe fn set_async(stream: &Stream, dst: u64, value: u8, bytes: usize) -> Result<()> {
    // SAFETY: this function's contract is the callee's.
    unsafe { set_elements_async(stream, dst, value as u32, 1, bytes) }
}

/// Sets `count` elements of `elem_size` bytes (1, 2 or 4) at device
/// address `dst` to `value` on `stream`. `dst` must be aligned to
/// `elem_size` and `value` must fit in an element. Zero elements is a
/// no-op. A range that starts in a live pool block and runs past its end is
/// refused, as is one that wraps around the address space.
///
/// # Safety
/// `dst` must be device memory of the stream's context valid for
/// `count * elem_size` bytes until the set has run on the stream (or, when
/// the stream captures, for as long as the graph runs).
pub unsafe fn set_elements_async(
    stream: &Stream,
    dst: u64,
    value: u32,
    elem_size: u32,
    count: usize,
) -> Result<()> {
    let m = Memset::new(dst, value, elem_size, count)?;
    if count == 0 {
        return Ok(());
    }
    check_pool_range(stream.context(), "dst", dst, m.bytes())?;
    stream.context().bind()?;
    stream.note(StreamOp::Set, dm::set_async(&m, stream.raw()))
}
