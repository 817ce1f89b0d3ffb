//! The README's figures are the ones scripts/readme_results.py writes from
//! benches/results/*.json, the sources and tests/counts.json: this test runs
//! it in check mode (python3, no packages) and fails, showing the diff, when
//! README.md disagrees (`make readme-results` rewrites it).

use crate::support::repo;
use std::process::Command;

#[test]
fn readme_figures_are_current() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .arg(repo().join("scripts/readme_results.py"))
        .arg("--check")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} ({e}): install python3"));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
