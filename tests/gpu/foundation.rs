//! Contexts, streams, pools, copies, modules and launches on a real GPU.

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::{launch_op, ErrorKind, Function, LaunchConfig, Module};
use std::ffi::c_void;

#[test]
#[ignore = "needs a CUDA GPU"]
fn context_reports_the_device() {
    assert!(graphcore_core::device_count().unwrap() >= 1);
    assert!(graphcore_core::driver_version().unwrap() >= 12000);
    let c = ctx();
    assert!(c.sm_count() > 0);
    assert!(!c.device_name().is_empty());
    let (free, total) = c.memory_info().unwrap();
    assert!(free > 0 && free <= total && total == c.total_memory());
    assert_eq!(
        Context::new(graphcore_core::device_count().unwrap())
            .err()
            .unwrap()
            .kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_both_ways_through_pool_memory() {
    let (_c, s, p) = setup();
    let n = 100_003;
    let a = p.alloc(n as u64 * 4).unwrap();
    let b = p.alloc(n as u64 * 4).unwrap();
    assert_eq!(a % 256, 0);
    let x = random(seed(), n);
    upload(&s, a, &x);
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::copy_async(&s, b, a, n * 4) }.unwrap(); // device to device
    assert_eq!(download(&s, b, n), x);
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::set_async(&s, b, 0, n * 4) }.unwrap();
    assert!(download(&s, b, n).iter().all(|&v| v == 0.0));
    p.free(a).unwrap();
    p.free(b).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pool_statistics_and_trim_on_real_memory() {
    let c = ctx();
    let p = Pool::new(
        &c,
        PoolOptions {
            initial_bytes: 8 << 20,
            max_bytes: 64 << 20,
        },
    )
    .unwrap();
    let st = p.stats();
    assert_eq!(st.reserved_bytes, 8 << 20);
    assert_eq!(st.allocated_bytes, 0);
    let blocks: Vec<u64> = (0..10).map(|i| p.alloc(1000 + i * 4096).unwrap()).collect();
    let st = p.stats();
    assert_eq!(st.block_count, 10);
    assert!(st.allocated_bytes >= 10 * 1000);
    // Over the cap: out of memory, pool unchanged.
    let e = p.alloc(100 << 20).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert_eq!(p.stats().block_count, 10);
    // A pointer not from the pool, and a double free.
    assert_eq!(
        p.free(blocks[0] + 256).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    for &b in &blocks {
        p.free(b).unwrap();
    }
    assert_eq!(
        p.free(blocks[0]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let big = p.alloc(40 << 20).unwrap();
    p.free(big).unwrap();
    assert!(p.stats().reserved_bytes >= 40 << 20);
    let (free_before, _) = c.memory_info().unwrap();
    p.trim().unwrap();
    let st = p.stats();
    assert_eq!(st.allocated_bytes, 0);
    assert!(st.reserved_bytes < 40 << 20);
    let (free_after, _) = c.memory_info().unwrap();
    assert!(
        free_after > free_before,
        "trim returned memory to the driver"
    );
    assert!(st.peak_allocated_bytes >= 40 << 20);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn builtin_kernels_run_eagerly() {
    let (c, s, p) = setup();
    let n = 1 << 20 | 3;
    let x = p.alloc(n as u64 * 4).unwrap();
    let y = p.alloc(n as u64 * 4).unwrap();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(&s, ops::fill(x, n as u64, 1.5, c.sm_count())) }.unwrap();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(&s, ops::scale(y, x, n as u64, -2.0, c.sm_count())) }.unwrap();
    let out = download(&s, y, n);
    assert!(out.iter().all(|&v| v == -3.0));
    // Bad sizes never launch.
    // SAFETY: the call is expected to fail; a refused call enqueues nothing, and a
    // failing one touches only live allocations of this test.
    let e = unsafe { launch_op(&s, ops::scale(y, x, 0, 1.0, c.sm_count())) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

pub(crate) const USER_PTX: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd2], %f2;
DONE:
  ret;
}
"#;

/// A user kernel from PTX, launched directly and through a wrapped handle.
pub(crate) fn add_one(c: &Context) -> Function {
    Module::load(c, USER_PTX.as_bytes())
        .unwrap()
        .function("add_one")
        .unwrap()
}

/// A launch of [`add_one`] over `n` floats at `y`: its argument values and
/// 256-thread blocks covering them.
pub(crate) struct AddOneLaunch {
    y: u64,
    n: u32,
    /// The launch configuration.
    pub(crate) cfg: LaunchConfig,
}

impl AddOneLaunch {
    pub(crate) fn new(y: u64, n: usize) -> Self {
        let n = n as u32;
        let cfg = LaunchConfig {
            grid: [n.div_ceil(256), 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
        };
        AddOneLaunch { y, n, cfg }
    }

    /// One pointer per kernel parameter, as cuLaunchKernel takes them.
    pub(crate) fn args(&mut self) -> [*mut c_void; 2] {
        [
            &mut self.y as *mut u64 as *mut c_void,
            &mut self.n as *mut u32 as *mut c_void,
        ]
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn modules_wrapped_functions_and_borrowed_streams() {
    let c = ctx();
    let owner = Stream::new(&c).unwrap();
    // SAFETY: `owner` outlives the borrowed stream.
    let s = unsafe { Stream::wrap(&c, owner.raw()) }.unwrap();
    assert!(s.is_borrowed());
    let f = add_one(&c);
    // SAFETY: the module stays loaded through `f`.
    let w = unsafe { Function::wrap(&c, f.raw(), "wrapped_add_one") }.unwrap();
    assert_eq!(w.name(), "wrapped_add_one");
    let p = pool(&c);
    let n = 1000u32;
    let buf = p.alloc(n as u64 * 4).unwrap();
    upload(&s, buf, &vec![1.0; n as usize]);
    let cfg = LaunchConfig {
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let (mut a0, mut a1) = (buf, n);
    let mut args = [&mut a0 as *mut u64 as *mut _, &mut a1 as *mut u32 as *mut _];
    // SAFETY: args match add_one(u64, u32).
    unsafe { f.launch(&s, &cfg, args.as_mut_ptr()).unwrap() };
    // SAFETY: as above.
    unsafe { w.launch(&s, &cfg, args.as_mut_ptr()).unwrap() };
    assert!(download(&s, buf, n as usize).iter().all(|&v| v == 3.0));
    // Launch limits are checked before CUDA sees them.
    let bad = LaunchConfig {
        block: [2048, 1, 1],
        ..cfg
    };
    // SAFETY: rejected before launch.
    let e = unsafe { f.launch(&s, &bad, args.as_mut_ptr()) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // Malformed PTX carries the JIT log.
    let e = Module::load(&c, b".version 7.0\n.target sm_75\n.entry broken(")
        .err()
        .unwrap();
    assert!(e.message().contains("JIT log"), "{}", e.message());
    // Streams wait on each other.
    let other = Stream::new(&c).unwrap();
    other.wait_stream(&s).unwrap();
    other.synchronize().unwrap();
}
