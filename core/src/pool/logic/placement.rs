//! Where a block goes: the placement policy.
//!
//! 1. Free space on mapped pages (no new mapping), in the zones the owner may
//!    use: eager -> clean; capture `c` -> its own and graph-tainted space
//!    first (no clean page gets tainted), then clean space.
//! 2. Otherwise growth: over each free range the owner may use (a maximal
//!    run of adjacent free blocks, unmapped or of zones it may use, so
//!    possibly several unmapped runs around mapped free pages), the lowest
//!    spot that maps the fewest new pages; then the smallest range, then
//!    the lowest offset. The arena grows at its end when nothing else fits.
//!
//! Within step 1, free blocks are indexed by (size class, offset), 8 classes
//! per power of two (see `classes.rs`). Blocks under `granularity / 32`
//! (64 KiB with 2 MiB pages) take the lowest hole of the first class that
//! surely holds them (a good fit), placed at the hole's *end*: the hole keeps
//! its offset and, by the index's hysteresis, its index entry, so the hot
//! path is a bit scan, one leftmost descent of a class's map and a few
//! neighbour-link updates (see `blocks.rs`). Larger blocks take the lowest-offset
//! hole among the 32 tightest indexed holes that waste less than two pages,
//! else the tightest hole, placed at its start. This keeps big blocks packed
//! low in the arena without splitting big holes for small requests.
//!
//! Measured on the trace of `perf/criterion/pool_fragmentation.rs` (100,000 ops,
//! log-uniform 256 B .. 64 MiB, no trim): peak reserved / peak allocated,
//! mean and worst over 24 seeds, and on the bench's seed:
//!
//! | step-1 policy                                         | mean  | worst | bench seed |
//! |-------------------------------------------------------|-------|-------|------------|
//! | best fit, lowest offset (plain rule 6)                | 1.182 | 1.240 | 1.190      |
//! | address-ordered first fit                             | 1.147 | 1.268 | 1.118      |
//! | lowest offset among holes < 2x the size, else best    | 1.146 | 1.232 | 1.127      |
//! | small blocks at the high end of the best-fit hole     | ~1.18 |       | 1.176      |
//! | two-ended arena (blocks >= 1 MiB grow down from top)  | ~1.17 |       | 1.181      |
//! | segregated size classes (8 per octave), lowest offset | 1.134 | 1.235 | 1.149      |
//! | lowest offset among holes wasting < 2 pages, else best fit (exact, unbounded scan) | 1.116 | 1.165 | 1.116 |
//! | same, scanning the 8 tightest holes only              | 1.134 | 1.197 | 1.119      |
//! | best fit (exact size index) below 64 KiB, 32 tightest above | 1.119 | 1.217 | 1.104 |
//! | chosen: class index with hysteresis, as described above | 1.128 | 1.240 | 1.117    |
//!
//! Seeds vary by about ±0.04, so only differences of ~0.02 in the mean are
//! real: best fit alone misses 1.15 on most seeds, the chosen policy meets it
//! on 19 of 24. The exact size index did slightly better on fragmentation but
//! cost 106-117 ns per 4 KiB alloc + free (a re-keyed index entry on every
//! split and merge), against about 66 ns for the class index.

use super::classes::{class, class_lower, class_up};
use super::pages::Zone;
use super::plan::PageRange;
use super::{Allocator, Owner, PoolError};

/// Holes looked at, tightest class first, when placing a large block.
const WINDOW_HOLES: usize = 32;

/// A place for a block in a hole, with its rank (lower is better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fit {
    /// Small blocks: (0, class, hole offset). Large: (0, 0, hole offset) in
    /// the window, (1, class, hole offset) outside it.
    rank: (u8, u16, u64),
    /// Where the block goes.
    at: u64,
    /// The hole's node.
    hole: u32,
}

