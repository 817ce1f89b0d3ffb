//! The block map: the whole address range cut into live and free blocks,
//! with size-class indexes of the free blocks, one per zone.
//!
//! Blocks are nodes of a slab, linked to their address neighbours in a
//! circular list (closed by a sentinel), so splitting a block and merging it
//! with its neighbours need no ordered search. Live blocks are found by
//! offset through an open-addressing hash table (`live_table`). A page
//! directory names, per page of the page table, the block holding the
//! page's first byte: lookups by address (`containing`) start there, off the
//! hot path. Only the free indexes are ordered, by (size class, offset), for
//! placement: per zone a bitmap of nonempty classes and per class a list by
//! offset (`classes`).

use std::collections::BTreeMap;

use super::classes::{class, reclass, ClassIndex};
use super::live_table::LiveTable;
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

/// A block: `size` bytes from its offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub size: u64,
    pub state: State,
    /// Free blocks on mapped pages: the class they are indexed under (see
    /// [`reclass`]); 0 otherwise.
    pub cls: u16,
}

/// No node: no hint, or a gap being filled.
pub(crate) const NIL: u32 = u32::MAX;

/// Most blocks parked at once (see [`BlockMap::park`]).
pub(crate) const PARKED: usize = 8;

/// The node closing the circular address-ordered list: its `next` is the
/// first block, its `prev` the last. Live and empty, so nothing merges with
/// it and no address lies in it.
const SENTINEL: u32 = 0;

/// A block in the slab, linked to its address neighbours.
#[derive(Clone, Copy, Debug)]
struct Node {
    off: u64,
    size: u64,
    prev: u32,
    next: u32,
    state: State,
    cls: u16,
}

impl Node {
    #[inline]
    fn block(&self) -> Block {
        Block {
            size: self.size,
            state: self.state,
            cls: self.cls,
        }
    }

    #[inline]
    fn end(&self) -> u64 {
        self.off + self.size
    }
}

/// The class a new free block of `zone` is indexed under.
#[inline]
fn fresh_class(zone: Zone, size: u64) -> u16 {
    if zone == Zone::Unmapped {
        0
    } else {
        class(size)
    }
}

/// Blocks covering `0..va_bytes` without gaps (a slab of nodes linked in
/// address order), the live blocks by offset, the page directory, and the
/// free indexes, one per zone, keyed by (size class, offset). A free block
/// that shrinks or grows within its class keeps its index entry, so
/// splitting a block from the end of a hole and merging it back touch no
/// ordered structure at all.
#[derive(Debug)]
pub(crate) struct BlockMap {
    /// Slot `SENTINEL` is the sentinel; released slots have size 0.
    nodes: Vec<Node>,
    /// Released slots, for reuse.
    spare: Vec<u32>,
    /// Live blocks: offset -> node.
    live: LiveTable,
    /// Per page `p` of the page table: the node holding byte `p << shift`.
    /// Pages past it lie in the last node (all unmapped: one free block).
    pdir: Vec<u32>,
    /// log2(granularity).
    shift: u32,
    clean: ClassIndex,
    graph: ClassIndex,
    /// Per open capture with free blocks.
    open: BTreeMap<CaptureId, ClassIndex>,
    /// Free blocks of the unmapped zone (maximal unmapped runs), by offset.
    unmapped: BTreeMap<u64, u32>,
    free_mapped: u64,
    /// Parked nodes (see [`park`](BlockMap::park)), oldest first: the
    /// first `parked_len`.
    parked: [u32; PARKED],
    parked_len: usize,
}

impl BlockMap {
    /// One free, unmapped block covering `0..va_bytes`; pages of
    /// `1 << shift` bytes, offsets multiples of `1 << align_shift`.
    pub fn new(va_bytes: u64, shift: u32, align_shift: u32) -> Self {
        let sentinel = Node {
            off: va_bytes,
            size: 0,
            prev: 1,
            next: 1,
            state: State::Live(Owner::Eager),
            cls: 0,
        };
        let all = Node {
            off: 0,
            size: va_bytes,
            prev: SENTINEL,
            next: SENTINEL,
            state: State::Free(Zone::Unmapped),
            cls: 0,
        };
        BlockMap {
            nodes: vec![sentinel, all],
            spare: Vec::new(),
            live: LiveTable::new(align_shift),
            pdir: Vec::new(),
            shift,
            clean: ClassIndex::new(),
            graph: ClassIndex::new(),
            open: BTreeMap::new(),
            unmapped: BTreeMap::from([(0, 1)]),
            free_mapped: 0,
            parked: [NIL; PARKED],
            parked_len: 0,
        }
    }

