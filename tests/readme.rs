//! The figures of README.md and docs/results.md are the ones
//! perf/report/readme_results.py writes from perf/results/*.json, the sources
//! and tests/counts.json: this test runs it in check mode (python3, no
//! packages) and fails, showing the diff, when either file disagrees (`make
//! readme-results` rewrites them).

use crate::support::repo;
use std::process::Command;

#[test]
fn readme_figures_are_current() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .arg(repo().join("perf/report/readme_results.py"))
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

/// "The API at a glance" names every function the header declares (a
/// `gc_op_*` may appear as its `_suffix` in the typed built-ins row).
#[test]
fn readme_api_table_names_every_export() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("## The API at a glance")
        .expect("the README has an API table");
    let table = &readme[start..];
    let table = &table[..table[3..].find("\n## ").map_or(table.len(), |e| e + 3)];
    let missing: Vec<String> = crate::c_abi::header_functions()
        .into_iter()
        .filter(|name| {
            let short = name
                .strip_prefix("gc_op_")
                .map(|s| format!("`_{s}`"))
                .unwrap_or_default();
            !table.contains(&format!("`{name}`")) && (short.is_empty() || !table.contains(&short))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's API table does not name: {missing:?}"
    );
}
