//! What the operations' unit tests share: far-apart buffers and checks of a
//! [`Call`]'s arguments and grid.

use super::grid::{BLOCK, MAX_GRID_X, STRIDE_WAVES};
use super::MlpLayer;
use crate::{Call, SizeError, Value};

pub(super) const SMS: u32 = 132;
// Buffers far enough apart for 2^40 floats each.
pub(super) const A: u64 = 1 << 44;
pub(super) const B: u64 = 2 << 44;
pub(super) const C: u64 = 3 << 44;
pub(super) const D: u64 = 4 << 44;
pub(super) const WS: u64 = 5 << 44;

pub(super) fn err<T: core::fmt::Debug>(r: Result<T, SizeError>, needle: &str) {
    match r {
        Ok(v) => panic!("expected an error containing {needle:?}, got {v:?}"),
        Err(e) => assert!(
            e.to_string().contains(needle),
            "{e:?} ({e}) does not contain {needle:?}"
        ),
    }
}

pub(super) fn arg(call: &Call, name: &str) -> Value {
    let i = call
        .kernel
        .info()
        .args
        .iter()
        .position(|(n, _)| *n == name)
        .expect(name);
    call.args()[i]
}

pub(super) fn u32_arg(call: &Call, name: &str) -> u32 {
    match arg(call, name) {
        Value::U32(v) => v,
        v => panic!("{name} = {v:?}"),
    }
}

pub(super) fn ptr_arg(call: &Call, name: &str) -> u64 {
    match arg(call, name) {
        Value::Ptr(v) => v,
        v => panic!("{name} = {v:?}"),
    }
}

/// Grid-stride coverage: within limits, and every thread gets work.
pub(super) fn check_stride(call: &Call, n: u64, sms: u32) {
    let [gx, gy, gz] = call.grid;
    assert_eq!((gy, gz), (1, 1));
    assert_eq!(call.block, [BLOCK, 1, 1]);
    assert!(gx >= 1 && gx as u64 <= MAX_GRID_X);
    assert!(gx as u64 <= sms as u64 * STRIDE_WAVES);
    let units = n.div_ceil(4);
    // Threads x iterations x 4 floats cover n.
    let iters = units.div_ceil(call.threads());
    assert!(call.threads() * iters * 4 >= n);
    // No block entirely idle.
    assert!((gx as u64 - 1) * BLOCK as u64 * 4 < n.max(1));
    assert_eq!(call.shared_bytes, 0);
}

pub(super) fn mlp_net(widths: &[u32]) -> Vec<MlpLayer> {
    widths
        .windows(2)
        .enumerate()
        .map(|(i, w)| MlpLayer {
            w: B + (i as u64) * (1 << 26),
            b: 0,
            inputs: w[0],
            outputs: w[1],
            relu: i + 2 < widths.len(),
        })
        .collect()
}
