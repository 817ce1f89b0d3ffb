//! The block map: the whole address range cut into live and free blocks,
//! with best-fit indexes of the free blocks, one per zone.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use super::pages::Zone;
use super::{CaptureId, Owner};

/// What a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Free space whose pages are all of this zone.
    Free(Zone),
    /// Handed out to this owner.
    Live(Owner),
}

/// A block: `size` bytes from its offset (the map key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub size: u64,
    pub state: State,
}

/// Blocks keyed by offset, covering `0..va_bytes` without gaps, and the free
/// indexes: best fit is the first key at or above `(size, 0)`.
#[derive(Debug)]
pub(crate) struct BlockMap {
    map: BTreeMap<u64, Block>,
    clean: BTreeSet<(u64, u64)>,
    graph: BTreeSet<(u64, u64)>,
    open: BTreeSet<(CaptureId, u64, u64)>,
    /// Offsets of free blocks of the unmapped zone (maximal unmapped runs).
    unmapped: BTreeSet<u64>,
    live: u64,
    free_mapped: u64,
}

impl BlockMap {
    /// One free, unmapped block covering `0..va_bytes`.
    pub fn new(va_bytes: u64) -> Self {
        let mut m = BlockMap {
            map: BTreeMap::new(),
            clean: BTreeSet::new(),
            graph: BTreeSet::new(),
            open: BTreeSet::new(),
            unmapped: BTreeSet::new(),
            live: 0,
            free_mapped: 0,
        };
        m.insert_free(0, va_bytes, Zone::Unmapped);
        m
    }

    /// Number of live blocks.
    pub fn live_count(&self) -> u64 {
        self.live
    }

    /// Number of free blocks on mapped pages.
    pub fn free_mapped_count(&self) -> u64 {
        self.free_mapped
    }

    #[inline]
    fn index_insert(&mut self, zone: Zone, off: u64, size: u64) {
        match zone {
            Zone::Unmapped => {
                self.unmapped.insert(off);
                return;
            }
            Zone::Clean => self.clean.insert((size, off)),
            Zone::Graph => self.graph.insert((size, off)),
            Zone::Open(c) => self.open.insert((c, size, off)),
        };
        self.free_mapped += 1;
    }

    #[inline]
    fn index_remove(&mut self, zone: Zone, off: u64, size: u64) {
        let found = match zone {
            Zone::Unmapped => {
                let found = self.unmapped.remove(&off);
                debug_assert!(found, "free index out of sync");
                return;
            }
            Zone::Clean => self.clean.remove(&(size, off)),
            Zone::Graph => self.graph.remove(&(size, off)),
            Zone::Open(c) => self.open.remove(&(c, size, off)),
        };
        debug_assert!(found, "free index out of sync");
        self.free_mapped -= 1;
    }

    /// The smallest free block of `zone` (not `Unmapped`) holding `size`
    /// bytes, lowest offset first among equals: `(offset, block size)`.
    #[inline]
    pub fn best_fit(&self, zone: Zone, size: u64) -> Option<(u64, u64)> {
        match zone {
            Zone::Unmapped => None,
            Zone::Clean => self.clean.range((size, 0)..).next().map(|&(s, o)| (o, s)),
            Zone::Graph => self.graph.range((size, 0)..).next().map(|&(s, o)| (o, s)),
            Zone::Open(c) => self
                .open
                .range((c, size, 0)..=(c, u64::MAX, u64::MAX))
                .next()
                .map(|&(_, s, o)| (o, s)),
        }
    }

    /// Free blocks of `zone` (not `Unmapped`) of at least `size` bytes,
    /// smallest first, then lowest offset: `(offset, size)`.
    pub fn at_least(&self, zone: Zone, size: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let (mut clean, mut graph, mut open) = (None, None, None);
        match zone {
            Zone::Unmapped => {}
            Zone::Clean => clean = Some(self.clean.range((size, 0)..)),
            Zone::Graph => graph = Some(self.graph.range((size, 0)..)),
            Zone::Open(c) => open = Some(self.open.range((c, size, 0)..=(c, u64::MAX, u64::MAX))),
        }
        let pair = |&(s, o): &(u64, u64)| (o, s);
        clean
            .into_iter()
            .flatten()
            .map(pair)
            .chain(graph.into_iter().flatten().map(pair))
            .chain(open.into_iter().flatten().map(|&(_, s, o)| (o, s)))
    }

