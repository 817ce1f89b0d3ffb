//! The pool's allocator logic: pure, no CUDA calls (the suite checks that
//! nothing in this folder names the driver or any module outside it), so
//! all of it is tested without a GPU, under Miri too. The device side
//! (`pool/device.rs`, `pool/range.rs`) maps pages and turns offsets into
//! addresses.
//!
//! The pool backs allocations with one reserved, contiguous virtual address
//! range of [`PoolConfig::va_bytes`] bytes, into which physical pages of
//! [`PoolConfig::granularity`] bytes are mapped on demand. This module works
//! on byte offsets into that range; the driver layer turns them into device
//! pointers and performs the mapping and unmapping that the plans describe.
//!
//! * Allocation is two-phase: [`Allocator::plan_alloc`] (pure) says where a
//!   block goes and which runs of pages must be newly mapped (several when
//!   the block spans mapped free pages between unmapped ones); the driver
//!   maps them and calls [`Allocator::commit_alloc`]. A failed mapping
//!   unmaps the runs already mapped and drops the plan.
//! * Blocks are sub-allocated with splitting and coalescing (the placement
//!   policy and its measurements are in `placement.rs`), every offset and
//!   size a multiple of [`PoolConfig::alignment`]. Blocks are linked to
//!   their address neighbours (`blocks.rs`), live ones found by offset
//!   through a hash table (`live_table.rs`), free ones indexed per zone by
//!   size class (`classes.rs`), so an alloc + free needs no ordered search
//!   by offset. Free space is coalesced per zone: two adjacent free blocks
//!   always lie on pages of different zones (so across a zone boundary they
//!   stay two blocks).
//! * A freed eager block on clean pages may be *parked* instead (up to 8):
//!   kept whole, out of the live map, and handed to the next eager
//!   allocation of exactly its size with no placement or split
//!   ([`Allocator::alloc_parked`]). Every other operation settles the
//!   parked blocks into free space first, so placement, growth, trim and
//!   captures see the same free space as if they had been freed at once.
//! * Captures taint the pages their allocations touch. Eager allocations never
//!   land on a page touched by an open capture or a live graph; a capture
//!   never lands on a page touched by another open capture. Free space is kept
//!   in separate indexes per *zone* (unmapped, clean, graph-tainted, tainted
//!   by open capture `id`), so the taint rule costs nothing on the hot path.
//!
//! [`Allocator`] is single-threaded (`&mut self`); the caller serializes it
//! (the pool's spin lock), holding the lock from a plan to its commit.

mod allocator;
mod blocks;
mod classes;
mod error;
mod invariants;
mod live_table;
mod pages;
mod placement;
mod plan;
mod stats;

#[cfg(any(test, feature = "model"))]
pub mod model;
#[cfg(test)]
mod tests;

pub use allocator::Allocator;
pub use error::PoolError;
pub use plan::{AllocPlan, Footprint, PagePlan, PageRange};
pub use stats::PoolStats;

/// Identifies a stream capture into the pool. Must be nonzero.
pub type CaptureId = u64;

/// Who an allocation belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// An ordinary allocation made outside any capture.
    Eager,
    /// An allocation made by the open capture with this id.
    Capture(CaptureId),
}

/// Sizes that shape a pool. All values are in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Physical page size: the unit of mapping. A power of two, at least
    /// `alignment` (2 MiB by default, as CUDA's VMM granularity).
    pub granularity: u64,
    /// Alignment of every block's offset and size; a power of two (256).
    pub alignment: u64,
    /// Size of the reserved virtual address range; a nonzero multiple of
    /// `granularity`.
    pub va_bytes: u64,
    /// Bytes mapped at creation, rounded up to whole pages.
    pub initial_bytes: u64,
    /// Hard cap on mapped bytes; `u64::MAX` means no cap.
    pub max_bytes: u64,
}

impl Default for PoolConfig {
    /// 2 MiB pages, 256-byte alignment, 1 TiB of address space, nothing
    /// mapped up front, no cap.
    fn default() -> Self {
        PoolConfig {
            granularity: 2 << 20,
            alignment: 256,
            va_bytes: 1 << 40,
            initial_bytes: 0,
            max_bytes: u64::MAX,
        }
    }
}
