//! The block path against the byte loop: same answers, same positions, same state, on random
//! bytes and random valid JSON, in random chunkings.

use proptest::prelude::*;

use super::super::{FrameError, ValueScan};
use super::{Masks, escaped};

/// Everything a caller can observe of a scan: each call's answer and position, then the state.
fn run(data: &[u8], cuts: &[usize], blocks: bool) -> String {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    ends.push(data.len());
    ends.sort_unstable();
    let mut scan = ValueScan::default();
    let mut pos = 0;
    let mut seen = Vec::new();
    for end in ends {
        let r: Result<bool, FrameError> = scan.scan_with(&data[..end], &mut pos, blocks);
        seen.push(format!("{r:?}@{pos}"));
        if r != Ok(false) {
            break;
        }
    }
    format!("{seen:?} {scan:?}")
}

fn same(data: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
    let bytes = run(data, cuts, false);
    let blocks = run(data, cuts, true);
    prop_assert_eq!(blocks, bytes, "{}", String::from_utf8_lossy(data));
    Ok(())
}

/// Bytes that matter to the scanner, and filler; opening brackets weighted so values get deep
/// and long before they close.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    let alphabet = b"{{{[[\"\"\"\\\\}]a,: 1";
    let byte = prop::sample::select(alphabet.to_vec());
    (
        prop::sample::select(b"{[\"t".to_vec()),
        prop::collection::vec(byte, 0..700),
    )
        .prop_map(|(first, mut rest)| {
            rest.insert(0, first);
            rest
        })
}

/// Valid JSON with strings full of quotes and backslashes (escaped when serialised).
fn document() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        "[a-z\"\\\\{}\\[\\] ]{0,40}".prop_map(serde_json::Value::from),
        any::<i32>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ];
    let value = leaf.prop_recursive(6, 200, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z\\\\\"]{0,12}", inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    (value, any::<bool>()).prop_map(|(v, tail)| {
        let mut out = serde_json::to_vec(&serde_json::json!({ "v": v })).unwrap_or_default();
        if tail {
            out.extend_from_slice(b" ,{\"next\":1}");
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn blocks_scan_random_bytes_as_the_byte_loop(
        data in soup(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        same(&data, &cuts)?;
    }

    #[test]
    fn blocks_scan_json_as_the_byte_loop(
        data in document(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        truncate in any::<usize>(),
    ) {
        same(&data, &cuts)?;
        same(&data[..truncate % (data.len() + 1)], &cuts)?;
    }

    #[test]
    fn masks_are_the_portable_masks(block in prop::collection::vec(
        prop::sample::select(b"{}[]\"\\ a{|;[]\x7b\x7d\x5b\x5d\x3b\x3d\xfb\xdb".to_vec()), 64)) {
        let Ok(block) = <[u8; 64]>::try_from(block) else {
            return Err(TestCaseError::fail("64 bytes"));
        };
        prop_assert_eq!(Masks::of(&block), Masks::portable(&block));
    }

    #[test]
    fn escaped_is_the_odd_runs(backslash in any::<u64>(), dense in any::<u64>(), carry in any::<bool>()) {
        // Dense runs of backslashes are where the carry arithmetic can go wrong.
        let backslash = backslash | dense;
        let (mut want, mut esc) = (0u64, carry);
        for k in 0..64 {
            if esc {
                want |= 1 << k;
                esc = false;
            } else if backslash >> k & 1 == 1 {
                esc = true;
            }
        }
        let mut got_carry = carry;
        prop_assert_eq!(escaped(backslash, &mut got_carry), want);
        prop_assert_eq!(got_carry, esc);
    }
}

#[test]
fn a_backslash_outside_strings_is_left_to_the_byte_loop() {
    let mut data = b"{\"a\":[".to_vec();
    data.extend(std::iter::repeat_n(b'[', 70));
    data.extend_from_slice(b"\\\"]");
    data.extend(std::iter::repeat_n(b']', 200));
    same(&data, &[]).unwrap_or_else(|e| panic!("{e}"));
    // The byte loop ignores the backslash, so the quote opens a string that never closes.
    assert!(run(&data, &[], true).starts_with("[\"Ok(false)"));
}
