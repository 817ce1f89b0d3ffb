//! Concurrency stress: 16 threads for a bounded time (GC_STRESS_SECS,
//! default 10 s), each on its own stream, allocating and freeing eagerly
//! from one shared pool, capturing thread-locally into it, replaying,
//! updating and destroying graphs, while one more thread reads the pool's
//! statistics and the device's free memory. Afterwards the statistics are
//! back to zero, a trim returns every page, and cuMemGetInfo's free memory
//! returns to its starting value (within STRESS_DEVICE_TOLERANCE).
//!
//! Graphs sharing a pool must not run concurrently when they share scratch
//! memory (blocks freed inside one capture are reused by later captures),
//! so here each capture keeps its blocks until its graph is gone: every
//! graph's memory is its own, and the threads' replays may overlap.
//! Nothing here synchronizes the whole device while captures are open
//! (cuCtxSynchronize from any thread invalidates every capture): waits are
//! per stream, and the trim runs after the threads are done.

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::pool::PoolStats;
use graphcore_core::{launch_op, CaptureMode, Exec};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const THREADS: usize = 16;
/// Floats each graph writes.
const N: usize = 1 << 14;
/// Device memory that may stay taken after the pool is gone: streams,
/// events and graph execs the driver may cache (one 2 MiB page).
const STRESS_DEVICE_TOLERANCE: u64 = 2 << 20;

fn secs() -> f64 {
    std::env::var("GC_STRESS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10.0)
}

#[derive(Default)]
struct Counts {
    iterations: AtomicU64,
    eager_blocks: AtomicU64,
    captures: AtomicU64,
    replays: AtomicU64,
    updates: AtomicU64,
    stats_reads: AtomicU64,
}

/// Rules every snapshot of the statistics keeps, whatever runs meanwhile.
fn check_snapshot(s: &PoolStats) {
    assert!(s.allocated_bytes <= s.reserved_bytes, "{s:?}");
    assert!(s.peak_allocated_bytes >= s.allocated_bytes, "{s:?}");
    assert!(s.peak_reserved_bytes >= s.reserved_bytes, "{s:?}");
    assert_eq!(s.alloc_count - s.free_count, s.block_count, "{s:?}");
    assert!(s.open_captures <= THREADS as u64, "{s:?}");
}

/// A tiny deterministic generator per thread.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Records `out = 2 * value` through a scratch block the capture
/// allocates (and keeps: see the module docs). Returns the graph and the
/// scratch block, freed by the caller once the graph is gone.
fn capture(s: &Stream, p: &Pool, out: u64, value: f32) -> (graphcore_core::Graph, u64) {
    let sms = s.context().sm_count();
    graphcore_core::begin_capture(s, Some(p), CaptureMode::ThreadLocal).unwrap();
    let scratch = p.alloc(N as u64 * 4).unwrap();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(s, ops::fill(scratch, N as u64, value, sms)) }.unwrap();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(s, ops::scale(out, scratch, N as u64, 2.0, sms)) }.unwrap();
    let g = graphcore_core::end_capture(s).unwrap();
    (g, scratch)
}

