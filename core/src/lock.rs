//! The one lock policy of graphcore: a poisoned lock is recovered, not
//! propagated.
//!
//! graphcore changes state behind a lock only after every step that can
//! fail (plan, then driver calls, then commit), so a panic while a lock is
//! held (caught at the C boundary as `GC_ERROR_PANIC`) leaves the state as
//! it was before or after one whole change, never half-way. Every later call
//! therefore takes the guard out of the poison and goes on, as the header
//! promises ("the library is in a safe state"). All locking in core goes
//! through [`lock`] or a [`SpinLock`] (which has no poison: a panic releases
//! it, by the same argument); a test checks that no `.lock().unwrap()` is
//! left.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Locks `m`, recovering the guard if a panic poisoned it (see the module
/// doc for why the state behind it is consistent).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value of a lock being dropped, poisoned or not.
pub(crate) fn get_mut<T: ?Sized>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// A lock for short critical sections on a hot path (a pool's allocator, a
/// graph's state, which each node added takes): taking it free is one
/// compare-exchange and releasing it one plain store, where a `Mutex`
/// releases with a swap (to learn whether to wake a sleeper). The price is
/// in waiting: a waiter spins, then yields, then sleeps in 50 us steps
/// ([`backoff`]), so it may wake up to 50 us late after a long hold (a pool
/// mapping pages, a graph being instantiated). Not fair.
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and the lock gives one
// guard at a time (the Acquire/Release pair below orders one holder's
// accesses before the next one's), so sharing the lock shares `T` between
// threads one at a time: `T: Send` suffices, as for `Mutex`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A free lock holding `value`.
    pub(crate) fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, waiting while another thread holds it.
    #[inline]
    pub(crate) fn acquire(&self) -> SpinGuard<'_, T> {
        // Acquire: the previous holder's accesses (before its Release
        // store in `SpinGuard::drop`) happen before ours.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.wait();
        }
        SpinGuard { lock: self }
    }

    /// The slow path of [`acquire`](Self::acquire): waits for the lock to be
    /// free, then takes it.
    #[cold]
    #[inline(never)]
    fn wait(&self) {
        let mut spins = 0;
        loop {
            // Read-only while held: waiters do not bounce the line.
            while self.locked.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The value, when no one else can hold the lock.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

/// A held [`SpinLock`]: derefs to the value; dropping it releases the lock.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no one else reaches the
        // value until it is dropped.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: our accesses happen before the next holder's Acquire.
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// One step of waiting for something another thread does soon: spins at
/// first, then yields the CPU, then sleeps 50 us a step. Counts its calls
/// in `spins` (start at 0).
pub fn backoff(spins: &mut u32) {
    match *spins {
        0..64 => std::hint::spin_loop(),
        64..1024 => std::thread::yield_now(),
        _ => std::thread::sleep(std::time::Duration::from_micros(50)),
    }
    *spins = spins.saturating_add(1);
}

#[cfg(test)]
mod tests {
    use super::lock;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_poisoned_lock_still_serves_later_calls() {
        let m = Arc::new(Mutex::new(vec![1]));
        let m2 = Arc::clone(&m);
        let r = std::thread::spawn(move || {
            let _g = lock(&m2);
            panic!("a panic while the lock is held");
        })
        .join();
        assert!(r.is_err());
        assert!(m.is_poisoned());
        lock(&m).push(2);
        assert_eq!(*lock(&m), vec![1, 2]);
    }

    /// Threads incrementing one counter under a SpinLock, some holding it
    /// long enough to push the others into yielding and sleeping: no
    /// increment is lost, and a panic inside releases the lock.
    #[test]
    fn a_spin_lock_serializes_and_a_panic_releases_it() {
        use super::SpinLock;
        let (threads, per) = if cfg!(miri) { (3, 50) } else { (4, 20_000) };
        let l = Arc::new(SpinLock::new(0u64));
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    for i in 0..per {
                        let mut g = l.acquire();
                        let v = *g;
                        if t == 0 && i % 1000 == 0 {
                            std::thread::yield_now();
                        }
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(*l.acquire(), threads * per);
        let l2 = Arc::clone(&l);
        let r = std::thread::spawn(move || {
            let _g = l2.acquire();
            panic!("a panic while the lock is held");
        })
        .join();
        assert!(r.is_err());
        *l.acquire() += 1;
        assert_eq!(*l.acquire(), threads * per + 1);
    }
}
