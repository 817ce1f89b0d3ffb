//! The allocator: placement, commit, free, captures, graphs and trim.

use std::collections::{BTreeMap, HashSet};

use super::blocks::{BlockMap, State, NIL};
use super::classes::class;
use super::pages::{PageTable, Zone};
use super::plan::{pages_to_ranges, AllocPlan, Footprint, PagePlan, PageRange};
use super::{CaptureId, Owner, PoolConfig, PoolError, PoolStats};

/// An open capture's bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    /// Pages its allocations touched (each once).
    pub touched: Vec<u64>,
    /// Page runs newly mapped for its allocations.
    pub mapped: Vec<PageRange>,
    /// Offsets of its live blocks.
    pub live: HashSet<u64>,
    pub live_bytes: u64,
    pub peak_bytes: u64,
}

/// The pool's allocator state: pages, blocks, captures and graphs.
///
/// Single-threaded: the caller serializes access and holds its lock from
/// `plan_*` to the matching `commit_*`.
#[derive(Debug)]
pub struct Allocator {
    pub(crate) cfg: PoolConfig,
    pub(crate) pages: PageTable,
    pub(crate) blocks: BlockMap,
    pub(crate) captures: BTreeMap<CaptureId, Capture>,
    /// Live graphs: serial -> (capture id, touched pages).
    pub(crate) graphs: BTreeMap<u64, (CaptureId, Vec<PageRange>)>,
    next_graph: u64,
    /// log2(granularity).
    shift: u32,
    /// Bumped by every change; plans carry the value they were made against.
    generation: u64,
    pub(crate) allocated: u64,
    peak_allocated: u64,
    peak_reserved: u64,
    alloc_count: u64,
    free_count: u64,
}

fn config_error(field: &'static str, value: u64, rule: &'static str) -> PoolError {
    PoolError::InvalidConfig { field, value, rule }
}

impl Allocator {
    /// Creates a pool and the plan of pages to map for `initial_bytes`
    /// (already counted as mapped).
    pub fn new(cfg: PoolConfig) -> Result<(Allocator, PagePlan), PoolError> {
        if !cfg.alignment.is_power_of_two() {
            return Err(config_error("alignment", cfg.alignment, "a power of two"));
        }
        if !cfg.granularity.is_power_of_two() || cfg.granularity < cfg.alignment {
            return Err(config_error(
                "granularity",
                cfg.granularity,
                "a power of two, at least alignment",
            ));
        }
        if cfg.va_bytes == 0 || cfg.va_bytes % cfg.granularity != 0 {
            return Err(config_error(
                "va_bytes",
                cfg.va_bytes,
                "a nonzero multiple of granularity",
            ));
        }
        if cfg.initial_bytes > cfg.va_bytes {
            return Err(config_error(
                "initial_bytes",
                cfg.initial_bytes,
                "at most va_bytes",
            ));
        }
        let initial_pages = cfg.initial_bytes.div_ceil(cfg.granularity);
        let initial = initial_pages * cfg.granularity;
        if initial > cfg.max_bytes {
            return Err(PoolError::InitialExceedsMax {
                initial,
                max: cfg.max_bytes,
            });
        }
        let mut a = Allocator {
            cfg,
            pages: PageTable::default(),
            blocks: BlockMap::new(
                cfg.va_bytes,
                cfg.granularity.trailing_zeros(),
                cfg.alignment.trailing_zeros(),
            ),
            captures: BTreeMap::new(),
            graphs: BTreeMap::new(),
            next_graph: 0,
            shift: cfg.granularity.trailing_zeros(),
            generation: 0,
            allocated: 0,
            peak_allocated: 0,
            peak_reserved: 0,
            alloc_count: 0,
            free_count: 0,
        };
        let mut ranges = Vec::new();
        if initial_pages > 0 {
            let r = PageRange {
                start: 0,
                count: initial_pages,
            };
            a.map_pages(r);
            a.rezone(r.start, r.end());
            ranges.push(r);
        }
        let plan = PagePlan {
            ranges,
            generation: a.generation,
        };
        Ok((a, plan))
    }

    /// The configuration the pool was made with.
    pub fn config(&self) -> &PoolConfig {
        &self.cfg
    }

    pub(crate) fn reserved(&self) -> u64 {
        self.pages.mapped() * self.cfg.granularity
    }

    fn map_pages(&mut self, r: PageRange) {
        self.pages.map(r);
        self.blocks.extend_pages(self.pages.len());
        self.peak_reserved = self.peak_reserved.max(self.reserved());
    }

