//! Engine-owned memory as graph arguments, on a GPU: ranges the engine
//! allocated itself (cuMemAlloc, and a VMM arena of its own made with
//! cuMemCreate / cuMemMap) declared as arguments rebind like pool memory:
//! to other engine memory and to pool memory, exactly for built-in
//! kernels, by the scan for a foreign (module) kernel, bitwise equal to a
//! graph made directly on the new buffers. Ranges that are host memory,
//! freed, too small or of another device are refused at declaration and
//! as bindings, and leave the exec as it was.

use super::foundation::{add_one, AddOneLaunch};
use super::*;
use cudarc::driver::sys;
use graphcore_core::kernels::ops;
use graphcore_core::{
    begin_capture, device_count, end_capture, launch_op, Binding, CaptureMode, ErrorKind, Exec,
    Graph,
};

const N: usize = 4099;

fn op(s: &Stream, call: Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>) {
    // SAFETY: every buffer the tests pass is a live allocation holding the
    // elements the operation reads and writes.
    unsafe { launch_op(s, call) }.unwrap();
}

/// Runs `f` with device `ordinal`'s primary context current on this thread.
fn in_primary<T>(ordinal: i32, f: impl FnOnce() -> T) -> T {
    // SAFETY: retains the primary context, pushes it for `f`, pops and
    // releases it after (the tests' Context holds it too).
    unsafe {
        let mut dev = 0;
        assert_eq!(
            sys::cuDeviceGet(&mut dev, ordinal),
            sys::CUresult::CUDA_SUCCESS
        );
        let mut pctx = std::ptr::null_mut();
        assert_eq!(
            sys::cuDevicePrimaryCtxRetain(&mut pctx, dev),
            sys::CUresult::CUDA_SUCCESS
        );
        assert_eq!(sys::cuCtxPushCurrent_v2(pctx), sys::CUresult::CUDA_SUCCESS);
        let r = f();
        let mut popped = std::ptr::null_mut();
        sys::cuCtxPopCurrent_v2(&mut popped);
        sys::cuDevicePrimaryCtxRelease_v2(dev);
        r
    }
}

/// Device memory the engine allocated with cuMemAlloc.
struct EngineAlloc {
    ptr: u64,
    ordinal: i32,
    freed: bool,
}

impl EngineAlloc {
    fn new(ordinal: i32, bytes: usize) -> EngineAlloc {
        let ptr = in_primary(ordinal, || {
            let mut p = 0;
            // SAFETY: a plain allocation in the current (primary) context.
            let r = unsafe { sys::cuMemAlloc_v2(&mut p, bytes) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            p
        });
        EngineAlloc {
            ptr,
            ordinal,
            freed: false,
        }
    }

    fn free(&mut self) {
        if !self.freed {
            in_primary(self.ordinal, || {
                // SAFETY: this value's allocation, freed once; the tests
                // synchronize before freeing.
                unsafe { sys::cuMemFree_v2(self.ptr) };
            });
            self.freed = true;
        }
    }
}

impl Drop for EngineAlloc {
    fn drop(&mut self) {
        self.free();
    }
}

/// An engine's own VMM arena on device 0: `chunks` physical allocations of
/// the granularity, mapped back to back in one reservation.
struct Arena {
    base: u64,
    bytes: usize,
    handles: Vec<sys::CUmemGenericAllocationHandle>,
}

impl Arena {
    fn new(chunks: usize) -> Arena {
        in_primary(0, || {
            // SAFETY: the VMM calls on device 0, each checked; the structs
            // are plain C data (all-zero is their default).
            unsafe {
                let mut prop: sys::CUmemAllocationProp = std::mem::zeroed();
                prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
                prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
                prop.location.id = 0;
                let mut g = 0usize;
                assert_eq!(
                    sys::cuMemGetAllocationGranularity(
                        &mut g,
                        &prop,
                        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM
                    ),
                    sys::CUresult::CUDA_SUCCESS
                );
                let bytes = g * chunks;
                let mut base = 0;
                assert_eq!(
                    sys::cuMemAddressReserve(&mut base, bytes, g, 0, 0),
                    sys::CUresult::CUDA_SUCCESS
                );
                let mut handles = Vec::new();
                for i in 0..chunks {
                    let mut h = 0;
                    assert_eq!(
                        sys::cuMemCreate(&mut h, g, &prop, 0),
                        sys::CUresult::CUDA_SUCCESS
                    );
                    assert_eq!(
                        sys::cuMemMap(base + (i * g) as u64, g, 0, h, 0),
                        sys::CUresult::CUDA_SUCCESS
                    );
                    handles.push(h);
                }
                let desc = sys::CUmemAccessDesc {
                    location: prop.location,
                    flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                };
                assert_eq!(
                    sys::cuMemSetAccess(base, bytes, &desc, 1),
                    sys::CUresult::CUDA_SUCCESS
                );
                Arena {
                    base,
                    bytes,
                    handles,
                }
            }
        })
    }