    /// The unmapped runs, in address order: `(offset, size)`.
    pub fn unmapped_runs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.unmapped.iter().map(|&o| (o, self.map[&o].size))
    }

    /// The block starting at `off`.
    #[inline]
    pub fn at(&self, off: u64) -> Option<Block> {
        self.map.get(&off).copied()
    }

    /// The block ending at `end` (`end` must be a block boundary).
    #[inline]
    pub fn ending_at(&self, end: u64) -> Option<(u64, Block)> {
        self.map.range(..end).next_back().map(|(&o, &b)| (o, b))
    }

    /// The block containing byte `addr`.
    #[inline]
    pub fn containing(&self, addr: u64) -> Option<(u64, Block)> {
        self.map
            .range(..=addr)
            .next_back()
            .map(|(&o, &b)| (o, b))
            .filter(|&(o, b)| addr - o < b.size)
    }

    /// All blocks in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Block)> + '_ {
        self.map.iter().map(|(&o, &b)| (o, b))
    }

    /// The index entries, for invariant checks: `(zone, offset, size)`
    /// (size 0 for unmapped runs, whose index holds offsets only).
    pub fn index_entries(&self) -> impl Iterator<Item = (Zone, u64, u64)> + '_ {
        let clean = self.clean.iter().map(|&(s, o)| (Zone::Clean, o, s));
        let graph = self.graph.iter().map(|&(s, o)| (Zone::Graph, o, s));
        let open = self.open.iter().map(|&(c, s, o)| (Zone::Open(c), o, s));
        let unmapped = self.unmapped.iter().map(|&o| (Zone::Unmapped, o, 0));
        clean.chain(graph).chain(open).chain(unmapped)
    }

    /// Adds free space `off..off + size` (not in the map) of `zone`, merged
    /// with free neighbours of the same zone.
    pub fn insert_free(&mut self, off: u64, mut size: u64, zone: Zone) {
        let end = off + size;
        if let Entry::Occupied(e) = self.map.entry(end) {
            if e.get().state == State::Free(zone) {
                let right = e.remove().size;
                self.index_remove(zone, end, right);
                size += right;
            }
        }
        if let Some((&lo, b)) = self.map.range_mut(..off).next_back() {
            if b.state == State::Free(zone) {
                debug_assert_eq!(lo + b.size, off);
                let old = b.size;
                b.size += size;
                let new = b.size;
                self.index_remove(zone, lo, old);
                self.index_insert(zone, lo, new);
                return;
            }
        }
        self.map.insert(
            off,
            Block {
                size,
                state: State::Free(zone),
            },
        );
        self.index_insert(zone, off, size);
    }

    /// Makes `off..off + size` a live block of `owner`. The range must lie
    /// inside one free block, which is split around it.
    pub fn carve(&mut self, off: u64, size: u64, owner: Owner) {
        let (&start, b) = self
            .map
            .range_mut(..=off)
            .next_back()
            .expect("carve below the first block");
        let State::Free(zone) = b.state else {
            panic!("carve into a live block at {start}");
        };
        let free_size = b.size;
        assert!(
            off + size <= start + free_size,
            "carve of {off}+{size} overruns the free block {start}+{free_size}"
        );
        let live = Block {
            size,
            state: State::Live(owner),
        };
        if start == off {
            *b = live;
        } else {
            b.size = off - start;
        }
        self.index_remove(zone, start, free_size);
        if start < off {
            self.index_insert(zone, start, off - start);
            self.map.insert(off, live);
        }
        let tail = start + free_size - (off + size);
        if tail > 0 {
            self.map.insert(
                off + size,
                Block {
                    size: tail,
                    state: State::Free(zone),
                },
            );
            self.index_insert(zone, off + size, tail);
        }
        self.live += 1;
    }

    /// Removes the live block at `off`, leaving a hole the caller must fill
    /// with `insert_free`. `None` (and no change) if no live block starts there.
    #[inline]
    pub fn remove_live(&mut self, off: u64) -> Option<(u64, Owner)> {
        match self.map.entry(off) {
            Entry::Occupied(e) => match e.get().state {
                State::Live(owner) => {
                    let size = e.remove().size;
                    self.live -= 1;
                    Some((size, owner))
                }
                State::Free(_) => None,
            },
            Entry::Vacant(_) => None,
        }
    }

    /// Re-cuts the free space overlapping bytes `lo..hi` (page-aligned) after
    /// the zones of those pages changed: `zone_of(page)` gives the new zones;
    /// zones outside `lo..hi` must not have changed.
    pub fn rezone(&mut self, lo: u64, hi: u64, granularity: u64, zone_of: impl Fn(u64) -> Zone) {
        let first = self.map.range(..=lo).next_back().map_or(lo, |(&o, _)| o);
        let frees: Vec<(u64, u64, Zone)> = self
            .map
            .range(first..hi)
            .filter_map(|(&o, b)| match b.state {
                State::Free(z) if o + b.size > lo => Some((o, b.size, z)),
                _ => None,
            })
            .collect();
        for &(o, s, z) in &frees {
            self.map.remove(&o);
            self.index_remove(z, o, s);
        }
        for (start, size, old) in frees {
            let end = start + size;
            if start < lo {
                self.insert_free(start, lo - start, old);
            }
            let (a, b) = (start.max(lo), end.min(hi));
            let mut cur = a;
            while cur < b {
                let z = zone_of(cur / granularity);
                let mut stop = ((cur / granularity + 1) * granularity).min(b);
                while stop < b && zone_of(stop / granularity) == z {
                    stop = (stop + granularity).min(b);
                }
                self.insert_free(cur, stop - cur, z);
                cur = stop;
            }
            if end > hi {
                self.insert_free(hi, end - hi, old);
            }
        }
    }
}