    /// Re-cuts the free space on pages `p0..p1` after their zones changed.
    fn rezone(&mut self, p0: u64, p1: u64) {
        let g = self.cfg.granularity;
        let pages = &self.pages;
        self.blocks.rezone(p0 * g, p1 * g, |p| pages.zone(p));
    }

    /// Rezones each maximal run of the given (sorted) pages.
    fn rezone_pages(&mut self, ranges: &[PageRange]) {
        for r in ranges {
            self.rezone(r.start, r.end());
        }
    }

    /// Plans an allocation of `size` bytes (rounded up to the alignment) for
    /// `owner`. The parked blocks are settled first (see
    /// [`alloc_parked`](Self::alloc_parked)); otherwise the pool is
    /// unchanged until `commit_alloc`.
    ///
    /// Placement (see `placement.rs`): free space on mapped pages first (for
    /// a capture, space it or live graphs already tainted before clean
    /// space); otherwise the spot that maps the fewest new pages.
    #[inline]
    pub fn plan_alloc(&mut self, size: u64, owner: Owner) -> Result<AllocPlan, PoolError> {
        let size = self.rounded(size).ok_or(PoolError::InvalidSize { size })?;
        self.settle();
        if let Owner::Capture(id) = owner {
            if !self.captures.contains_key(&id) {
                return Err(PoolError::CaptureNotOpen { id });
            }
        }
        let mapped = self.place_mapped(size, owner);
        let (offset, hole, new_pages) = match mapped {
            Some((offset, hole)) => (offset, hole, Vec::new()),
            None => {
                let (offset, new_pages) = self.plan_growth(size, owner)?;
                (offset, NIL, new_pages)
            }
        };
        Ok(AllocPlan {
            offset,
            size,
            owner,
            new_pages,
            hole,
            generation: self.generation,
        })
    }

    /// Applies a plan made by `plan_alloc` against the current state, after
    /// the driver mapped its pages; returns the block's offset.
    ///
    /// # Panics
    /// If the pool changed since the plan was made (a caller bug).
    #[inline]
    pub fn commit_alloc(&mut self, plan: AllocPlan) -> u64 {
        assert_eq!(
            plan.generation, self.generation,
            "stale AllocPlan: the pool changed between plan_alloc and commit_alloc"
        );
        self.generation += 1;
        let (off, size) = (plan.offset, plan.size);
        let (p0, p1) = (off >> self.shift, ((off + size - 1) >> self.shift) + 1);
        let mut rezone = false;
        if !plan.new_pages.is_empty() {
            for &r in &plan.new_pages {
                self.map_pages(r);
            }
            if let Owner::Capture(id) = plan.owner {
                self.captures
                    .get_mut(&id)
                    .expect("capture open")
                    .mapped
                    .extend_from_slice(&plan.new_pages);
            }
            rezone = true;
        }
        if let Owner::Capture(id) = plan.owner {
            let cap = self.captures.get_mut(&id).expect("capture open");
            for p in p0..p1 {
                if self.pages.set_open(p, id) {
                    cap.touched.push(p);
                    rezone = true;
                }
            }
            cap.live.insert(off);
            cap.live_bytes += size;
            cap.peak_bytes = cap.peak_bytes.max(cap.live_bytes);
        }
        if rezone {
            self.rezone(p0, p1);
        }
        self.blocks.carve(off, size, plan.owner, plan.hole);
        self.allocated += size;
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        self.alloc_count += 1;
        off
    }

    /// `size` rounded up to the alignment; `None` for 0 or an overflow.
    #[inline]
    fn rounded(&self, size: u64) -> Option<u64> {
        let align = self.cfg.alignment;
        match size.checked_add(align - 1) {
            Some(s) if size > 0 => Some(s & !(align - 1)),
            _ => None,
        }
    }

    /// The hot path of an eager allocation: the most recently freed eager
    /// block of exactly this (rounded) size, if one is parked, made live
    /// again with no placement or split. `None`: nothing parked fits (or
    /// `owner` is a capture); plan the allocation instead.
    ///
    /// An eager block freed while no capture is open, whose pages are all
    /// clean, is parked (up to `blocks::PARKED` of them) rather than merged
    /// into free space: engines free and allocate the same sizes over and
    /// over.
    /// Every other operation settles the parked blocks first (merges them
    /// as `free` would have), so placement, growth, trim and captures see
    /// the same free space as without parking.
    #[inline]
    pub fn alloc_parked(&mut self, size: u64, owner: Owner) -> Option<u64> {
        if owner != Owner::Eager {
            return None;
        }
        let size = self.rounded(size)?;
        let off = self.blocks.unpark(size)?;
        self.generation += 1;
        self.allocated += size;
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        self.alloc_count += 1;
        Some(off)
    }