impl Allocator {
    /// The best place in a hole of `zone` for a `size`-byte block.
    #[inline]
    fn fit(&self, zone: Zone, size: u64) -> Option<Fit> {
        let g = self.cfg.granularity;
        if size < g / 32 {
            // Small: the lowest hole of the first class that surely holds
            // it, else a hole of its own class; placed at the hole's end so
            // the hole keeps its offset and, mostly, its class.
            let c = class_up(size);
            let hole = self.blocks.first_hole(zone, c).or_else(|| {
                let own = class(size);
                self.blocks
                    .holes_from(zone, own)
                    .take_while(|&(k, _, _)| k == own)
                    .take(WINDOW_HOLES)
                    .map(|(k, off, i)| (k, off, self.blocks.size_of(i), i))
                    .find(|&(_, _, hole, _)| hole >= size)
            });
            return hole.map(|(k, off, hole, i)| Fit {
                rank: (0, k, off),
                at: off + hole - size,
                hole: i,
            });
        }
        // Large: the lowest hole wasting less than two pages, among the
        // tightest; else the tightest hole. Placed at the hole's start.
        let limit = size.saturating_add(2 * g);
        let mut best: Option<(u64, u32)> = None;
        let mut other: Option<(u16, u64, u32)> = None;
        // A hole is indexed at most one class below its own: start there.
        let from = class(size).saturating_sub(1);
        for (k, off, i) in self.blocks.holes_from(zone, from).take(WINDOW_HOLES) {
            let hole = self.blocks.size_of(i);
            if hole < size {
                continue;
            }
            if hole < limit {
                best = Some(best.map_or((off, i), |b| b.min((off, i))));
            } else if other.is_none() {
                other = Some((k, off, i));
            }
            if class_lower(k) >= limit && (best.is_some() || other.is_some()) {
                break;
            }
        }
        if let Some((off, i)) = best {
            return Some(Fit {
                rank: (0, 0, off),
                at: off,
                hole: i,
            });
        }
        other
            .or_else(|| {
                self.blocks
                    .holes_from(zone, class_up(limit))
                    .find(|&(_, _, i)| self.blocks.size_of(i) >= size)
            })
            .map(|(k, off, i)| Fit {
                rank: (1, k, off),
                at: off,
                hole: i,
            })
    }

    /// Step 1: the offset of a hole on mapped pages that `owner` may use,
    /// and the hole's node.
    #[inline]
    pub(crate) fn place_mapped(&self, size: u64, owner: Owner) -> Option<(u64, u32)> {
        let fit = match owner {
            Owner::Eager => self.fit(Zone::Clean, size),
            Owner::Capture(id) => {
                let own = self.fit(Zone::Open(id), size);
                let graph = self.fit(Zone::Graph, size);
                let tainted = match (own, graph) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                tainted.or_else(|| self.fit(Zone::Clean, size))
            }
        };
        fit.map(|f| (f.at, f.hole))
    }

    /// Whether free space of `zone` (mapped) may hold a block of `owner`.
    fn usable(zone: Zone, owner: Owner) -> bool {
        match (zone, owner) {
            (Zone::Clean, _) => true,
            (Zone::Graph, Owner::Capture(_)) => true,
            (Zone::Open(c), Owner::Capture(id)) => c == id,
            _ => false,
        }
    }

