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

/// Runner::capture_exact + Runner::replay_exact (issue 53 item 2): a
/// 256-128-64-10 MLP through ops::mlp_rows, captured once per bucket (1,
/// 4, 16, 64). An exact-size replay of every n = 1..=64 with input and
/// output ranges of exactly n rows gives the n-row eager ops::mlp result
/// (within float rounding), bitwise the padded bucket's first n rows, and
/// writes nothing past row n; a plain replay while the rows arguments hold
/// fewer rows than the bucket is refused; binding the row count is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_size_replays_of_an_mlp_match_the_eager_rows_and_write_nothing_past_them() {
    use graphcore_core::{declare_capture_rows_arg, Binding};
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let seed = seed();
    let widths = [256u32, 128, 64, 10];
    let layers: Vec<ops::MlpLayer> = widths
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let (a, b) = (w[0] as usize, w[1] as usize);
            let wv: Vec<f32> = random(seed ^ (2 * i as u64 + 1), a * b)
                .iter()
                .map(|v| v / (a as f32).sqrt())
                .collect();
            let (wd, bd) = (
                p.alloc(4 * (a * b) as u64).unwrap(),
                p.alloc(4 * b as u64).unwrap(),
            );
            upload(&s, wd, &wv);
            upload(&s, bd, &random(seed ^ (2 * i as u64 + 2), b));
            ops::MlpLayer {
                w: wd,
                b: bd,
                inputs: w[0],
                outputs: w[1],
                relu: i + 2 < widths.len(),
            }
        })
        .collect();
    let most = 64usize;
    let (xin, xout) = (256usize, 10usize);
    let xb = p.alloc((most * xin * 4) as u64).unwrap();
    let yb = p.alloc((most * xout * 4) as u64).unwrap();
    let wsb = ops::mlp_workspace_bytes(most as u32, &layers);
    let ws = p.alloc(wsb).unwrap();
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let mut record = |s: &Stream, batch: u32, rows: u64| -> graphcore_core::Result<()> {
        declare_capture_rows_arg(s, xb, batch as usize * xin * 4, false, true)?;
        declare_capture_rows_arg(s, yb, batch as usize * xout * 4, false, true)?;
        for call in ops::mlp_rows(yb, xb, ws, wsb, rows, batch, &layers, sms)? {
            // SAFETY: the buffers are live device allocations of this test holding
            // the elements the operation reads and writes.
            unsafe { launch_op(s, Ok(call)) }?;
        }
        Ok(())
    };
    // No warm-up: the record function declares arguments, which only a capture takes.
    r.capture_exact(&[1, 4, 16, 64], &mut record, 0).unwrap();
    let refusals: Vec<_> = r.buckets().iter().map(|b| b.exact_refusal()).collect();
    assert!(r.buckets().iter().all(|b| b.is_exact()), "{refusals:?}");
    let xs = random(seed ^ 99, most * xin);
    let (xpad, ypad) = (
        p.alloc((most * xin * 4) as u64).unwrap(),
        p.alloc((most * xout * 4) as u64).unwrap(),
    );
    let (y_eager, ws_eager) = (
        p.alloc((most * xout * 4) as u64).unwrap(),
        p.alloc(wsb).unwrap(),
    );
    let bind = |x: u64, xr: usize, y: u64, yr: usize| {
        [
            Binding {
                index: 0,
                ptr: x,
                bytes: xr * xin * 4,
            },
            Binding {
                index: 1,
                ptr: y,
                bytes: yr * xout * 4,
            },
        ]
    };
    for n in 1..=most {
        let x = p.alloc((n * xin * 4) as u64).unwrap();
        upload(&s, x, &xs[..n * xin]);
        let y = p.alloc((most * xout * 4) as u64).unwrap();
        // SAFETY: y is a live allocation of this test of most * xout floats.
        unsafe { graphcore_core::set_async(&s, y, 0xff, most * xout * 4) }.unwrap();
        let bucket = r.replay_exact(n as u32, &s, &bind(x, n, y, n)).unwrap() as usize;
        assert_eq!(
            bucket,
            [1, 4, 16, 64].into_iter().find(|&b| b >= n).unwrap()
        );
        let got = download(&s, y, most * xout);
        assert!(
            got[n * xout..].iter().all(|v| v.to_bits() == u32::MAX),
            "n={n}: a row past n was written"
        );
        // The eager n-row forward pass (one launch per layer).
        // SAFETY: ws_eager is a live allocation of this test of wsb bytes.
        unsafe { graphcore_core::set_async(&s, ws_eager, 0, wsb as usize) }.unwrap();
        let eager = ops::mlp(
            y_eager,
            x,
            ws_eager,
            wsb,
            n as u32,
            &layers,
            ops::MlpForm::PerLayer,
            false,
            sms,
            c.has_clusters(),
        )
        .unwrap();
        for call in eager {
            // SAFETY: as above.
            unsafe { launch_op(&s, Ok(call)) }.unwrap();
        }
        let want = download(&s, y_eager, n * xout);
        let scale = want.iter().fold(1e-30f32, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(&want)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()))
            / scale;
        assert!(
            err <= 1e-5,
            "n={n}: {err} from the eager result (seed {seed})"
        );
        // The padded bucket, bound whole: bitwise the same first n rows.
        let mut padded = xs[..n * xin].to_vec();
        padded.resize(bucket * xin, 0.0);
        upload(&s, xpad, &padded);
        if n < bucket {
            let e = r.replay(n as u32, &s).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        }
        r.replay_with(n as u32, &s, &bind(xpad, bucket, ypad, bucket))
            .unwrap();
        let full = download(&s, ypad, n * xout);
        assert!(
            got[..n * xout]
                .iter()
                .zip(&full)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "n={n}: differs from the padded bucket's rows"
        );
        p.free(x).unwrap();
        p.free(y).unwrap();
    }
    // The row count (argument 2) is the runner's to bind.
    let count = Binding {
        index: 2,
        ptr: xpad,
        bytes: 4,
    };
    let e = r.replay_exact(2, &s, &[count]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("row count"), "{e}");
    s.synchronize().unwrap();
}

