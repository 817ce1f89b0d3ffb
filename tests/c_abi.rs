//! The C ABI as C programs see it: tests/c/*.c compiled with
//! `-std=c11 -Wall -Wextra -Werror -pedantic` (tests/c/*.cpp, for the
//! headers and graphcore.hpp, with `-std=c++17` and the same warnings) under
//! AddressSanitizer and UBSan, linked against libgraphcore.so, and run. Each
//! prints "N passed, M failed"; without a driver they check the no-driver
//! path, with one (on the GPU machine) the full argument and state checks.
//!
//! tests/c/bad_input.c is the bad-input suite: it runs one section per
//! process, prints "covers gc_..." for each function it exercises, and
//! [`bad_input`] fails unless every function of the header is covered
//! (so a new export needs its bad-input cases). Without a driver it also
//! runs under valgrind ([`bad_input_under_valgrind`]). The no-driver run's
//! count of checks and sections is recorded in tests/counts.json (the
//! README's figures come from it) and must match it (GC_BLESS=1 rewrites it).

use crate::support::{lib_dir, missing_tool, repo};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `src` (C or C++) against the header and the library, under
/// ASan and UBSan, with `extra` flags after the common ones.
fn compile(src: &Path, out: &Path, cpp: bool, extra: &[&str]) -> Result<(), String> {
    compile_with(src, out, cpp, true, extra)
}

