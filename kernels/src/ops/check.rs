//! Argument checks every operation shares: pointers, counts, sizes and overlaps.

use crate::SizeError;

/// Bytes of an `f32`, the unit of every buffer.
pub(super) const F32: u64 = 4;

/// A buffer for overlap checks: name, address, byte length.
#[derive(Clone, Copy)]
pub(super) struct Region {
    name: &'static str,
    addr: u64,
    bytes: u64,
}

/// The multiprocessor count must be at least 1.
pub(super) fn positive_sms(sms: u32) -> Result<(), SizeError> {
    if sms == 0 {
        return Err(SizeError::NoMultiprocessors);
    }
    Ok(())
}

/// A count or size must be at least 1.
pub(super) fn nonzero(arg: &'static str, v: u64) -> Result<(), SizeError> {
    if v == 0 {
        return Err(SizeError::Zero { arg });
    }
    Ok(())
}

/// Byte length of `n` floats.
pub(super) fn floats(arg: &'static str, n: u64) -> Result<u64, SizeError> {
    nonzero(arg, n)?;
    n.checked_mul(F32)
        .ok_or(SizeError::ByteOverflow { arg, floats: n })
}

/// `rows * cols` elements, below 2^32.
pub(super) fn elems(matrix: &'static str, rows: u64, cols: u64) -> Result<u64, SizeError> {
    let e = rows.saturating_mul(cols);
    if e > u32::MAX as u64 {
        return Err(SizeError::TooManyElements { matrix, rows, cols });
    }
    Ok(e)
}

/// A required buffer of `bytes` at `addr`.
pub(super) fn buf(name: &'static str, addr: u64, bytes: u64) -> Result<Region, SizeError> {
    if addr == 0 {
        return Err(SizeError::Null { arg: name });
    }
    opt_buf(name, addr, bytes)
}

/// An optional buffer (`addr == 0`: absent, an empty region).
pub(super) fn opt_buf(name: &'static str, addr: u64, bytes: u64) -> Result<Region, SizeError> {
    if addr == 0 {
        return Ok(Region {
            name,
            addr,
            bytes: 0,
        });
    }
    if addr % F32 != 0 {
        return Err(SizeError::Misaligned { arg: name, addr });
    }
    if addr.checked_add(bytes).is_none() {
        return Err(SizeError::PastAddressSpace {
            arg: name,
            addr,
            bytes,
        });
    }
    Ok(Region { name, addr, bytes })
}

/// `out` and `input` must not overlap, except exactly (same address and
/// length) when `in_place` is allowed.
pub(super) fn apart(out: Region, input: Region, in_place: bool) -> Result<(), SizeError> {
    if out.bytes == 0 || input.bytes == 0 {
        return Ok(());
    }
    let overlap = out.addr < input.addr + input.bytes && input.addr < out.addr + out.bytes;
    if !overlap || (in_place && out.addr == input.addr && out.bytes == input.bytes) {
        return Ok(());
    }
    Err(SizeError::Overlap {
        output: out.name,
        input: input.name,
        in_place_allowed: in_place,
    })
}
