//! The block map: the whole address range cut into live and free blocks,
//! with size-class indexes of the free blocks, one per zone.

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
    /// Free blocks on mapped pages: the class they are indexed under (see
    /// [`reclass`]); 0 otherwise.
    pub cls: u16,
}

impl Block {
    fn live(size: u64, owner: Owner) -> Block {
        Block {
            size,
            state: State::Live(owner),
            cls: 0,
        }
    }

    fn free(size: u64, zone: Zone) -> Block {
        let cls = if zone == Zone::Unmapped {
            0
        } else {
            class(size)
        };
        Block {
            size,
            state: State::Free(zone),
            cls,
        }
    }
}

/// The class a free block of `zone` indexed under `stored` moves to when its
/// size becomes `size`, or `None` when it stays. With hysteresis: a block is
/// indexed under a class at most one below its own and never above it, so a
/// block that shrinks and grows back across a class boundary (a small block
/// split from a hole's end and freed again) does not touch the index.
#[inline]
pub(crate) fn reclass(zone: Zone, stored: u16, size: u64) -> Option<u16> {
    if zone == Zone::Unmapped {
        return None;
    }
    let c = class(size);
    (size < class_lower(stored) || c > stored + 1).then_some(c)
}

/// Size class of a free block: 8 classes per power of two, so a class spans
/// at most 12.5% of its lower bound.
#[inline]
pub(crate) fn class(size: u64) -> u16 {
    let k = 63 - size.leading_zeros();
    let frac = if k >= 3 { (size >> (k - 3)) & 7 } else { 0 };
    ((k << 3) as u16) | frac as u16
}

/// The smallest size in class `c`.
#[inline]
pub(crate) fn class_lower(c: u16) -> u64 {
    let (k, frac) = (u32::from(c >> 3), u64::from(c & 7));
    if k >= 3 {
        (1 << k) | (frac << (k - 3))
    } else {
        1 << k
    }
}

/// The smallest class all of whose blocks hold `size` bytes.
#[inline]
pub(crate) fn class_up(size: u64) -> u16 {
    let c = class(size);
    if class_lower(c) == size {
        c
    } else {
        c + 1
    }
}

/// Blocks keyed by offset, covering `0..va_bytes` without gaps, and the free
/// indexes, one per zone, keyed by (size class, offset). A free block that
/// shrinks or grows within its class keeps its index entry, so splitting a
/// block from the end of a hole and merging it back touch no index.
#[derive(Debug)]
pub(crate) struct BlockMap {
    map: BTreeMap<u64, Block>,
    clean: BTreeSet<(u16, u64)>,
    graph: BTreeSet<(u16, u64)>,
    open: BTreeSet<(CaptureId, u16, u64)>,
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
    fn index_insert(&mut self, zone: Zone, off: u64, c: u16) {
        match zone {
            Zone::Unmapped => {
                self.unmapped.insert(off);
                return;
            }
            Zone::Clean => self.clean.insert((c, off)),
            Zone::Graph => self.graph.insert((c, off)),
            Zone::Open(id) => self.open.insert((id, c, off)),
        };
        self.free_mapped += 1;
    }

    #[inline]
    fn index_remove(&mut self, zone: Zone, off: u64, c: u16) {
        let found = match zone {
            Zone::Unmapped => {
                let found = self.unmapped.remove(&off);
                debug_assert!(found, "free index out of sync");
                return;
            }
            Zone::Clean => self.clean.remove(&(c, off)),
            Zone::Graph => self.graph.remove(&(c, off)),
            Zone::Open(id) => self.open.remove(&(id, c, off)),
        };
        debug_assert!(found, "free index out of sync");
        self.free_mapped -= 1;
    }

    /// The free block at `off`, indexed under `old`, moves to class `new`
    /// (from [`reclass`]; the block's `cls` is already updated).
    #[inline]
    fn index_move(&mut self, zone: Zone, off: u64, old: u16, new: Option<u16>) {
        if let Some(new) = new {
            self.index_remove(zone, off, old);
            self.index_insert(zone, off, new);
        }
    }