/// Compiles `src` against the header and the library; `sanitize` adds
/// ASan and UBSan (off for valgrind, which cannot run ASan programs, and
/// for programs that measure their own memory use).
pub(crate) fn compile_with(
    src: &Path,
    out: &Path,
    cpp: bool,
    sanitize: bool,
    extra: &[&str],
) -> Result<(), String> {
    let root = repo();
    let lib = linkable_lib();
    let (cc, std) = if cpp {
        ("c++", "-std=c++17")
    } else {
        ("cc", "-std=c11")
    };
    let sanitizers: &[&str] = if sanitize {
        &["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    } else {
        &[]
    };
    let output = Command::new(
        std::env::var("CC")
            .ok()
            .filter(|_| !cpp)
            .unwrap_or(cc.into()),
    )
    .arg(std)
    .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-O1"])
    .args(sanitizers)
    .args(extra)
    .arg("-fno-omit-frame-pointer")
    .arg(format!("-I{}", root.join("include").display()))
    .arg(format!("-I{}", root.join("tests/c").display()))
    .arg(src)
    .arg("-o")
    .arg(out)
    .arg(format!("-L{}", lib.display()))
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .arg("-lgraphcore")
    .arg("-lpthread")
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

/// The sanitizer settings test programs run with.
fn sanitizer_env(cmd: &mut Command) -> &mut Command {
    // CUDA maps memory where ASan keeps its shadow gap; the driver's own
    // allocations are not ours to leak-check.
    let gpu = std::env::var_os("GC_GPU").is_some();
    let asan = if gpu {
        "protect_shadow_gap=0:detect_leaks=0"
    } else {
        "protect_shadow_gap=0:detect_leaks=1"
    };
    cmd.env("ASAN_OPTIONS", asan)
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
}

/// Runs a compiled test program; returns its stdout.
fn run(exe: &Path) -> String {
    let output = sanitizer_env(&mut Command::new(exe))
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
        // Copy to a fresh name, then rename over the old one: a program of
        // another test (cargo test runs them in threads) that has the old
        // file mapped keeps its inode instead of seeing it rewritten.
        let tmp = dir.join(format!("{name}.{:?}.tmp", std::thread::current().id()));
        std::fs::copy(&so, &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
    dir
}

/// This process's folder for compiled C tests and library copies (about
/// 70 MiB), removed when the process exits: test runners that start one
/// process per test would otherwise leave one behind per test.
pub(crate) fn build_dir() -> PathBuf {
    static CLEANUP: std::sync::Once = std::sync::Once::new();
    extern "C" fn remove_build_dir() {
        let _ = std::fs::remove_dir_all(process_build_dir());
    }
    CLEANUP.call_once(|| {
        // SAFETY: registers a plain function that takes no arguments; it
        // only removes this process's own folder.
        unsafe { libc::atexit(remove_build_dir) };
    });
    let d = process_build_dir();
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn process_build_dir() -> PathBuf {
    std::env::temp_dir().join(format!("graphcore-c-tests-{}", std::process::id()))
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

/// The allocator exports plugged into toy allocator interfaces (PyTorch's
/// pluggable allocator's shape, and a generic one with a user pointer).
#[test]
fn allocator() {
    c_test("allocator.c");
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

/// The functions the generated headers (include/graphcore.h and
/// include/graphcore_ops.h) declare (their extern "C" blocks).
pub(crate) fn header_functions() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for h in crate::header::HEADERS {
        let header = std::fs::read_to_string(repo().join(h.path)).unwrap();
        let start = header.find("extern \"C\" {").expect("extern \"C\" block");
        let end = header
            .rfind("}  // extern \"C\"")
            .expect("end of extern \"C\"");
        names.extend(
            header[start..end]
                .lines()
                .filter(|l| !l.trim_start().starts_with('*') && !l.trim_start().starts_with("/*"))
                .filter_map(|l| {
                    let open = l.find('(')?;
                    let name = l[..open].rsplit([' ', '*']).next()?;
                    name.starts_with("gc_").then(|| name.to_string())
                }),
        );
    }
    names.sort();
    names.dedup();
    assert!(names.len() > 50, "parsed only {names:?} from the header");
    names
}

/// The sections of tests/c/bad_input.c (`--list`).
fn sections(exe: &Path) -> Vec<String> {
    let out = sanitizer_env(&mut Command::new(exe))
        .arg("--list")
        .output()
        .expect("run bad_input --list");
    assert!(out.status.success(), "bad_input --list failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// What a run of the bad-input sections found.
struct SectionsRun {
    /// The functions the sections covered, sorted.
    covered: Vec<String>,
    /// One report per failed section.
    failures: Vec<String>,
    /// Checks passed, over all sections.
    passed: u64,
    /// Sections run.
    sections: usize,
}

/// Runs each section of bad_input in its own process (`wrap` prefixes the
/// command, e.g. valgrind).
fn run_sections(exe: &Path, wrap: &[&str]) -> SectionsRun {
    let mut covered = Vec::new();
    let mut failures = Vec::new();
    let mut passed = 0;
    let all = sections(exe);
    for section in &all {
        let mut cmd = match wrap.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let out = sanitizer_env(cmd.arg(section))
            .output()
            .expect("run bad_input");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        covered.extend(
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix("covers "))
                .map(str::to_string),
        );
        let summary = stdout.lines().rev().find(|l| l.contains(" passed, "));
        println!("{}", summary.unwrap_or("(no summary line)"));
        passed += summary
            .and_then(|l| {
                l.split(" passed, ")
                    .next()?
                    .rsplit(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0u64);
        if !out.status.success() || !summary.is_some_and(|l| l.ends_with(" 0 failed")) {
            failures.push(format!(
                "section {section} ({}):\n{}\n{}",
                out.status,
                stdout
                    .lines()
                    .filter(|l| !l.starts_with("covers "))
                    .collect::<Vec<_>>()
                    .join("\n"),
                stderr
            ));
        }
    }
    covered.sort();
    covered.dedup();
    SectionsRun {
        covered,
        failures,
        passed,
        sections: all.len(),
    }
}

/// tests/counts.json records what the no-driver bad-input run checks; the
/// README's figures come from it (perf/report/readme_results.py). Fails when it
/// differs from `run`; GC_BLESS=1 rewrites it.
fn check_counts(run: &SectionsRun) {
    let path = repo().join("tests/counts.json");
    let want = format!(
        "{{\n  \"bad_input_checks_no_driver\": {},\n  \"bad_input_sections\": {}\n}}\n",
        run.passed, run.sections
    );
    if std::env::var_os("GC_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "tests/counts.json is stale: the no-driver bad-input run made {} checks in {} sections.\n\
         Rewrite it (GC_BLESS=1 cargo test --test suite c_abi::bad_input), then `make readme-results`.\n\
         have:\n{have}want:\n{want}",
        run.passed,
        run.sections
    );
}

#[test]
fn bad_input() {
    let src = repo().join("tests/c/bad_input.c");
    let exe = build_dir().join("bad_input");
    compile(&src, &exe, false, &[]).unwrap_or_else(|e| panic!("{e}"));
    let run = run_sections(&exe, &[]);
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n\n"));
    let missing: Vec<String> = header_functions()
        .into_iter()
        .filter(|f| !run.covered.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "functions of graphcore.h with no bad-input cases in tests/c/bad_input.c: {missing:?}"
    );
    println!(
        "bad_input: {} functions covered, {} checks in {} sections",
        run.covered.len(),
        run.passed,
        run.sections
    );
    // The count is the no-driver run's; with a driver the sections check more.
    if std::env::var_os("GC_GPU").is_none() {
        check_counts(&run);
    }
}

/// Every export of libgraphcore.so is in the header, and every function of
/// the header has a COVER(...) section in the bad-input suite (checked
/// without running it, so a new export fails here even where the suite
/// cannot run).
#[test]
fn every_export_is_covered_by_the_bad_input_suite() {
    let out = Command::new("readelf")
        .args(["--dyn-syms", "--wide"])
        .arg(lib_dir().join("libgraphcore.so"))
        .output()
        .unwrap_or_else(|e| missing_tool(&format!("readelf ({e})"), "apt-get install -y binutils"));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut exports: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" FUNC ") && l.contains(" GLOBAL ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .map(|n| n.split('@').next().unwrap().to_string())
        .filter(|n| n.starts_with("gc_"))
        .collect();
    exports.sort();
    exports.dedup();
    let header = header_functions();
    assert_eq!(
        exports, header,
        "exports of libgraphcore.so vs include/graphcore.h and graphcore_ops.h"
    );
    let suite = std::fs::read_to_string(repo().join("tests/c/bad_input.c")).unwrap();
    let uncovered: Vec<&String> = header
        .iter()
        .filter(|f| !suite.contains(&format!("COVER({f})")))
        .collect();
    assert!(
        uncovered.is_empty(),
        "add COVER(...) sections to tests/c/bad_input.c for {uncovered:?}"
    );
}

/// The no-driver bad-input suite under valgrind's memcheck: no invalid
/// access, no uninitialised read, no leak (definite, indirect or
/// possible). With a driver (GC_GPU) it does not run: valgrind cannot
/// follow the CUDA driver. Without valgrind it is skipped, unless
/// GC_REQUIRE_VALGRIND is set (CI sets it).
#[test]
fn bad_input_under_valgrind() {
    if std::env::var_os("GC_GPU").is_some() {
        println!("skipped: valgrind does not run with the CUDA driver");
        return;
    }
    let have = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        if std::env::var_os("GC_REQUIRE_VALGRIND").is_some() {
            missing_tool(
                "valgrind (GC_REQUIRE_VALGRIND is set)",
                "apt-get install -y valgrind",
            );
        }
        println!("skipped: valgrind is not installed");
        return;
    }
    let src = repo().join("tests/c/bad_input.c");
    let exe = build_dir().join("bad_input_plain");
    compile_with(&src, &exe, false, false, &[]).unwrap_or_else(|e| panic!("{e}"));
    let supp = repo().join("tests/c/valgrind.supp");
    let supp_arg = format!("--suppressions={}", supp.display());
    let run = run_sections(
        &exe,
        &[
            "valgrind",
            "--quiet",
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--track-origins=yes",
            &supp_arg,
        ],
    );
    assert!(run.failures.is_empty(), "{}", run.failures.join("\n\n"));
    assert_eq!(run.covered, header_functions());
}
