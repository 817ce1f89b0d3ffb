//! Tests of the handle table: the checks, and lookups racing removes and
//! reinserts of the same slot.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Barrier};

#[test]
fn handles_are_checked() {
    let a: Registry<u32> = Registry::new(3, "gc_pool");
    let b: Registry<u32> = Registry::new(2, "gc_stream");
    let h = a.insert(7).unwrap();
    assert_eq!(a.get(h, "pool").unwrap(), 7);
    assert_eq!(
        b.get(h, "stream").unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    assert_eq!(
        a.get(0, "pool").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    a.remove(h, "pool").unwrap();
    assert_eq!(
        a.get(h, "pool").unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    assert_eq!(
        a.remove(h, "pool").unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    // The slot is reused with a new generation: the old handle stays dead.
    let h2 = a.insert(8).unwrap();
    assert_ne!(h, h2);
    assert_eq!(
        a.get(h, "pool").unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    assert_eq!(a.get(h2, "pool").unwrap(), 8);
    assert!(a.remove(0, "pool").unwrap().is_none());
    // A slot index never used, a chunk never allocated, the largest index,
    // an even (empty-slot) generation: all stale, never UB.
    for garbage in [
        0x0300_0000_0000_0001 | (5 << 32),
        0x0300_0000_0000_0001 | (100_000 << 32),
        0x0300_0000_0000_0001 | (INDEX_MASK << 32),
        h2 + 1,
        h2 - 1,
    ] {
        assert_eq!(
            a.get(garbage, "pool").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
        assert_eq!(
            a.remove(garbage, "pool").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
    }
    assert_eq!(a.get(h2, "pool").unwrap(), 8);
}

#[test]
fn slots_are_located_across_chunks() {
    let mut next = 0;
    for k in 0..CHUNKS {
        for at in [0, chunk_len(k) - 1] {
            let index = if at == 0 { next } else { next + at };
            assert_eq!(locate(index), (k, at), "index {index}");
        }
        next += chunk_len(k);
    }
    assert_eq!(next, CAPACITY);
    assert_eq!(locate(CAPACITY).0, CHUNKS);
}

#[test]
fn many_handles_span_chunks_and_reuse_slots() {
    let r: Registry<usize> = Registry::new(6, "gc_graph");
    let n = if cfg!(miri) { 100 } else { 5000 };
    let hs: Vec<u64> = (0..n).map(|i| r.insert(i).unwrap()).collect();
    for (i, &h) in hs.iter().enumerate() {
        assert_eq!(r.get(h, "graph").unwrap(), i);
    }
    for &h in hs.iter().step_by(2) {
        r.remove(h, "graph").unwrap();
    }
    // Freed slots are reused before new ones: the table does not grow.
    let again: Vec<u64> = (0..n / 2).map(|i| r.insert(n + i).unwrap()).collect();
    assert_eq!(r.free.lock().unwrap().next as usize, n);
    for (i, &h) in hs.iter().enumerate() {
        let got = r.get(h, "graph");
        if i % 2 == 0 {
            assert_eq!(got.unwrap_err().kind(), ErrorKind::InvalidHandle);
        } else {
            assert_eq!(got.unwrap(), i);
        }
    }
    for (i, &h) in again.iter().enumerate() {
        assert_eq!(r.get(h, "graph").unwrap(), n + i);
    }
}

/// A lookup reaches the object through a pointer that covers the whole
/// slot, not only its word: under Miri's Stacked Borrows (`cargo +nightly
/// miri test -p graphcore-ffi --lib handle`), a reference to the 8-byte
/// word widened to the slot is undefined behaviour. Both holds: a hazard
/// entry (the first lookups of a thread) and a counted reader (lookups
/// nested past the thread's entries).
#[test]
fn lookups_read_the_object_through_the_whole_slot() {
    let reg: Registry<Arc<u64>> = Registry::new(3, "gc_pool");
    let h = reg.insert(Arc::new(41)).unwrap();
    assert_eq!(*reg.get(h, "pool").unwrap(), 41);
    fn nest(reg: &Registry<Arc<u64>>, h: u64, depth: usize) -> u64 {
        reg.with(h, "pool", |v| {
            Ok(if depth == 0 {
                **v
            } else {
                **v + nest(reg, h, depth - 1) - **v
            })
        })
        .unwrap()
    }
    assert_eq!(nest(&reg, h, 6), 41);
    assert_eq!(*reg.remove(h, "pool").unwrap().unwrap(), 41);
}

/// An object that records its drop in a shared table, so a lookup can
/// check that the object it holds was not dropped under it.
struct Probe {
    id: usize,
    dropped: Arc<Vec<AtomicBool>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        assert!(
            !self.dropped[self.id].swap(true, Ordering::SeqCst),
            "object {} dropped twice",
            self.id
        );
    }
}

/// Lookups (`get` and `with`) on the current and on old handles race one
/// thread that removes the object and reinserts a new one, always into the
/// same slot. A lookup either fails with InvalidHandle or gets exactly the
/// object its handle named, alive for as long as it holds it; every object
/// is dropped exactly once, and only after its last lookup.
#[test]
fn lookups_race_remove_and_reinsert_of_one_slot() {
    race_remove_and_reinsert_of_one_slot::<false>();
}

/// The same race on the plain table (lookups counted in the slot word).
#[test]
fn plain_lookups_race_remove_and_reinsert_of_one_slot() {
    race_remove_and_reinsert_of_one_slot::<true>();
}

fn race_remove_and_reinsert_of_one_slot<const COUNTED: bool>() {
    let (rounds, readers) = if cfg!(miri) { (30, 2) } else { (20_000, 4) };
    let dropped: Arc<Vec<AtomicBool>> =
        Arc::new((0..rounds).map(|_| AtomicBool::new(false)).collect());
    let reg: Arc<Registry<Arc<Probe>, COUNTED>> = Arc::new(Registry::new(3, "gc_pool"));
    // The slot is the same every round, so a handle's generation names its
    // object: generation 2 * id + 1 is object `id`.
    let current = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(readers + 1));
    let id_of = |h: u64| ((h as u32 - 1) / 2) as usize;

    let workers: Vec<_> = (0..readers)
        .map(|t| {
            let (reg, current, done, hits, dropped, start) = (
                reg.clone(),
                current.clone(),
                done.clone(),
                hits.clone(),
                dropped.clone(),
                start.clone(),
            );
            std::thread::spawn(move || {
                start.wait();
                let mut old = 0u64;
                let mut local = 0usize;
                while !done.load(Ordering::Relaxed) {
                    let h = current.load(Ordering::Acquire);
                    if h == 0 {
                        continue;
                    }
                    for probe in [h, old] {
                        if probe == 0 {
                            continue;
                        }
                        let r = if t % 2 == 0 {
                            reg.with(probe, "pool", |p| {
                                assert_eq!(p.id, id_of(probe));
                                for _ in 0..4 {
                                    std::hint::spin_loop();
                                }
                                // Still alive: the remove waits for us.
                                assert!(!dropped[p.id].load(Ordering::SeqCst));
                                Ok(())
                            })
                        } else {
                            reg.get(probe, "pool").map(|p| {
                                assert_eq!(p.id, id_of(probe));
                                assert!(!dropped[p.id].load(Ordering::SeqCst));
                            })
                        };
                        match r {
                            Ok(()) => {
                                local += 1;
                                hits.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidHandle),
                        }
                    }
                    old = h;
                }
                assert!(local <= hits.load(Ordering::Relaxed));
            })
        })
        .collect();

    start.wait();
    for id in 0..rounds {
        let h = reg
            .insert(Arc::new(Probe {
                id,
                dropped: dropped.clone(),
            }))
            .unwrap();
        assert_eq!(id_of(h), id, "the same slot is reused every round");
        current.store(h, Ordering::Release);
        // Now and then, wait until a reader found the live object (a
        // lookup's plain load may see an older version for a while, which
        // Miri emulates: without the wait no lookup might succeed there).
        if id % 64 == 0 {
            let before = hits.load(Ordering::Relaxed);
            while hits.load(Ordering::Relaxed) == before {
                std::thread::yield_now();
            }
        }
        let p = reg.remove(h, "pool").unwrap().expect("live");
        assert_eq!(p.id, id);
        assert!(matches!(reg.remove(h, "pool"), Err(e) if e.kind() == ErrorKind::InvalidHandle));
    }
    done.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    // `get` clones may outlive the remove; all are gone now.
    for (id, d) in dropped.iter().enumerate() {
        assert!(d.load(Ordering::SeqCst), "object {id} never dropped");
    }
    assert!(hits.load(Ordering::Relaxed) > 0, "no lookup ever succeeded");
}

/// A remove during a `with` call on the same handle waits for the call to
/// return before it takes the object; lookups in the meantime already see
/// the handle destroyed.
#[test]
fn remove_waits_for_a_call_in_progress() {
    let reg: Arc<Registry<Arc<AtomicBool>>> = Arc::new(Registry::new(7, "gc_exec"));
    let h = reg.insert(Arc::new(AtomicBool::new(false))).unwrap();
    let inside = Arc::new(Barrier::new(2));
    let call = {
        let (reg, inside) = (reg.clone(), inside.clone());
        std::thread::spawn(move || {
            reg.with(h, "exec", |done| {
                inside.wait();
                std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) {
                    1
                } else {
                    50
                }));
                done.store(true, Ordering::SeqCst);
                Ok(())
            })
        })
    };
    inside.wait();
    let remover = {
        let reg = reg.clone();
        std::thread::spawn(move || reg.remove(h, "exec").unwrap().unwrap())
    };
    // Once the remove has begun, new lookups fail at once.
    while reg.get(h, "exec").is_ok() {
        std::thread::yield_now();
    }
    let taken = remover.join().unwrap();
    assert!(
        taken.load(Ordering::SeqCst),
        "taken before the call returned"
    );
    call.join().unwrap().unwrap();
}

/// Two threads removing the same handle: exactly one gets the object.
#[test]
fn racing_removes_of_one_handle_have_one_winner() {
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let reg: Arc<Registry<usize>> = Arc::new(Registry::new(7, "gc_exec"));
    for i in 0..rounds {
        let h = reg.insert(i).unwrap();
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let reg = reg.clone();
                std::thread::spawn(move || reg.remove(h, "exec"))
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won, [&Some(i)]);
        assert!(results
            .iter()
            .any(|r| matches!(r, Err(e) if e.kind() == ErrorKind::InvalidHandle)));
    }
}

/// Lookups nested deeper than a thread's hazard entries fall back to the
/// slot's reader count; a remove racing them still waits for the last one
/// to leave, and every level sees its object.
#[test]
fn lookups_nested_past_the_hazard_entries_hold_the_object() {
    let reg: Arc<Registry<Arc<AtomicBool>>> = Arc::new(Registry::new(7, "gc_exec"));
    let h = reg.insert(Arc::new(AtomicBool::new(false))).unwrap();
    /// `with` on `h`, `depth` levels deep; the innermost runs `inner`.
    fn nest(
        reg: &Registry<Arc<AtomicBool>>,
        h: u64,
        depth: usize,
        inner: &dyn Fn(&AtomicBool),
    ) -> Result<()> {
        reg.with(h, "exec", |v| {
            if depth == 1 {
                inner(v);
                Ok(())
            } else {
                nest(reg, h, depth - 1, inner)
            }
        })
    }
    // Nested lookups of one handle, past the entries, succeed and leave.
    nest(&reg, h, 9, &|v| assert!(!v.load(Ordering::SeqCst))).unwrap();
    assert_eq!(
        reg.slot(0).unwrap().word.load(Ordering::SeqCst) & READERS_MASK,
        0,
        "every counted lookup left"
    );
    // A remove meanwhile waits for the innermost (counted) lookup.
    let inside = Arc::new(Barrier::new(2));
    let call = {
        let (reg, inside) = (reg.clone(), inside.clone());
        std::thread::spawn(move || {
            nest(&reg, h, 9, &|v| {
                inside.wait();
                std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) {
                    1
                } else {
                    50
                }));
                v.store(true, Ordering::SeqCst);
            })
        })
    };
    inside.wait();
    let taken = reg.remove(h, "exec").unwrap().unwrap();
    assert!(
        taken.load(Ordering::SeqCst),
        "taken before the nested calls returned"
    );
    call.join().unwrap().unwrap();
}