    /// Allocates as the device pool does, for callers with no pages to map
    /// (simulations, tests): a parked block of the size, else a plan
    /// committed at once (its new pages counted as mapped).
    pub fn alloc(&mut self, size: u64, owner: Owner) -> Result<u64, PoolError> {
        if let Some(off) = self.alloc_parked(size, owner) {
            return Ok(off);
        }
        let plan = self.plan_alloc(size, owner)?;
        Ok(self.commit_alloc(plan))
    }

    /// Merges the parked blocks into free space (a no-op when none is).
    #[inline]
    pub fn settle(&mut self) {
        if self.blocks.parked().next().is_some() {
            self.generation += 1;
            let pages = &self.pages;
            self.blocks.settle(|p| pages.zone(p));
        }
    }

    /// Frees the live block at `offset`; returns its size. An offset that is
    /// not the start of a live block is an error and changes nothing. An
    /// eager block may be parked (see [`alloc_parked`](Self::alloc_parked)).
    #[inline]
    pub fn free(&mut self, offset: u64) -> Result<u64, PoolError> {
        let Some((i, size, owner)) = self.blocks.unlive(offset) else {
            return Err(PoolError::NotAllocated { offset });
        };
        self.generation += 1;
        self.allocated -= size;
        self.free_count += 1;
        let (p0, p1) = (
            offset >> self.shift,
            ((offset + size - 1) >> self.shift) + 1,
        );
        let parkable = owner == Owner::Eager
            && self.captures.is_empty()
            && (p0..p1).all(|p| self.pages.zone(p) == Zone::Clean);
        if !(parkable && self.blocks.park(i)) {
            self.release(i, offset, size, owner);
        }
        Ok(size)
    }

    /// Frees node `i` (out of the live map: the block `offset + size` of
    /// `owner`) into free space; the rest of `free` when it cannot park.
    #[inline(never)]
    fn release(&mut self, i: u32, offset: u64, size: u64, owner: Owner) {
        let pages = &self.pages;
        self.blocks.release_live(i, |p| pages.zone(p));
        if let Owner::Capture(id) = owner {
            if let Some(cap) = self.captures.get_mut(&id) {
                if cap.live.remove(&offset) {
                    cap.live_bytes -= size;
                }
            }
        }
    }

    /// The live block containing byte `addr_offset`: `(start, size)`.
    pub fn block_at(&self, addr_offset: u64) -> Option<(u64, u64)> {
        match self.blocks.containing(addr_offset) {
            Some((o, b))
                if matches!(b.state, State::Live(_))
                    && !self.blocks.parked().any(|(p, _)| p == o) =>
            {
                Some((o, b.size))
            }
            _ => None,
        }
    }

