//! Leaks: tests/c/leaks.c creates and destroys every kind of object through
//! the C ABI GC_LEAK_CYCLES times (default 10,000) per kind and checks that
//! host memory (resident set) and device memory (cuMemGetInfo) return to
//! their level after a warm-up: within 1 MiB (host) and 2 MiB (device) per
//! kind. Built without sanitizers, so the resident set is the library's.

use crate::c_abi::{build_dir, compile_with};
use crate::support::repo;
use std::process::Command;

#[test]
#[ignore = "needs a CUDA GPU"]
fn ten_thousand_objects_of_each_kind_return_host_and_device_memory() {
    let exe = build_dir().join("leaks");
    compile_with(&repo().join("tests/c/leaks.c"), &exe, false, false, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let cycles = std::env::var("GC_LEAK_CYCLES").unwrap_or_else(|_| "10000".into());
    let out = Command::new(&exe).arg(&cycles).output().expect("run leaks");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success()
            && stdout.contains("leaks: ")
            && stdout.trim_end().ends_with(" 0 failed"),
        "leaks failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