    /// Free blocks of `zone` (not `Unmapped`) in classes from `from` up, in
    /// (class, offset) order: `(class, offset)`.
    #[inline]
    pub fn holes_from(&self, zone: Zone, from: u16) -> impl Iterator<Item = (u16, u64)> + '_ {
        let (mut clean, mut graph, mut open) = (None, None, None);
        match zone {
            Zone::Unmapped => {}
            Zone::Clean => clean = Some(self.clean.range((from, 0)..)),
            Zone::Graph => graph = Some(self.graph.range((from, 0)..)),
            Zone::Open(c) => open = Some(self.open.range((c, from, 0)..=(c, u16::MAX, u64::MAX))),
        }
        clean
            .into_iter()
            .flatten()
            .copied()
            .chain(graph.into_iter().flatten().copied())
            .chain(open.into_iter().flatten().map(|&(_, c, o)| (c, o)))
    }

    /// The first free block of `zone` (not `Unmapped`) in classes from
    /// `from` up, lowest class then lowest offset, and its size:
    /// `(class, offset, size)`.
    #[inline]
    pub fn first_hole(&self, zone: Zone, from: u16) -> Option<(u16, u64, u64)> {
        let (c, off) = match zone {
            Zone::Unmapped => None,
            Zone::Clean => self.clean.range((from, 0)..).next().copied(),
            Zone::Graph => self.graph.range((from, 0)..).next().copied(),
            Zone::Open(id) => self
                .open
                .range((id, from, 0)..=(id, u16::MAX, u64::MAX))
                .next()
                .map(|&(_, c, o)| (c, o)),
        }?;
        Some((c, off, self.size_at(off)))
    }

    /// Frees the live block at `off` if there is one: `zone_of(size)` gives
    /// the zone of all its pages, or `None` when they differ (then nothing
    /// changes and `Err(Some((size, owner)))` comes back for a piecewise
    /// free). `Err(None)`: no live block starts at `off`. On success the
    /// block is free space merged with free neighbours of its zone.
    #[inline]
    pub fn free_at(
        &mut self,
        off: u64,
        zone_of: impl FnOnce(u64) -> Option<Zone>,
    ) -> Result<(u64, Owner), Option<(u64, Owner)>> {
        let mut range = self.map.range_mut(..=off);
        let (size, owner) = match range.next_back() {
            Some((&k, b)) if k == off => match b.state {
                State::Live(owner) => (b.size, owner),
                State::Free(_) => return Err(None),
            },
            _ => return Err(None),
        };
        let Some(zone) = zone_of(size) else {
            return Err(Some((size, owner)));
        };
        // Merge left in place when the block before is free space of the zone.
        let end = off + size;
        let left = match range.next_back() {
            Some((&lo, b)) if b.state == State::Free(zone) => {
                let old = b.cls;
                b.size += size;
                let new = reclass(zone, old, b.size);
                b.cls = new.unwrap_or(old);
                Some((lo, old, new))
            }
            _ => None,
        };
        let mut right = None;
        if let Entry::Occupied(e) = self.map.entry(end) {
            if e.get().state == State::Free(zone) {
                let r = e.remove();
                self.index_remove(zone, end, r.cls);
                right = Some(r.size);
            }
        }
        if let Some((lo, old, new)) = left {
            self.map.remove(&off);
            self.index_move(zone, lo, old, new);
            if let Some(extra) = right {
                self.grow_free(lo, extra);
            }
        } else {
            let b = Block::free(size + right.unwrap_or(0), zone);
            *self.map.get_mut(&off).expect("freed block") = b;
            self.index_insert(zone, off, b.cls);
        }
        self.live -= 1;
        Ok((size, owner))
    }

    /// Grows the free block at `off` by `extra` bytes (merged after it).
    fn grow_free(&mut self, off: u64, extra: u64) {
        let b = self.map.get_mut(&off).expect("free block");
        let State::Free(zone) = b.state else {
            unreachable!("grow_free of a live block")
        };
        let old = b.cls;
        b.size += extra;
        let new = reclass(zone, old, b.size);
        b.cls = new.unwrap_or(old);
        self.index_move(zone, off, old, new);
    }

    /// Size of the block at `off` (which must exist).
    #[inline]
    pub fn size_at(&self, off: u64) -> u64 {
        self.map[&off].size
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

    /// The index entries, for invariant checks: `(zone, offset, class)`
    /// (class 0 for unmapped runs, whose index holds offsets only).
    pub fn index_entries(&self) -> impl Iterator<Item = (Zone, u64, u16)> + '_ {
        let clean = self.clean.iter().map(|&(c, o)| (Zone::Clean, o, c));
        let graph = self.graph.iter().map(|&(c, o)| (Zone::Graph, o, c));
        let open = self.open.iter().map(|&(id, c, o)| (Zone::Open(id), o, c));
        let unmapped = self.unmapped.iter().map(|&o| (Zone::Unmapped, o, 0));
        clean.chain(graph).chain(open).chain(unmapped)
    }

    /// Adds free space `off..off + size` (not in the map) of `zone`, merged
    /// with free neighbours of the same zone.
    pub fn insert_free(&mut self, off: u64, mut size: u64, zone: Zone) {
        let end = off + size;
        if let Entry::Occupied(e) = self.map.entry(end) {
            if e.get().state == State::Free(zone) {
                let right = e.remove();
                self.index_remove(zone, end, right.cls);
                size += right.size;
            }
        }
        if let Some((&lo, b)) = self.map.range(..off).next_back() {
            if b.state == State::Free(zone) {
                debug_assert_eq!(lo + b.size, off);
                self.grow_free(lo, size);
                return;
            }
        }
        let b = Block::free(size, zone);
        self.map.insert(off, b);
        self.index_insert(zone, off, b.cls);
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
        let (free_size, old) = (b.size, b.cls);
        assert!(
            off + size <= start + free_size,
            "carve of {off}+{size} overruns the free block {start}+{free_size}"
        );
        let live = Block::live(size, owner);
        if start == off {
            *b = live;
            self.index_remove(zone, start, old);
        } else {
            b.size = off - start;
            let new = reclass(zone, old, b.size);
            b.cls = new.unwrap_or(old);
            self.index_move(zone, start, old, new);
            self.map.insert(off, live);
        }
        let tail = start + free_size - (off + size);
        if tail > 0 {
            let b = Block::free(tail, zone);
            self.map.insert(off + size, b);
            self.index_insert(zone, off + size, b.cls);
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
        let frees: Vec<(u64, u64, Zone, u16)> = self
            .map
            .range(first..hi)
            .filter_map(|(&o, b)| match b.state {
                State::Free(z) if o + b.size > lo => Some((o, b.size, z, b.cls)),
                _ => None,
            })
            .collect();
        for &(o, _, z, c) in &frees {
            self.map.remove(&o);
            self.index_remove(z, o, c);
        }
        for (start, size, old, _) in frees {
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
