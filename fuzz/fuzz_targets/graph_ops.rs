//! libFuzzer entry: random graph-building sequences on GraphDesc, checked
//! against the validator's rules (see graphcore_fuzz::graph).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = graphcore_fuzz::graph::run(data) {
        panic!("graph model mismatch: {e}");
    }
});