    /// A snapshot of the counters. Parked blocks count as freed: not in
    /// `allocated_bytes` or `block_count`, and in `free_block_count` as the
    /// free space they settle into.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocated_bytes: self.allocated,
            reserved_bytes: self.reserved(),
            peak_allocated_bytes: self.peak_allocated,
            peak_reserved_bytes: self.peak_reserved,
            segment_count: self.pages.segments(),
            block_count: self.blocks.live_count(),
            free_block_count: self.blocks.free_mapped_count(),
            alloc_count: self.alloc_count,
            free_count: self.free_count,
            tainted_pages: self.pages.tainted(),
            open_captures: self.captures.len() as u64,
            live_graphs: self.graphs.len() as u64,
        }
    }

    /// Resets the peaks to the current values.
    pub fn reset_peaks(&mut self) {
        self.peak_allocated = self.allocated;
        self.peak_reserved = self.reserved();
    }

    /// Opens capture `id`: allocations owned by `Owner::Capture(id)` belong
    /// to it from now on.
    pub fn begin_capture(&mut self, id: CaptureId) -> Result<(), PoolError> {
        if id == 0 {
            return Err(PoolError::InvalidCaptureId);
        }
        if self.captures.contains_key(&id) {
            return Err(PoolError::CaptureAlreadyOpen { id });
        }
        // Parked blocks lie on clean pages the capture may now taint.
        self.settle();
        self.generation += 1;
        self.captures.insert(id, Capture::default());
        Ok(())
    }

    /// Closes capture `id`, which becomes a live graph: each page it touched
    /// gains a graph reference (and stays closed to eager allocations) until
    /// `release_graph`. Its blocks stay live.
    pub fn end_capture(&mut self, id: CaptureId) -> Result<Footprint, PoolError> {
        let cap = self
            .captures
            .remove(&id)
            .ok_or(PoolError::CaptureNotOpen { id })?;
        self.generation += 1;
        for &p in &cap.touched {
            self.pages.close(p, true);
        }
        let pages = pages_to_ranges(cap.touched);
        self.rezone_pages(&pages);
        let graph = self.next_graph;
        self.next_graph += 1;
        self.graphs.insert(graph, (id, pages.clone()));
        Ok(Footprint {
            graph,
            capture: id,
            pages,
            held_bytes: cap.live_bytes,
            peak_bytes: cap.peak_bytes,
        })
    }

    /// Rolls capture `id` back: frees its live blocks, removes its taint and
    /// unmaps the pages mapped for it that now hold nothing. Returns those
    /// pages (already counted as unmapped) for the driver to unmap.
    pub fn abort_capture(&mut self, id: CaptureId) -> Result<PagePlan, PoolError> {
        let cap = self
            .captures
            .remove(&id)
            .ok_or(PoolError::CaptureNotOpen { id })?;
        self.generation += 1;
        let mut live: Vec<u64> = cap.live.into_iter().collect();
        live.sort_unstable();
        for off in live {
            self.free(off).expect("capture block is live");
        }
        for &p in &cap.touched {
            self.pages.close(p, false);
        }
        self.rezone_pages(&pages_to_ranges(cap.touched));
        let g = self.cfg.granularity;
        let mut empty = Vec::new();
        for r in &cap.mapped {
            for p in r.start..r.end() {
                if self.page_unused(p) {
                    empty.push(p);
                }
            }
        }
        let ranges = pages_to_ranges(empty);
        for &r in &ranges {
            self.pages.unmap(r);
            self.rezone(r.start, r.end());
        }
        debug_assert!(ranges.iter().all(|r| r.start * g < self.cfg.va_bytes));
        Ok(PagePlan {
            ranges,
            generation: self.generation,
        })
    }

    /// Page `p` is mapped, untainted and wholly inside one free block.
    fn page_unused(&self, p: u64) -> bool {
        let g = self.cfg.granularity;
        self.pages.zone(p) == Zone::Clean
            && self.blocks.containing(p * g).is_some_and(|(o, b)| {
                o + b.size >= (p + 1) * g && b.state == State::Free(Zone::Clean)
            })
    }

    /// A graph died: drops the page references its footprint holds. A
    /// footprint not made by this pool is an error and changes nothing.
    pub fn release_graph(&mut self, fp: Footprint) -> Result<(), PoolError> {
        match self.graphs.get(&fp.graph) {
            Some((c, pages)) if *c == fp.capture && *pages == fp.pages => {}
            _ => {
                return Err(PoolError::UnknownGraph {
                    capture: fp.capture,
                })
            }
        }
        self.graphs.remove(&fp.graph);
        self.settle();
        self.generation += 1;
        for r in &fp.pages {
            for p in r.start..r.end() {
                self.pages.unref(p);
            }
        }
        self.rezone_pages(&fp.pages);
        Ok(())
    }

    /// Plans a trim: the mapped pages that are wholly free and untainted.
    /// Settles the parked blocks, otherwise pure; the driver synchronizes,
    /// unmaps them, then calls `commit_trim`.
    pub fn plan_trim(&mut self) -> PagePlan {
        self.settle();
        let g = self.cfg.granularity;
        let mut ranges: Vec<PageRange> = self
            .blocks
            // A block is indexed at most one class below its own.
            .holes_from(Zone::Clean, class(g).saturating_sub(1))
            .filter_map(|(_, o, i)| {
                let s = self.blocks.size_of(i);
                let (first, end) = (o.div_ceil(g), (o + s) / g);
                // Lazily: a hole inside one page has first > end.
                (first < end).then(|| PageRange {
                    start: first,
                    count: end - first,
                })
            })
            .collect();
        ranges.sort_unstable();
        PagePlan {
            ranges,
            generation: self.generation,
        }
    }

    /// Applies a plan made by `plan_trim` against the current state, after
    /// the driver unmapped its pages.
    ///
    /// # Panics
    /// If the pool changed since the plan was made (a caller bug).
    pub fn commit_trim(&mut self, plan: PagePlan) {
        assert_eq!(
            plan.generation, self.generation,
            "stale trim PagePlan: the pool changed between plan_trim and commit_trim"
        );
        if plan.is_empty() {
            return;
        }
        self.generation += 1;
        for r in plan.ranges {
            self.pages.unmap(r);
            self.rezone(r.start, r.end());
        }
    }
}
