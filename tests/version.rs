//! The version agrees everywhere: Cargo.toml, the header's GC_VERSION_*
//! macros, gc_version() (checked by tests/c/abi.c against the macros) and
//! the SONAME of libgraphcore.so.

use crate::support::{lib_dir, repo};
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
        .expect("readelf (binutils) is needed for this test");
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!("[libgraphcore.so.{}]", env!("CARGO_PKG_VERSION_MAJOR"));
    assert!(
        text.lines()
            .any(|l| l.contains("(SONAME)") && l.contains(&want)),
        "SONAME is not {want}:\n{text}"
    );
}
