//! Errors of the pool logic.

use std::fmt;

use super::CaptureId;

/// Why a pool operation was refused. A refused operation changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// A [`PoolConfig`](super::PoolConfig) field breaks its rule.
    InvalidConfig {
        /// The field's name.
        field: &'static str,
        /// The value given.
        value: u64,
        /// What the field must satisfy.
        rule: &'static str,
    },
    /// `initial_bytes`, rounded up to whole pages, exceeds `max_bytes`.
    InitialExceedsMax {
        /// `initial_bytes` rounded up to whole pages.
        initial: u64,
        /// The configured cap.
        max: u64,
    },
    /// The requested size is zero, or too large to round up to the alignment.
    InvalidSize {
        /// The size asked for.
        size: u64,
    },
    /// Placing the block would map pages beyond `max_bytes`.
    OutOfMemory {
        /// The block size (rounded up to the alignment).
        requested: u64,
        /// Bytes the block would newly map.
        needed: u64,
        /// Bytes mapped now.
        reserved: u64,
        /// The configured cap.
        max: u64,
    },
    /// No free run of the virtual address range is large enough.
    AddressSpaceExhausted {
        /// The block size (rounded up to the alignment).
        requested: u64,
        /// Size of the virtual address range.
        va_bytes: u64,
    },
    /// The offset is not the start of a live block (never handed out, or
    /// already freed).
    NotAllocated {
        /// The offset given.
        offset: u64,
    },
    /// Capture id 0 is reserved (ids are nonzero).
    InvalidCaptureId,
    /// `begin_capture` with the id of a capture that is already open.
    CaptureAlreadyOpen {
        /// The capture id.
        id: CaptureId,
    },
    /// The capture named (by an owner, `end_capture` or `abort_capture`) is
    /// not open.
    CaptureNotOpen {
        /// The capture id.
        id: CaptureId,
    },
    /// The footprint does not describe a live graph of this pool.
    UnknownGraph {
        /// The id of the capture that made the footprint.
        capture: CaptureId,
    },
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PoolError::InvalidConfig { field, value, rule } => {
                write!(f, "invalid pool config: {field} = {value}; it must be {rule}")
            }
            PoolError::InitialExceedsMax { initial, max } => write!(
                f,
                "invalid pool config: initial_bytes rounds up to {initial} bytes, over max_bytes = {max}"
            ),
            PoolError::InvalidSize { size } => {
                write!(f, "invalid allocation size {size}: must be nonzero and roundable to the alignment")
            }
            PoolError::OutOfMemory { requested, needed, reserved, max } => write!(
                f,
                "pool out of memory: a {requested}-byte block needs {needed} more bytes mapped, \
                 {reserved} are reserved and the cap is {max}"
            ),
            PoolError::AddressSpaceExhausted { requested, va_bytes } => write!(
                f,
                "pool address space exhausted: no free run of {requested} bytes in the {va_bytes}-byte range"
            ),
            PoolError::NotAllocated { offset } => {
                write!(f, "offset {offset} is not a live block of this pool (never allocated or already freed)")
            }
            PoolError::InvalidCaptureId => write!(f, "capture id 0 is invalid: ids are nonzero"),
            PoolError::CaptureAlreadyOpen { id } => write!(f, "capture {id} is already open on this pool"),
            PoolError::CaptureNotOpen { id } => write!(f, "capture {id} is not open on this pool"),
            PoolError::UnknownGraph { capture } => write!(
                f,
                "the footprint of capture {capture} is not a live graph of this pool"
            ),
        }
    }
}

impl std::error::Error for PoolError {}
