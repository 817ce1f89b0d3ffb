//! Graph arguments on a GPU: an exec whose declared arguments are bound to
//! other buffers gives results bitwise equal to a graph captured (or built)
//! directly on those buffers, for built-in kernels, user kernels, memcpy and
//! memset nodes, child graphs and fused chains; a randomized rebinding run;
//! updates keep the bindings; bad bindings leave the exec unchanged.

use super::engine::builtins;
use super::foundation::add_one;
use super::*;
use graphcore_core::instantiate_flags::FUSE_ELEMENTWISE;
use graphcore_core::kernels::ops;
use graphcore_core::{
    declare_capture_arg, launch_op, Binding, CaptureMode, ErrorKind, Exec, Graph, LaunchConfig,
    Runner,
};
use std::ffi::c_void;

const N: usize = 4099;

fn op(s: &Stream, call: Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>) {
    // SAFETY: every buffer the tests pass is a live pool allocation holding
    // the elements the operation reads and writes.
    unsafe { launch_op(s, call) }.unwrap();
}

/// Captures `record` on `s` (no pool) into a graph.
fn capture(s: &Stream, record: impl FnOnce(&Stream)) -> Graph {
    graphcore_core::begin_capture(s, None, CaptureMode::ThreadLocal).unwrap();
    record(s);
    graphcore_core::end_capture(s).unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `make(bufs)` builds a graph on buffers `bufs` (each N floats). The graph
/// made on set A, with every buffer declared an argument, is bound to set B
/// and run; a graph made directly on set B is run from the same inputs. All
/// of B must be bitwise equal both ways, and A untouched.
fn rebinds_like_direct(
    what: &str,
    count: usize,
    flags: u32,
    make: impl Fn(&Stream, &[u64]) -> Graph,
) {
    let (_c, s, p) = setup();
    let alloc = |k| {
        (0..k)
            .map(|_| p.alloc(N as u64 * 4).unwrap())
            .collect::<Vec<_>>()
    };
    let (a, b) = (alloc(count), alloc(count));
    let inputs: Vec<Vec<f32>> = (0..count).map(|i| random(seed() + i as u64, N)).collect();
    let sentinel = vec![-7.5f32; N];
    let load = |set: &[u64]| {
        for (buf, x) in set.iter().zip(&inputs) {
            upload(&s, *buf, x);
        }
    };
    let read = |set: &[u64]| {
        set.iter()
            .map(|&buf| bits(&download(&s, buf, N)))
            .collect::<Vec<_>>()
    };

    let direct = Exec::new(&make(&s, &b), 0).unwrap();
    load(&b);
    direct.launch(&s).unwrap();
    let want = read(&b);

    let g = make(&s, &a);
    for (i, &buf) in a.iter().enumerate() {
        assert_eq!(g.declare_arg(buf, N * 4, false).unwrap(), i);
    }
    let e = Exec::new(&g, flags).unwrap();
    if flags & FUSE_ELEMENTWISE != 0 {
        assert!(e.stats().unwrap().chains > 0, "{what}: nothing was fused");
    }
    for i in 0..count {
        assert!(
            e.arg_uses(i).unwrap() > 0,
            "{what}: no use of argument {i} found"
        );
    }
    for &buf in &a {
        upload(&s, buf, &sentinel);
    }
    load(&b);
    let bindings: Vec<Binding> = b
        .iter()
        .enumerate()
        .map(|(index, &ptr)| Binding {
            index,
            ptr,
            bytes: N * 4,
        })
        .collect();
    e.launch_with(&s, &bindings).unwrap();
    assert_eq!(read(&b), want, "{what}: bound to B, as a graph made on B");
    for &buf in &a {
        assert_eq!(download(&s, buf, N), sentinel, "{what}: A untouched");
    }
    // The bindings persist for a plain launch.
    load(&b);
    e.launch(&s).unwrap();
    assert_eq!(read(&b), want, "{what}: a plain launch keeps the bindings");
    // And bind back: the graph runs on A again.
    load(&a);
    let back: Vec<Binding> = a
        .iter()
        .enumerate()
        .map(|(index, &ptr)| Binding {
            index,
            ptr,
            bytes: 0,
        })
        .collect();
    e.launch_with(&s, &back).unwrap();
    assert_eq!(read(&a), want, "{what}: bound back to A");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn built_in_kernels_rebind_with_interior_pointers() {
    // Interior pointers: relu 16 floats into each buffer.
    rebinds_like_direct("built-ins", 3, 0, builtins);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn user_kernels_rebind_by_scanning_their_parameters() {
    rebinds_like_direct("user kernel", 2, 0, |s, b| {
        let g = Graph::new(s.context()).unwrap();
        let f = add_one(s.context());
        let cfg = LaunchConfig {
            grid: [(N as u32).div_ceil(256), 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
        };
        for &buf in b {
            let (mut ptr, mut n) = (buf, N as u32);
            let mut args = [
                &mut ptr as *mut u64 as *mut c_void,
                &mut n as *mut u32 as *mut c_void,
            ];
            // SAFETY: add_one takes (float *, unsigned); the buffer holds N floats.
            unsafe { g.add_kernel(&f, &cfg, args.as_mut_ptr(), &[]) }.unwrap();
        }
        g
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn memcpy_and_memset_nodes_rebind() {
    rebinds_like_direct("memcpy and memset", 3, 0, |s, b| {
        let g = Graph::new(s.context()).unwrap();
        // SAFETY: the buffers are live pool allocations of N floats.
        unsafe {
            let cp = g.add_memcpy(b[1], b[0], N * 4, &[]).unwrap();
            g.add_memset(b[2] + 40, 0x3f, N * 4 - 40, &[cp]).unwrap();
        }
        g
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn child_graphs_rebind() {
    rebinds_like_direct("child graph", 2, 0, |s, b| {
        let child = capture(s, |s| {
            let sms = s.context().sm_count();
            op(s, ops::scale(b[1], b[0], N as u64, -2.0, sms));
        });
        let inner = Graph::new(s.context()).unwrap();
        inner.add_child(&child, &[]).unwrap();
        let g = Graph::new(s.context()).unwrap();
        // Nested twice, beside a copy at the top.
        let n = g.add_child(&inner, &[]).unwrap();
        // SAFETY: live pool allocations of N floats.
        unsafe { g.add_memcpy(b[0], b[1], 64, &[n]) }.unwrap();
        g
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_chains_keep_their_arguments() {
    rebinds_like_direct("fused chain", 2, FUSE_ELEMENTWISE, |s, b| {
        capture(s, |s| {
            let sms = s.context().sm_count();
            let n = N as u64;
            op(s, ops::scale(b[1], b[0], n, 0.75, sms));
            op(s, ops::add_scalar(b[1], b[1], n, -0.125, sms));
            op(s, ops::relu(b[1], b[1], n, sms));
        })
    });
}

/// k arguments rebound among `buffers` buffers for 1000 launches, every
/// result checked against the host: out = 2 * (x + y).
#[test]
#[ignore = "needs a CUDA GPU"]
fn random_rebinding_over_a_thousand_launches() {
    let (c, s, p) = setup();
    let n = 1031usize;
    let buffers = 7;
    let bufs: Vec<u64> = (0..buffers)
        .map(|_| p.alloc(n as u64 * 4).unwrap())
        .collect();
    let mut host: Vec<Vec<f32>> = (0..buffers).map(|i| random(seed() + i as u64, n)).collect();
    for (b, h) in bufs.iter().zip(&host) {
        upload(&s, *b, h);
    }
    let sms = c.sm_count();
    let g = capture(&s, |s| {
        op(s, ops::add(bufs[2], bufs[0], bufs[1], n as u64, sms));
        op(s, ops::scale(bufs[2], bufs[2], n as u64, 2.0, sms));
    });
    for &b in &bufs[..3] {
        g.declare_arg(b, n * 4, false).unwrap();
    }
    let e = Exec::new(&g, 0).unwrap();
    let mut bound = [0usize, 1, 2];
    let mut next = below(seed());
    for launch in 0..1000 {
        // Pick three distinct buffers; bind a random subset of the
        // arguments (the others keep their last binding).
        let mut pick = [0usize; 3];
        for k in 0..3 {
            pick[k] = loop {
                let v = next(buffers);
                if !pick[..k].contains(&v) {
                    break v;
                }
            };
        }
        let mut bindings = Vec::new();
        for k in 0..3 {
            if next(2) == 0 || launch == 0 {
                bindings.push(Binding {
                    index: k,
                    ptr: bufs[pick[k]],
                    bytes: 0,
                });
            } else {
                pick[k] = bound[k];
            }
        }
        let distinct = pick[0] != pick[2] && pick[1] != pick[2];
        if !distinct {
            continue; // the output must not alias an input
        }
        bound = pick;
        e.launch_with(&s, &bindings).unwrap();
        let got = download(&s, bufs[bound[2]], n);
        let want: Vec<f32> = host[bound[0]]
            .iter()
            .zip(&host[bound[1]])
            .map(|(x, y)| (x + y) * 2.0)
            .collect();
        assert_eq!(
            bits(&got),
            bits(&want),
            "launch {launch}, buffers {bound:?}"
        );
        host[bound[2]] = got;
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn updates_keep_the_bindings() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let buf: Vec<u64> = (0..4).map(|_| p.alloc(N as u64 * 4).unwrap()).collect();
    let make = |alpha: f32| {
        capture(&s, |s| {
            op(s, ops::scale(buf[1], buf[0], N as u64, alpha, sms))
        })
    };
    let g = make(2.0);
    g.declare_arg(buf[0], N * 4, false).unwrap();
    g.declare_arg(buf[1], N * 4, false).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    let x = random(seed(), N);
    upload(&s, buf[2], &x);
    upload(&s, buf[1], &vec![0.0; N]);
    let to_23 = [
        Binding {
            index: 0,
            ptr: buf[2],
            bytes: 0,
        },
        Binding {
            index: 1,
            ptr: buf[3],
            bytes: 0,
        },
    ];
    e.launch_with(&s, &to_23).unwrap();
    e.update(&make(3.0)).unwrap();
    e.launch(&s).unwrap();
    let want: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
    assert_eq!(bits(&download(&s, buf[3], N)), bits(&want));
    assert_eq!(
        download(&s, buf[1], N),
        vec![0.0; N],
        "the declared output is untouched"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_bindings_leave_the_exec_unchanged() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let buf: Vec<u64> = (0..3).map(|_| p.alloc(N as u64 * 4).unwrap()).collect();
    let small = p.alloc(64).unwrap();
    let g = capture(&s, |s| op(s, ops::fill(buf[0], N as u64, 4.0, sms)));
    g.declare_arg(buf[0], N * 4, false).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    e.launch_with(
        &s,
        &[Binding {
            index: 0,
            ptr: buf[1],
            bytes: 0,
        }],
    )
    .unwrap();
    let host = Host::new(&c, 16);
    let bad = [
        (
            Binding {
                index: 1,
                ptr: buf[2],
                bytes: 0,
            },
            "argument 1",
        ),
        (
            Binding {
                index: 0,
                ptr: 0,
                bytes: 0,
            },
            "NULL",
        ),
        (
            Binding {
                index: 0,
                ptr: host.addr(),
                bytes: 0,
            },
            "not device memory",
        ),
        (
            Binding {
                index: 0,
                ptr: buf[2],
                bytes: 16,
            },
            "declared",
        ),
        (
            Binding {
                index: 0,
                ptr: small,
                bytes: 0,
            },
            "overruns",
        ),
        // A smaller range at the address bound now (a view of it).
        (
            Binding {
                index: 0,
                ptr: buf[1],
                bytes: 16,
            },
            "declared",
        ),
    ];
    for (b, needle) in bad {
        let err = e.launch_with(&s, &[b]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{b:?}");
        assert!(err.message().contains(needle), "{b:?}: {}", err.message());
    }
    let twice = [
        Binding {
            index: 0,
            ptr: buf[2],
            bytes: 0,
        },
        Binding {
            index: 0,
            ptr: buf[2],
            bytes: 0,
        },
    ];
    assert_eq!(
        e.launch_with(&s, &twice).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Still bound to buf[1].
    upload(&s, buf[1], &vec![0.0; N]);
    e.launch(&s).unwrap();
    assert_eq!(download(&s, buf[1], N), vec![4.0; N]);
    assert_eq!(e.arg_uses(0).unwrap(), 1);
    assert_eq!(
        e.arg_uses(1).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn runner_replays_bind_in_each_bucket() {
    let c = ctx();
    let p = pool(&c);
    let mut r = Runner::new(&c, Some(&p)).unwrap();
    let sms = c.sm_count();
    let rows = 64usize;
    let (x, y) = (
        p.alloc(32 * rows as u64 * 4).unwrap(),
        p.alloc(32 * rows as u64 * 4).unwrap(),
    );
    let mut record = |s: &Stream, batch: u32| {
        let n = batch as usize * rows;
        if s.is_capturing()? {
            assert_eq!(declare_capture_arg(s, x, n * 4, false)?, 0);
            assert_eq!(declare_capture_arg(s, y, n * 4, false)?, 1);
        }
        op(s, ops::scale(y, x, n as u64, 0.5, sms));
        Ok(())
    };
    r.capture(&[1, 4, 32], &mut record, 1).unwrap();
    let s = Stream::new(&c).unwrap();
    for batch in [1u32, 3, 17] {
        let n = batch as usize * rows;
        let bucket = [1u32, 4, 32].into_iter().find(|&b| b >= batch).unwrap() as usize;
        let (x2, y2) = (
            p.alloc(bucket as u64 * rows as u64 * 4).unwrap(),
            p.alloc(bucket as u64 * rows as u64 * 4).unwrap(),
        );
        let input = random(seed(), bucket * rows);
        upload(&s, x2, &input);
        let got = r
            .replay_with(
                batch,
                &s,
                &[
                    Binding {
                        index: 0,
                        ptr: x2,
                        bytes: 0,
                    },
                    Binding {
                        index: 1,
                        ptr: y2,
                        bytes: 0,
                    },
                ],
            )
            .unwrap();
        assert_eq!(got as usize, bucket);
        let out = download(&s, y2, n);
        let want: Vec<f32> = input[..n].iter().map(|v| v * 0.5).collect();
        assert_eq!(bits(&out), bits(&want), "batch {batch}");
        // A smaller view at the address bound now is refused too.
        let small = Binding {
            index: 0,
            ptr: x2,
            bytes: 4,
        };
        let err = r.replay_with(batch, &s, &[small]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("declared"), "{}", err.message());
    }
}

/// `store_u64(u64 *dst, u64 v)`: one thread writes `v` to `dst[0]`. Its
/// `v` is a plain integer to the kernel: a scalar parameter.
const STORE_U64_PTX: &str = r#"
.version 7.0
.target sm_52
.address_size 64
.visible .entry store_u64(.param .u64 dst, .param .u64 v)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [v];
    st.global.u64 [%rd1], %rd2;
    ret;
}
"#;

/// The header's promise for foreign kernels, both ways: a scanned kernel's
/// 8-byte scalar parameter whose value happens to equal an address inside
/// a declared range is patched on binding (the documented false positive,
/// counted by gc_exec_arg_info), and declaring the argument exact
/// (GC_ARG_EXACT) leaves it alone (no scan: no use found, nothing
/// patched). The kernel writes its scalar to an undeclared buffer, so what
/// the launch saw is read back.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_scalar_equal_to_an_address_in_a_range_is_patched_unless_the_argument_is_exact() {
    let (c, s, p) = setup();
    let m = graphcore_core::Module::load(&c, STORE_U64_PTX.as_bytes()).unwrap();
    let f = m.function("store_u64").unwrap();
    let bytes = 1024usize;
    // `out` first: below `a`, it is neither inside `a` nor one past its end
    // (which a scan would take for a use too).
    let out = p.alloc(8).unwrap();
    let (a, b) = (
        p.alloc(bytes as u64).unwrap(),
        p.alloc(bytes as u64).unwrap(),
    );
    assert!(out < a);
    let value = a + 64; // an integer that equals an address inside `a`
    let read_out = |s: &Stream| {
        let w = download(s, out, 2);
        u64::from(w[0].to_bits()) | (u64::from(w[1].to_bits()) << 32)
    };
    for exact in [false, true] {
        let g = {
            let (mut dst, mut v) = (out, value);
            let mut args = [
                &mut dst as *mut u64 as *mut c_void,
                &mut v as *mut u64 as *mut c_void,
            ];
            let cfg = LaunchConfig {
                grid: [1, 1, 1],
                block: [1, 1, 1],
                shared_bytes: 0,
            };
            capture(&s, |s| {
                // SAFETY: store_u64(u64 *dst, u64 v); `out` holds 8 bytes.
                unsafe { f.launch(s, &cfg, args.as_mut_ptr()) }.unwrap()
            })
        };
        assert_eq!(g.declare_arg(a, bytes, exact).unwrap(), 0);
        let e = Exec::new(&g, 0).unwrap();
        e.launch(&s).unwrap();
        assert_eq!(
            read_out(&s),
            value,
            "exact={exact}: unbound, the scalar as given"
        );
        e.launch_with(
            &s,
            &[Binding {
                index: 0,
                ptr: b,
                bytes: 0,
            }],
        )
        .unwrap();
        let seen = read_out(&s);
        if exact {
            assert_eq!(e.arg_uses(0).unwrap(), 0, "an exact argument scans nothing");
            assert_eq!(seen, value, "exact: the scalar is left alone");
        } else {
            assert_eq!(
                e.arg_uses(0).unwrap(),
                1,
                "the scalar is counted as a use (a false positive)"
            );
            assert_eq!(seen, b + 64, "scanned: the scalar moved with the binding");
        }
    }
}

/// Scalar arguments (issue 52, item 6): a captured built-in op's scalars
/// (`ops::scale`'s alpha, `ops::add_scalar`'s c), declared by markers
/// during the capture, bound to a new value at each launch; results
/// checked bitwise against the same ops run with those values. A binding
/// giving an address for a 4-byte scalar is refused and changes nothing.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scalar_arguments_of_captured_builtin_ops_bind_per_launch() {
    let (c, s, p) = setup();
    let sms = c.sm_count();
    let buf: Vec<u64> = (0..4).map(|_| p.alloc(N as u64 * 4).unwrap()).collect();
    let (alpha_marker, c_marker) = (1234.5f32, -4321.25f32);
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    let alpha =
        graphcore_core::declare_capture_scalar_arg(&s, &alpha_marker.to_le_bytes()).unwrap();
    let cst = graphcore_core::declare_capture_scalar_arg(&s, &c_marker.to_le_bytes()).unwrap();
    op(&s, ops::scale(buf[1], buf[0], N as u64, alpha_marker, sms));
    op(&s, ops::add_scalar(buf[1], buf[1], N as u64, c_marker, sms));
    let g = graphcore_core::end_capture(&s).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    assert_eq!((alpha, cst), (0, 1));
    assert_eq!(e.arg_uses(alpha).unwrap(), 1, "scale's alpha");
    assert_eq!(e.arg_uses(cst).unwrap(), 1, "add_scalar's c");
    let x = random(seed(), N);
    upload(&s, buf[0], &x);
    let scalar = |index: usize, v: f32| Binding {
        index,
        ptr: v.to_bits() as u64,
        bytes: 4,
    };
    let direct = |a: f32, k: f32| {
        op(&s, ops::scale(buf[2], buf[0], N as u64, a, sms));
        op(&s, ops::add_scalar(buf[2], buf[2], N as u64, k, sms));
        download(&s, buf[2], N)
    };
    for (a, k) in [(0.5f32, 1.0f32), (-3.0, 0.0), (1e-3, -7.5)] {
        e.launch_with(&s, &[scalar(alpha, a), scalar(cst, k)])
            .unwrap();
        assert_eq!(
            bits(&download(&s, buf[1], N)),
            bits(&direct(a, k)),
            "{a} {k}"
        );
    }
    // Bindings persist: a plain launch keeps the last values, and binding
    // only one scalar keeps the other's.
    e.launch_with(&s, &[scalar(alpha, 2.0)]).unwrap();
    e.launch(&s).unwrap();
    assert_eq!(bits(&download(&s, buf[1], N)), bits(&direct(2.0, -7.5)));
    // An address given for a 4-byte scalar: refused, the exec unchanged.
    let bad = Binding {
        index: alpha,
        ptr: buf[3],
        bytes: 0,
    };
    let err = e.launch_with(&s, &[bad]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err.message());
    assert!(err.message().contains("bits above"), "{}", err.message());
    e.launch(&s).unwrap();
    assert_eq!(bits(&download(&s, buf[1], N)), bits(&direct(2.0, -7.5)));
}

/// A foreign kernel's float scalar (hand-written PTX: `fill_range(float
/// *begin, float *end, float v)`, its layout from `cuFuncGetParamInfo`)
/// declared by a marker on a built graph, bound at each launch together
/// with the range's rebinding (one bindings array, addresses and a
/// scalar).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_foreign_kernels_float_scalar_binds_with_its_addresses() {
    let (c, s, p) = setup();
    let m =
        graphcore_core::Module::load(&c, super::reliability::FILL_RANGE_PTX.as_bytes()).unwrap();
    let f = m.function("fill_range").unwrap();
    let n = 300usize;
    let a = p.alloc(n as u64 * 4).unwrap();
    let b = p.alloc(n as u64 * 4).unwrap();
    let marker = 777.125f32;
    let g = {
        let mut begin = a;
        let mut end = a + n as u64 * 4;
        let mut v = marker;
        let mut args = [
            &mut begin as *mut u64 as *mut c_void,
            &mut end as *mut u64 as *mut c_void,
            &mut v as *mut f32 as *mut c_void,
        ];
        let cfg = LaunchConfig {
            grid: [(n as u32).div_ceil(128), 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
        };
        capture(&s, |s| {
            // SAFETY: fill_range(float *begin, float *end, float v) over a
            // live allocation of n floats.
            unsafe { f.launch(s, &cfg, args.as_mut_ptr()) }.unwrap()
        })
    };
    let range = g.declare_arg(a, n * 4, false).unwrap();
    let v = g.declare_scalar_arg(&marker.to_le_bytes()).unwrap();
    // A marker that no parameter holds, and one of another size: 0 uses.
    let none = g.declare_scalar_arg(&1.5f32.to_le_bytes()).unwrap();
    let wide = g
        .declare_scalar_arg(&(marker as f64).to_le_bytes())
        .unwrap();
    let e = Exec::new(&g, 0).unwrap();
    assert_eq!(e.arg_uses(range).unwrap(), 2, "begin and end");
    assert_eq!(e.arg_uses(v).unwrap(), 1, "v");
    assert_eq!(e.arg_uses(none).unwrap(), 0);
    assert_eq!(
        e.arg_uses(wide).unwrap(),
        0,
        "an f64 marker never matches an f32"
    );
    upload(&s, a, &vec![0.0; n]);
    upload(&s, b, &vec![0.0; n]);
    for value in [4.5f32, -0.25, 1e30] {
        e.launch_with(
            &s,
            &[
                Binding {
                    index: range,
                    ptr: b,
                    bytes: 0,
                },
                Binding {
                    index: v,
                    ptr: value.to_bits() as u64,
                    bytes: 0,
                },
            ],
        )
        .unwrap();
        assert_eq!(download(&s, b, n), vec![value; n], "b filled with {value}");
        assert_eq!(download(&s, a, n), vec![0.0; n], "a untouched");
    }
}
