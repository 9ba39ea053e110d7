//! Replays every fuzz corpus file (crates/paddock-h2/fuzz/corpus/<target>/) through the
//! function its fuzz target calls, on stable, so fuzzing finds stay fixed without nightly.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use paddock_h2::fuzzing;

fn replay(target: &str, f: fn(&[u8]) -> Result<(), String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let data = std::fs::read(&p).unwrap();
        if let Err(e) = f(&data) {
            panic!("{target}: {}: {e}", p.display());
        }
        n += 1;
    }
    assert!(n > 0, "empty corpus for {target}");
}

#[test]
fn frames_corpus() {
    replay("frames", fuzzing::frames);
}

#[test]
fn hpack_corpus() {
    replay("hpack", fuzzing::hpack);
}