    /// Placement that maps new pages (or joins free blocks of several
    /// zones): over each free range the owner may use, a maximal run of
    /// adjacent free blocks that are unmapped or of a zone `owner` may use
    /// (each holding an unmapped run or, for a capture, a block of its own
    /// or graph-tainted space), the spot mapping the fewest pages, then the
    /// smallest range, then the lowest offset. A range may hold several
    /// unmapped runs: the plan maps each run the block overlaps. Runs only
    /// when nothing fits in one hole on mapped pages; its cost grows with
    /// the number of free blocks in such ranges.
    pub(crate) fn plan_growth(
        &self,
        size: u64,
        owner: Owner,
    ) -> Result<(u64, Vec<PageRange>), PoolError> {
        let g = self.cfg.granularity;
        let ok = |z: Zone| z == Zone::Unmapped || Self::usable(z, owner);
        // Where ranges may lie: around unmapped runs and, for a capture,
        // around tainted space it may use (a range of its own, graph and
        // clean space maps nothing). By offset, so each range comes once.
        let mut seeds: Vec<(u64, u32)> = self.blocks.unmapped_nodes().collect();
        if let Owner::Capture(id) = owner {
            for zone in [Zone::Open(id), Zone::Graph] {
                seeds.extend(self.blocks.holes_from(zone, 0).map(|(_, o, i)| (o, i)));
            }
            seeds.sort_unstable();
        }
        // (new pages, capacity, offset) and the range's blocks.
        let mut best: Option<(u64, u64, u64)> = None;
        let mut best_run: Vec<(u64, u64, Zone)> = Vec::new();
        let mut run: Vec<(u64, u64, Zone)> = Vec::new();
        let mut covered = 0;
        for (off, i) in seeds {
            if off < covered {
                continue;
            }
            run.clear();
            self.blocks.free_run(i, ok, &mut run);
            let (c0, c1) = (run[0].0, run[run.len() - 1].1);
            covered = c1;
            if c1 - c0 < size {
                continue;
            }
            let (pages, at) = Spots::new(&run, g).best(size);
            let key = (pages, c1 - c0, at);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
                std::mem::swap(&mut best_run, &mut run);
            }
        }
        let Some((pages, _, offset)) = best else {
            return Err(PoolError::AddressSpaceExhausted {
                requested: size,
                va_bytes: self.cfg.va_bytes,
            });
        };
        let needed = pages * g;
        let reserved = self.reserved();
        if reserved.saturating_add(needed) > self.cfg.max_bytes {
            return Err(PoolError::OutOfMemory {
                requested: size,
                needed,
                reserved,
                max: self.cfg.max_bytes,
            });
        }
        // The new pages: those of the range's unmapped runs the block
        // overlaps (runs are page-aligned and never adjacent).
        let (p0, p1) = (offset / g, (offset + size).div_ceil(g));
        let new_pages: Vec<PageRange> = best_run
            .iter()
            .filter(|&&(_, _, z)| z == Zone::Unmapped)
            .filter_map(|&(s, e, _)| {
                let (a, b) = ((s / g).max(p0), (e / g).min(p1));
                (a < b).then(|| PageRange {
                    start: a,
                    count: b - a,
                })
            })
            .collect();
        debug_assert_eq!(new_pages.iter().map(|r| r.count).sum::<u64>(), pages);
        debug_assert!((p0..p1)
            .all(|p| self.pages.get(p).mapped
                != new_pages.iter().any(|r| r.start <= p && p < r.end())));
        Ok((offset, new_pages))
    }
}

/// Spots for a block in a free range: counts the unmapped pages a block
/// would overlap (prefix sums over the range's blocks).
struct Spots<'a> {
    run: &'a [(u64, u64, Zone)],
    /// Unmapped pages in `run[..i]`.
    before: Vec<u64>,
    g: u64,
}

impl<'a> Spots<'a> {
    fn new(run: &'a [(u64, u64, Zone)], g: u64) -> Self {
        let mut before = Vec::with_capacity(run.len());
        let mut n = 0;
        for &(s, e, z) in run {
            before.push(n);
            if z == Zone::Unmapped {
                n += (e - s) / g;
            }
        }
        Spots { run, before, g }
    }

    /// Unmapped pages of the range with start below `y` (`ceil`) or end at
    /// or below `y` (`!ceil`).
    fn pages_below(&self, y: u64, ceil: bool) -> u64 {
        let i = self.run.partition_point(|&(s, _, _)| s < y);
        if i == 0 {
            return 0;
        }
        let (s, e, z) = self.run[i - 1];
        let part = if z != Zone::Unmapped {
            0
        } else if ceil {
            (y.min(e) - s).div_ceil(self.g)
        } else {
            (y.min(e) - s) / self.g
        };
        self.before[i - 1] + part
    }

