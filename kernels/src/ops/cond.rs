//! Conditional-node setters (one thread each).

use super::check::{apart, buf, Region};
use crate::{args, Call, SizeError};

/// Comparisons of [`cond_set_f32`]: `*x < threshold`, `<=`, `>`, `>=`.
pub const CMP_LT: u32 = 0;
/// `*x <= threshold`.
pub const CMP_LE: u32 = 1;
/// `*x > threshold`.
pub const CMP_GT: u32 = 2;
/// `*x >= threshold`.
pub const CMP_GE: u32 = 3;

const ONE: [u32; 3] = [1, 1, 1];

/// A u32 in device memory (4-byte aligned).
fn word(name: &'static str, addr: u64) -> Result<Region, SizeError> {
    buf(name, addr, 4)
}

/// Sets conditional handle `handle` to the u32 at `value`.
pub fn cond_set_u32(handle: u64, value: u64) -> Result<Call, SizeError> {
    word("value", value)?;
    Ok(Call::new(args::CondSetU32 { handle, value }, ONE, ONE, 0))
}

/// `*counter += 1`; sets `handle` to `*counter < limit` (`limit > 0`).
pub fn cond_count(handle: u64, counter: u64, limit: u32) -> Result<Call, SizeError> {
    word("counter", counter)?;
    if limit == 0 {
        return Err(SizeError::Zero { arg: "limit" });
    }
    Ok(Call::new(
        args::CondCount {
            handle,
            counter,
            limit,
        },
        ONE,
        ONE,
        0,
    ))
}

/// Sets `handle` to the index of the first of the `count` ascending sizes
/// at `sizes` that holds `*rows` rows (`count` when none does).
pub fn cond_set_bucket(handle: u64, rows: u64, sizes: u64, count: u32) -> Result<Call, SizeError> {
    word("rows", rows)?;
    if count == 0 {
        return Err(SizeError::Zero { arg: "count" });
    }
    buf("sizes", sizes, 4 * count as u64)?;
    let a = args::CondSetBucket {
        handle,
        rows,
        sizes,
        count,
    };
    Ok(Call::new(a, ONE, ONE, 0))
}

/// Sets `handle` to `*x cmp threshold` (`cmp` one of `CMP_*`); with a
/// `counter` (non-zero), also `*counter += 1` and 0 once `*counter >=
/// limit` (`limit > 0`).
pub fn cond_set_f32(
    handle: u64,
    x: u64,
    threshold: f32,
    cmp: u32,
    counter: u64,
    limit: u32,
) -> Result<Call, SizeError> {
    let xr = word("x", x)?;
    if cmp > CMP_GE {
        return Err(SizeError::UnknownComparison { cmp });
    }
    if counter != 0 {
        apart(xr, word("counter", counter)?, false)?;
        if limit == 0 {
            return Err(SizeError::Zero { arg: "limit" });
        }
    }
    let a = args::CondSetF32 {
        handle,
        x,
        threshold,
        cmp,
        counter,
        limit,
    };
    Ok(Call::new(a, ONE, ONE, 0))
}
