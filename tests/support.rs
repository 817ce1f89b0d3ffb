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
