//! README.md's API map names every function the C headers declare. (The
//! README's figures are the measurement wing's: `make results-check` checks
//! them against perf/results/; the product's tests read no benchmark output.)

use crate::support::{lib_dir, repo};
use std::process::Command;

/// The functions libgraphcore.so exports (its defined dynamic `gc_*` text
/// symbols, `nm -D --defined-only`): the count comes from the library
/// itself, whichever header declares each function.
fn library_exports() -> Vec<String> {
    let lib = lib_dir().join("libgraphcore.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("cannot run nm ({e}): install binutils"));
    assert!(out.status.success(), "nm -D {} failed", lib.display());
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] if name.starts_with("gc_") => Some(name.to_string()),
            _ => None,
        })
        .collect();
    names.sort();
    assert!(names.len() > 50, "nm found only {names:?}");
    names
}

/// "The API at a glance" names every function the library exports (a
/// `gc_op_*` may appear as its `_suffix` in the typed built-ins row).
#[test]
fn readme_api_table_names_every_export() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("## The API at a glance")
        .expect("the README has an API table");
    let table = &readme[start..];
    let table = &table[..table[3..].find("\n## ").map_or(table.len(), |e| e + 3)];
    let missing: Vec<String> = library_exports()
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

/// The README's Layout names every top-level file and folder of the
/// repository (as git tracks them; a folder as `name/`).
#[test]
fn readme_layout_names_every_top_level_entry() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme.find("## Layout").expect("the README has a Layout");
    let layout = &readme[start..];
    let layout = &layout[..layout[3..].find("\n## ").map_or(layout.len(), |e| e + 3)];
    let Ok(out) = Command::new("git")
        .args(["ls-files", "--cached"])
        .current_dir(repo())
        .output()
    else {
        println!("git not found: the layout is not checked");
        return;
    };
    if !out.status.success() {
        println!("not a git checkout: the layout is not checked");
        return;
    }
    let mut entries: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|path| match path.split_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => path.to_string(),
        })
        .collect();
    entries.sort();
    entries.dedup();
    let missing: Vec<&String> = entries
        .iter()
        .filter(|e| !layout.contains(e.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Layout does not name: {missing:?}"
    );
}

/// The README is a guide, not a notebook: at most 15 KiB (results, limits
/// and the rest live in docs/ and perf/).
#[test]
fn readme_is_at_most_15_kib() {
    let size = std::fs::metadata(repo().join("README.md")).unwrap().len();
    assert!(
        size <= 15 * 1024,
        "README.md is {size} bytes, over 15 KiB: move detail to docs/"
    );
}
