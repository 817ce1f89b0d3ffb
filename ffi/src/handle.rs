//! Checked handles. A handle is never a pointer to memory: it encodes the
//! object's kind, a slot index and the slot's generation. A NULL handle is
//! `GC_ERROR_INVALID_ARGUMENT`; a handle of the wrong kind, a destroyed one
//! (its slot's generation moved on) or garbage is `GC_ERROR_INVALID_HANDLE`,
//! never undefined behaviour.
//!
//! Lookups take no lock. The slots live in chunks that never move: chunk
//! `k` holds `64 << k` slots, is allocated the first time an insert needs
//! it and is freed only with the table (the tables are statics: never).
//! So a reader reaches its slot with one acquire load of the chunk pointer.
//! Each slot has one atomic word, `version << 32 | readers`:
//!
//! * `version` is odd while the slot holds an object, and is then the
//!   generation written into the object's handle; even while it is empty.
//!   Insert adds one (even to odd), remove adds one (odd to even), so a
//!   handle is dead from its remove on, until the version wraps around
//!   (2^31 reuses of one slot).
//! * A lookup publishes the slot in a hazard entry of its thread (a plain
//!   store, see `hazard.rs`), then loads the word: only a matching odd
//!   version lets it read the object, and it clears the entry on leaving.
//!   No atomic read-modify-write: calls on one object from many threads
//!   share its slot's cache line only for reading.
//! * `readers` counts the lookups that found no free hazard entry (nested
//!   deeper than a thread's entries, or on an exiting thread): such a
//!   lookup increments it, then checks the version it got back from that
//!   same atomic operation, and decrements on leaving. (Lookups stay
//!   inside only for a clone or a short call, a few per thread at most:
//!   the count stays far below 2^32 and never carries into the version.)
//!
//! Remove first makes the version even (no new lookup can match from then
//! on), then waits for the hazard entries naming the slot to clear and for
//! `readers` to drain before it takes the object out; only after that does
//! the slot go back on the free list for a later insert. The price of the
//! store-only lookups is paid here: while another thread holds a hazard
//! record, a remove issues a membarrier (an interrupt to each CPU running a
//! thread of the process): measured on the 2-core CI VM, a graph destroy
//! took 0.3 us with an idle second thread, 0.3 to 16 us with a busy one
//! (the VM shared), against 0.1 us before.
//!
//! Insert and remove serialize on a mutex only for the free list; a remove
//! waits for nothing but lookups of its own slot. The memory ordering of
//! each step is argued where it happens.
//!
//! The plain design, for measuring against: a table whose lookups always
//! count themselves in `readers` (an atomic increment on entering and a
//! decrement on leaving, on the slot's own cache line), with no hazard
//! entries and no membarrier. It is the same table with its second const
//! parameter `true` (`Registry<T, true>`); the cargo feature
//! `plain-handles` makes it every table's default, so the C benches can
//! time both designs through the C ABI (perf/c/handle_bench.c).

use graphcore_core::{Error, ErrorKind, Result};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

mod hazard;

const KIND_SHIFT: u32 = 56;
const INDEX_SHIFT: u32 = 32;
const INDEX_MASK: u64 = (1 << 24) - 1;

/// Chunk 0 holds `1 << FIRST_BITS` slots; each next chunk twice as many.
const FIRST_BITS: u32 = 6;
/// Number of chunks: they hold 64 * (2^18 - 1) slots, the most that a
/// handle's 24-bit index can name (rounded down to whole chunks).
const CHUNKS: usize = 18;
/// Slots the table can hold.
const CAPACITY: usize = ((1 << CHUNKS) - 1) << FIRST_BITS;
const _: () = assert!(CAPACITY as u64 <= INDEX_MASK + 1);

/// One step of a slot word's version (its high half).
const VERSION_ONE: u64 = 1 << 32;
/// The readers count (the low half of a slot word).
const READERS_MASK: u64 = (1 << 32) - 1;

