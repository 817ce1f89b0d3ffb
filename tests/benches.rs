//! The C benchmarks (perf/c/*.c, which scripts/gpu-check stages and
//! stage/bench.sh runs on the GPU machine) build with every warning an
//! error, and without a driver each exits with status 1 and says so instead
//! of crashing. With GC_GPU set (the GPU machine) they are only compiled:
//! running them is stage/bench.sh's job.

use crate::c_abi::{build_dir, compile_with};
use crate::support::repo;
use std::process::Command;

#[test]
fn c_benches_build_and_say_when_there_is_no_gpu() {
    let mut sources: Vec<_> = std::fs::read_dir(repo().join("perf/c"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no perf/c/*.c");
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

/// Issue 17's rule for NVLink multicast: every script or program in the
/// repository that starts NCCL (names `libnccl` or `nccl.all_reduce`, or
/// imports `torch.distributed`) turns it off (`NCCL_NVLS_ENABLE`, set to 0 directly
/// or by sourcing perf/multi_gpu/common.sh), and nothing calls
/// `cuMulticastCreate`.
#[test]
fn every_nccl_script_turns_nvlink_multicast_off() {
    let mut checked = 0;
    let mut stack = vec![repo()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && !["target", "stage", "shared"].contains(&name.as_str())
                {
                    stack.push(path);
                }
                continue;
            }
            let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
            if !matches!(
                ext.as_deref(),
                Some("sh" | "py" | "c" | "cu" | "cpp" | "rs")
            ) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let rel = path.strip_prefix(repo()).unwrap().display().to_string();
            if rel == "tests/benches.rs" {
                continue; // this test names what it looks for
            }
            assert!(
                !text.contains("cuMulticastCreate"),
                "{rel} calls cuMulticastCreate"
            );
            let starts_nccl = text.contains("libnccl")
                || text.contains("nccl.all_reduce")
                || text.contains("import torch.distributed");
            if starts_nccl {
                checked += 1;
                assert!(
                    text.contains("NCCL_NVLS_ENABLE")
                        || text.contains("multi_gpu/common.sh\"")
                        || text.contains("/common.sh\""),
                    "{rel} starts NCCL without setting NCCL_NVLS_ENABLE=0"
                );
            }
        }
    }
    assert!(
        checked >= 4,
        "only {checked} NCCL scripts found: the search is broken"
    );
}
