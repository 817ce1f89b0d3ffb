//! The one lock policy of graphcore: a poisoned lock is recovered, not
//! propagated.
//!
//! graphcore changes state behind a lock only after every step that can
//! fail (plan, then driver calls, then commit), so a panic while a lock is
//! held (caught at the C boundary as `GC_ERROR_PANIC`) leaves the state as
//! it was before or after one whole change, never half-way. Every later call
//! therefore takes the guard out of the poison and goes on, as the header
//! promises ("the library is in a safe state"). All locking in core goes
//! through [`lock`]; a test checks that no `.lock().unwrap()` is left.

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
}
