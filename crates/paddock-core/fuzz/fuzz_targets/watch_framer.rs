#![no_main]
//! See paddock_core::fuzzing::watch_framer for the invariants checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = paddock_core::fuzzing::watch_framer(data) {
        panic!("watch_framer: {e}");
    }
});
