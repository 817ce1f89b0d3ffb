//! The Python binding's tests (python/tests, pytest) against the library
//! this suite tests (GRAPHCORE_LIB). Without a driver they check the
//! binding against the header, error mapping, argument checks and handle
//! lifetimes, and skip the GPU tests (pytest lists them as skipped); on the
//! GPU machine (GC_GPU=1) the GPU tests must run. python3 and pytest are
//! required (`make test` installs pytest, scripts/test-deps): without them
//! the test fails and says what to install.

use crate::support::{lib_dir, missing_tool, repo, tool_command};
use std::process::Command;

#[test]
fn pytest() {
    let python = tool_command("python3", "PYTHON");
    match Command::new(&python).args(["-c", "import pytest"]).output() {
        Err(e) => missing_tool(
            &format!("python3 (cannot run {python}: {e})"),
            "apt-get install -y python3, or set PYTHON",
        ),
        Ok(probe) if !probe.status.success() => missing_tool(
            &format!("pytest, for {python}"),
            "scripts/test-deps, or python3 -m pip install pytest",
        ),
        Ok(_) => {}
    }
    let out = Command::new(&python)
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q"])
        .arg(repo().join("python/tests"))
        .current_dir(repo())
        .env("GRAPHCORE_LIB", lib_dir().join("libgraphcore.so"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "python/tests failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