    /// Number of live blocks.
    pub fn live_count(&self) -> u64 {
        self.live.len() as u64
    }

    /// The index of a mapped zone, if it has one.
    #[inline]
    fn index(&self, zone: Zone) -> Option<&ClassIndex> {
        match zone {
            Zone::Unmapped => None,
            Zone::Clean => Some(&self.clean),
            Zone::Graph => Some(&self.graph),
            Zone::Open(id) => self.open.get(&id),
        }
    }

    /// Number of free blocks on mapped pages, parked blocks counted as the
    /// free space they settle into (clean, merged with clean free
    /// neighbours and with each other).
    pub fn free_mapped_count(&self) -> u64 {
        let parked = &self.parked[..self.parked_len];
        let joins = |j: u32| parked.contains(&j) || self.node(j).state == State::Free(Zone::Clean);
        let mut count = self.free_mapped;
        for &i in parked {
            // Each run of joining blocks once, from its leftmost parked one:
            // it becomes one free block in place of its free ones (which
            // alternate with parked ones: free neighbours are always merged).
            let (mut free, mut j) = (0, self.node(i).prev);
            while joins(j) && !parked.contains(&j) {
                free += 1;
                j = self.node(j).prev;
            }
            if joins(j) {
                continue;
            }
            j = self.node(i).next;
            while joins(j) {
                free += u64::from(!parked.contains(&j));
                j = self.node(j).next;
            }
            count = count + 1 - free;
        }
        count
    }

    #[inline]
    fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    /// A new, unlinked node.
    #[inline]
    fn new_node(&mut self, off: u64, size: u64, state: State, cls: u16) -> u32 {
        let n = Node {
            off,
            size,
            prev: NIL,
            next: NIL,
            state,
            cls,
        };
        match self.spare.pop() {
            Some(i) => {
                self.nodes[i as usize] = n;
                i
            }
            None => {
                self.nodes.push(n);
                u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 blocks")
            }
        }
    }

    /// Returns an unlinked node's slot.
    #[inline]
    fn release(&mut self, i: u32) {
        let n = self.node_mut(i);
        n.size = 0;
        n.state = State::Live(Owner::Eager);
        self.spare.push(i);
    }

    /// Links node `i` right after node `p`.
    #[inline]
    fn link_after(&mut self, p: u32, i: u32) {
        let next = self.node(p).next;
        let n = self.node_mut(i);
        n.prev = p;
        n.next = next;
        self.node_mut(p).next = i;
        self.node_mut(next).prev = i;
    }

    /// Unlinks node `i` (its neighbours become adjacent in the list).
    #[inline]
    fn unlink(&mut self, i: u32) {
        let Node { prev, next, .. } = *self.node(i);
        self.node_mut(prev).next = next;
        self.node_mut(next).prev = prev;
    }

    /// Points the directory entries of the pages starting in `lo..hi` at
    /// node `i`.
    #[inline]
    fn point_pages(&mut self, lo: u64, hi: u64, i: u32) {
        let (s, mask) = (self.shift, (1u64 << self.shift) - 1);
        let p0 = (lo >> s) + u64::from(lo & mask != 0);
        let p1 = (hi >> s) + u64::from(hi & mask != 0);
        let p1 = p1.min(self.pdir.len() as u64);
        if p0 < p1 {
            self.pdir[p0 as usize..p1 as usize].fill(i);
        }
    }

    /// Grows the page directory to `pages` entries (the page table grew;
    /// the new pages lie in the last node).
    pub fn extend_pages(&mut self, pages: u64) {
        if (self.pdir.len() as u64) < pages {
            let last = self.node(SENTINEL).prev;
            self.pdir.resize(pages as usize, last);
        }
    }

