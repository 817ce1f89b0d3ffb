//! The live blocks by offset: an open-addressing hash table.

/// The live blocks by offset: an open-addressing hash table (linear
/// probing, Fibonacci hashing of `offset >> align_shift`, deletion by
/// backward shift, at most half full), cheaper than a general hash map for
/// the one insert and one remove of each alloc + free.
#[derive(Debug)]
pub(super) struct LiveTable {
    /// `(offset, node)`; `EMPTY` offsets mark free slots.
    slots: Vec<(u64, u32)>,
    len: usize,
    /// 64 - log2(slots.len()).
    hash_shift: u32,
    /// log2(alignment): low offset bits that are always zero.
    align_shift: u32,
}

/// A free slot of the live table (no block starts at `u64::MAX`: offsets
/// are aligned and below `va_bytes`).
const EMPTY: u64 = u64::MAX;

impl LiveTable {
    pub(super) fn new(align_shift: u32) -> Self {
        LiveTable {
            slots: vec![(EMPTY, 0); 16],
            len: 0,
            hash_shift: 64 - 4,
            align_shift,
        }
    }

    #[inline]
    fn home(&self, off: u64) -> usize {
        ((off >> self.align_shift).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.hash_shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn get(&self, off: u64) -> Option<u32> {
        if off == EMPTY {
            return None;
        }
        let mut i = self.home(off);
        loop {
            let (k, v) = self.slots[i];
            if k == off {
                return Some(v);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask();
        }
    }

    /// Adds `off` (not present).
    #[inline]
    pub(super) fn insert(&mut self, off: u64, node: u32) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(off);
        while self.slots[i].0 != EMPTY {
            debug_assert_ne!(self.slots[i].0, off, "live block inserted twice");
            i = (i + 1) & self.mask();
        }
        self.slots[i] = (off, node);
        self.len += 1;
    }

    /// Removes `off`, returning its node.
    #[inline]
    pub(super) fn remove(&mut self, off: u64) -> Option<u32> {
        if off == EMPTY {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(off);
        let node = loop {
            let (k, v) = self.slots[i];
            if k == off {
                break v;
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        };
        // Backward shift: pull later entries of the probe run into the hole
        // when their home lies at or before it.
        let (mut hole, mut j) = (i, (i + 1) & mask);
        loop {
            let (k, v) = self.slots[j];
            if k == EMPTY {
                break;
            }
            let h = self.home(k);
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = (k, v);
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = (EMPTY, 0);
        self.len -= 1;
        Some(node)
    }

    #[cold]
    fn grow(&mut self) {
        let cap = 2 * self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![(EMPTY, 0); cap]);
        self.hash_shift -= 1;
        let mask = self.mask();
        for (k, v) in old.into_iter().filter(|&(k, _)| k != EMPTY) {
            let mut i = self.home(k);
            while self.slots[i].0 != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = (k, v);
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.slots.iter().copied().filter(|&(k, _)| k != EMPTY)
    }
}
