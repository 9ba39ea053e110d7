#![no_main]
//! See paddock_core::fuzzing::discovery_filter for the invariants checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = paddock_core::fuzzing::discovery_filter(data) {
        panic!("discovery_filter: {e}");
    }
});
