//! Pool statistics, named as PyTorch names them.

/// A snapshot of the pool's counters. All values are plain numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Sum of the sizes of live blocks.
    pub allocated_bytes: u64,
    /// Bytes of mapped pages (pages × granularity).
    pub reserved_bytes: u64,
    /// Maximum `allocated_bytes` seen (since creation or `reset_peaks`).
    pub peak_allocated_bytes: u64,
    /// Maximum `reserved_bytes` seen (since creation or `reset_peaks`).
    pub peak_reserved_bytes: u64,
    /// Number of contiguous runs of mapped pages.
    pub segment_count: u64,
    /// Number of live blocks.
    pub block_count: u64,
    /// Number of free blocks on mapped pages.
    pub free_block_count: u64,
    /// Allocations committed, cumulative.
    pub alloc_count: u64,
    /// Blocks freed (including by `abort_capture`), cumulative.
    pub free_count: u64,
    /// Mapped pages touched by an open capture or a live graph.
    pub tainted_pages: u64,
    /// Captures open now.
    pub open_captures: u64,
    /// Graphs (finished captures) alive now.
    pub live_graphs: u64,
}
