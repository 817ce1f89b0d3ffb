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

/// Fails the running test because a tool is missing: prints `what` and how
/// to install it, without the panic hook's location and backtrace (a
/// missing tool is not a bug in the code under test).
pub(crate) fn missing_tool(what: &str, install: &str) -> ! {
    let message = format!(
        "missing tool: {what}\n  install it: {install}\n  (`make test` installs pytest, cmake and \
         pkg-config itself: scripts/test-deps)"
    );
    eprintln!("{message}");
    std::panic::resume_unwind(Box::new(message))
}
