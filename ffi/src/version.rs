//! Library version: the GC_VERSION_* macros, gc_version() and the SONAME
//! (libgraphcore.so.MAJOR) agree (a test checks it).

/// Major version; the SONAME is libgraphcore.so.MAJOR.
pub const GC_VERSION_MAJOR: u32 = 0;
/// Minor version: additions that keep the ABI.
pub const GC_VERSION_MINOR: u32 = 1;
/// Patch version: fixes.
pub const GC_VERSION_PATCH: u32 = 0;

/// The library's version as major * 10000 + minor * 100 + patch, to compare
/// with the GC_VERSION_* macros of the header a program was built with.
/// Needs no driver.
/// Errors: none.
#[no_mangle]
pub extern "C" fn gc_version() -> u32 {
    GC_VERSION_MAJOR * 10000 + GC_VERSION_MINOR * 100 + GC_VERSION_PATCH
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_cargo() {
        let v = format!(
            "{}.{}.{}",
            super::GC_VERSION_MAJOR,
            super::GC_VERSION_MINOR,
            super::GC_VERSION_PATCH
        );
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
    }
}
