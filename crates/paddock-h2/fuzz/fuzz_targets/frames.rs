#![no_main]
//! See paddock_h2::fuzzing::frames for the invariants checked.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = paddock_h2::fuzzing::frames(data) {
        panic!("frames: {e}");
    }
});
