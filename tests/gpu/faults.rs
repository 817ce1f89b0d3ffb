//! Faults and misuse on a real GPU: the pool's cap reached during a capture,
//! device memory exhausted while the pool grows, copies that overrun their
//! pool block, device-wide synchronizes while another thread captures, a
//! stream destroyed mid-capture, and a kernel that traps (in a process of
//! its own: the context is dead afterwards). The driver-version rule is
//! tested without a driver (core's driver::tests), the no-driver path by the
//! C suites in CI.

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::{launch_op, CaptureMode, ErrorKind, Exec, LaunchConfig, Module, PoolOptions};
use std::sync::mpsc;

fn scale(s: &Stream, y: u64, x: u64, n: usize, alpha: f32) -> graphcore_core::Result<()> {
    let sms = s.context().sm_count();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(s, ops::scale(y, x, n as u64, alpha, sms)) }
}

/// The statistics a failed operation must leave as they were.
fn footprint(p: &Pool) -> (u64, u64, u64, u64) {
    let s = p.stats();
    (
        s.allocated_bytes,
        s.reserved_bytes,
        s.block_count,
        s.segment_count,
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn max_bytes_reached_during_a_capture_fails_cleanly() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let p = Pool::new(
        &c,
        PoolOptions {
            initial_bytes: 0,
            max_bytes: 8 << 20,
        },
    )
    .unwrap();
    let before = footprint(&p);

    // The allocation over the cap fails; the capture goes on and ends well.
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let a = p.alloc(4 << 20).unwrap();
    let e = p.alloc(6 << 20).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert!(e.message().contains("out of memory"), "{}", e.message());
    assert_eq!(p.stats().allocated_bytes, 4 << 20);
    scale(&s, a, a, 1024, 2.0).unwrap();
    let g = graphcore_core::end_capture(&s).unwrap();
    assert_eq!(g.node_count().unwrap(), 1);
    Exec::new(&g, 0).unwrap().launch(&s).unwrap();
    s.synchronize().unwrap();
    drop(g);
    p.free(a).unwrap();
    p.trim().unwrap();
    assert_eq!(footprint(&p), before);

    // The same, then the capture breaks: the pool is as before the begin.
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let a = p.alloc(4 << 20).unwrap();
    assert_eq!(p.alloc(8 << 20).unwrap_err().kind(), ErrorKind::OutOfMemory);
    scale(&s, a, a, 1024, 2.0).unwrap();
    assert_eq!(s.synchronize().unwrap_err().kind(), ErrorKind::Capture);
    assert_eq!(
        graphcore_core::end_capture(&s).err().unwrap().kind(),
        ErrorKind::Capture
    );
    assert_eq!(footprint(&p), before, "the failed capture's growth is gone");
    // Both the stream and the pool still work.
    let b = p.alloc(8 << 20).unwrap();
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::set_async(&s, b, 0, 8 << 20) }.unwrap();
    s.synchronize().unwrap();
    p.free(b).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_memory_exhausted_while_growing_is_out_of_memory_and_the_pool_is_intact() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let p = pool(&c); // no max_bytes: only the device limits it
    let keep = p.alloc(1 << 20).unwrap();
    let before = footprint(&p);
    let (free_before, total) = c.memory_info().unwrap();
    // More than the device has, but inside the pool's address range (twice
    // the device's memory): the mapping fails part-way.
    let e = p.alloc(total + total / 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{}", e.message());
    assert!(e.message().contains("growing the pool"), "{}", e.message());
    assert_eq!(
        footprint(&p),
        before,
        "the pages mapped before the failure are gone"
    );
    let (free_after, _) = c.memory_info().unwrap();
    assert!(
        free_after + (4 << 20) >= free_before,
        "device memory {free_before} -> {free_after}: the partial growth was returned"
    );
    // The pool still allocates, and the block kept before is intact.
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::set_async(&s, keep, 0x3c, 1 << 20) }.unwrap();
    let b = p.alloc(64 << 20).unwrap();
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::copy_async(&s, b, keep, 1 << 20) }.unwrap();
    let back = download(&s, b, 4);
    assert!(back.iter().all(|v| v.to_bits() == 0x3c3c_3c3c));
    p.free(b).unwrap();
    p.free(keep).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_and_sets_refuse_ranges_overrunning_their_pool_block() {
    let (c, s, p) = setup();
    let a = p.alloc(4096).unwrap();
    let b = p.alloc(4096).unwrap();
    let mut h = Host::new(&c, 2048);
    h.as_mut_slice().fill(1.0);
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::set_async(&s, b, 0, 4096) }.unwrap();
    // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
    // failing one touches only live allocations of this test.
    let e = unsafe { graphcore_core::copy_async(&s, a, h.addr(), 8192) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.message().contains("8192 bytes") && e.message().contains("has 4096 bytes"),
        "both sizes named: {}",
        e.message()
    );
    // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
    // failing one touches only live allocations of this test.
    let e = unsafe { graphcore_core::copy_async(&s, h.addr(), a + 4000, 200) }.unwrap_err();
    assert!(e.message().contains("`src`"), "{}", e.message());
    // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
    // failing one touches only live allocations of this test.
    let e = unsafe { graphcore_core::set_async(&s, a + 256, 0xff, 4096) }.unwrap_err();
    assert!(
        e.message().contains("runs 256 bytes past"),
        "{}",
        e.message()
    );
    assert_eq!(
        // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
        // failing one touches only live allocations of this test.
        unsafe { graphcore_core::set_async(&s, a, 0, usize::MAX) }
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    // Nothing was written: the neighbour block is still zero.
    assert!(download(&s, b, 1024).iter().all(|&v| v == 0.0));
    // In-range copies work, to the last byte.
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::copy_async(&s, a, h.addr(), 4096) }.unwrap();
    assert!(download(&s, a, 1024).iter().all(|&v| v == 1.0));
}