    #[inline]
    fn index_insert(&mut self, zone: Zone, off: u64, c: u16, i: u32) {
        match zone {
            Zone::Unmapped => {
                self.unmapped.insert(off, i);
                return;
            }
            Zone::Clean => self.clean.insert(c, off, i),
            Zone::Graph => self.graph.insert(c, off, i),
            Zone::Open(id) => self
                .open
                .entry(id)
                .or_insert_with(ClassIndex::new)
                .insert(c, off, i),
        }
        self.free_mapped += 1;
    }

    #[inline]
    fn index_remove(&mut self, zone: Zone, off: u64, c: u16) {
        let found = match zone {
            Zone::Unmapped => {
                let found = self.unmapped.remove(&off);
                debug_assert!(found.is_some(), "free index out of sync");
                return;
            }
            Zone::Clean => self.clean.remove(c, off),
            Zone::Graph => self.graph.remove(c, off),
            Zone::Open(id) => match self.open.get_mut(&id) {
                Some(ix) => {
                    let found = ix.remove(c, off);
                    if ix.len() == 0 {
                        self.open.remove(&id);
                    }
                    found
                }
                None => false,
            },
        };
        debug_assert!(found, "free index out of sync");
        self.free_mapped -= 1;
    }

    /// The free block (node `i`, at `off`), indexed under `old`, moves to
    /// class `new` (from [`reclass`]; the node's `cls` is already updated).
    #[inline]
    fn index_move(&mut self, zone: Zone, off: u64, old: u16, new: Option<u16>, i: u32) {
        if let Some(new) = new {
            self.index_remove(zone, off, old);
            self.index_insert(zone, off, new, i);
        }
    }

