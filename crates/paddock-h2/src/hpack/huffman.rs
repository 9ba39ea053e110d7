//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B): decoding four bits at a time through a
//! state table built once from the code table, and encoding (used by the tests only: the
//! encoder sends raw literals).

use std::sync::LazyLock;

use super::huffman_table::{ENCODE_CODE_LENGTHS, ENCODE_CODES};

/// A Huffman-coded string that is not one (EOS inside, or padding that is not a prefix of EOS
/// or is longer than 7 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid Huffman-coded string")]
pub struct HuffmanError;

const EOS: u16 = 256;
const NO_SYMBOL: u16 = 0x1ff;

/// One transition of the decoder: from a state on four input bits.
#[derive(Clone, Copy)]
struct Step {
    next: u8,
    symbol: u16,
    fail: bool,
}

struct Table {
    steps: Vec<[Step; 16]>,
    /// States at which the input may end: the root, or a prefix of EOS (all ones) of at most
    /// 7 bits.
    accepting: Vec<bool>,
}

/// The code tree: internal nodes (the states), each child either a node or a symbol.
#[derive(Clone, Copy)]
enum Child {
    Node(u8),
    Symbol(u16),
    Nothing,
}

fn code_of(symbol: usize) -> (u32, u8) {
    match (ENCODE_CODES.get(symbol), ENCODE_CODE_LENGTHS.get(symbol)) {
        (Some(c), Some(l)) => (*c, *l),
        _ => (0x3fff_ffff, 30),
    }
}

/// The tree, and for each node the length of its path when that path is all ones.
fn tree() -> (Vec<[Child; 2]>, Vec<Option<u8>>) {
    let mut nodes = vec![[Child::Nothing; 2]];
    let mut ones = vec![Some(0u8)];
    for symbol in 0..=EOS as usize {
        let (code, len) = code_of(symbol);
        let mut node = 0usize;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                nodes[node][bit] = Child::Symbol(symbol as u16);
                break;
            }
            node = match nodes[node][bit] {
                Child::Node(n) => n as usize,
                _ => {
                    let n = nodes.len();
                    let depth = ones[node].filter(|_| bit == 1).map(|d| d + 1);
                    nodes.push([Child::Nothing; 2]);
                    ones.push(depth);
                    nodes[node][bit] = Child::Node(n as u8);
                    n
                }
            };
        }
    }
    (nodes, ones)
}

fn build() -> Table {
    let (nodes, ones) = tree();
    let steps = (0..nodes.len())
        .map(|state| std::array::from_fn(|nibble| step(&nodes, state, nibble)))
        .collect();
    let accepting = ones
        .iter()
        .map(|d| matches!(d, Some(d) if *d <= 7))
        .collect();
    Table { steps, accepting }
}

fn step(nodes: &[[Child; 2]], state: usize, nibble: usize) -> Step {
    let mut out = Step {
        next: 0,
        symbol: NO_SYMBOL,
        fail: false,
    };
    let mut node = state;
    for i in (0..4).rev() {
        match nodes[node][(nibble >> i) & 1] {
            Child::Node(n) => node = n as usize,
            Child::Symbol(EOS) | Child::Nothing => {
                out.fail = true;
                return out;
            }
            Child::Symbol(s) => {
                out.symbol = s;
                node = 0;
            }
        }
    }
    out.next = node as u8;
    out
}

static TABLE: LazyLock<Table> = LazyLock::new(build);

/// Appends the decoding of `src` to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let table = &*TABLE;
    let mut state = 0usize;
    out.reserve(src.len() + src.len() / 2);
    for byte in src {
        for nibble in [byte >> 4, byte & 0xf] {
            let s = table.steps[state][nibble as usize];
            if s.fail {
                return Err(HuffmanError);
            }
            if s.symbol != NO_SYMBOL {
                out.push(s.symbol as u8);
            }
            state = s.next as usize;
        }
    }
    if table.accepting[state] {
        Ok(())
    } else {
        Err(HuffmanError)
    }
}

/// Appends the Huffman code of `src` to `out`, padded with ones.
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut bits: u64 = 0;
    let mut count: u32 = 0;
    for b in src {
        let (code, len) = code_of(*b as usize);
        bits = (bits << len) | u64::from(code);
        count += u32::from(len);
        while count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    if count > 0 {
        let pad = 8 - count;
        out.push(((bits << pad) | ((1 << pad) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc_7541_c4_strings() {
        for (coded, plain) in [
            ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
            ("a8eb 1064 9cbf", "no-cache"),
            ("25a8 49e9 5ba9 7d7f", "custom-key"),
            ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
        ] {
            let mut out = Vec::new();
            decode(&hex(coded), &mut out).unwrap();
            assert_eq!(out, plain.as_bytes());
            let mut back = Vec::new();
            encode(plain.as_bytes(), &mut back);
            assert_eq!(back, hex(coded));
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).collect();
        let mut coded = Vec::new();
        encode(&all, &mut coded);
        let mut out = Vec::new();
        decode(&coded, &mut out).unwrap();
        assert_eq!(out, all);
    }

    #[test]
    fn bad_padding_and_eos_are_errors() {
        // 'a' is 00011 (5 bits): padded with zeros instead of ones.
        assert_eq!(decode(&[0b0001_1000], &mut Vec::new()), Err(HuffmanError));
        // A whole byte of ones as padding (more than 7 bits).
        assert_eq!(
            decode(&[0b0001_1111, 0xff], &mut Vec::new()),
            Err(HuffmanError)
        );
        // EOS itself (30 ones).
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()),
            Err(HuffmanError)
        );
        assert!(decode(&[0b0001_1111], &mut Vec::new()).is_ok());
    }
}