/// Whether a table's lookups are plain (counted in the slot word) unless
/// its type says otherwise: the cargo feature `plain-handles`.
const PLAIN: bool = cfg!(feature = "plain-handles");

/// Bytes per slot, whatever the object's type: the lookup code is shared
/// by every table ([`enter_slot`]) and finds a slot from its index alone.
const SLOT_BYTES: usize = 128;

/// One slot, alone on its cache lines: lookups of different objects (16
/// threads on 16 pools) write different lines and never contend. The word
/// comes first (`repr(C)`): [`enter_slot`] reads it knowing only the
/// slot's address.
#[repr(C, align(128))]
struct Slot<T> {
    /// `version << 32 | readers`; see the module doc.
    word: AtomicU64,
    /// The object: `Some` exactly while the version is odd, except inside
    /// an insert or a remove, which own the cell then (see there).
    value: UnsafeCell<Option<T>>,
}

impl<T> Slot<T> {
    /// Holds for every table made ([`Registry::new`]): objects are cheap
    /// handles (reference-counted pointers), far below the slot's size.
    const FITS: () = assert!(std::mem::size_of::<Slot<T>>() == SLOT_BYTES);

    fn empty() -> Self {
        Slot {
            word: AtomicU64::new(0),
            value: UnsafeCell::new(None),
        }
    }
}

/// Slots no object holds: the free list and the first never-used index.
struct Free {
    list: Vec<u32>,
    next: u32,
}

/// One table per handle kind, of graphcore-core objects (cheap, reference
/// counted clones). Lookups are lock-free (a store to the thread's own
/// hazard entry and a load of the object's slot), so calls never wait on
/// each other, and an object lives until the last call using it returns, even
/// if its handle is destroyed meanwhile. `COUNTED`: lookups count
/// themselves in the slot word instead (the plain design, see the module
/// doc).
pub(crate) struct Registry<T, const COUNTED: bool = PLAIN> {
    kind: u8,
    name: &'static str,
    /// Chunk `k`: `64 << k` slots of `Slot<T>`, or null until first
    /// needed (untyped, for [`enter_slot`]).
    chunks: [AtomicPtr<u8>; CHUNKS],
    free: Mutex<Free>,
    _objects: PhantomData<T>,
}

// SAFETY: objects are shared between threads only by reference (T: Sync)
// and moved in and out by whichever thread inserts or removes (T: Send);
// every access to a slot's value cell follows the protocol of the module
// doc, which gives each write exclusive access and orders it before or
// after every read (argued at each access).
unsafe impl<T: Send + Sync, const COUNTED: bool> Sync for Registry<T, COUNTED> {}
// SAFETY: as above; the chunks are owned by the table.
unsafe impl<T: Send + Sync, const COUNTED: bool> Send for Registry<T, COUNTED> {}

/// The C name of the handle kind encoded in `h`, for messages.
fn kind_name(h: u64) -> &'static str {
    match (h >> KIND_SHIFT) as u8 {
        1 => "gc_context",
        2 => "gc_stream",
        3 => "gc_pool",
        4 => "gc_module",
        5 => "gc_function",
        6 => "gc_graph",
        7 => "gc_exec",
        8 => "gc_runner",
        9 => "gc_event",
        10 => "gc_cache",
        _ => "not a graphcore handle",
    }
}

/// The chunk holding slot `index` and the slot's place in it.
#[inline]
fn locate(index: usize) -> (usize, usize) {
    let k = ((index >> FIRST_BITS) + 1).ilog2() as usize;
    (k, index - (((1 << k) - 1) << FIRST_BITS))
}

/// Slots in chunk `k`.
fn chunk_len(k: usize) -> usize {
    1 << (k as u32 + FIRST_BITS)
}

/// Why a lookup found no object ([`enter_slot`]'s error).
enum Miss {
    /// NULL, or a handle of another kind.
    NotOurs,
    /// A destroyed (or never valid) handle of this kind.
    Stale,
}