/// A bucket whose rows argument is also written by a memset that does not
/// read the row count, and a bucket of Runner::capture, refuse exact-size
/// replays with InvalidState naming why; both still replay padded.
#[test]
#[ignore = "needs a CUDA GPU"]
fn buckets_that_cannot_take_exact_size_replays_refuse_them() {
    use graphcore_core::{declare_capture_arg, declare_capture_rows_arg};
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let (n, k) = (32u32, 64u32);
    let x = p.alloc(16 * k as u64 * 4).unwrap();
    let y = p.alloc(16 * n as u64 * 4).unwrap();
    let w = p.alloc((n * k) as u64 * 4).unwrap();
    upload(&s, w, &random(seed(), (n * k) as usize));
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let mut record = |s: &Stream, batch: u32, rows: u64| -> graphcore_core::Result<()> {
        declare_capture_rows_arg(s, x, (batch * k * 4) as usize, false, true)?;
        declare_capture_rows_arg(s, y, (batch * n * 4) as usize, false, true)?;
        // SAFETY: y is a live allocation of this test of 16 * n floats.
        unsafe { graphcore_core::set_async(s, y, 0, (batch * n * 4) as usize) }?;
        // SAFETY: the buffers are live device allocations of this test holding
        // the elements the operation reads and writes.
        unsafe {
            launch_op(
                s,
                ops::linear_rows(y, x, w, 0, rows, batch, n, k, false, sms),
            )
        }
    };
    r.capture_exact(&[16], &mut record, 0).unwrap();
    let b = &r.buckets()[0];
    assert!(!b.is_exact());
    assert!(
        b.exact_refusal().unwrap().contains("memset"),
        "{:?}",
        b.exact_refusal()
    );
    let e = r.replay_exact(3, &s, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
    assert_eq!(r.replay(3, &s).unwrap(), 16);
    let mut plain = Runner::new(&c, Some(&p)).unwrap();
    plain
        .capture(
            &[4],
            &mut |s: &Stream, batch: u32| {
                declare_capture_arg(s, y, (batch * n * 4) as usize, false)?;
                // SAFETY: as above.
                unsafe { launch_op(s, ops::linear(y, x, w, 0, batch, n, k, false, sms, false)) }
            },
            0,
        )
        .unwrap();
    let e = plain.replay_exact(3, &s, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    assert!(e.to_string().contains("without a row count"), "{e}");
    s.synchronize().unwrap();
}

/// The eager fallback of an exact-size runner: buckets added without
/// graphs, and Runner::run_eagerly_rows runs the record function with its
/// row count holding the request's rows (exact) or the bucket's (padded):
/// the record's own output gets exactly that many rows, the rest untouched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_eager_exact_size_run_computes_the_requests_rows() {
    use graphcore_core::Fallback;
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let (n, k, most) = (16u32, 32u32, 8usize);
    let x = p.alloc((most * k as usize * 4) as u64).unwrap();
    let w = p.alloc((n * k) as u64 * 4).unwrap();
    let y = p.alloc((most * n as usize * 4) as u64).unwrap();
    upload(&s, x, &random(seed(), most * k as usize));
    upload(&s, w, &random(seed() ^ 1, (n * k) as usize));
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    r.set_fallback(Fallback {
        eager: true,
        hard_fail: false,
    });
    let mut record = |s: &Stream, batch: u32, rows: u64| -> graphcore_core::Result<()> {
        // SAFETY: the buffers are live device allocations of this test holding
        // the elements the operation reads and writes.
        unsafe {
            launch_op(
                s,
                ops::linear_rows(y, x, w, 0, rows, batch, n, k, false, sms),
            )
        }
    };
    r.capture_exact(&[8], &mut record, 0).unwrap();
    assert!(
        r.buckets().iter().all(|b| !b.is_exact()),
        "no graph, no exact replay"
    );
    for (rows, exact, done) in [(3u32, true, 3usize), (3, false, 8), (8, true, 8)] {
        // SAFETY: y is a live allocation of this test of most * n floats.
        unsafe { graphcore_core::set_async(&s, y, 0xff, most * n as usize * 4) }.unwrap();
        assert_eq!(r.run_eagerly_rows(rows, &s, exact, &mut record).unwrap(), 8);
        let got = download(&s, y, most * n as usize);
        let cut = done * n as usize;
        assert!(
            got[..cut].iter().all(|v| v.is_finite()),
            "rows {rows} exact {exact}"
        );
        assert!(
            got[cut..].iter().all(|v| v.to_bits() == u32::MAX),
            "rows {rows} exact {exact}: a row past {done} was written"
        );
    }
    assert_eq!(r.eager_runs(), 3);
    s.synchronize().unwrap();
}
