#![no_main]
//! cargo +nightly fuzz run path_parser — see src/fuzzing.rs for the invariants.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = paddock_core::fuzzing::path_parser(data) {
        panic!("{e}");
    }
});
