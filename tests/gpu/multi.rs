//! Several devices in one process (issue 17): devices interleaved on one
//! thread, objects of two devices refused naming both, peer access for
//! pools, and copies and copy nodes between devices. The tests that need
//! two devices print why and return when there are fewer; the refusal of
//! the pool's own device as its peer runs on one.

use super::graphs::scale;
use super::*;
use graphcore_core::{
    begin_capture, device_count, end_capture, CaptureMode, ErrorKind, Exec, Graph, Result,
};

/// Contexts of devices 0 and 1, or `None` (saying so) with fewer devices.
fn two_devices(test: &str) -> Option<(Context, Context)> {
    let n = device_count().unwrap();
    if n < 2 {
        println!("{test}: skipped: needs 2 CUDA devices, this machine has {n}");
        return None;
    }
    Some((Context::new(0).unwrap(), Context::new(1).unwrap()))
}

/// Asserts `r` is InvalidArgument and its message names all of `words`.
fn refused<T>(r: Result<T>, words: &[&str]) {
    let Err(e) = r else {
        panic!("accepted; expected a refusal naming {words:?}")
    };
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e.message());
    for w in words {
        assert!(e.message().contains(w), "{:?} lacks {w:?}", e.message());
    }
}

/// A pool's own device always has access: naming it as a peer is a clear
/// InvalidArgument, and the pool is unchanged.
#[test]
#[ignore = "needs a CUDA GPU"]
fn peer_access_for_the_pools_own_device_is_refused() {
    let c = ctx();
    let p = pool(&c);
    let e = p.enable_peer_access(&c).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("own device"), "{}", e.message());
    assert!(p.peer_access(c.ordinal()));
    assert!(!p.peer_access(c.ordinal() + 1));
    // The pool still works.
    let s = Stream::new(&c).unwrap();
    let x = p.alloc(4 * 16).unwrap();
    upload(&s, x, &[3.0; 16]);
    assert_eq!(download(&s, x, 16), vec![3.0; 16]);
}

/// Streams, pools, graphs and execs of two devices used in turn on one
/// thread: every call binds its own device's context.
#[test]
#[ignore = "needs a CUDA GPU"]
fn interleaving_two_devices_on_one_thread_works() {
    let Some((c0, c1)) = two_devices("interleaving_two_devices_on_one_thread_works") else {
        return;
    };
    const N: usize = 1 << 16;
    let (s0, s1) = (Stream::new(&c0).unwrap(), Stream::new(&c1).unwrap());
    let (p0, p1) = (pool(&c0), pool(&c1));
    let (x0, x1) = (
        p0.alloc(N as u64 * 4).unwrap(),
        p1.alloc(N as u64 * 4).unwrap(),
    );
    upload(&s0, x0, &vec![1.0; N]);
    upload(&s1, x1, &vec![1.0; N]);
    // One graph per device: x *= 2 and x *= 3.
    let mut execs = Vec::new();
    for (s, p, x, alpha) in [(&s0, &p0, x0, 2.0), (&s1, &p1, x1, 3.0)] {
        begin_capture(s, Some(p), CaptureMode::ThreadLocal).unwrap();
        scale(s, x, x, N, alpha);
        execs.push(Exec::new(&end_capture(s).unwrap(), 0).unwrap());
    }
    for _ in 0..5 {
        execs[0].launch(&s0).unwrap();
        scale(&s1, x1, x1, N, 0.5);
        execs[1].launch(&s1).unwrap();
        scale(&s0, x0, x0, N, 0.5);
    }
    // Device 0: (2 * 0.5)^5 = 1; device 1: (0.5 * 3)^5.
    assert_eq!(download(&s0, x0, N), vec![1.0; N]);
    assert_eq!(download(&s1, x1, N), vec![1.5f32.powi(5); N]);
}