    fn chunk(&self, i: usize) -> u64 {
        self.base + (i * self.bytes / self.handles.len()) as u64
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        in_primary(0, || {
            // SAFETY: this arena's mappings and reservation, released once
            // after the tests synchronized.
            unsafe {
                sys::cuMemUnmap(self.base, self.bytes);
                for &h in &self.handles {
                    sys::cuMemRelease(h);
                }
                sys::cuMemAddressFree(self.base, self.bytes);
            }
        });
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Built-ins (exact): b[1] = 1.5 b[0]; b[1] += 0.25; b[2] = b[1] + b[0];
/// relu on interior pointers (gpu::args rebinds it too).
pub(crate) fn builtins(s: &Stream, b: &[u64]) -> Graph {
    begin_capture(s, None, CaptureMode::ThreadLocal).unwrap();
    let sms = s.context().sm_count();
    let n = N as u64;
    op(s, ops::scale(b[1], b[0], n, 1.5, sms));
    op(s, ops::add_scalar(b[1], b[1], n, 0.25, sms));
    op(s, ops::add(b[2], b[1], b[0], n, sms));
    op(s, ops::relu(b[2] + 64, b[0] + 64, n - 16, sms));
    end_capture(s).unwrap()
}

/// A foreign kernel (scanned): add_one on each buffer, captured.
fn foreign(s: &Stream, b: &[u64]) -> Graph {
    let f = add_one(s.context());
    begin_capture(s, None, CaptureMode::ThreadLocal).unwrap();
    for &buf in b {
        let mut l = AddOneLaunch::new(buf, N);
        let mut args = l.args();
        // SAFETY: add_one takes (float *, unsigned); the buffer holds N floats.
        unsafe { f.launch(s, &l.cfg, args.as_mut_ptr()) }.unwrap();
    }
    end_capture(s).unwrap()
}

/// The graph made on set `a` (every buffer declared an argument), bound to
/// set `b`, gives what a graph made directly on `b` gives, bitwise, and
/// leaves `a` untouched; bound back to `a`, the same on `a`.
fn rebinds_like_direct(
    what: &str,
    s: &Stream,
    a: &[u64],
    b: &[u64],
    make: fn(&Stream, &[u64]) -> Graph,
) {
    let inputs: Vec<Vec<f32>> = (0..a.len()).map(|i| random(seed() + i as u64, N)).collect();
    let sentinel = vec![-7.5f32; N];
    let load = |set: &[u64]| {
        for (buf, x) in set.iter().zip(&inputs) {
            upload(s, *buf, x);
        }
    };
    let read = |set: &[u64]| {
        set.iter()
            .map(|&buf| bits(&download(s, buf, N)))
            .collect::<Vec<_>>()
    };
    let direct = Exec::new(&make(s, b), 0).unwrap();
    load(b);
    direct.launch(s).unwrap();
    let want = read(b);

    let g = make(s, a);
    for (i, &buf) in a.iter().enumerate() {
        assert_eq!(g.declare_arg(buf, N * 4, false).unwrap(), i, "{what}");
    }
    let e = Exec::new(&g, 0).unwrap();
    for i in 0..a.len() {
        assert!(
            e.arg_uses(i).unwrap() > 0,
            "{what}: no use of argument {i} found"
        );
    }
    for &buf in a {
        upload(s, buf, &sentinel);
    }
    load(b);
    let bind = |set: &[u64]| {
        set.iter()
            .enumerate()
            .map(|(index, &ptr)| Binding {
                index,
                ptr,
                bytes: 0,
            })
            .collect::<Vec<_>>()
    };
    e.launch_with(s, &bind(b)).unwrap();
    assert_eq!(read(b), want, "{what}: bound to B, as a graph made on B");
    for &buf in a {
        assert_eq!(download(s, buf, N), sentinel, "{what}: A untouched");
    }
    load(a);
    e.launch_with(s, &bind(a)).unwrap();
    assert_eq!(read(a), want, "{what}: bound back to A");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cumemalloc_ranges_rebind_to_engine_and_pool_memory() {
    let (_c, s, p) = setup();
    let engine: Vec<EngineAlloc> = (0..6).map(|_| EngineAlloc::new(0, N * 4)).collect();
    let e1: Vec<u64> = engine[..3].iter().map(|m| m.ptr).collect();
    let e2: Vec<u64> = engine[3..].iter().map(|m| m.ptr).collect();
    let pool: Vec<u64> = (0..3).map(|_| p.alloc(N as u64 * 4).unwrap()).collect();
    type Make = fn(&Stream, &[u64]) -> Graph;
    for (name, make) in [
        ("built-ins", builtins as Make),
        ("foreign kernel", foreign as Make),
    ] {
        rebinds_like_direct(&format!("{name}: engine -> engine"), &s, &e1, &e2, make);
        rebinds_like_direct(&format!("{name}: engine -> pool"), &s, &e1, &pool, make);
        rebinds_like_direct(&format!("{name}: pool -> engine"), &s, &pool, &e2, make);
    }
    s.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_engines_vmm_arena_rebinds_like_pool_memory() {
    let (_c, s, p) = setup();
    let arena = Arena::new(2);
    // Three ranges in each chunk.
    let at = |chunk: usize| -> Vec<u64> {
        (0..3)
            .map(|i| arena.chunk(chunk) + (i * (N * 4).next_multiple_of(256)) as u64)
            .collect()
    };
    let (a, b) = (at(0), at(1));
    let pool: Vec<u64> = (0..3).map(|_| p.alloc(N as u64 * 4).unwrap()).collect();
    rebinds_like_direct("arena chunk 0 -> chunk 1", &s, &a, &b, builtins);
    rebinds_like_direct("arena -> pool", &s, &a, &pool, builtins);
    rebinds_like_direct(
        "foreign kernel: arena chunk 1 -> chunk 0",
        &s,
        &b,
        &a,
        foreign,
    );
    // A range across the two chunks (two cuMemMap calls): what CUDA
    // reports as the allocation around it decides; print it.
    let g = builtins(&s, &a);
    let across = arena.chunk(1) - 1024;
    match g.declare_arg(across, 4096, false) {
        Ok(i) => println!("a range across two mappings of the arena is accepted (argument {i})"),
        Err(e) => println!(
            "a range across two mappings of the arena is refused: {}",
            e.message()
        ),
    }
    s.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_engine_ranges_are_refused_and_change_nothing() {
    let (c, s, p) = setup();
    let mut engine: Vec<EngineAlloc> = (0..4).map(|_| EngineAlloc::new(0, N * 4)).collect();
    let bufs: Vec<u64> = engine[..3].iter().map(|m| m.ptr).collect();
    let host = Host::new(&c, N);
    let refused = |what: &str, r: graphcore_core::Result<usize>, needle: &str| {
        let e = r.expect_err(what);
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidArgument,
            "{what}: {}",
            e.message()
        );
        assert!(e.message().contains(needle), "{what}: {}", e.message());
    };
    // Declarations.
    let g = builtins(&s, &bufs);
    refused(
        "pinned host memory",
        g.declare_arg(host.addr(), 64, false),
        "not device memory",
    );
    let mut local = [0u8; 64];
    refused(
        "pageable host memory",
        g.declare_arg(local.as_mut_ptr() as u64, 64, false),
        "not device memory",
    );
    refused(
        "too small",
        g.declare_arg(bufs[0], N * 4 + (1 << 20), false),
        "bytes",
    );
    refused("NULL", g.declare_arg(0, 64, false), "NULL");
    let mut gone = engine.pop().unwrap();
    let gone_ptr = gone.ptr;
    gone.free();
    refused(
        "freed cuMemAlloc memory",
        g.declare_arg(gone_ptr, 64, false),
        "not device memory",
    );
    if device_count().unwrap() > 1 {
        let other = EngineAlloc::new(1, N * 4);
        refused(
            "memory of device 1",
            g.declare_arg(other.ptr, 64, false),
            "device 1",
        );
    } else {
        println!("one GPU: the other-device case is not run");
    }
    assert!(
        g.args().is_empty(),
        "refused declarations declared something"
    );
    // Bindings: declared on engine memory; bad bindings leave the exec
    // bound where it was.
    for (i, &b) in bufs.iter().enumerate() {
        assert_eq!(g.declare_arg(b, N * 4, false).unwrap(), i);
    }
    let e = Exec::new(&g, 0).unwrap();
    let x = random(seed(), N);
    upload(&s, bufs[0], &x);
    e.launch(&s).unwrap();
    let want = bits(&download(&s, bufs[2], N));
    let spare = p.alloc(N as u64 * 4).unwrap();
    let bad: [(&str, u64, usize, &str); 4] = [
        ("pinned host memory", host.addr(), 0, "not device memory"),
        ("freed cuMemAlloc memory", gone_ptr, 0, "not device memory"),
        ("a range smaller than declared", bufs[0], N * 4 - 4, "bytes"),
        (
            "a pool block smaller than declared",
            p.alloc(64).unwrap(),
            0,
            "bytes",
        ),
    ];
    for (what, ptr, bytes, needle) in bad {
        let r = e.launch_with(
            &s,
            &[Binding {
                index: 2,
                ptr,
                bytes,
            }],
        );
        refused(what, r.map(|()| 0), needle);
    }
    upload(&s, spare, &vec![9.0; N]);
    upload(&s, bufs[2], &vec![0.0; N]);
    e.launch(&s).unwrap();
    assert_eq!(
        bits(&download(&s, bufs[2], N)),
        want,
        "the refused bindings changed where the exec writes"
    );
    assert_eq!(download(&s, spare, N), vec![9.0; N]);
    s.synchronize().unwrap();
}
