//! The C ABI as C programs see it: tests/c/*.c compiled with
//! `-std=c11 -Wall -Wextra -Werror -pedantic` (tests/c/*.cpp, for the
//! headers and graphcore.hpp, with `-std=c++17` and the same warnings) under
//! AddressSanitizer and UBSan, linked against libgraphcore.so, and run. Each
//! prints "N passed, M failed"; without a driver they check the no-driver
//! path, with one (on the GPU machine) the full argument and state checks.

use crate::support::{lib_dir, repo};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `src` (C or C++) against the header and the library, with
/// `extra` flags after the common ones.
fn compile(src: &Path, out: &Path, cpp: bool, extra: &[&str]) -> Result<(), String> {
    let root = repo();
    let lib = linkable_lib();
    let (cc, std) = if cpp {
        ("c++", "-std=c++17")
    } else {
        ("cc", "-std=c11")
    };
    let output = Command::new(
        std::env::var("CC")
            .ok()
            .filter(|_| !cpp)
            .unwrap_or(cc.into()),
    )
    .arg(std)
    .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-O1"])
    .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
    .arg("-fno-omit-frame-pointer")
    .args(extra)
    .arg(format!("-I{}", root.join("include").display()))
    .arg(format!("-I{}", root.join("tests/c").display()))
    .arg(src)
    .arg("-o")
    .arg(out)
    .arg(format!("-L{}", lib.display()))
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .arg("-lgraphcore")
    .output()
    .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "compiling {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// Runs a compiled test program; returns its stdout.
fn run(exe: &Path) -> String {
    // CUDA maps memory where ASan keeps its shadow gap; the driver's own
    // allocations are not ours to leak-check.
    let gpu = std::env::var_os("GC_GPU").is_some();
    let asan = if gpu {
        "protect_shadow_gap=0:detect_leaks=0"
    } else {
        "protect_shadow_gap=0:detect_leaks=1"
    };
    let output = Command::new(exe)
        .env("ASAN_OPTIONS", asan)
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run test program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{} failed ({}):\n{}\n{}",
        exe.display(),
        output.status,
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A folder holding the library under its link name and its SONAME
/// (libgraphcore.so.0), which programs linked against it load.
fn linkable_lib() -> PathBuf {
    let dir = build_dir().join("lib");
    std::fs::create_dir_all(&dir).unwrap();
    let so = lib_dir().join("libgraphcore.so");
    let soname = format!("libgraphcore.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
    for name in ["libgraphcore.so".to_string(), soname] {
        std::fs::copy(&so, dir.join(name)).unwrap();
    }
    dir
}

fn build_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("graphcore-c-tests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles and runs tests/c/<file> (C, or C++17 for *.cpp); checks its
/// summary line.
fn c_test(file: &str) {
    let src = repo().join("tests/c").join(file);
    let (name, cpp) = match file.strip_suffix(".cpp") {
        Some(name) => (name, true),
        None => (file.trim_end_matches(".c"), false),
    };
    let exe = build_dir().join(name);
    compile(&src, &exe, cpp, &[]).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&exe);
    let summary = out
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| panic!("no summary line in:\n{out}"));
    assert!(summary.ends_with(" 0 failed"), "{out}");
    println!("{out}");
}

#[test]
fn abi() {
    c_test("abi.c");
}

/// graphcore.hpp: owners, errors, the capture guard, dependency lists.
#[test]
fn hpp() {
    c_test("hpp.cpp");
}

/// graphcore.h and graphcore.hpp compile as C++17 with every warning an
/// error, including the stricter ones C++ users often turn on.
#[test]
fn header_compiles_as_cpp17() {
    let exe = build_dir().join("header_cpp");
    let strict = [
        "-Wshadow",
        "-Wconversion",
        "-Wsign-conversion",
        "-Wold-style-cast",
        "-Wnon-virtual-dtor",
        "-Wzero-as-null-pointer-constant",
    ];
    compile(&repo().join("tests/c/header.cpp"), &exe, true, &strict)
        .unwrap_or_else(|e| panic!("{e}"));
    run(&exe);
}
