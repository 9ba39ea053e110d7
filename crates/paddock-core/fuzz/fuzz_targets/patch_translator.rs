#![no_main]
//! cargo +nightly fuzz run patch_translator — see src/fuzzing.rs for the invariants.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = paddock_core::fuzzing::patch_translator(data) {
        panic!("{e}");
    }
});
