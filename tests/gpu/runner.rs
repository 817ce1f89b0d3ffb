//! The runner: bucket choice, padding, the fallback status, failed captures
//! leaving nothing behind, and the shared-pool memory bound.

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::{launch_op, Error, ErrorKind, Runner};

/// A record function: y[0..rows*64) = x * (rows as f32), with scratch of
/// `rows` x 64 KiB taken from the pool and freed again.
fn scaled_copy(
    p: &Pool,
    x: u64,
    y: u64,
) -> impl FnMut(&Stream, u32) -> graphcore_core::Result<()> + '_ {
    move |s: &Stream, rows: u32| {
        let n = rows as u64 * 64;
        let scratch = p.alloc(rows as u64 * 65536)?;
        let sms = s.context().sm_count();
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(s, ops::scale(scratch, x, n, rows as f32, sms)) }?;
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(s, ops::copy(y, scratch, n, sms)) }?;
        p.free(scratch)
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buckets_padding_and_fallback() {
    let (c, s, p) = setup();
    let x = p.alloc(32 * 64 * 4).unwrap();
    let y = p.alloc(32 * 64 * 4).unwrap();
    let xs = random(seed(), 32 * 64);
    upload(&s, x, &xs);
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    r.capture(&[1, 4, 16, 32], &mut scaled_copy(&p, x, y), 2)
        .unwrap();
    assert_eq!(
        r.buckets().iter().map(|b| b.batch).collect::<Vec<_>>(),
        vec![1, 4, 16, 32]
    );
    assert!(r
        .buckets()
        .iter()
        .all(|b| b.node_count == 2 && b.capture_us > 0.0));
    for (rows, want) in [(1, 1), (3, 4), (4, 4), (5, 16), (17, 32), (32, 32)] {
        assert_eq!(r.replay(rows, &s).unwrap(), want);
        let out = download(&s, y, want as usize * 64);
        let expect: Vec<f32> = xs[..want as usize * 64]
            .iter()
            .map(|v| v * want as f32)
            .collect();
        assert_eq!(out, expect, "rows {rows}");
    }
    let e = r.replay(33, &s).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoBucket);
    assert_eq!(
        r.replay(0, &s).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failing_record_leaves_no_runner_and_no_pool_growth() {
    let c = ctx();
    let p = pool(&c);
    let x = p.alloc(32 * 64 * 4).unwrap();
    let y = p.alloc(32 * 64 * 4).unwrap();
    let before = p.stats();
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let mut inner = scaled_copy(&p, x, y);
    let mut fails_at_4 = |s: &Stream, rows: u32| {
        if rows == 4 {
            return Err(Error::invalid_argument("record refuses bucket 4"));
        }
        inner(s, rows)
    };
    let e = r.capture(&[1, 4, 16, 32], &mut fails_at_4, 0).unwrap_err();
    assert!(
        e.message().contains("record refuses bucket 4"),
        "{}",
        e.message()
    );
    assert!(r.buckets().is_empty());
    let after = p.stats();
    assert_eq!(after.allocated_bytes, before.allocated_bytes);
    assert!(
        after.reserved_bytes <= before.reserved_bytes,
        "no pool growth"
    );

    // A record that breaks its capture (a synchronize): the same.
    let mut breaks = |s: &Stream, rows: u32| {
        inner(s, rows)?;
        s.synchronize()
    };
    let e = r.capture(&[8, 2], &mut breaks, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Capture);
    assert!(r.buckets().is_empty());
    assert!(p.stats().reserved_bytes <= before.reserved_bytes);
    // And the runner still captures afterwards.
    r.capture(&[2, 8], &mut scaled_copy(&p, x, y), 1).unwrap();
    assert_eq!(r.buckets().len(), 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buckets_share_one_pool() {
    let c = ctx();
    let statics = pool(&c);
    let x = statics.alloc(32 * 64 * 4).unwrap();
    let y = statics.alloc(32 * 64 * 4).unwrap();
    let reserve = |batches: &[u32]| {
        let p = pool(&c);
        let mut r = Runner::new(&c, Some(&p)).unwrap();
        r.capture(batches, &mut scaled_copy(&p, x, y), 0).unwrap();
        let reserved = p.stats().reserved_bytes;
        drop(r);
        reserved
    };
    let shared = reserve(&[1, 4, 16, 32]);
    let alone = reserve(&[32]);
    let separate: u64 = [1, 4, 16, 32].iter().map(|&b| reserve(&[b])).sum();
    assert!(
        shared as f64 <= 1.1 * alone as f64,
        "shared {shared} vs the batch-32 graph alone {alone}"
    );
    assert!(separate > shared);
}

/// The pool's (allocated, reserved) bytes.
fn usage(p: &Pool) -> (u64, u64) {
    let s = p.stats();
    (s.allocated_bytes, s.reserved_bytes)
}

/// A record that allocates 8 MiB from the runner's pool while capturing and
/// then returns an error: the failed call is rolled back as a broken capture
/// is (the block freed, its pages unmapped), alone or after buckets that
/// succeeded, and nothing is left after the runner is gone.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_record_failing_after_allocating_leaves_no_pool_memory() {
    let c = ctx();
    let statics = pool(&c);
    let x = statics.alloc(32 * 64 * 4).unwrap();
    let y = statics.alloc(32 * 64 * 4).unwrap();
    let p = pool(&c);
    let before = usage(&p);
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let mut inner = scaled_copy(&p, x, y);
    // Buckets above 8 record normally; bucket 8 and below allocate and fail.
    let mut fails_at_8 = |s: &Stream, rows: u32| {
        if rows <= 8 {
            p.alloc(8 << 20)?;
            return Err(Error::invalid_argument("record fails after allocating"));
        }
        inner(s, rows)
    };
    for batches in [&[8u32][..], &[32, 16, 8]] {
        let e = r.capture(batches, &mut fails_at_8, 0).unwrap_err();
        assert!(
            e.message().contains("fails after allocating"),
            "{}",
            e.message()
        );
        assert!(r.buckets().is_empty());
        assert_eq!(usage(&p), before, "after failing on {batches:?}");
        assert!(!r.stream().is_capturing().unwrap());
    }
    // The runner still captures, and once it is gone the pool is as before.
    r.capture(&[2, 4], &mut scaled_copy(&p, x, y), 1).unwrap();
    drop(r);
    p.trim().unwrap();
    assert_eq!(usage(&p), before, "after the runner is gone");
}

/// A record that fails in a warm-up run: what it allocated eagerly is the
/// caller's, like any eager allocation; nothing else is left behind.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_record_failing_in_warm_up_leaves_only_its_eager_blocks() {
    let c = ctx();
    let p = pool(&c);
    let before = usage(&p);
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let mut taken = Vec::new();
    let mut fails = |_: &Stream, _: u32| {
        taken.push(p.alloc(8 << 20)?);
        Err(Error::invalid_argument("warm-up fails"))
    };
    let e = r.capture(&[4], &mut fails, 2).unwrap_err();
    assert!(e.message().contains("warm-up"), "{}", e.message());
    assert_eq!(taken.len(), 1, "the first warm-up run fails the call");
    assert_eq!(usage(&p).0, before.0 + (8 << 20));
    for b in taken {
        p.free(b).unwrap();
    }
    drop(r);
    p.trim().unwrap();
    assert_eq!(usage(&p), before);
}
