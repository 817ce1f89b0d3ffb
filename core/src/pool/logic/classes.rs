//! Size classes of free blocks, and each zone's index of its free blocks by
//! class and offset.

use std::collections::BTreeMap;

use super::pages::Zone;

/// Number of size classes (`class(u64::MAX)` is 511).
const CLASSES: usize = 512;

/// A short class list grows into a B-tree past this many blocks...
const SHORT_MAX: usize = 128;
/// ...and a long one shrinks back below this many.
const LONG_MIN: usize = 32;

/// The free blocks of one size class and zone, by offset: while short, a
/// vector sorted by descending offset, so the lowest-offset block (the one
/// the small-block path takes and gives back) is at its end and moves in
/// O(1); when long, a B-tree, so no operation costs more than O(log n).
#[derive(Debug)]
enum ClassList {
    Short(Vec<(u64, u32)>),
    Long(BTreeMap<u64, u32>),
}

impl ClassList {
    fn len(&self) -> usize {
        match self {
            ClassList::Short(v) => v.len(),
            ClassList::Long(t) => t.len(),
        }
    }

    #[inline]
    fn insert(&mut self, off: u64, node: u32) {
        match self {
            ClassList::Short(v) => {
                if v.last().is_none_or(|&(o, _)| o > off) {
                    v.push((off, node));
                    return;
                }
                let i = v.partition_point(|&(o, _)| o > off);
                v.insert(i, (off, node));
                if v.len() > SHORT_MAX {
                    *self = ClassList::Long(v.iter().copied().collect());
                }
            }
            ClassList::Long(t) => {
                t.insert(off, node);
            }
        }
    }

    /// Removes `off`; true when it was there.
    #[inline]
    fn remove(&mut self, off: u64) -> bool {
        match self {
            ClassList::Short(v) => {
                if v.last().is_some_and(|&(o, _)| o == off) {
                    v.pop();
                    return true;
                }
                match v.binary_search_by(|&(o, _)| off.cmp(&o)) {
                    Ok(i) => {
                        v.remove(i);
                        true
                    }
                    Err(_) => false,
                }
            }
            ClassList::Long(t) => {
                let found = t.remove(&off).is_some();
                if t.len() < LONG_MIN {
                    *self = ClassList::Short(t.iter().rev().map(|(&o, &i)| (o, i)).collect());
                }
                found
            }
        }
    }

    /// The lowest-offset block: `(offset, node)`.
    #[inline]
    fn first(&self) -> Option<(u64, u32)> {
        match self {
            ClassList::Short(v) => v.last().copied(),
            ClassList::Long(t) => t.first_key_value().map(|(&o, &i)| (o, i)),
        }
    }

    /// The blocks in offset order: `(offset, node)`.
    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let (short, long) = match self {
            ClassList::Short(v) => (Some(v.iter().rev()), None),
            ClassList::Long(t) => (None, Some(t.iter())),
        };
        short
            .into_iter()
            .flatten()
            .copied()
            .chain(long.into_iter().flatten().map(|(&o, &i)| (o, i)))
    }
}

/// The free blocks of one mapped zone, segregated by size class: per class
/// an ordered map offset -> node, and a bitmap of the nonempty classes, so
/// the first hole of a class or above is a bit scan and a leftmost descent.
#[derive(Debug)]
pub(super) struct ClassIndex {
    bits: [u64; CLASSES / 64],
    lists: Box<[ClassList]>,
    len: usize,
}

impl ClassIndex {
    pub(super) fn new() -> Self {
        ClassIndex {
            bits: [0; CLASSES / 64],
            lists: (0..CLASSES).map(|_| ClassList::Short(Vec::new())).collect(),
            len: 0,
        }
    }

    #[inline]
    pub(super) fn insert(&mut self, c: u16, off: u64, node: u32) {
        let c = usize::from(c);
        self.bits[c >> 6] |= 1 << (c & 63);
        self.lists[c].insert(off, node);
        self.len += 1;
    }

    #[inline]
    pub(super) fn remove(&mut self, c: u16, off: u64) -> bool {
        let c = usize::from(c);
        let list = &mut self.lists[c];
        let found = list.remove(off);
        if list.len() == 0 {
            self.bits[c >> 6] &= !(1 << (c & 63));
        }
        self.len -= usize::from(found);
        found
    }

    /// The first nonempty class from `from` up.
    #[inline]
    fn next_class(&self, from: usize) -> Option<usize> {
        let mut w = from >> 6;
        let mut m = *self.bits.get(w)? & (!0u64 << (from & 63));
        loop {
            if m != 0 {
                return Some((w << 6) | m.trailing_zeros() as usize);
            }
            w += 1;
            m = *self.bits.get(w)?;
        }
    }

    /// The lowest-offset block of the first nonempty class from `from` up:
    /// `(class, offset, node)`.
    #[inline]
    pub(super) fn first(&self, from: u16) -> Option<(u16, u64, u32)> {
        let c = self.next_class(usize::from(from))?;
        let (off, node) = self.lists[c].first()?;
        Some((c as u16, off, node))
    }

    /// Blocks in classes from `from` up, in (class, offset) order.
    pub(super) fn iter_from(&self, from: u16) -> impl Iterator<Item = (u16, u64, u32)> + '_ {
        let mut next = usize::from(from);
        std::iter::from_fn(move || {
            let c = self.next_class(next)?;
            next = c + 1;
            Some(c)
        })
        .flat_map(move |c| self.lists[c].iter().map(move |(o, i)| (c as u16, o, i)))
    }

    /// Free blocks indexed.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether the bitmap and the count agree with the lists, each list is
    /// in ascending offset order, and `entry(class, offset, node)` holds for
    /// every entry (for `BlockMap::check_structure`).
    pub(super) fn check(&self, entry: impl Fn(u16, u64, u32) -> bool) -> bool {
        let mut total = 0;
        for (c, l) in self.lists.iter().enumerate() {
            let n = l.len();
            if (self.bits[c >> 6] >> (c & 63) & 1) != u64::from(n > 0) {
                return false;
            }
            if n == 0 {
                continue;
            }
            total += n;
            let mut last = None;
            for (o, j) in l.iter() {
                if last.is_some_and(|p| p >= o) || !entry(c as u16, o, j) {
                    return false;
                }
                last = Some(o);
            }
        }
        total == self.len
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
