//! HPACK (RFC 7541): the static table, integers and string literals; the decoder
//! ([`decoder`], with the dynamic table and Huffman) and the encoder ([`encoder`]).

pub mod decoder;
pub mod encoder;
pub mod huffman;
mod huffman_table;

pub use decoder::Decoder;
pub use encoder::Encoder;

/// Why a header block could not be decoded: a connection error (COMPRESSION_ERROR), since the
/// decoder's table can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HpackError {
    #[error("header block truncated")]
    Truncated,
    #[error("HPACK integer overflow")]
    Overflow,
    #[error("HPACK index {0} out of range")]
    BadIndex(usize),
    #[error("dynamic table size update to {0} above the limit")]
    BadSizeUpdate(usize),
    #[error("dynamic table size update after the first field")]
    LateSizeUpdate,
    #[error(transparent)]
    Huffman(#[from] huffman::HuffmanError),
    #[error("invalid header name {0:?}")]
    BadName(String),
    #[error("header list larger than {0} bytes")]
    TooLarge(usize),
}

/// RFC 7541 Appendix A.
pub const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The size of a table entry (RFC 7541 §4.1).
pub fn entry_size(name: usize, value: usize) -> usize {
    name + value + 32
}

/// A dynamic-table entry: its name's and value's lengths in octets.
pub trait TableEntry {
    fn lens(&self) -> (usize, usize);
}

/// The dynamic table's bookkeeping (RFC 7541 §4), the same on both sides: entries newest
/// first, their size, eviction from the oldest.
pub struct DynamicTable<E> {
    entries: std::collections::VecDeque<E>,
    size: usize,
    max: usize,
}

impl<E: TableEntry> DynamicTable<E> {
    pub fn new(max: usize) -> Self {
        DynamicTable {
            entries: std::collections::VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The table's maximum size.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The sum of the entries' sizes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// A new maximum size; the oldest entries are evicted until the table fits.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict(0);
    }

    /// The entry at `i` (0: the newest).
    pub fn get(&self, i: usize) -> Option<&E> {
        self.entries.get(i)
    }

    /// Where the first entry for which `found` holds is (0: the newest).
    pub fn position(&self, found: impl FnMut(&E) -> bool) -> Option<usize> {
        self.entries.iter().position(found)
    }

    /// Adds `entry` as the newest, evicting the oldest to make room.
    pub fn insert(&mut self, entry: E) {
        let (name, value) = entry.lens();
        let size = entry_size(name, value);
        if size > self.max {
            // RFC 7541 §4.4: an entry larger than the table empties it and is not added.
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.entries.push_front(entry);
    }

    /// Checks the bookkeeping: the size is the sum of the entries' sizes and within the
    /// maximum.
    pub fn check(&self) -> Result<(), String> {
        let sum: usize = self
            .entries
            .iter()
            .map(|e| {
                let (name, value) = e.lens();
                entry_size(name, value)
            })
            .sum();
        if sum != self.size {
            return Err(format!("table size {} but entries sum to {sum}", self.size));
        }
        if self.size > self.max {
            return Err(format!(
                "table size {} above its maximum {}",
                self.size, self.max
            ));
        }
        Ok(())
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.entries.pop_back() {
                Some(e) => {
                    let (name, value) = e.lens();
                    self.size -= entry_size(name, value);
                }
                None => {
                    self.size = 0;
                    return;
                }
            }
        }
    }
}

/// Appends `value` as an HPACK integer with an `n`-bit prefix; `first` holds the bits above
/// the prefix.
pub fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Reads an HPACK integer with an `n`-bit prefix at `*pos`, advancing it.
pub fn get_int(src: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let first = *src.get(*pos).ok_or(HpackError::Truncated)?;
    *pos += 1;
    let mut value = usize::from(first) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0u32;
    loop {
        let b = *src.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        if shift > 28 {
            return Err(HpackError::Overflow);
        }
        value = value
            .checked_add(usize::from(b & 0x7f) << shift)
            .ok_or(HpackError::Overflow)?;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Appends a raw (not Huffman-coded) string literal.
pub fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn integers_round_trip_rfc_7541_c1() {
        let mut out = Vec::new();
        put_int(&mut out, 0, 5, 10);
        assert_eq!(out, [10]);
        out.clear();
        put_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10]);
        out.clear();
        put_int(&mut out, 0, 8, 42);
        assert_eq!(out, [42]);
        for (n, v) in [(5, 0), (5, 31), (7, 127), (4, 1 << 20), (6, 70000)] {
            let mut out = Vec::new();
            put_int(&mut out, 0, n, v);
            let mut pos = 0;
            assert_eq!(get_int(&out, &mut pos, n).unwrap(), v);
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn integers_truncated_or_overflowing_are_errors() {
        assert_eq!(get_int(&[31], &mut 0, 5), Err(HpackError::Truncated));
        assert_eq!(get_int(&[31, 0x80], &mut 0, 5), Err(HpackError::Truncated));
        let long = [31, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(get_int(&long, &mut 0, 5), Err(HpackError::Overflow));
        assert_eq!(get_int(&[], &mut 0, 5), Err(HpackError::Truncated));
    }
}
