//! The bulk of a container value, 64 bytes at a time: the first stage of simdjson (Langdale and
//! Lemire, "Parsing gigabytes of JSON per second", 2019), cut down to what framing needs.
//!
//! One pass classifies all 64 bytes of a block at once into bit masks of quotes, backslashes,
//! opening and closing brackets. Escaped bytes follow from the backslash mask by carry
//! arithmetic, the inside of strings from a prefix XOR of the unescaped quotes, and the bracket
//! depth moves by population counts. Only a block where the value may end, or where a direct
//! child of the value opens or closes (the [`super::Shape`] a watch event needs), is walked
//! bracket by bracket. Kubernetes objects are deep (managedFields), so most blocks are not.
//!
//! The byte loop of [`ValueScan::scan`] stays the reference and does the rest: the tail of the
//! input (fewer than 64 bytes), values at depth 0 (keys, top-level strings), and any block it
//! must judge itself: a backslash outside a string, which the byte loop ignores and the masks
//! would read as an escape (only malformed input has one). Tests compare both on random input
//! in random chunkings (framer_tests.rs).

use super::ValueScan;

/// Where [`ValueScan::scan_blocks`] stopped.
pub(super) enum Blocks {
    /// The value ended; the position is one past its last byte.
    Ended,
    /// The byte loop goes on from the position (fewer than 64 bytes remain, or a block it
    /// must judge itself).
    Bytes,
    /// The input ended right after a backslash inside a string (`esc` is set).
    Starved,
}

impl ValueScan {
    /// Scans whole 64-byte blocks of `buf` from `*i`, inside a container (`depth > 0`).
    #[inline]
    pub(super) fn scan_blocks(&mut self, buf: &[u8], i: &mut usize) -> Blocks {
        // The byte at `*i` is escaped: the previous block ended in an odd run of backslashes.
        let mut carry = false;
        while let Some(block) = buf.get(*i..).and_then(<[u8]>::first_chunk::<64>) {
            let masks = Masks::of(block);
            let mut next_carry = carry;
            let escaped = escaped(masks.backslash, &mut next_carry);
            let strings = prefix_xor(masks.quote & !escaped) ^ all_if(self.in_str);
            if masks.backslash & !strings != 0 {
                break;
            }
            let open = masks.open & !strings;
            let close = masks.close & !strings;
            if self.depth >= close.count_ones() + 2 {
                // Deeper than 1 throughout: nothing here ends the value or is a direct child.
                self.depth = self.depth - close.count_ones() + open.count_ones();
            } else if let Some(end) = self.brackets(open, close, *i) {
                *i = end;
                self.in_str = false;
                return Blocks::Ended;
            }
            self.in_str = strings >> 63 == 1;
            carry = next_carry;
            *i += 64;
        }
        if carry {
            // The escaped byte is inside a string and cannot end it.
            if *i >= buf.len() {
                self.esc = true;
                return Blocks::Starved;
            }
            *i += 1;
        }
        Blocks::Bytes
    }

    /// Walks the brackets of one block (offset `base`) in order, as the byte loop does; the
    /// position one past the value's end when it ends here.
    #[inline]
    fn brackets(&mut self, open: u64, close: u64, base: usize) -> Option<usize> {
        let mut rest = open | close;
        while rest != 0 {
            let k = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if open >> k & 1 == 1 {
                if self.depth == 1 {
                    if self.inner == 0 {
                        self.first_open = base + k;
                    }
                    self.inner += 1;
                }
                self.depth += 1;
            } else {
                self.depth -= 1;
                if self.depth == 0 {
                    return Some(base + k + 1);
                }
                if self.depth == 1 {
                    self.last_close = base + k + 1;
                }
            }
        }
        None
    }
}

fn all_if(b: bool) -> u64 {
    if b { !0 } else { 0 }
}

/// Bit `k` of each mask stands for byte `k` of the block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Masks {
    pub(super) quote: u64,
    pub(super) backslash: u64,
    /// `{` and `[`.
    pub(super) open: u64,
    /// `}` and `]`.
    pub(super) close: u64,
}

impl Masks {
    /// SSE2 (every x86-64 CPU has it): 16 bytes per comparison. `[`/`{` and `]`/`}` differ
    /// only in bit 5, so one comparison of the bytes with bit 5 set finds both.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(super) fn of(block: &[u8; 64]) -> Masks {
        use safe_arch::{
            bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, move_mask_i8_m128i,
            set_splat_i8_m128i,
        };
        let eq = |v: m128i, c: u8| {
            let hits = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(c as i8));
            u64::from(move_mask_i8_m128i(hits) as u16)
        };
        let (parts, _) = block.as_chunks::<16>();
        let mut m = Masks::default();
        for (n, part) in parts.iter().enumerate() {
            let v = load_unaligned_m128i(part);
            let folded = bitor_m128i(v, set_splat_i8_m128i(0x20));
            let at = 16 * n;
            m.quote |= eq(v, b'"') << at;
            m.backslash |= eq(v, b'\\') << at;
            m.open |= eq(folded, b'{') << at;
            m.close |= eq(folded, b'}') << at;
        }
        m
    }

    /// Elsewhere: the same masks a byte at a time (the compiler vectorises what it can).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    pub(super) fn of(block: &[u8; 64]) -> Masks {
        Masks::portable(block)
    }

    /// The definition the SSE2 version is tested against.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub(super) fn portable(block: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (k, &b) in block.iter().enumerate() {
            let bit = |hit: bool| u64::from(hit) << k;
            m.quote |= bit(b == b'"');
            m.backslash |= bit(b == b'\\');
            m.open |= bit(b == b'{' || b == b'[');
            m.close |= bit(b == b'}' || b == b']');
        }
        m
    }
}

/// The bytes escaped by a backslash: those after an odd-length run of backslashes. `carry` in:
/// the block's first byte is escaped; out: the next block's is (simdjson's `find_escaped`).
#[inline]
pub(super) fn escaped(backslash: u64, carry: &mut bool) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let prev = u64::from(*carry);
    let backslash = backslash & !prev;
    let follows = (backslash << 1) | prev;
    // Runs starting on an odd bit: adding clears them and sets the bit after each run.
    let odd_starts = backslash & !EVEN & !follows;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow;
    (EVEN ^ (even_starts << 1)) & follows
}

/// Bit `k` is the XOR of bits `0..=k`: 1 from an opening quote up to its closing quote.
#[inline]
pub(super) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(test)]
#[path = "framer_blocks_tests.rs"]
mod tests;
