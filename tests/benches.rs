//! The C benchmarks (benches/c/*.c, which scripts/gpu-check stages and
//! stage/bench.sh runs on the GPU machine) build with every warning an
//! error, and without a driver each exits with status 1 and says so instead
//! of crashing. With GC_GPU set (the GPU machine) they are only compiled:
//! running them is stage/bench.sh's job.

use crate::c_abi::{build_dir, compile_with};
use crate::support::repo;
use std::process::Command;

#[test]
fn c_benches_build_and_say_when_there_is_no_gpu() {
    let mut sources: Vec<_> = std::fs::read_dir(repo().join("benches/c"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no benches/c/*.c");
    let gpu = std::env::var_os("GC_GPU").is_some();
    for src in sources {
        let name = src.file_stem().unwrap().to_string_lossy().into_owned();
        let exe = build_dir().join(format!("bench-{name}"));
        compile_with(&src, &exe, false, false, &["-O2"]).unwrap_or_else(|e| panic!("{e}"));
        if gpu {
            continue;
        }
        let out = Command::new(&exe).output().expect("run the bench");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{name}: {}\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("GC_ERROR_NO_DRIVER") && stderr.contains("needs an NVIDIA GPU"),
            "{name} did not say why it stopped:\n{stderr}"
        );
    }
}
