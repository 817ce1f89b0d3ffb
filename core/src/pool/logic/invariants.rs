//! A full consistency check of the allocator state (O(blocks + pages)).

use std::collections::{BTreeMap, BTreeSet};

use super::blocks::State;
use super::classes::{class, class_lower};
use super::pages::Zone;
use super::{Allocator, Owner};

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

impl Allocator {
    /// Checks every invariant of the state; `Err` names the first broken one.
    /// Linear in blocks and pages: for tests and debug builds.
    pub fn check_invariants(&self) -> Result<(), String> {
        let cfg = &self.cfg;
        let (g, align) = (cfg.granularity, cfg.alignment);
        let table = self.pages.len();
        let stats = self.stats();

        // Pages: counters, taint owners and graph references.
        let mut refs: BTreeMap<u64, u32> = BTreeMap::new();
        for (_, ranges) in self.graphs.values() {
            for r in ranges {
                for p in r.start..r.end() {
                    *refs.entry(p).or_default() += 1;
                }
            }
        }
        let mut touched: BTreeMap<u64, u64> = BTreeMap::new();
        for (&id, cap) in &self.captures {
            for &p in &cap.touched {
                ensure!(
                    touched.insert(p, id).is_none(),
                    "page {p} touched twice by open captures"
                );
            }
        }
        let (mut mapped, mut segments, mut tainted, mut prev_mapped) = (0, 0, 0, false);
        for (p, page) in self.pages.iter() {
            let want_refs = refs.get(&p).copied().unwrap_or(0);
            ensure!(
                page.refs == want_refs,
                "page {p} has {} graph refs, graphs hold {want_refs}",
                page.refs
            );
            let want_open = touched.get(&p).copied().unwrap_or(0);
            ensure!(
                page.open == want_open,
                "page {p} open taint {} but captures say {want_open}",
                page.open
            );
            let is_tainted = page.open != 0 || page.refs > 0;
            ensure!(
                !is_tainted || page.mapped,
                "page {p} is tainted but unmapped"
            );
            mapped += page.mapped as u64;
            tainted += is_tainted as u64;
            segments += (page.mapped && !prev_mapped) as u64;
            prev_mapped = page.mapped;
        }
        ensure!(
            refs.keys().chain(touched.keys()).all(|&p| p < table),
            "a tainted page lies past the page table"
        );
        ensure!(
            stats.reserved_bytes == mapped * g,
            "reserved {} != {mapped} mapped pages",
            stats.reserved_bytes
        );
        ensure!(
            stats.segment_count == segments,
            "segment_count {} != {segments}",
            stats.segment_count
        );
        ensure!(
            stats.tainted_pages == tainted,
            "tainted_pages {} != {tainted}",
            stats.tainted_pages
        );
        ensure!(
            stats.reserved_bytes <= cfg.max_bytes,
            "reserved {} over max {}",
            stats.reserved_bytes,
            cfg.max_bytes
        );

        // Blocks: a gapless, aligned cover of the range, zones uniform, free
        // neighbours of one zone merged, indexes exact.
        let (mut cursor, mut allocated, mut live) = (0u64, 0u64, 0u64);
        let mut prev_free: Option<Zone> = None;
        // Free blocks as they are once parked blocks settle (clean free
        // space, merged with clean free neighbours): what stats report.
        let (mut settled_free, mut prev_settled) = (0u64, None);
        let mut settle_as = |z: Option<Zone>| {
            if z.is_some_and(|z| z != Zone::Unmapped) && z != prev_settled {
                settled_free += 1;
            }
            prev_settled = z;
        };
        let mut index = BTreeSet::new();
        let mut live_of: BTreeMap<u64, (u64, Owner)> = BTreeMap::new();
        let parked: BTreeMap<u64, u64> = self.blocks.parked().collect();
        for (off, b) in self.blocks.iter() {
            ensure!(
                off == cursor,
                "block at {off} but previous block ends at {cursor}"
            );
            ensure!(
                b.size > 0 && off % align == 0 && b.size % align == 0,
                "block {off}+{} unaligned or empty",
                b.size
            );
            cursor = off + b.size;
            let (p0, p1) = (off / g, (cursor - 1) / g + 1);
            match b.state {
                State::Live(owner) if parked.contains_key(&off) => {
                    // Parked: freed, kept whole for the next block of its
                    // size (only eager blocks on clean pages, while no
                    // capture is open).
                    ensure!(
                        owner == Owner::Eager
                            && self.captures.is_empty()
                            && (p0..p1).all(|p| self.pages.zone(p) == Zone::Clean),
                        "parked block {off}+{} of {owner:?} not eager on clean pages",
                        b.size
                    );
                    prev_free = None;
                    settle_as(Some(Zone::Clean));
                }
                State::Live(owner) => {
                    settle_as(None);
                    ensure!(
                        (p0..p1).all(|p| self.pages.get(p).mapped),
                        "live block {off}+{} on unmapped pages",
                        b.size
                    );
                    allocated += b.size;
                    live += 1;
                    live_of.insert(off, (b.size, owner));
                    prev_free = None;
                }
                State::Free(z) => {
                    settle_as(Some(z));
                    ensure!(
                        prev_free != Some(z),
                        "adjacent free blocks of zone {z:?} at {off}"
                    );
                    prev_free = Some(z);
                    if z == Zone::Unmapped {
                        ensure!(
                            off % g == 0 && cursor % g == 0,
                            "unmapped free block {off}+{} not page-aligned",
                            b.size
                        );
                        index.insert((z, off, 0));
                    } else {
                        ensure!(
                            p1 <= table,
                            "free block {off}+{} of zone {z:?} past the page table",
                            b.size
                        );
                        let (c, lower) = (b.cls, class_lower(b.cls));
                        ensure!(
                            lower <= b.size && class(b.size) <= c + 1,
                            "free block {off}+{} indexed under class {c} (from {lower})",
                            b.size
                        );
                        index.insert((z, off, c));
                    }
                    let last = p1.min(table.max(p0));
                    ensure!(
                        (p0..last).all(|p| self.pages.zone(p) == z),
                        "free block {off}+{} of zone {z:?} covers a page of another zone",
                        b.size
                    );
                }
            }
        }
        ensure!(
            cursor == cfg.va_bytes,
            "blocks end at {cursor}, range is {}",
            cfg.va_bytes
        );
        self.blocks.check_structure()?;
        let actual: BTreeSet<_> = self.blocks.index_entries().collect();
        ensure!(
            actual == index,
            "free indexes out of sync with the block map"
        );
        ensure!(
            stats.allocated_bytes == allocated,
            "allocated {} != sum of live blocks {allocated}",
            stats.allocated_bytes
        );
        ensure!(
            stats.block_count == live,
            "block_count {} != {live}",
            stats.block_count
        );
        ensure!(
            stats.free_block_count == settled_free,
            "free_block_count {} != {settled_free}",
            stats.free_block_count
        );
        ensure!(
            stats.peak_allocated_bytes >= stats.allocated_bytes,
            "peak allocated below allocated"
        );
        ensure!(
            stats.peak_reserved_bytes >= stats.reserved_bytes,
            "peak reserved below reserved"
        );
        ensure!(
            stats.free_count <= stats.alloc_count,
            "more frees than allocations"
        );
        ensure!(
            stats.alloc_count - stats.free_count == live,
            "alloc_count - free_count != live blocks"
        );

        // Open captures: their live blocks sit on their own pages.
        for (&id, cap) in &self.captures {
            let mut bytes = 0;
            for off in &cap.live {
                let Some(&(size, owner)) = live_of.get(off) else {
                    return Err(format!("capture {id} lists {off}, not a live block"));
                };
                ensure!(
                    owner == Owner::Capture(id),
                    "capture {id} lists {off}, owned by {owner:?}"
                );
                let (p0, p1) = (off / g, (off + size - 1) / g + 1);
                ensure!(
                    (p0..p1).all(|p| self.pages.get(p).open == id),
                    "block {off} of capture {id} on pages it has not tainted"
                );
                bytes += size;
            }
            ensure!(
                cap.live_bytes == bytes,
                "capture {id} live_bytes {} != {bytes}",
                cap.live_bytes
            );
            ensure!(
                cap.peak_bytes >= cap.live_bytes,
                "capture {id} peak below live bytes"
            );
            for r in &cap.mapped {
                ensure!(
                    (r.start..r.end()).all(|p| touched.get(&p) == Some(&id)),
                    "capture {id} mapped pages it has not touched"
                );
            }
        }
        Ok(())
    }
}
