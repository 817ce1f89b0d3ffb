//! NCCL is never linked by graphcore; the examples, tests and benchmarks
//! that load it keep NVLink multicast off.

use crate::support::repo;

/// The rule for NVLink multicast (DESIGN.md, "leave NVLink multicast off"):
/// every script or program in the
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
            if rel == "tests/nccl.rs" {
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