/// The slot of handle `h` in the table of handle kind `kind` whose chunks
/// are `chunks`, entered (see the module doc): the slot's address and how
/// the lookup holds it. The same code for every table, so the two lookups
/// of one call (a function and a stream, a graph and a function) run the
/// same instructions: a call's first lookup brings them into the cache
/// for the second. `COUNTED`: always count the lookup in the slot word
/// (the plain design), never publish a hazard entry.
///
/// The address is a raw pointer derived from the chunk's, so it may be
/// used for the whole slot (a reference to the word would cover only the
/// word's 8 bytes: widening it to the slot is undefined behaviour under
/// Stacked Borrows).
#[inline(never)]
fn enter_slot<const COUNTED: bool>(
    chunks: &[AtomicPtr<u8>; CHUNKS],
    kind: u8,
    h: u64,
) -> std::result::Result<(*const u8, Hold<'_>), Miss> {
    if h == 0 || (h >> KIND_SHIFT) as u8 != kind {
        return Err(Miss::NotOurs);
    }
    let index = ((h >> INDEX_SHIFT) & INDEX_MASK) as usize;
    let generation = h as u32;
    let (k, at) = locate(index);
    // Acquire: pairs with the Release store in `insert` that published
    // the chunk, so its slots are seen initialized.
    let chunk = match chunks.get(k) {
        Some(c) => c.load(Ordering::Acquire),
        None => return Err(Miss::Stale),
    };
    if chunk.is_null() {
        return Err(Miss::Stale);
    }
    // SAFETY: a non-null chunk `k` holds `chunk_len(k)` initialized slots
    // of SLOT_BYTES bytes each, and `at < chunk_len(k)` by `locate`: the
    // offset stays inside the chunk's allocation.
    let slot: *const u8 = unsafe { chunk.add(at * SLOT_BYTES) };
    // SAFETY: the slot stays put while the table lives (the caller's
    // borrow of it), and starts with its word (`repr(C)`).
    let word: &AtomicU64 = unsafe { &*slot.cast::<AtomicU64>() };
    let hazard = if COUNTED {
        None
    } else {
        hazard::protect(slot as usize)
    };
    let (seen, hold) = match hazard {
        // SeqCst (see `hazard::barrier`), which includes Acquire: pairs
        // with insert's Release, so a matching version means the object
        // written before it is visible. A remove that made the version
        // even after this load waits for the entry to clear.
        Some(hz) => (word.load(Ordering::SeqCst), Hold::Hazard(hz)),
        // Acquire: as above. The increment and the version check are one
        // atomic step: a remove that makes the version even after it will
        // see this reader counted.
        None => (word.fetch_add(1, Ordering::Acquire), Hold::Counted(word)),
    };
    if generation & 1 == 0 || (seen >> 32) as u32 != generation {
        // Stale: this reader never touches the cell. It leaves before the
        // error is made (a remove waiting for the slot need not wait for
        // the message's formatting).
        drop(hold);
        return Err(Miss::Stale);
    }
    Ok((slot, hold))
}

/// A lookup inside its slot: derefs to the object, which cannot be taken
/// out of the slot before this is dropped.
pub(crate) struct Guard<'a, T> {
    value: &'a T,
    /// How the lookup holds the slot: dropping it leaves.
    _hold: Hold<'a>,
}

