//! Hazard entries: how a handle lookup keeps its object alive without an
//! atomic read-modify-write.
//!
//! Each thread that looks handles up owns a record of [`ENTRIES`] entries.
//! A lookup publishes the address of the slot it is about to read in a
//! free entry of its own record (a plain store), then loads the slot's
//! version; it clears the entry (a plain release store) when it is done. A
//! remove makes the version even, then runs [`barrier`], then waits in
//! [`wait_for`] until no entry names the slot. That is Dekker's pattern:
//! either the lookup's version load sees the remove (and the lookup fails
//! without touching the object), or the remove's scan sees the lookup's
//! entry (and waits for it to clear).
//!
//! Dekker's pattern needs a store-load fence on both sides. The lookup's
//! side is the hot one, so where Linux offers it the fence is asymmetric:
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` in [`barrier`] makes every
//! running thread of the process pass a full memory barrier, and the lookup
//! needs only a compiler fence. Where membarrier is missing (old kernels,
//! sandboxes, Miri) lookups pay a real `SeqCst` fence, and so does
//! [`barrier`]: correct by the C++ fence rules alone.
//!
//! Records live for the process (they are few: one per thread that ever
//! looked a handle up, reused after the thread exits). A thread without a
//! free entry (lookups nested more than [`ENTRIES`] deep, or a thread whose
//! record is already released because it is exiting) gets `None` from
//! [`protect`]; its caller falls back to counting itself into the slot.

use std::cell::Cell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicPtr, AtomicU8, AtomicUsize};

/// Entries per thread: lookups nest at most a few deep (a graph, then the
/// function or stream named in the same call).
const ENTRIES: usize = 4;

/// One thread's entries, on cache lines of its own.
#[repr(align(128))]
struct Record {
    /// Published slot addresses; 0 is a free entry.
    entries: [AtomicUsize; ENTRIES],
    /// Claimed by a live thread.
    claimed: AtomicBool,
    /// The record pushed before this one (immutable once pushed).
    next: *const Record,
}

/// The records, newest first (push-only: records are never freed).
static RECORDS: AtomicPtr<Record> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// This thread's record, or null before its first lookup (and after
    /// its release at thread exit). No destructor: reading it is a plain
    /// thread-local access, valid at any time.
    static MINE: Cell<*const Record> = const { Cell::new(std::ptr::null()) };
    /// Gives the record back when the thread exits.
    static RELEASE: Releaser = const { Releaser };
}

/// Fences not known yet.
const UNKNOWN: u8 = 0;
/// Asymmetric: membarrier on the remove side, compiler fences on lookups.
const MEMBARRIER: u8 = 1;
/// Symmetric: `SeqCst` fences on both sides.
const FENCES: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The fence mode, chosen once per process.
#[inline]
fn mode() -> u8 {
    match MODE.load(Relaxed) {
        UNKNOWN => choose_mode(),
        m => m,
    }
}

/// Registers the process for expedited private membarriers, if the kernel
/// offers them. The first result stored wins: every thread then sees the
/// same mode (a lookup that saw MEMBARRIER skips its fence only because
/// every remove will see MEMBARRIER too).
#[cold]
#[inline(never)]
fn choose_mode() -> u8 {
    let m = if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
        MEMBARRIER
    } else {
        FENCES
    };
    match MODE.compare_exchange(UNKNOWN, m, Relaxed, Relaxed) {
        Ok(_) => m,
        Err(first) => first,
    }
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: i32 = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: i32 = 1 << 4;

/// Runs a membarrier command; true on success.
#[cfg(all(target_os = "linux", not(miri)))]
fn membarrier(cmd: i32) -> bool {
    // SAFETY: membarrier takes (int cmd, unsigned flags, int cpu_id) by
    // value and touches no memory of ours; an unknown command or a kernel
    // without it fails with an errno.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0u32, 0i32) == 0 }
}

/// No membarrier here: fences on both sides.
#[cfg(not(all(target_os = "linux", not(miri))))]
fn membarrier(_cmd: i32) -> bool {
    false
}

/// A published entry: the slot it names cannot be taken out by a remove
/// until this is dropped.
pub(super) struct Hazard {
    entry: &'static AtomicUsize,
}

impl Drop for Hazard {
    #[inline]
    fn drop(&mut self) {
        // Release: this lookup's reads of the object happen before the
        // remove whose Acquire scan sees the entry cleared takes it.
        self.entry.store(0, Release);
    }
}

/// Publishes `addr` (a slot's address, never 0) in a free entry of this
/// thread's record. The caller loads the slot's version after this
/// returns, with SeqCst (see [`barrier`] for why). `None`: no free entry;
/// the caller must protect the slot another way.
#[inline]
pub(super) fn protect(addr: usize) -> Option<Hazard> {
    let mut rec = MINE.with(Cell::get);
    if rec.is_null() {
        rec = claim()?;
    }
    // SAFETY: records are leaked at creation and never freed.
    let rec: &'static Record = unsafe { &*rec };
    // Only this thread writes its entries: a free one stays free.
    let entry = rec.entries.iter().find(|e| e.load(Relaxed) == 0)?;
    entry.store(addr, Relaxed);
    if mode() == MEMBARRIER {
        // The remove's membarrier orders this store before the caller's
        // version load, as seen from the remove's thread.
        compiler_fence(SeqCst);
    } else {
        // Pairs with the fence in `barrier`: of this store and the
        // remove's version change, the other side sees at least one.
        fence(SeqCst);
    }
    Some(Hazard { entry })
}

/// This thread's record, claimed now: a released one, else a new one. Null
/// (`None`) while the thread is exiting (its releaser is gone).
#[cold]
#[inline(never)]
fn claim() -> Option<*const Record> {
    // Registering the releaser first: a thread that cannot have one (it is
    // exiting) never claims a record it could not give back.
    RELEASE.try_with(|_| ()).ok()?;
    let mut p = RECORDS.load(Acquire).cast_const();
    let rec = loop {
        if p.is_null() {
            break push_new();
        }
        // SAFETY: records are leaked at creation and never freed.
        let r = unsafe { &*p };
        // SeqCst: see `barrier` (a remove that does not see this claim
        // is ordered before this thread's later version loads).
        if r.claimed
            .compare_exchange(false, true, SeqCst, Relaxed)
            .is_ok()
        {
            break p;
        }
        p = r.next;
    };
    MINE.with(|m| m.set(rec));
    Some(rec)
}

/// A new record, claimed, pushed on the list.
fn push_new() -> *const Record {
    let rec: *mut Record = Box::into_raw(Box::new(Record {
        entries: Default::default(),
        claimed: AtomicBool::new(true),
        next: std::ptr::null(),
    }));
    let mut head = RECORDS.load(Relaxed);
    loop {
        // SAFETY: `rec` is ours alone until the exchange below publishes it.
        unsafe { (*rec).next = head };
        // SeqCst: as the claim in `claim` (and Release: scanners that load
        // the head see `next`).
        match RECORDS.compare_exchange_weak(head, rec, SeqCst, Relaxed) {
            Ok(_) => return rec,
            Err(now) => head = now,
        }
    }
}

/// Gives this thread's record back at thread exit.
struct Releaser;

impl Drop for Releaser {
    fn drop(&mut self) {
        let rec = MINE.with(|m| m.replace(std::ptr::null()));
        if rec.is_null() {
            return;
        }
        // SAFETY: records are leaked at creation and never freed.
        let rec = unsafe { &*rec };
        // A guard still out (a lookup inside another thread-local's
        // destructor) keeps its entry: the record stays claimed (leaked).
        if rec.entries.iter().all(|e| e.load(Relaxed) == 0) {
            rec.claimed.store(false, Release);
        }
    }
}

/// Run by a remove after it made the slot's version even (with a SeqCst
/// read-modify-write) and before [`wait_for`]: afterwards every lookup
/// that read the old version has its entry visible to the remove.
///
/// With membarrier, each running thread passes a full barrier, so a
/// lookup's entry store before its version load is visible, or its load
/// comes after the barrier and sees the even version. Without, SeqCst
/// fences pair with the lookups' fences. When no other thread holds a
/// record, no barrier is needed: a later claim is a SeqCst
/// read-modify-write before the claimer's SeqCst version loads, so those
/// loads see the even version.
pub(super) fn barrier() {
    fence(SeqCst);
    if mode() == MEMBARRIER && others_claimed() && !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        // Registration is per address space: a child made by fork() (which
        // inherits the parent's records, claimed) may not be registered.
        // Register it and try again. If that failed too, nothing would order the
        // lookups' entries: stop rather than race.
        if !(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
            && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        {
            std::process::abort();
        }
    }
}

/// Whether a thread other than this one holds a record.
fn others_claimed() -> bool {
    let mine = MINE.with(Cell::get);
    records().any(|r| !std::ptr::eq(r, mine) && r.claimed.load(SeqCst))
}

/// All records.
fn records() -> impl Iterator<Item = &'static Record> {
    // SeqCst: see `barrier` (a new record's push is then seen).
    let mut p = RECORDS.load(SeqCst).cast_const();
    std::iter::from_fn(move || {
        // SAFETY: records are leaked at creation and never freed.
        let r = unsafe { p.as_ref()? };
        p = r.next;
        Some(r)
    })
}

/// Waits until no thread's entry names `addr` (after [`barrier`]).
pub(super) fn wait_for(addr: usize) {
    for r in records() {
        for e in &r.entries {
            let mut spins = 0u32;
            // Acquire: pairs with the Release clear in `Hazard::drop`.
            // Lookups leave within nanoseconds; a call made inside one (a
            // launch waiting for queue space) may take longer.
            while e.load(Acquire) == addr {
                graphcore_core::backoff(&mut spins);
            }
        }
    }
}

/// Records made so far (claimed or not).
#[cfg(test)]
pub(super) fn record_count() -> usize {
    records().count()
}
