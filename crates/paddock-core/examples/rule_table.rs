//! Regenerates the rule table in docs/translation.md from `paddock_core::rules::table`:
//! `cargo run -p paddock-core --example rule_table` (run from the repository root).

use std::process::ExitCode;

fn main() -> ExitCode {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/translation.md");
    let doc = match std::fs::read_to_string(path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("reading {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(new) = paddock_core::rules::doc::splice_into(&doc) else {
        eprintln!("{path} has no generated rule table markers");
        return ExitCode::FAILURE;
    };
    if let Err(e) = std::fs::write(path, new) {
        eprintln!("writing {path}: {e}");
        return ExitCode::FAILURE;
    }
    println!("updated {path}");
    ExitCode::SUCCESS
}
