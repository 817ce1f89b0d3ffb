//! The version agrees everywhere: Cargo.toml, the header's GC_VERSION_*
//! macros, gc_version() (checked by tests/c/abi.c against the macros), the
//! SONAME of libgraphcore.so and the Python binding's __version__ (which
//! python/pyproject.toml takes). scripts/install reads Cargo.toml itself.

use crate::support::{lib_dir, missing_tool, repo};
use std::process::Command;

fn header_macro(header: &str, name: &str) -> u32 {
    let line = header
        .lines()
        .find(|l| l.starts_with(&format!("#define {name} ")))
        .unwrap_or_else(|| panic!("{name} missing from the header"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn header_macros_match_cargo() {
    let header = std::fs::read_to_string(repo().join("include/graphcore.h")).unwrap();
    let v = format!(
        "{}.{}.{}",
        header_macro(&header, "GC_VERSION_MAJOR"),
        header_macro(&header, "GC_VERSION_MINOR"),
        header_macro(&header, "GC_VERSION_PATCH")
    );
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
}

#[test]
fn soname_is_major_version() {
    let out = Command::new("readelf")
        .args(["-d"])
        .arg(lib_dir().join("libgraphcore.so"))
        .output()
        .unwrap_or_else(|e| missing_tool(&format!("readelf ({e})"), "apt-get install -y binutils"));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!("[libgraphcore.so.{}]", env!("CARGO_PKG_VERSION_MAJOR"));
    assert!(
        text.lines()
            .any(|l| l.contains("(SONAME)") && l.contains(&want)),
        "SONAME is not {want}:\n{text}"
    );
}

#[test]
fn python_version_matches_cargo() {
    let init = std::fs::read_to_string(repo().join("python/graphcore/__init__.py")).unwrap();
    let line = init
        .lines()
        .find(|l| l.starts_with("__version__ = "))
        .expect("__version__ missing from python/graphcore/__init__.py");
    assert_eq!(
        line,
        format!("__version__ = \"{}\"", env!("CARGO_PKG_VERSION"))
    );
}