/// How a lookup holds its slot.
enum Hold<'a> {
    /// A hazard entry of this thread names the slot (dropping it clears
    /// the entry).
    Hazard(#[allow(dead_code)] hazard::Hazard),
    /// The lookup is counted in the slot's readers.
    Counted(&'a AtomicU64),
}

impl Drop for Hold<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Hold::Counted(word) = self {
            // Release: this lookup's reads of the object happen before the
            // remove that sees the count drop (it loads with Acquire) takes
            // it. (A hazard clears itself, with the same ordering.)
            word.fetch_sub(1, Ordering::Release);
        }
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Clone, const COUNTED: bool> Registry<T, COUNTED> {
    /// An empty table for handles of `kind` (its C type name is `name`).
    pub(crate) const fn new(kind: u8, name: &'static str) -> Self {
        let () = Slot::<T>::FITS;
        Registry {
            kind,
            name,
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
            free: Mutex::new(Free {
                list: Vec::new(),
                next: 0,
            }),
            _objects: PhantomData,
        }
    }

    /// Slot `index`, if its chunk exists.
    #[inline]
    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        let (k, at) = locate(index);
        // Acquire: pairs with the Release store in `insert` that published
        // the chunk, so its slots are seen initialized.
        let chunk = self.chunks.get(k)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a non-null chunk `k` points to `chunk_len(k)` initialized
        // slots of `T` that stay put until the table is dropped (which
        // `&self` rules out), and `at < chunk_len(k)` by `locate`.
        Some(unsafe { &*chunk.cast::<Slot<T>>().add(at) })
    }

    /// Stores `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> Result<u64> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let index = match free.list.pop() {
            Some(i) => i as usize,
            None => {
                let i = free.next as usize;
                if i >= CAPACITY {
                    return Err(Error::new(
                        ErrorKind::OutOfMemory,
                        format!("too many live {} handles", self.name),
                    ));
                }
                let (k, _) = locate(i);
                if self.chunks[k].load(Ordering::Relaxed).is_null() {
                    // Only inserts create chunks, under the mutex: no race.
                    let chunk: Box<[Slot<T>]> = (0..chunk_len(k)).map(|_| Slot::empty()).collect();
                    // Release: readers that see the pointer see the slots.
                    self.chunks[k].store(Box::into_raw(chunk).cast::<u8>(), Ordering::Release);
                }
                free.next += 1;
                i
            }
        };
        let slot = self.slot(index).expect("the chunk of a used index exists");
        // SAFETY: the slot is empty (even version) and owned by this insert:
        // it was never used, or its remove finished taking the object out
        // before putting it on the free list, which we hold locked. Lookups
        // of the slot meanwhile see an even version and never touch the
        // cell; the version only turns odd (publishing the cell) below.
        unsafe { *slot.value.get() = Some(value) };
        // Release: a lookup whose Acquire increment reads this version (or
        // a later one of the same word's read-modify-writes) sees the value.
        let old = slot.word.fetch_add(VERSION_ONE, Ordering::Release);
        let version = ((old >> 32) as u32).wrapping_add(1);
        debug_assert!(version & 1 == 1);
        Ok((self.kind as u64) << KIND_SHIFT | (index as u64) << INDEX_SHIFT | version as u64)
    }

    #[inline]
    fn decode(&self, h: u64, arg: &str) -> Result<(usize, u32)> {
        if h == 0 || (h >> KIND_SHIFT) as u8 != self.kind {
            return Err(self.not_ours(h, arg));
        }
        Ok((((h >> INDEX_SHIFT) & INDEX_MASK) as usize, h as u32))
    }

    /// The error for a handle that is NULL or of another kind (the cold
    /// path of `decode`).
    #[cold]
    #[inline(never)]
    fn not_ours(&self, h: u64, arg: &str) -> Error {
        if h == 0 {
            return Error::invalid_argument(format!("`{arg}` is NULL"));
        }
        Error::new(
            ErrorKind::InvalidHandle,
            format!("`{arg}` is not a {} handle ({})", self.name, kind_name(h)),
        )
    }

    #[cold]
    #[inline(never)]
    fn stale(&self, arg: &str) -> Error {
        Error::new(
            ErrorKind::InvalidHandle,
            format!(
                "`{arg}` is a destroyed (or never valid) {} handle",
                self.name
            ),
        )
    }

    /// Enters the slot of handle `h`: the object stays in it until the
    /// guard is dropped. A store to a hazard entry of this thread and a load
    /// of the slot's word (two atomic operations on the slot when the thread
    /// has no free entry).
    #[inline]
    fn enter(&self, h: u64, arg: &str) -> Result<Guard<'_, T>> {
        match enter_slot::<COUNTED>(&self.chunks, self.kind, h) {
            Ok((slot, hold)) => {
                // SAFETY: `slot` points to a `Slot<T>` of this table
                // (`enter_slot` was given this table's chunks), alive as
                // long as the table, with the chunk's provenance (the whole
                // slot, not only its word).
                let slot = unsafe { &*slot.cast::<Slot<T>>() };
                // SAFETY: `enter_slot` found the version odd and matching:
                // the object was inserted before (Acquire there), and no
                // remove can take it out until this reader has left
                // (`hold`'s drop, below which the reference does not
                // outlive the guard). No one writes the cell while the
                // version is odd.
                match unsafe { &*slot.value.get() } {
                    Some(value) => Ok(Guard { value, _hold: hold }),
                    None => unreachable!("an odd version always has its object"),
                }
            }
            Err(Miss::NotOurs) => Err(self.not_ours(h, arg)),
            Err(Miss::Stale) => Err(self.stale(arg)),
        }
    }

    /// The object behind handle `h` (`arg` names the parameter in errors).
    #[inline]
    pub(crate) fn get(&self, h: u64, arg: &str) -> Result<T> {
        let guard = self.enter(h, arg)?;
        Ok(guard.value.clone())
    }

    /// Runs `f` on the object behind `h` without cloning it: for short, hot
    /// calls (pool alloc/free, launches, adding nodes, capture begin and
    /// end, updates). Destroying this same handle waits until `f` returns,
    /// so `f` must not destroy it.
    #[inline]
    pub(crate) fn with<R>(&self, h: u64, arg: &str, f: impl FnOnce(&T) -> Result<R>) -> Result<R> {
        let guard = self.enter(h, arg)?;
        f(&guard)
    }

    /// Removes handle `h`; NULL is a no-op (`Ok(None)`). Waits for lookups
    /// still inside the slot (clones, or `with` calls) to leave.
    pub(crate) fn remove(&self, h: u64, arg: &str) -> Result<Option<T>> {
        if h == 0 {
            return Ok(None);
        }
        let (index, generation) = self.decode(h, arg)?;
        let slot = self.slot(index).ok_or_else(|| self.stale(arg))?;
        // Make the version even, if it is still the handle's (odd) one: the
        // compare-exchange lets one of two racing removes win. Acquire:
        // pairs with the insert's Release, for the take below; SeqCst: see
        // `hazard::barrier`.
        let mut word = slot.word.load(Ordering::Relaxed);
        loop {
            if generation & 1 == 0 || (word >> 32) as u32 != generation {
                return Err(self.stale(arg));
            }
            match slot.word.compare_exchange_weak(
                word,
                word.wrapping_add(VERSION_ONE),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        // No lookup can enter now; wait for those inside to leave: first
        // those holding hazard entries (after the barrier that makes every
        // entry published before a version load visible), then the counted
        // ones. Acquire (both waits): pairs with their Release leaving, so
        // their reads of the object happen before the take. (Stale lookups
        // come and go meanwhile; they never touch the cell.)
        if !COUNTED {
            hazard::barrier();
            hazard::wait_for(slot as *const Slot<T> as usize);
        }
        let mut spins = 0u32;
        while slot.word.load(Ordering::Acquire) & READERS_MASK != 0 {
            graphcore_core::backoff(&mut spins);
        }
        // SAFETY: this remove won the compare-exchange, so it alone owns the
        // even slot: no lookup reads the cell (the version does not match
        // any) and no insert writes it (the slot is not on the free list).
        let value = unsafe { (*slot.value.get()).take() };
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list
            .push(index as u32);
        Ok(value)
    }
}

impl<T, const COUNTED: bool> Drop for Registry<T, COUNTED> {
    fn drop(&mut self) {
        for (k, chunk) in self.chunks.iter_mut().enumerate() {
            let p = chunk.get_mut().cast::<Slot<T>>();
            if !p.is_null() {
                // SAFETY: `p` came from `Box::into_raw` of a boxed slice of
                // `chunk_len(k)` slots in `insert`; `&mut self` means no
                // lookup holds a reference into it.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, chunk_len(k))) });
            }
        }
    }
}

#[cfg(test)]
mod tests;
