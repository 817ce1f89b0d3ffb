//! Range checks against live pool blocks, made before a copy or set is
//! enqueued or added to a graph: a range must not wrap around the address
//! space, and one that starts inside a live block of a pool of the context
//! must end inside that block (an overrun would silently corrupt the
//! neighbouring block, or fault on an unmapped page and kill the context).

use crate::context::{Context, PoolBlock};
use crate::driver::memory::pointer_info;
use crate::error::{ensure_arg, Error, Result};

/// Checks the range `addr .. addr + bytes` named `arg` (`bytes > 0`).
/// `block_of` gives the live pool block containing an address, as
/// `(start, size)`; a range starting in one must end in it. Pure, so the
/// rule is tested without a GPU.
pub(crate) fn check_range(
    arg: &str,
    addr: u64,
    bytes: usize,
    block_of: impl Fn(u64) -> Option<(u64, u64)>,
) -> Result<()> {
    let bytes = bytes as u64;
    let end = addr.checked_add(bytes).ok_or_else(|| {
        Error::invalid_argument(format!(
            "`{arg}` 0x{addr:x} + {bytes} bytes overflows the address space"
        ))
    })?;
    if let Some((start, size)) = block_of(addr) {
        let block_end = start + size;
        ensure_arg!(
            end <= block_end,
            "`{arg}` 0x{addr:x} + {bytes} bytes overruns its pool block: the block at 0x{start:x} \
             has {size} bytes and the range starts {} bytes into it, so it runs {} bytes past its end",
            addr - start,
            end - block_end
        );
    }
    Ok(())
}

/// Checks `addr .. addr + bytes` (`bytes > 0`), named `arg` in errors,
/// against every live pool of the process: an overrun of the live block it
/// starts in, a range wrapping the address space, or a block of another
/// device's pool that has not granted `ctx`'s device peer access, is
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument). For
/// every operation that writes or reads a caller's range (copies, sets,
/// graph copy and set nodes), which runs on `ctx`'s device.
pub(crate) fn check_pool_range(ctx: &Context, arg: &str, addr: u64, bytes: usize) -> Result<()> {
    let block = ctx.pool_block_at(addr);
    if let Some(b) = &block {
        check_access(arg, addr, ctx.ordinal(), b)?;
    }
    check_range(arg, addr, bytes, |_| block.map(|b| (b.start, b.size)))
}

/// Refuses `addr` (named `arg`), pool memory of device `block.device` used
/// on device `device`, unless that is its own device or its pool granted
/// `device` access. Pure.
fn check_access(arg: &str, addr: u64, device: i32, block: &PoolBlock) -> Result<()> {
    ensure_arg!(
        block.accessible,
        "`{arg}` (0x{addr:x}) is pool memory of device {} used on device {device}, and that pool \
         has no peer access for device {device}: enable peer access on that pool for device \
         {device} first",
        block.device
    );
    Ok(())
}

/// Checks that `addr .. addr + bytes` (`bytes > 0`), named `arg` in errors,
/// is device memory of `ctx`'s device that holds `bytes` bytes: inside one
/// live pool block for pool memory, else inside the allocation CUDA reports
/// around `addr`. NULL, host addresses (pageable or pinned), memory of
/// another device and a range running past its memory are
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
pub(crate) fn check_device_range(ctx: &Context, arg: &str, addr: u64, bytes: usize) -> Result<()> {
    device_range(ctx, arg, addr, bytes, &[]).map(|_| ())
}