    /// Free blocks of `zone` (not `Unmapped`) in classes from `from` up, in
    /// (class, offset) order: `(class, offset, node)`.
    #[inline]
    pub fn holes_from(&self, zone: Zone, from: u16) -> impl Iterator<Item = (u16, u64, u32)> + '_ {
        self.index(zone)
            .into_iter()
            .flat_map(move |ix| ix.iter_from(from))
    }

    /// The first free block of `zone` (not `Unmapped`) in classes from
    /// `from` up, lowest class then lowest offset: `(class, offset, size,
    /// node)`.
    #[inline]
    pub fn first_hole(&self, zone: Zone, from: u16) -> Option<(u16, u64, u64, u32)> {
        let (c, off, i) = self.index(zone)?.first(from)?;
        Some((c, off, self.node(i).size, i))
    }

    /// Size of the block of node `i`.
    #[inline]
    pub fn size_of(&self, i: u32) -> u64 {
        self.node(i).size
    }

    /// Takes the live block at `off` out of the live map: `(node, size,
    /// owner)`. The node stays in the block list, live (nothing merges with
    /// it), until [`release_live`](Self::release_live) frees it or
    /// [`park`](Self::park) parks it. `None` (and no change): no live block
    /// starts at `off`.
    #[inline]
    pub fn unlive(&mut self, off: u64) -> Option<(u32, u64, Owner)> {
        let i = self.live.remove(off)?;
        let n = self.node(i);
        let State::Live(owner) = n.state else {
            unreachable!("live map names a free block")
        };
        Some((i, n.size, owner))
    }

    /// Frees node `i` (taken out of the live map) into free space merged
    /// with free neighbours of its zone; `zone_of(page)` gives page zones. A
    /// block whose pages are of several zones is cut where the zone changes.
    #[inline]
    pub fn release_live(&mut self, i: u32, zone_of: impl Fn(u64) -> Zone) {
        let n = *self.node(i);
        let (p0, p1) = (n.off >> self.shift, ((n.end() - 1) >> self.shift) + 1);
        let zone = zone_of(p0);
        if (p0 + 1..p1).all(|p| zone_of(p) == zone) {
            self.free_whole(i, zone);
        } else {
            self.free_pieces(i, zone_of);
        }
    }

    /// Parks node `i` (taken out of the live map): it stays in the block
    /// list as it is, neither live nor merged into free space, until
    /// [`unpark`](Self::unpark) hands it out again or
    /// [`settle`](Self::settle) frees it. False (nothing parked): the
    /// parking is full.
    #[inline]
    pub fn park(&mut self, i: u32) -> bool {
        let n = self.parked_len;
        if n == PARKED {
            return false;
        }
        self.parked[n] = i;
        self.parked_len = n + 1;
        true
    }

    /// Makes the most recently parked block of exactly `size` bytes live
    /// again; returns its offset.
    #[inline]
    pub fn unpark(&mut self, size: u64) -> Option<u64> {
        let n = self.parked_len;
        let k = self.parked[..n]
            .iter()
            .rposition(|&i| self.node(i).size == size)?;
        let i = self.parked[k];
        // At most PARKED entries: a short loop rather than a memmove call.
        for j in k..n - 1 {
            self.parked[j] = self.parked[j + 1];
        }
        self.parked_len = n - 1;
        let off = self.node(i).off;
        self.live.insert(off, i);
        Some(off)
    }

    /// Frees every parked block, as [`release_live`](Self::release_live).
    pub fn settle(&mut self, zone_of: impl Fn(u64) -> Zone) {
        let n = std::mem::take(&mut self.parked_len);
        for k in 0..n {
            self.release_live(self.parked[k], &zone_of);
        }
    }

    /// The parked blocks: `(offset, size)`, oldest first.
    pub fn parked(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.parked[..self.parked_len].iter().map(|&i| {
            let n = self.node(i);
            (n.off, n.size)
        })
    }

    /// Frees live node `i` (out of the live map), all of whose pages are of
    /// `zone`, merging it with free neighbours of that zone.
    #[inline]
    fn free_whole(&mut self, i: u32, zone: Zone) {
        let Node {
            off,
            size,
            prev,
            next,
            ..
        } = *self.node(i);
        let end = off + size;
        // Merge left in place when the block before is free space of the zone.
        let left = {
            let b = self.node_mut(prev);
            if b.state == State::Free(zone) {
                let old = b.cls;
                b.size += size;
                let new = reclass(zone, old, b.size);
                b.cls = new.unwrap_or(old);
                Some((b.off, old, new))
            } else {
                None
            }
        };
        let mut right = None;
        let r = *self.node(next);
        if r.state == State::Free(zone) {
            self.index_remove(zone, r.off, r.cls);
            self.unlink(next);
            self.release(next);
            right = Some(r.size);
        }
        if let Some((lo, old, new)) = left {
            self.unlink(i);
            self.release(i);
            self.index_move(zone, lo, old, new, prev);
            self.point_pages(off, end, prev);
            if let Some(extra) = right {
                self.grow_free(prev, extra);
            }
        } else {
            let size = size + right.unwrap_or(0);
            let cls = fresh_class(zone, size);
            let n = self.node_mut(i);
            n.size = size;
            n.state = State::Free(zone);
            n.cls = cls;
            self.index_insert(zone, off, cls, i);
            if right.is_some() {
                self.point_pages(end, off + size, i);
            }
        }
    }

    /// Frees live node `i` (out of the live map), whose pages are of several
    /// zones, cutting it where the zone changes.
    fn free_pieces(&mut self, i: u32, zone_of: impl Fn(u64) -> Zone) {
        let Node {
            off,
            size,
            prev,
            next,
            ..
        } = *self.node(i);
        self.unlink(i);
        self.release(i);
        let (g, end) = (1u64 << self.shift, off + size);
        let p1 = ((end - 1) >> self.shift) + 1;
        let (mut cur, mut p, mut left) = (off, off >> self.shift, prev);
        while cur < end {
            let z = zone_of(p);
            p += 1;
            while p < p1 && zone_of(p) == z {
                p += 1;
            }
            let stop = (p * g).min(end);
            let right = if stop == end { next } else { NIL };
            left = self.fill(left, right, cur, stop - cur, z);
            cur = stop;
        }
    }

    /// Grows the free node `i` by `extra` bytes (merged after it).
    fn grow_free(&mut self, i: u32, extra: u64) {
        let b = self.node_mut(i);
        let State::Free(zone) = b.state else {
            unreachable!("grow_free of a live block")
        };
        let (old, off, end) = (b.cls, b.off, b.end());
        b.size += extra;
        let new = reclass(zone, old, b.size);
        b.cls = new.unwrap_or(old);
        self.index_move(zone, off, old, new, i);
        self.point_pages(end, end + extra, i);
    }

    /// Fills the gap `off..off + size` between node `left` (ending at `off`)
    /// and node `right` (starting at `off + size`; `NIL`: more gap) with
    /// free space of `zone`, merged with free neighbours of that zone.
    /// Returns the node now ending the filled space.
    fn fill(&mut self, left: u32, right: u32, off: u64, mut size: u64, zone: Zone) -> u32 {
        if right != NIL {
            let r = *self.node(right);
            debug_assert_eq!(r.off, off + size);
            if r.state == State::Free(zone) {
                self.index_remove(zone, r.off, r.cls);
                self.unlink(right);
                self.release(right);
                size += r.size;
            }
        }
        if self.node(left).state == State::Free(zone) {
            debug_assert_eq!(self.node(left).end(), off);
            self.grow_free(left, size);
            return left;
        }
        let cls = fresh_class(zone, size);
        let i = self.new_node(off, size, State::Free(zone), cls);
        self.link_after(left, i);
        self.index_insert(zone, off, cls, i);
        self.point_pages(off, off + size, i);
        i
    }

    /// The unmapped runs, in address order: `(offset, node)`.
    pub fn unmapped_nodes(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.unmapped.iter().map(|(&o, &i)| (o, i))
    }

    /// The maximal run of adjacent free blocks around the free node `i`
    /// whose zones pass `ok` (node `i`'s must): appends `(offset, end,
    /// zone)` of each block to `out`, in address order. Adjacent blocks of
    /// a run differ in zone, so the offsets inside it are page boundaries.
    pub fn free_run(&self, i: u32, ok: impl Fn(Zone) -> bool, out: &mut Vec<(u64, u64, Zone)>) {
        let free_ok = |j: u32| match self.node(j).state {
            State::Free(z) => ok(z).then_some(z),
            State::Live(_) => None,
        };
        debug_assert!(free_ok(i).is_some(), "free_run from a block it excludes");
        let mut first = i;
        // The sentinel is live: both walks stop there at the latest.
        while free_ok(self.node(first).prev).is_some() {
            first = self.node(first).prev;
        }
        let mut j = first;
        while let Some(z) = free_ok(j) {
            let n = self.node(j);
            out.push((n.off, n.end(), z));
            j = n.next;
        }
    }

    /// The node holding byte `addr`: the live block starting there, else a
    /// walk from the block holding the page's first byte.
    #[inline]
    fn locate(&self, addr: u64) -> Option<u32> {
        if let Some(i) = self.live.get(addr) {
            return Some(i);
        }
        let mut i = match self.pdir.get((addr >> self.shift) as usize) {
            Some(&i) => i,
            None => self.node(SENTINEL).prev,
        };
        loop {
            let n = self.node(i);
            if i == SENTINEL || addr < n.off {
                return None;
            }
            if addr - n.off < n.size {
                return Some(i);
            }
            i = n.next;
        }
    }

    /// The block containing byte `addr`.
    #[inline]
    pub fn containing(&self, addr: u64) -> Option<(u64, Block)> {
        self.locate(addr).map(|i| {
            let n = self.node(i);
            (n.off, n.block())
        })
    }

    /// All blocks in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Block)> + '_ {
        let mut i = self.node(SENTINEL).next;
        std::iter::from_fn(move || {
            (i != SENTINEL).then(|| {
                let n = self.node(i);
                i = n.next;
                (n.off, n.block())
            })
        })
    }

    /// The index entries, for invariant checks: `(zone, offset, class)`
    /// (class 0 for unmapped runs, whose index holds offsets only).
    pub fn index_entries(&self) -> impl Iterator<Item = (Zone, u64, u16)> + '_ {
        let clean = self.clean.iter_from(0).map(|(c, o, _)| (Zone::Clean, o, c));
        let graph = self.graph.iter_from(0).map(|(c, o, _)| (Zone::Graph, o, c));
        let open = self
            .open
            .iter()
            .flat_map(|(&id, ix)| ix.iter_from(0).map(move |(c, o, _)| (Zone::Open(id), o, c)));
        let unmapped = self.unmapped.keys().map(|&o| (Zone::Unmapped, o, 0));
        clean.chain(graph).chain(open).chain(unmapped)
    }

    /// Makes `off..off + size` a live block of `owner`. The range must lie
    /// inside one free block, which is split around it; `hint` is its node
    /// when known (from the plan), else `NIL`.
    #[inline]
    pub fn carve(&mut self, off: u64, size: u64, owner: Owner, hint: u32) {
        let valid =
            |n: &Node| matches!(n.state, State::Free(_)) && n.off <= off && off - n.off < n.size;
        let h = match self.nodes.get(hint as usize) {
            Some(n) if valid(n) => hint,
            _ => self.locate(off).expect("carve past the range"),
        };
        let n = *self.node(h);
        let State::Free(zone) = n.state else {
            panic!("carve into a live block at {}", n.off);
        };
        let (start, free_end, old) = (n.off, n.end(), n.cls);
        assert!(
            off + size <= free_end,
            "carve of {off}+{size} overruns the free block {start}+{}",
            n.size
        );
        let live = State::Live(owner);
        let tail = free_end - (off + size);
        let i = if start == off {
            self.index_remove(zone, start, old);
            if tail > 0 {
                // The hole's node keeps the tail (and its page entries).
                let cls = fresh_class(zone, tail);
                let b = self.node_mut(h);
                b.off = off + size;
                b.size = tail;
                b.cls = cls;
                self.index_insert(zone, off + size, cls, h);
                let i = self.new_node(off, size, live, 0);
                self.link_after(n.prev, i);
                self.point_pages(off, off + size, i);
                i
            } else {
                let b = self.node_mut(h);
                b.state = live;
                b.cls = 0;
                h
            }
        } else {
            let b = self.node_mut(h);
            b.size = off - start;
            let new = reclass(zone, old, b.size);
            b.cls = new.unwrap_or(old);
            self.index_move(zone, start, old, new, h);
            let i = self.new_node(off, size, live, 0);
            self.link_after(h, i);
            self.point_pages(off, off + size, i);
            if tail > 0 {
                let cls = fresh_class(zone, tail);
                let t = self.new_node(off + size, tail, State::Free(zone), cls);
                self.link_after(i, t);
                self.index_insert(zone, off + size, cls, t);
                self.point_pages(off + size, free_end, t);
            }
            i
        };
        self.live.insert(off, i);
    }

    /// Re-cuts the free space overlapping bytes `lo..hi` (page-aligned) after
    /// the zones of those pages changed: `zone_of(page)` gives the new zones;
    /// zones outside `lo..hi` must not have changed.
    pub fn rezone(&mut self, lo: u64, hi: u64, zone_of: impl Fn(u64) -> Zone) {
        let (s, g) = (self.shift, 1u64 << self.shift);
        let mut frees: Vec<u32> = Vec::new();
        let mut i = self.locate(lo).expect("rezone past the range");
        while i != SENTINEL && self.node(i).off < hi {
            if matches!(self.node(i).state, State::Free(_)) {
                frees.push(i);
            }
            i = self.node(i).next;
        }
        for (k, &f) in frees.iter().enumerate() {
            let n = *self.node(f);
            let State::Free(old) = n.state else {
                unreachable!()
            };
            // A later free block right after this one is a gap until filled.
            let next = if frees.get(k + 1) == Some(&n.next) {
                NIL
            } else {
                n.next
            };
            self.index_remove(old, n.off, n.cls);
            self.unlink(f);
            self.release(f);
            let (start, end) = (n.off, n.end());
            let mut left = n.prev;
            let right = |stop: u64| if stop == end { next } else { NIL };
            if start < lo {
                left = self.fill(left, right(lo), start, lo - start, old);
            }
            let (a, b) = (start.max(lo), end.min(hi));
            let mut cur = a;
            while cur < b {
                let z = zone_of(cur >> s);
                let mut stop = (((cur >> s) + 1) << s).min(b);
                while stop < b && zone_of(stop >> s) == z {
                    stop = (stop + g).min(b);
                }
                left = self.fill(left, right(stop), cur, stop - cur, z);
                cur = stop;
            }
            if end > hi {
                self.fill(left, next, hi, end - hi, old);
            }
        }
    }

    /// Checks the links, the live map, the index values and the page
    /// directory against the blocks; `Err` names the first fault.
    pub fn check_structure(&self) -> Result<(), String> {
        let mut linked = vec![false; self.nodes.len()];
        let (mut i, mut prev, mut cursor, mut live) =
            (self.node(SENTINEL).next, SENTINEL, 0u64, 0usize);
        while i != SENTINEL {
            let n = self.node(i);
            if linked[i as usize] || n.prev != prev || n.off != cursor || n.size == 0 {
                return Err(format!("block list broken at node {i} (offset {})", n.off));
            }
            linked[i as usize] = true;
            if let State::Live(_) = n.state {
                let parked = self.parked[..self.parked_len].contains(&i);
                live += usize::from(!parked);
                if self.live.get(n.off) != (!parked).then_some(i) {
                    return Err(format!(
                        "block {} (parked: {parked}) in the live map",
                        n.off
                    ));
                }
            }
            (prev, cursor, i) = (i, n.end(), n.next);
        }
        if self.node(SENTINEL).prev != prev || cursor != self.node(SENTINEL).off {
            return Err("block list does not close at the end of the range".into());
        }
        if live != self.live.len() {
            return Err(format!(
                "live map holds {} blocks, the list {live}",
                self.live.len()
            ));
        }
        let parked = &self.parked[..self.parked_len];
        let parked_ok = parked.iter().enumerate().all(|(k, &j)| {
            linked[j as usize]
                && matches!(self.node(j).state, State::Live(_))
                && !parked[..k].contains(&j)
        });
        if !parked_ok {
            return Err("a parked entry names an unlinked, free or repeated node".into());
        }
        let spare_ok = self
            .spare
            .iter()
            .all(|&j| !linked[j as usize] && self.node(j).size == 0);
        if !spare_ok
            || linked.iter().filter(|&&l| l).count() + self.spare.len() + 1 != self.nodes.len()
        {
            return Err("spare slots out of sync".into());
        }
        let entry = |zone: Zone, off: u64, c: u16, j: u32| {
            let n = self.node(j);
            linked[j as usize] && n.off == off && n.state == State::Free(zone) && n.cls == c
        };
        let class_ok = |zone: Zone, ix: &ClassIndex| ix.check(|c, o, j| entry(zone, o, c, j));
        let ok = class_ok(Zone::Clean, &self.clean)
            && class_ok(Zone::Graph, &self.graph)
            && self
                .open
                .iter()
                .all(|(&id, ix)| ix.len() > 0 && class_ok(Zone::Open(id), ix))
            && self
                .unmapped
                .iter()
                .all(|(&o, &j)| entry(Zone::Unmapped, o, 0, j))
            && self.live.iter().all(|(o, j)| {
                linked[j as usize]
                    && self.node(j).off == o
                    && matches!(self.node(j).state, State::Live(_))
            });
        if !ok {
            return Err("a free index or the live table names the wrong node".into());
        }
        for (p, &j) in self.pdir.iter().enumerate() {
            let a = (p as u64) << self.shift;
            let n = self.node(j);
            if !linked[j as usize] || a < n.off || a - n.off >= n.size {
                return Err(format!(
                    "page directory entry {p} names node {j}, not holding it"
                ));
            }
        }
        let last = self.node(self.node(SENTINEL).prev);
        if (self.pdir.len() as u64) << self.shift < last.off {
            return Err("pages past the directory are not all in the last block".into());
        }
        Ok(())
    }
}