/// A thread's hazard record goes back when the thread exits: threads that
/// come and go one after another reuse records instead of adding one each.
#[test]
fn hazard_records_are_reused_after_threads_exit() {
    let reg: Arc<Registry<u32>> = Arc::new(Registry::new(3, "gc_pool"));
    let h = reg.insert(7).unwrap();
    let lookup = |reg: Arc<Registry<u32>>| {
        std::thread::spawn(move || assert_eq!(reg.get(h, "pool").unwrap(), 7))
            .join()
            .unwrap()
    };
    lookup(reg.clone());
    let before = hazard::record_count();
    for _ in 0..if cfg!(miri) { 4 } else { 64 } {
        lookup(reg.clone());
    }
    // Other tests' threads may claim records meanwhile, but not 64.
    assert!(
        hazard::record_count() < before + 16,
        "records grew from {before} to {}",
        hazard::record_count()
    );
}

/// A process forked while another thread holds a hazard record (claimed,
/// but idle) can still remove handles: the child inherits the record, so
/// its removes issue membarriers; registration is per address space, and
/// where a kernel does not carry it over fork the first barrier registers
/// the child instead of failing.
#[test]
#[cfg(all(target_os = "linux", not(miri)))]
fn a_forked_child_removes_handles() {
    let reg: Arc<Registry<u32>> = Arc::new(Registry::new(3, "gc_pool"));
    let h = reg.insert(7).unwrap();
    // Another thread claims a record (a lookup) and stays alive, idle.
    let (looked, park) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let other = {
        let (reg, looked, park) = (reg.clone(), looked.clone(), park.clone());
        std::thread::spawn(move || {
            assert_eq!(reg.get(h, "pool").unwrap(), 7);
            looked.wait();
            park.wait();
        })
    };
    looked.wait();
    // SAFETY: the child only removes a handle (its lock is free: no thread
    // is inside the table now) and exits with _exit, running no destructor.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = reg.remove(h, "pool").ok() == Some(Some(7));
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child, writing its status.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child could not remove the handle (status {status:#x})"
    );
    park.wait();
    other.join().unwrap();
    assert_eq!(reg.remove(h, "pool").unwrap(), Some(7));
}

/// Threads inserting, looking up and removing their own handles at once,
/// and looking up each other's: the table grows across chunks under
/// concurrency and every lookup is exact.
#[test]
fn concurrent_inserts_and_lookups_across_threads() {
    let (threads, per) = if cfg!(miri) { (2, 40) } else { (4, 3000) };
    let reg: Arc<Registry<(usize, usize)>> = Arc::new(Registry::new(2, "gc_stream"));
    let shared: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (reg, shared) = (reg.clone(), shared.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..per {
                    let h = reg.insert((t, i)).unwrap();
                    mine.push((h, i));
                    shared[t].store(h, Ordering::Release);
                    assert_eq!(reg.get(h, "stream").unwrap(), (t, i));
                    // Someone else's latest handle: theirs or stale.
                    let other = shared[(t + 1) % threads].load(Ordering::Acquire);
                    if other != 0 {
                        match reg.get(other, "stream") {
                            Ok((owner, _)) => assert_eq!(owner, (t + 1) % threads),
                            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidHandle),
                        }
                    }
                    if i % 3 == 0 {
                        let (h, j) = mine.swap_remove(mine.len() / 2);
                        assert_eq!(reg.remove(h, "stream").unwrap(), Some((t, j)));
                    }
                }
                for (h, j) in mine {
                    assert_eq!(reg.get(h, "stream").unwrap(), (t, j));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// The plain alternatives timed by `handle_designs_timing`: a slab behind
/// one lock with the same kind + generation checks (the design before the
/// lock-free tables), the lock an RwLock or a Mutex.
struct Slab<L> {
    kind: u8,
    slots: L,
}

type Entries<T> = Vec<(u32, Option<T>)>;

impl<T> Slab<std::sync::RwLock<Entries<T>>> {
    fn with<R>(&self, h: u64, f: impl FnOnce(&T) -> R) -> Option<R> {
        if h == 0 || (h >> KIND_SHIFT) as u8 != self.kind {
            return None;
        }
        let g = self.slots.read().unwrap_or_else(|e| e.into_inner());
        match g.get(((h >> INDEX_SHIFT) & INDEX_MASK) as usize) {
            Some((gen, Some(v))) if *gen == h as u32 => Some(f(v)),
            _ => None,
        }
    }
}

impl<T> Slab<std::sync::Mutex<Entries<T>>> {
    fn with<R>(&self, h: u64, f: impl FnOnce(&T) -> R) -> Option<R> {
        if h == 0 || (h >> KIND_SHIFT) as u8 != self.kind {
            return None;
        }
        let g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        match g.get(((h >> INDEX_SHIFT) & INDEX_MASK) as usize) {
            Some((gen, Some(v))) if *gen == h as u32 => Some(f(v)),
            _ => None,
        }
    }
}

/// Times the handle tables' lookup path: the hazard-pointer table (the
/// default), the plain table (`Registry<T, true>`: lookups counted in the
/// slot word; cargo feature `plain-handles` makes it the C library's), and
/// two slabs behind one lock (RwLock, Mutex) with the same checks. Not a
/// correctness test; run with
/// `cargo test --release -p graphcore-ffi --lib -- --ignored --nocapture handle_designs_timing`.
///
/// Rows: one `with` lookup alone; the C ABI's pool pair without the GPU
/// (`gc_pool_alloc` + `gc_pool_free` each look the pool up with `with` and
/// run the allocator under a lock: here the pure allocator behind a Mutex,
/// a cached 4 KiB block); then threads each on their own object, and
/// threads all on one object. Nanoseconds: the median of 15 rounds (the
/// designs interleaved in each, so a busy machine slows them alike), per
/// operation per thread that can run (wall time x min(threads, cores) /
/// operations), so flat means no contention. Last, a remove + insert while
/// another thread holds a hazard record (the hazard table's membarrier).
#[test]
#[ignore = "timing; run by hand"]
fn handle_designs_timing() {
    use graphcore_core::pool::{Allocator, Owner, PoolConfig};
    use std::sync::{Mutex, RwLock};
    use std::time::Instant;
    const N: u32 = 200_000;
    const ROUNDS: usize = 15;
    const OBJECTS: usize = 16;
    type Pool = Arc<Mutex<Allocator>>;
    let pools: Vec<Pool> = (0..OBJECTS)
        .map(|_| {
            let cfg = PoolConfig {
                initial_bytes: 2 << 20,
                ..PoolConfig::default()
            };
            Arc::new(Mutex::new(Allocator::new(cfg).unwrap().0))
        })
        .collect();
    let hazard: Registry<Pool, false> = Registry::new(3, "gc_pool");
    let plain: Registry<Pool, true> = Registry::new(3, "gc_pool");
    let hs: Vec<u64> = pools
        .iter()
        .map(|p| hazard.insert(p.clone()).unwrap())
        .collect();
    let ps: Vec<u64> = pools
        .iter()
        .map(|p| plain.insert(p.clone()).unwrap())
        .collect();
    // The slabs hand out the same handles (kind, index, generation).
    let entries = || -> Entries<Pool> { pools.iter().map(|p| (1, Some(p.clone()))).collect() };
    let rw = Slab {
        kind: 3,
        slots: RwLock::new(entries()),
    };
    let mx = Slab {
        kind: 3,
        slots: Mutex::new(entries()),
    };
    let sh: Vec<u64> = (0..OBJECTS as u64)
        .map(|i| 3 << KIND_SHIFT | i << INDEX_SHIFT | 1)
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The pool pair's body: alloc then free under the pool's lock.
    let alloc = |p: &Pool| {
        p.lock()
            .unwrap_or_else(|e| e.into_inner())
            .alloc(4096, Owner::Eager)
            .unwrap()
    };
    let free = |p: &Pool, off: u64| {
        p.lock()
            .unwrap_or_else(|e| e.into_inner())
            .free(off)
            .unwrap()
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    // Ns per op per running thread, `threads` threads each calling
    // `f(thread)` N times.
    let once = |threads: usize, f: &(dyn Fn(usize) + Sync)| {
        let start = Barrier::new(threads);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    for _ in 0..N {
                        f(t);
                    }
                });
            }
        });
        t0.elapsed().as_nanos() as f64 * threads.min(cores) as f64 / (N as f64 * threads as f64)
    };
    let bb = std::hint::black_box::<u64>;
    // One design's lookup and pair, by how it looks `h` up.
    type Run<'a> = Box<dyn Fn(u64) + Sync + 'a>;
    let designs: Vec<(&str, &[u64], Run, Run)> = vec![
        (
            "hazard (default)",
            &hs,
            Box::new(|h| {
                hazard
                    .with(bb(h), "pool", |p| Ok(bb(Arc::as_ptr(p) as u64)))
                    .unwrap();
            }),
            Box::new(|h| {
                let off = hazard.with(bb(h), "pool", |p| Ok(alloc(p))).unwrap();
                hazard.with(bb(h), "pool", |p| Ok(free(p, off))).unwrap();
            }),
        ),
        (
            "plain (counted)",
            &ps,
            Box::new(|h| {
                plain
                    .with(bb(h), "pool", |p| Ok(bb(Arc::as_ptr(p) as u64)))
                    .unwrap();
            }),
            Box::new(|h| {
                let off = plain.with(bb(h), "pool", |p| Ok(alloc(p))).unwrap();
                plain.with(bb(h), "pool", |p| Ok(free(p, off))).unwrap();
            }),
        ),
        (
            "RwLock slab",
            &sh,
            Box::new(|h| {
                rw.with(bb(h), |p| bb(Arc::as_ptr(p) as u64)).unwrap();
            }),
            Box::new(|h| {
                let off = rw.with(bb(h), alloc).unwrap();
                rw.with(bb(h), |p| free(p, off)).unwrap();
            }),
        ),
        (
            "Mutex slab",
            &sh,
            Box::new(|h| {
                mx.with(bb(h), |p| bb(Arc::as_ptr(p) as u64)).unwrap();
            }),
            Box::new(|h| {
                let off = mx.with(bb(h), alloc).unwrap();
                mx.with(bb(h), |p| free(p, off)).unwrap();
            }),
        ),
    ];
    println!(
        "{cores} cores; ns per op per running thread, median of {ROUNDS} rounds of {N}, \
         the designs interleaved in each round"
    );
    // Each column: (threads, on their own objects, the pair or the lookup).
    let columns: [(usize, bool, bool); 8] = [
        (1, true, false),
        (1, true, true),
        (2, true, true),
        (4, true, true),
        (16, true, true),
        (2, false, true),
        (4, false, true),
        (16, false, true),
    ];
    let mut table = vec![vec![Vec::new(); columns.len()]; designs.len()];
    for _ in 0..ROUNDS {
        for (c, &(threads, own, is_pair)) in columns.iter().enumerate() {
            for (d, (_, handles, lookup, pair)) in designs.iter().enumerate() {
                let run = if is_pair { pair } else { lookup };
                let ns = once(threads, &|t| run(handles[if own { t } else { 0 }]));
                table[d][c].push(ns);
            }
        }
    }
    println!(
        "{:18} {:>7} {:>7} | {:>23} | {:>23}",
        "design", "lookup", "pair", "pair, own object: 2/4/16", "pair, one object: 2/4/16"
    );
    for (d, (name, ..)) in designs.iter().enumerate() {
        let m: Vec<f64> = table[d].iter().map(|v| median(v.clone())).collect();
        println!(
            "{name:18} {:7.1} {:7.1} | {:7.1} {:7.1} {:7.1} | {:7.1} {:7.1} {:7.1}",
            m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
        );
    }

    // Remove + insert with another thread holding a hazard record (it looked
    // a handle up once and stays alive, idle): the hazard table's remove
    // then runs a membarrier; the plain table's does not.
    let idle = Arc::new(Barrier::new(2));
    let holder = {
        let idle = idle.clone();
        std::thread::spawn(move || {
            // Any lookup claims the thread's record (records serve every table).
            static OTHER: Registry<u32, false> = Registry::new(2, "gc_stream");
            let h = OTHER.insert(1).unwrap();
            OTHER.get(h, "stream").unwrap();
            idle.wait();
            idle.wait();
        })
    };
    idle.wait();
    const M: u32 = 20_000;
    let churn = |name: &str, f: &dyn Fn()| {
        let ns = median(
            (0..ROUNDS)
                .map(|_| {
                    let t0 = Instant::now();
                    for _ in 0..M {
                        f();
                    }
                    t0.elapsed().as_nanos() as f64 / M as f64
                })
                .collect(),
        );
        println!("remove + insert, another thread holding a record: {name} {ns:.1} ns");
    };
    churn("hazard", &|| {
        let h = hazard.insert(pools[0].clone()).unwrap();
        hazard.remove(h, "pool").unwrap();
    });
    churn("plain", &|| {
        let h = plain.insert(pools[0].clone()).unwrap();
        plain.remove(h, "pool").unwrap();
    });
    idle.wait();
    holder.join().unwrap();
}