/// [`check_device_range`] for a caller that remembers allocations outside
/// graphcore's pools it has checked before (`known`, each `start .. end`):
/// a range inside one of them (and in no pool block) needs no driver
/// query. Returns the allocation CUDA reported around `addr` when it was
/// queried, for the caller to remember; `None` otherwise.
pub(crate) fn device_range(
    ctx: &Context,
    arg: &str,
    addr: u64,
    bytes: usize,
    known: &[(u64, u64)],
) -> Result<Option<(u64, u64)>> {
    ensure_arg!(addr != 0, "`{arg}` is NULL");
    // A live block of one of the context's pools is device memory of its
    // device: no driver query is needed.
    if let Some(block) = ctx.pool_block_of(addr) {
        return check_range(arg, addr, bytes, |_| Some(block)).map(|()| None);
    }
    // Inside a pool's reserved range but in no live block: the driver
    // would call it device memory (the pages may still be mapped), but the
    // block was given back and may be handed to another allocation.
    ensure_arg!(
        !ctx.in_pool_range(addr),
        "`{arg}` (0x{addr:x}) lies in a graphcore pool but in no live block of it: the block \
         was freed or never allocated"
    );
    let end = addr.saturating_add(bytes as u64);
    if known.iter().any(|&(s, e)| s <= addr && end <= e) {
        return Ok(None);
    }
    let Some(info) = pointer_info(addr) else {
        return Err(Error::invalid_argument(format!(
            "`{arg}` (0x{addr:x}) is not device memory (a host address, or memory CUDA does not know)"
        )));
    };
    ensure_arg!(
        info.device == ctx.ordinal(),
        "`{arg}` (0x{addr:x}) is memory of device {}, not of this context's device {}",
        info.device,
        ctx.ordinal()
    );
    let have = (info.start + info.size).saturating_sub(addr);
    ensure_arg!(
        bytes as u64 <= have,
        "`{arg}` (0x{addr:x}) has {have} bytes up to the end of its allocation; {bytes} are needed"
    );
    Ok(Some((info.start, info.start + info.size)))
}

#[cfg(test)]
mod tests {
    use super::{check_access, check_range};
    use crate::context::PoolBlock;
    use crate::error::ErrorKind;

    /// Two live blocks: 0x1000 + 0x400 and 0x2000 + 0x100.
    fn blocks(a: u64) -> Option<(u64, u64)> {
        [(0x1000u64, 0x400u64), (0x2000, 0x100)]
            .into_iter()
            .find(|&(s, n)| a >= s && a < s + n)
    }

    #[test]
    fn ranges_inside_a_block_or_outside_pools_pass() {
        check_range("dst", 0x1000, 0x400, blocks).unwrap();
        check_range("dst", 0x1200, 0x200, blocks).unwrap();
        check_range("dst", 0x13ff, 1, blocks).unwrap();
        // Not in any pool block: graphcore cannot judge it; CUDA will.
        check_range("dst", 0x5000, 1 << 20, blocks).unwrap();
        check_range("src", 0x1400, 0x10000, blocks).unwrap();
    }

    #[test]
    fn an_overrun_names_both_sizes_and_the_excess() {
        let e = check_range("dst", 0x1100, 0x400, blocks).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let m = e.message();
        assert!(m.contains("`dst`"), "{m}");
        assert!(m.contains("1024 bytes overruns"), "{m}"); // the copy's size
        assert!(m.contains("has 1024 bytes"), "{m}"); // the block's size
        assert!(m.contains("starts 256 bytes into it"), "{m}");
        assert!(m.contains("runs 256 bytes past its end"), "{m}");
        let e = check_range("src", 0x2000, 0x101, blocks).unwrap_err();
        assert!(e.message().contains("`src`"), "{}", e.message());
        assert!(
            e.message().contains("runs 1 bytes past its end"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn peer_memory_needs_peer_access_naming_both_devices() {
        let mut peer = PoolBlock {
            start: 0x1000,
            size: 0x400,
            device: 1,
            accessible: false,
        };
        let e = check_access("src", 0x1000, 0, &peer).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let m = e.message();
        assert!(
            m.contains("pool memory of device 1 used on device 0"),
            "{m}"
        );
        assert!(m.contains("no peer access for device 0"), "{m}");
        peer.accessible = true;
        check_access("src", 0x1000, 0, &peer).unwrap();
    }

    #[test]
    fn a_range_wrapping_the_address_space_is_refused() {
        let e = check_range("dst", u64::MAX - 10, 11, |_| None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("overflows"), "{}", e.message());
        check_range("dst", u64::MAX - 10, 10, |_| None).unwrap();
        let e = check_range("dst", 1, usize::MAX, |_| None).unwrap_err();
        assert!(e.message().contains("overflows"), "{}", e.message());
    }
}
