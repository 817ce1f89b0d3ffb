//! What the pool asks the driver to do (page plans, allocation plans) and
//! what a finished capture holds (footprints).

use super::{CaptureId, Owner};

/// A run of `count` consecutive pages starting at page `start` (page `i`
/// covers bytes `i * granularity .. (i + 1) * granularity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageRange {
    /// Index of the first page.
    pub start: u64,
    /// Number of pages (nonzero).
    pub count: u64,
}

impl PageRange {
    /// One past the last page.
    pub fn end(&self) -> u64 {
        self.start + self.count
    }

    /// The byte offset of the first page and the byte length of the run.
    pub fn bytes(&self, granularity: u64) -> (u64, u64) {
        (self.start * granularity, self.count * granularity)
    }
}

/// Sorts pages and merges them into maximal runs.
pub(crate) fn pages_to_ranges(mut pages: Vec<u64>) -> Vec<PageRange> {
    pages.sort_unstable();
    pages.dedup();
    let mut out: Vec<PageRange> = Vec::new();
    for p in pages {
        match out.last_mut() {
            Some(r) if r.end() == p => r.count += 1,
            _ => out.push(PageRange { start: p, count: 1 }),
        }
    }
    out
}

/// Page runs to map or unmap, in increasing order, disjoint.
#[derive(Debug, PartialEq, Eq)]
pub struct PagePlan {
    pub(crate) ranges: Vec<PageRange>,
    /// State generation the plan was made against (checked by `commit_trim`).
    pub(crate) generation: u64,
}

impl PagePlan {
    /// The page runs.
    pub fn ranges(&self) -> &[PageRange] {
        &self.ranges
    }

    /// True when there is nothing to map or unmap.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Total number of pages.
    pub fn page_count(&self) -> u64 {
        self.ranges.iter().map(|r| r.count).sum()
    }
}

/// Where a block will go, made by `plan_alloc` against the current state.
/// Map every run of [`new_pages`](Self::new_pages), then pass the plan to
/// `commit_alloc`; to abandon it (a mapping failed: unmap the runs already
/// mapped), drop it.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "an AllocPlan does nothing until committed"]
pub struct AllocPlan {
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) owner: Owner,
    /// Increasing, disjoint, never adjacent; empty on the hot path.
    pub(crate) new_pages: Vec<PageRange>,
    /// The free block it goes into, when known (a hint checked at commit).
    pub(crate) hole: u32,
    pub(crate) generation: u64,
}

impl AllocPlan {
    /// Byte offset the block will have.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Block size: the request rounded up to the alignment.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Who the block will belong to.
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// Page runs the driver must map before committing, in increasing
    /// order (none when the block goes on mapped pages; several when it
    /// spans mapped free pages between unmapped ones).
    pub fn new_pages(&self) -> &[PageRange] {
        &self.new_pages
    }

    /// Total number of pages in [`new_pages`](Self::new_pages).
    pub fn new_page_count(&self) -> u64 {
        self.new_pages.iter().map(|r| r.count).sum()
    }
}

/// What a finished capture (a live graph) holds in the pool. Hand it back to
/// `release_graph` when the graph dies; it cannot be copied.
#[derive(Debug, PartialEq, Eq)]
pub struct Footprint {
    pub(crate) graph: u64,
    pub(crate) capture: CaptureId,
    pub(crate) pages: Vec<PageRange>,
    pub(crate) held_bytes: u64,
    pub(crate) peak_bytes: u64,
}

impl Footprint {
    /// The id of the capture that made this graph.
    pub fn capture_id(&self) -> CaptureId {
        self.capture
    }

    /// Pages the capture touched: they stay mapped, and closed to eager
    /// allocations, while the graph lives.
    pub fn pages(&self) -> &[PageRange] {
        &self.pages
    }

    /// Number of pages touched.
    pub fn page_count(&self) -> u64 {
        self.pages.iter().map(|r| r.count).sum()
    }

    /// Bytes the capture allocated that were still live when it ended.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// The capture's own peak of live allocated bytes during capture.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }
}