    /// Unmapped pages a `size`-byte block at `x` overlaps.
    fn new_pages(&self, x: u64, size: u64) -> u64 {
        self.pages_below(x + size, true) - self.pages_below(x, false)
    }

    /// The spot that maps the fewest pages, the lowest such: `(pages,
    /// offset)`. The range must hold `size` bytes.
    ///
    /// Moving a block down only adds pages when its start crosses down the
    /// end of an unmapped page, so the lowest best spot is the range's start
    /// or the end `k * g` of an unmapped page `k - 1`. Over the page ends
    /// `k * g` of one unmapped run (pages `a..b`), the count never grows
    /// with `k` (the block leaves page `k` and enters at most one page), so
    /// the run's best is its highest feasible `k`, and the lowest `k` with
    /// that count is a binary search.
    fn best(&self, size: u64) -> (u64, u64) {
        let g = self.g;
        let (c0, c1) = (self.run[0].0, self.run[self.run.len() - 1].1);
        let mut best = (self.new_pages(c0, size), c0);
        let top = (c1 - size) / g; // highest page end k with k * g + size <= c1
        for &(s, e, z) in self.run {
            if z != Zone::Unmapped || best.0 == 0 {
                continue;
            }
            let (a, b) = (s / g, (e / g).min(top));
            if b < a {
                continue;
            }
            let least = self.new_pages(b * g, size);
            if (least, a * g) >= best {
                continue;
            }
            let (mut lo, mut hi) = (a, b);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.new_pages(mid * g, size) == least {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            best = best.min((least, lo * g));
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Spots;
    use crate::pool::logic::pages::Zone;

    const G: u64 = 4096;
    const A: u64 = 256;

    /// A free range: blocks of whole pages (no two unmapped ones adjacent),
    /// the first and last mapped ones possibly cut short by live blocks.
    fn range() -> impl Strategy<Value = Vec<(u64, u64, Zone)>> {
        (
            prop::collection::vec((1u64..5, any::<bool>()), 1..8),
            0u64..G / A,
            0u64..G / A,
        )
            .prop_map(|(blocks, head, tail)| {
                let mut run: Vec<(u64, u64, Zone)> = Vec::new();
                let mut at = 10 * G;
                for (pages, unmapped) in blocks {
                    let prev_unmapped = run.last().is_some_and(|b| b.2 == Zone::Unmapped);
                    let zone = match (unmapped && !prev_unmapped, run.len() % 2) {
                        (true, _) => Zone::Unmapped,
                        (false, 0) => Zone::Clean,
                        (false, _) => Zone::Graph,
                    };
                    run.push((at, at + pages * G, zone));
                    at += pages * G;
                }
                let last = run.len() - 1;
                if run[0].2 != Zone::Unmapped {
                    run[0].0 += (head * A).min(run[0].1 - run[0].0 - A);
                }
                if run[last].2 != Zone::Unmapped {
                    run[last].1 -= (tail * A).min(run[last].1 - run[last].0 - A);
                }
                run
            })
    }

    proptest! {
        #![proptest_config(crate::pool::logic::tests::proptest_config(256))]

        /// The chosen spot maps the fewest pages, and is the lowest such.
        #[test]
        fn best_spot_is_the_lowest_of_the_fewest_pages(run in range(), frac in 0.0f64..=1.0) {
            let (c0, c1) = (run[0].0, run[run.len() - 1].1);
            let size = (((c1 - c0) as f64 * frac) as u64 / A).max(1) * A;
            let unmapped = |x: u64| {
                (x / G..(x + size).div_ceil(G))
                    .filter(|&p| run.iter().any(|&(s, e, z)| z == Zone::Unmapped && s <= p * G && p * G < e))
                    .count() as u64
            };
            let want = (c0..=c1 - size)
                .step_by(A as usize)
                .map(|x| (unmapped(x), x))
                .min()
                .unwrap();
            prop_assert_eq!(Spots::new(&run, G).best(size), want);
        }
    }
}
