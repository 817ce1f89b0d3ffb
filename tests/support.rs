//! Helpers shared by the suite's tests.

use std::path::PathBuf;

/// The repository root (the suite's manifest directory), or $GC_REPO.
pub(crate) fn repo() -> PathBuf {
    std::env::var_os("GC_REPO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The folder holding libgraphcore.so: $GC_LIB_DIR, or the cargo profile
/// folder this test binary was built into (target/<profile>).
pub(crate) fn lib_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GC_LIB_DIR") {
        return PathBuf::from(d);
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    assert!(
        dir.join("libgraphcore.so").exists(),
        "{} has no libgraphcore.so: build it first (`cargo build -p graphcore-ffi`, or `make test`)",
        dir.display()
    );
    dir
}

/// The command for tool `name`: `$env` when set, else the copy
/// scripts/test-deps installed in target/tools/venv/bin (`make test` runs
/// it), else `name` on PATH.
pub(crate) fn tool_command(name: &str, env: &str) -> String {
    if let Ok(cmd) = std::env::var(env) {
        return cmd;
    }
    let local = repo().join("target/tools/venv/bin").join(name);
    if local.exists() {
        return local.display().to_string();
    }
    name.to_string()
}
