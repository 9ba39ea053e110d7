//! RFC 7541 Appendix C: C.3 (requests without Huffman), C.4 (with), C.5 and C.6 (responses,
//! with evictions from a 256-byte table).
#![allow(clippy::unwrap_used)]

use super::*;

fn hex(s: &str) -> Bytes {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

fn decode(d: &mut Decoder, block: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    d.decode(&hex(block), 1 << 20, |n, v| {
        let n = match n {
            Name::Pseudo(b) => String::from_utf8(b.to_vec()).unwrap(),
            Name::Header(h) => h.as_str().to_owned(),
        };
        out.push((n, String::from_utf8(v.to_vec()).unwrap()));
    })
    .unwrap();
    out
}

fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::new(4096);
    let first = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ];
    assert_eq!(decode(&mut d, blocks[0]), fields(&first));
    assert_eq!(d.table_size(), 57);
    let mut second = first.to_vec();
    second.push(("cache-control", "no-cache"));
    assert_eq!(decode(&mut d, blocks[1]), fields(&second));
    assert_eq!(d.table_size(), 110);
    let third = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    assert_eq!(decode(&mut d, blocks[2]), fields(&third));
    assert_eq!(d.table_size(), 164);
}

#[test]
fn c3_requests_without_huffman() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c4_requests_with_huffman() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new(256);
    let date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
    let loc = "https://www.example.com";
    let first = [
        (":status", "302"),
        ("cache-control", "private"),
        ("date", date1),
        ("location", loc),
    ];
    assert_eq!(decode(&mut d, blocks[0]), fields(&first));
    assert_eq!(d.table_size(), 222);
    let mut second = first;
    second[0].1 = "307";
    assert_eq!(decode(&mut d, blocks[1]), fields(&second));
    assert_eq!(d.table_size(), 222);
    let third = [
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", loc),
        ("content-encoding", "gzip"),
        (
            "set-cookie",
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        ),
    ];
    assert_eq!(decode(&mut d, blocks[2]), fields(&third));
    assert_eq!(d.table_size(), 215);
}

#[test]
fn c5_responses_without_huffman() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
         2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
         6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d \
         54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 \
         5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e \
         3d31",
    ]);
}

#[test]
fn c6_responses_with_huffman() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
         2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
         77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
         9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ]);
}

#[test]
fn size_updates_evict_and_are_bounded() {
    let mut d = Decoder::new(4096);
    decode(
        &mut d,
        "400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    );
    assert_eq!(d.table_size(), 54);
    // Size update to 0 empties the table; the index then refers to nothing.
    decode(&mut d, "20");
    assert_eq!(d.table_size(), 0);
    let mut sink = |_: Name, _: Bytes| {};
    assert_eq!(
        d.decode(&hex("be"), 1 << 20, &mut sink),
        Err(HpackError::BadIndex(62))
    );
    // Above what was advertised, or after a field: errors.
    assert_eq!(
        d.decode(&hex("3fe2 1f"), 1 << 20, &mut sink),
        Err(HpackError::BadSizeUpdate(4096 + 1))
    );
    assert_eq!(
        d.decode(&hex("8220"), 1 << 20, &mut sink),
        Err(HpackError::LateSizeUpdate)
    );
}

#[test]
fn malformed_blocks_are_errors_not_panics() {
    let mut d = Decoder::new(4096);
    let mut sink = |_: Name, _: Bytes| {};
    for block in [
        "80",
        "ff",
        "0f",
        "4005 6162",
        "00 8aff",
        "00 01 41 ff ff ff ff ff ff ff ff 0f",
    ] {
        assert!(
            d.decode(&hex(block), 1 << 20, &mut sink).is_err(),
            "{block}"
        );
    }
    // A list over the bound is reported, after the table was kept in step.
    assert_eq!(
        d.decode(
            &hex("400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
            10,
            &mut sink
        ),
        Err(HpackError::TooLarge(10))
    );
    assert_eq!(d.table_size(), 54);
}

#[test]
fn names_and_values_are_copies_not_slices_of_the_block() {
    let mut d = Decoder::new(4096);
    // A literal with a new name, indexed (raw), and one Huffman-coded (C.4's third block).
    let block = hex(
        "400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65 \
         0088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    );
    let range = block.as_ptr() as usize..block.as_ptr() as usize + block.len();
    let mut got = Vec::new();
    d.decode(&block, 1 << 20, |n, v| got.push((n, v))).unwrap();
    assert_eq!(got.len(), 2);
    for (n, v) in &got {
        assert!(!range.contains(&(v.as_ptr() as usize)), "{n:?}: {v:?}");
        assert_eq!(v.len(), "custom-value".len());
    }
    let before = block.as_ptr();
    drop(block);
    // The table's entry is its own copy too: indexed afterwards, it is intact.
    let mut again = Vec::new();
    d.decode(&hex("be"), 1 << 20, |n, v| again.push((n, v)))
        .unwrap();
    assert_eq!(&again[0].1[..], b"custom-value");
    assert_ne!(again[0].1.as_ptr(), before);
    d.check_table().unwrap();
}
