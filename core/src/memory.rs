//! Asynchronous copies and sets on a stream.

use crate::driver::memory as dm;
use crate::error::{ensure_arg, Result};
use crate::stream::Stream;

/// Copies `bytes` from `src` to `dst` on `stream`. Either side may be
/// device memory or host memory (unified addressing); pinned host memory
/// keeps the copy asynchronous. Zero bytes is a no-op.
pub fn copy_async(stream: &Stream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    ensure_arg!(dst != 0, "`dst` is NULL");
    ensure_arg!(src != 0, "`src` is NULL");
    if bytes == 0 {
        return Ok(());
    }
    stream.context().bind()?;
    stream.note(
        "gc_memcpy_async",
        dm::copy_async(dst, src, bytes, stream.raw()),
    )
}

/// Sets `bytes` bytes at device address `dst` to `value` on `stream`. Zero
/// bytes is a no-op.
pub fn set_async(stream: &Stream, dst: u64, value: u8, bytes: usize) -> Result<()> {
    ensure_arg!(dst != 0, "`dst` is NULL");
    if bytes == 0 {
        return Ok(());
    }
    stream.context().bind()?;
    stream.note(
        "gc_memset_async",
        dm::set_async(dst, value, bytes, stream.raw()),
    )
}