/// A stream of one device with a pool, exec or memory of another is
/// InvalidArgument naming both devices.
#[test]
#[ignore = "needs a CUDA GPU"]
fn objects_of_two_devices_are_refused_naming_both() {
    let Some((c0, c1)) = two_devices("objects_of_two_devices_are_refused_naming_both") else {
        return;
    };
    let (s0, s1) = (Stream::new(&c0).unwrap(), Stream::new(&c1).unwrap());
    let (p0, p1) = (pool(&c0), pool(&c1));
    refused(
        begin_capture(&s0, Some(&p1), CaptureMode::ThreadLocal),
        &["device 0", "device 1"],
    );
    assert!(!s0.is_capturing().unwrap());
    // A graph of device 1 launched on device 0's stream.
    let x1 = p1.alloc(1024).unwrap();
    begin_capture(&s1, Some(&p1), CaptureMode::ThreadLocal).unwrap();
    scale(&s1, x1, x1, 256, 2.0);
    let e1 = Exec::new(&end_capture(&s1).unwrap(), 0).unwrap();
    refused(e1.launch(&s0), &["device 0", "device 1"]);
    // A copy from pool memory of device 1 on device 0's stream, without
    // peer access; and a copy node of device 0's graph.
    let x0 = p0.alloc(1024).unwrap();
    // SAFETY: refused before anything is enqueued.
    refused(
        unsafe { graphcore_core::copy_async(&s0, x0, x1, 1024) },
        &["pool memory of device 1 used on device 0", "no peer access"],
    );
    let g0 = Graph::new(&c0).unwrap();
    // SAFETY: refused before a node is added.
    refused(
        unsafe { g0.add_memcpy(x1, x0, 1024, &[]) },
        &["device 1", "device 0"],
    );
    assert_eq!(g0.node_count().unwrap(), 0);
}

/// With peer access on, copies on a stream of the peer device and copy
/// nodes of its graphs move data both ways, including on pages the pool
/// mapped after access was enabled; the other direction stays refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn peer_access_allows_copies_and_copy_nodes_between_devices() {
    let Some((c0, c1)) = two_devices("peer_access_allows_copies_and_copy_nodes_between_devices")
    else {
        return;
    };
    const N: usize = 1 << 16;
    let (s0, s1) = (Stream::new(&c0).unwrap(), Stream::new(&c1).unwrap());
    let (p0, p1) = (pool(&c0), pool(&c1));
    let before = p1.alloc(N as u64 * 4).unwrap();
    match p1.enable_peer_access(&c0) {
        Err(e) if e.kind() == ErrorKind::NotSupported => {
            println!("peer access: skipped: {}", e.message());
            return;
        }
        r => r.unwrap(),
    }
    p1.enable_peer_access(&c0).unwrap(); // again: a no-op
    assert!(p1.peer_access(0) && !p0.peer_access(1));
    // 64 MiB more: pages mapped after the call get the peer's access too.
    let after = p1.alloc(64 << 20).unwrap();
    let local = p0.alloc(N as u64 * 4).unwrap();
    let values = random(seed(), N);
    upload(&s0, local, &values);
    for remote in [before, after] {
        // SAFETY: live pool blocks of N floats; waited for below.
        unsafe { graphcore_core::copy_async(&s0, remote, local, N * 4) }.unwrap();
        s0.synchronize().unwrap();
        assert_eq!(download(&s1, remote, N), values);
        scale(&s1, remote, remote, N, 2.0);
        s1.synchronize().unwrap();
        // A copy node of device 0's graph reads the peer's memory.
        let g = Graph::new(&c0).unwrap();
        // SAFETY: live pool blocks of N floats while the exec runs.
        unsafe { g.add_memcpy(local, remote, N * 4, &[]) }.unwrap();
        Exec::new(&g, 0).unwrap().launch(&s0).unwrap();
        let doubled: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
        assert_eq!(download(&s0, local, N), doubled);
        upload(&s0, local, &values);
    }
    // Device 1 was not granted access to device 0's pool.
    // SAFETY: refused before anything is enqueued.
    refused(
        unsafe { graphcore_core::copy_async(&s1, before, local, 4) },
        &["pool memory of device 0 used on device 1"],
    );
}
