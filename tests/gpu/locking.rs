//! Locking: calls that may run at once on one exec or one graph do so
//! without deadlock and without unserialized CUDA calls on one graph. Each
//! test races threads under a watchdog ([`race`]), so a deadlock fails the
//! test instead of hanging it.

use super::fusion::scales_around_a_user_kernel;
use super::*;
use graphcore_core::instantiate_flags::FUSE_ELEMENTWISE;
use graphcore_core::{Exec, Node};
use std::ffi::c_void;

/// How long each racing thread keeps going.
const RACE: Duration = Duration::from_secs(3);

/// Sets node `index` of `e`'s graph (a node of
/// [`scales_around_a_user_kernel`]) to the arguments it was built with.
fn set_same_args(e: &Exec, index: u32, y: u64, n: usize) {
    let node = Node {
        graph: e.graph().id(),
        index,
    };
    let (mut yy, mut xx, mut nn, mut a) = (y, y, n as u64, 1.0 + index as f32 / 8.0);
    let mut n32 = n as u32;
    let mut scale_args = [
        &mut yy as *mut u64 as *mut c_void,
        &mut xx as *mut u64 as *mut c_void,
        &mut nn as *mut u64 as *mut c_void,
        &mut a as *mut f32 as *mut c_void,
    ];
    let mut user_args = [
        &mut yy as *mut u64 as *mut c_void,
        &mut n32 as *mut u32 as *mut c_void,
    ];
    let args = if index == 5 {
        user_args.as_mut_ptr()
    } else {
        scale_args.as_mut_ptr()
    };
    // SAFETY: node 5 is add_one(u64, u32), the others gc_scale_f32(y, x, n,
    // alpha); each pointer points to a live value of its parameter's type.
    unsafe { e.set_kernel_args(node, args) }.unwrap();
}

/// gc_exec_write_dot next to gc_exec_set_kernel_args on one exec: the two
/// once took the exec's two locks in opposite orders and could deadlock.
/// Plain and fused execs; in the fused one, a node outside the chains (the
/// user kernel) and nodes inside them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn to_dot_and_set_kernel_args_race_on_one_exec_without_deadlock() {
    let c = ctx();
    let p = pool(&c);
    let n = 4099usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let g = scales_around_a_user_kernel(&c, y, n);
    let plain = Exec::new(&g, 0).unwrap();
    let fused = Exec::new(&g, FUSE_ELEMENTWISE).unwrap();
    assert_eq!(fused.stats().chains, 2);
    for (name, e) in [("plain", plain), ("fused", fused)] {
        let (dot, set) = (e.clone(), e.clone());
        race(
            &format!("{name} exec: to_dot against set_kernel_args"),
            vec![
                Box::new(move || {
                    let end = Instant::now() + RACE;
                    while Instant::now() < end {
                        assert!(dot.to_dot("g").contains("digraph"));
                    }
                }),
                Box::new(move || {
                    let end = Instant::now() + RACE;
                    let mut i = 0u32;
                    while Instant::now() < end {
                        // Nodes 2 and 8 lie in the two chains, 5 outside.
                        set_same_args(&set, [2, 5, 8][(i % 3) as usize], y, n);
                        i += 1;
                    }
                }),
            ],
        );
    }
}