/// Runs `during` on this thread while another thread has a capture open
/// on `s` (begun, one scale of `buf` captured; a second is captured after
/// `during` returns, then the capture ends): what `during` returned, and
/// the other thread's graph (or why its capture failed).
fn while_another_thread_captures<R>(
    s: &Stream,
    buf: u64,
    during: impl FnOnce() -> R,
) -> (R, graphcore_core::Result<graphcore_core::Graph>) {
    let (began_tx, began_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::scope(|sc| {
        let t = sc.spawn(move || {
            graphcore_core::begin_capture(s, None, CaptureMode::ThreadLocal).unwrap();
            scale(s, buf, buf, 1024, 2.0).unwrap();
            began_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            scale(s, buf, buf, 1024, 2.0).unwrap();
            graphcore_core::end_capture(s)
        });
        began_rx.recv().unwrap();
        let r = during();
        go_tx.send(()).unwrap();
        (r, t.join().unwrap())
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn context_synchronize_is_refused_while_another_thread_captures() {
    let (c, s, p) = setup();
    let buf = p.alloc(4096).unwrap();
    let (synced, g) = while_another_thread_captures(&s, buf, || c.synchronize());
    let e = synced.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{}", e.message());
    assert!(e.message().contains("capture"), "{}", e.message());
    let g = g.expect("the other thread's capture survived");
    assert_eq!(g.node_count().unwrap(), 2);
    c.synchronize().unwrap();
}

/// gc_pool_trim synchronizes the device before unmapping; while any
/// capture is open in the context that would invalidate it, so the trim
/// must be refused (GC_ERROR_INVALID_STATE) and the capture survive.
#[test]
#[ignore = "needs a CUDA GPU"]
fn trim_does_not_invalidate_another_threads_capture() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let capture_pool = pool(&c);
    let buf = capture_pool.alloc(4096).unwrap();
    let idle = pool(&c);
    let b = idle.alloc(8 << 20).unwrap();
    idle.free(b).unwrap(); // pages to trim
    let (trimmed, g) = while_another_thread_captures(&s, buf, || idle.trim());
    assert!(
        g.is_ok(),
        "a trim of another pool broke the capture: {}",
        g.err().unwrap().message()
    );
    assert_eq!(
        trimmed.unwrap_err().kind(),
        ErrorKind::InvalidState,
        "trim must refuse while a capture is open"
    );
    idle.trim().unwrap();
    assert_eq!(idle.stats().reserved_bytes, 0);
}

/// gc_pool_trim refuses (GC_ERROR_INVALID_STATE) whenever a graphcore
/// capture is open in the context, as the header says, even on a pool with
/// nothing to trim, whether the capture uses another pool or none.
#[test]
#[ignore = "needs a CUDA GPU"]
fn trim_with_nothing_to_trim_refuses_while_a_capture_is_open() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let capture_pool = pool(&c);
    let buf = capture_pool.alloc(4096).unwrap();
    let empty = pool(&c);
    assert_eq!(empty.stats().reserved_bytes, 0);
    empty.trim().unwrap();
    for into in [Some(&capture_pool), None] {
        graphcore_core::begin_capture(&s, into, CaptureMode::ThreadLocal).unwrap();
        scale(&s, buf, buf, 1024, 2.0).unwrap();
        let trimmed = empty.trim();
        graphcore_core::end_capture(&s).unwrap();
        assert_eq!(
            trimmed.unwrap_err().kind(),
            ErrorKind::InvalidState,
            "trim with nothing to trim, capture into {}",
            if into.is_some() {
                "another pool"
            } else {
                "no pool"
            }
        );
        empty.trim().unwrap();
    }
}

/// A stream destroyed while it captures must not leave its capture open:
/// the context's count of open captures (which makes device-wide
/// synchronizes refuse) and the pool's capture slot for the thread.
#[test]
#[ignore = "needs a CUDA GPU"]
fn destroying_a_capturing_stream_leaves_no_capture_open() {
    let c = ctx();
    let p = pool(&c);
    let before = footprint(&p);
    {
        let s = Stream::new(&c).unwrap();
        graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
        let a = p.alloc(1 << 20).unwrap();
        scale(&s, a, a, 1024, 2.0).unwrap();
        drop(s); // the last reference: the stream is destroyed mid-capture
    }
    c.synchronize()
        .expect("no capture is left open in the context");
    assert_eq!(
        footprint(&p),
        before,
        "the capture's blocks and pages are gone"
    );
    let s = Stream::new(&c).unwrap();
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal)
        .expect("this thread can capture into the pool again");
    let a = p.alloc(1 << 20).unwrap();
    scale(&s, a, a, 1024, 2.0).unwrap();
    graphcore_core::end_capture(&s).unwrap();
}

const TRAP_PTX: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry trap_kernel()
{
  trap;
}
"#;

const CHILD_ENV: &str = "GC_DEVICE_FAULT_CHILD";
const CHILD_DONE: &str = "device-fault child: all checks passed";

/// Runs in the child process only (GC_DEVICE_FAULT_CHILD=1): launches a
/// kernel that traps and checks what graphcore reports. Elsewhere it does
/// nothing, so a plain run of the suite stays healthy.
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_fault_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let (c, s, p) = setup();
    let buf = p.alloc(4096).unwrap();
    let f = Module::load(&c, TRAP_PTX.as_bytes())
        .unwrap()
        .function("trap_kernel")
        .unwrap();
    let one = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
    };
    // SAFETY: the kernel takes no parameters.
    let launched = unsafe { f.launch(&s, &one, std::ptr::null_mut()) };
    // The fault shows at the launch or, asynchronously, at the next wait.
    let e = match launched {
        Err(e) => e,
        Ok(()) => s.synchronize().unwrap_err(),
    };
    assert_eq!(e.kind(), ErrorKind::DeviceFault, "{}", e.message());
    assert!(e.message().contains("unusable"), "{}", e.message());
    assert!(e.cuda_result().is_some());
    // Sticky: every later call on the device fails the same way, cleanly.
    let e = s.synchronize().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeviceFault, "{}", e.message());
    let e = c.synchronize().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeviceFault, "{}", e.message());
    // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
    // failing one touches only live allocations of this test.
    let e = unsafe { graphcore_core::set_async(&s, buf, 0, 4096) }
        .and_then(|_| s.synchronize())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeviceFault, "{}", e.message());
    // Tearing everything down does not hang or crash.
    drop((f, p, s));
    println!("{CHILD_DONE}");
}

/// A kernel that traps kills the context: graphcore reports
/// ErrorKind::DeviceFault saying so. Runs the test binary itself again,
/// filtered to `device_fault_child`, so this process's context survives.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_trapping_kernel_is_a_device_fault_and_says_the_context_is_unusable() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "gpu::faults::device_fault_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(CHILD_DONE),
        "child {}:\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test:\n{stdout}"
    );
}