fn worker(t: usize, c: &Context, p: &Pool, deadline: Instant, n: &Counts) {
    let s = Stream::new(c).unwrap();
    let host = Host::new(c, N);
    let out = p.alloc(N as u64 * 4).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
    let check = |want: f32| {
        // SAFETY: the ranges are live allocations of this test of at least `bytes`
        // bytes, kept until the stream is synchronized.
        unsafe { graphcore_core::copy_async(&s, host.addr(), out, N * 4) }.unwrap();
        s.synchronize().unwrap();
        let got = host.as_slice();
        assert!(
            got.iter().all(|&v| v == want),
            "thread {t}: replay wrote {} where {want} was expected",
            got.iter().find(|&&v| v != want).unwrap()
        );
    };
    let mut i = 0u32;
    while Instant::now() < deadline {
        i += 1;
        // Eager allocations of random sizes, used, waited for, freed in a
        // random order.
        let mut blocks: Vec<u64> = (0..1 + rng.below(8))
            .map(|_| p.alloc(256 + rng.below(1 << 20)).unwrap())
            .collect();
        for &b in &blocks {
            // SAFETY: the ranges are live allocations of this test of at least `bytes`
            // bytes, kept until the stream is synchronized.
            unsafe { graphcore_core::set_async(&s, b, 0xab, 256) }.unwrap();
        }
        s.synchronize().unwrap();
        n.eager_blocks
            .fetch_add(blocks.len() as u64, Ordering::Relaxed);
        while !blocks.is_empty() {
            let k = rng.below(blocks.len() as u64) as usize;
            p.free(blocks.swap_remove(k)).unwrap();
        }
        // Capture, replay, update, replay, destroy.
        let v1 = (t * 1000) as f32 + i as f32;
        let (g1, s1) = capture(&s, p, out, v1);
        let e = Exec::new(&g1, 0).unwrap();
        e.launch(&s).unwrap();
        check(2.0 * v1);
        let v2 = -v1;
        let (g2, s2) = capture(&s, p, out, v2);
        e.update(&g2).unwrap();
        e.launch(&s).unwrap();
        check(2.0 * v2);
        s.synchronize().unwrap();
        drop((e, g1, g2));
        p.free(s1).unwrap();
        p.free(s2).unwrap();
        n.captures.fetch_add(2, Ordering::Relaxed);
        n.replays.fetch_add(2, Ordering::Relaxed);
        n.updates.fetch_add(1, Ordering::Relaxed);
        n.iterations.fetch_add(1, Ordering::Relaxed);
    }
    p.free(out).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sixteen_threads_allocate_capture_replay_update_and_destroy() {
    let c = ctx();
    // Warm up what lives as long as the context (built-in kernels) and what
    // the driver keeps once used (per-stream and graph-launch resources):
    // one stream per thread, each capturing, instantiating and launching.
    {
        let p = pool(&c);
        let streams: Vec<Stream> = (0..THREADS).map(|_| Stream::new(&c).unwrap()).collect();
        for s in &streams {
            let b = p.alloc(N as u64 * 4).unwrap();
            graphcore_core::begin_capture(s, Some(&p), CaptureMode::ThreadLocal).unwrap();
            // SAFETY: the buffers are live device allocations of this test holding the
            // elements the operation reads and writes.
            unsafe { launch_op(s, ops::fill(b, N as u64, 0.0, c.sm_count())) }.unwrap();
            let g = graphcore_core::end_capture(s).unwrap();
            let e = Exec::new(&g, 0).unwrap();
            e.launch(s).unwrap();
            s.synchronize().unwrap();
            p.free(b).unwrap();
        }
    }
    c.synchronize().unwrap();
    let (free_before, _) = c.memory_info().unwrap();
    let p = pool(&c);
    let n = Counts::default();
    let stop = AtomicBool::new(false);
    let secs = secs();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                check_snapshot(&p.stats());
                if n.stats_reads.fetch_add(1, Ordering::Relaxed) % 64 == 0 {
                    let (free, total) = c.memory_info().unwrap();
                    assert!(free <= total);
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (c, p, n) = (&c, &p, &n);
                sc.spawn(move || worker(t, c, p, deadline, n))
            })
            .collect();
        let mut panics = Vec::new();
        for (t, w) in workers.into_iter().enumerate() {
            if let Err(e) = w.join() {
                panics.push(format!("thread {t}: {e:?}"));
            }
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().expect("the statistics reader");
        assert!(panics.is_empty(), "{panics:?}");
    });
    let elapsed = start.elapsed().as_secs_f64();
    let st = p.stats();
    check_snapshot(&st);
    assert_eq!(
        (
            st.allocated_bytes,
            st.block_count,
            st.open_captures,
            st.live_graphs
        ),
        (0, 0, 0, 0),
        "everything freed and every graph destroyed: {st:?}"
    );
    assert_eq!(st.tainted_pages, 0, "{st:?}");
    p.trim().unwrap();
    let st = p.stats();
    assert_eq!(st.reserved_bytes, 0, "a trim returns every page: {st:?}");
    drop(p);
    c.synchronize().unwrap();
    let (free_after, _) = c.memory_info().unwrap();
    assert!(
        free_after + STRESS_DEVICE_TOLERANCE >= free_before,
        "device free memory {free_before} before, {free_after} after the pool is gone"
    );
    println!(
        "stress: {THREADS} threads x {elapsed:.1} s: {} iterations, {} eager blocks, {} captures, \
         {} replays, {} updates, {} statistics reads; peak reserved {} MiB; device free memory \
         {} -> {} bytes",
        n.iterations.load(Ordering::Relaxed),
        n.eager_blocks.load(Ordering::Relaxed),
        n.captures.load(Ordering::Relaxed),
        n.replays.load(Ordering::Relaxed),
        n.updates.load(Ordering::Relaxed),
        n.stats_reads.load(Ordering::Relaxed),
        st.peak_reserved_bytes >> 20,
        free_before,
        free_after
    );
    assert!(
        n.iterations.load(Ordering::Relaxed) > 0,
        "no thread got through an iteration in {secs} s"
    );
}
