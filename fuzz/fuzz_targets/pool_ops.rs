//! libFuzzer entry: random operation sequences on the pool allocator,
//! checked against a reference model (see graphcore_fuzz::pool).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = graphcore_fuzz::pool::run(data) {
        panic!("pool model mismatch: {e}");
    }
});
