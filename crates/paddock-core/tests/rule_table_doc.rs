//! docs/translation.md's rule table is generated from `rules::table`; this fails when it is
//! stale and prints the command that regenerates it.
#![allow(clippy::unwrap_used)]

#[test]
fn translation_md_rule_table_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/translation.md");
    let doc = std::fs::read_to_string(path).expect("docs/translation.md");
    let want = paddock_core::rules::doc::splice_into(&doc)
        .expect("docs/translation.md lacks the generated rule table markers");
    assert!(
        doc == want,
        "docs/translation.md's rule table is stale: run `cargo run -p paddock-core --example rule_table`"
    );
}
