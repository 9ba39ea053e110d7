//! The HPACK decoder: the dynamic table, size updates and Huffman-coded literals.
//!
//! Entries keep their name as an `http::HeaderName` (made once, when the entry is added), so
//! that an indexed field (most of an apiserver's answer once its table is warm) costs a
//! reference-count increment, not a parse and an allocation. Every string literal (name or
//! value, raw or Huffman-coded) is copied out of the header block into a `Bytes` of just its
//! octets: neither a decoded field nor a table entry keeps the block it came in alive (a
//! zero-copy slice held by a small table entry would pin a whole, possibly megabyte-sized,
//! block; docs/performance/from-source-headers.md).

use std::sync::LazyLock;

use bytes::Bytes;
use http::HeaderName;

use super::{DynamicTable, HpackError, STATIC_TABLE, TableEntry, entry_size, get_int, huffman};

/// The Huffman scratch buffer is dropped after a string that grew it past this.
const SCRATCH_KEEP: usize = 16 * 1024;

/// A field's name: a pseudo-header (`:status`...) or a regular header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    Pseudo(Bytes),
    Header(HeaderName),
}

impl Name {
    fn parse(b: Bytes) -> Result<Name, HpackError> {
        // `b` is already a copy of just the name's octets (`Decoder::string`).
        if b.first() == Some(&b':') {
            return Ok(Name::Pseudo(b));
        }
        HeaderName::from_bytes(&b)
            .map(Name::Header)
            .map_err(|_| HpackError::BadName(String::from_utf8_lossy(&b).into_owned()))
    }

    fn len(&self) -> usize {
        match self {
            Name::Pseudo(b) => b.len(),
            Name::Header(h) => h.as_str().len(),
        }
    }
}

impl TableEntry for (Name, Bytes) {
    fn lens(&self) -> (usize, usize) {
        (self.0.len(), self.1.len())
    }
}

static STATIC: LazyLock<Vec<(Name, Bytes)>> = LazyLock::new(|| {
    STATIC_TABLE
        .iter()
        .map(|(n, v)| {
            let name = match n.strip_prefix(':') {
                Some(_) => Name::Pseudo(Bytes::from_static(n.as_bytes())),
                None => Name::Header(HeaderName::from_static(n)),
            };
            (name, Bytes::from_static(v.as_bytes()))
        })
        .collect()
});

/// The decoding side of one connection.
pub struct Decoder {
    /// Its maximum size as last set by the peer's size update.
    table: DynamicTable<(Name, Bytes)>,
    /// What this side advertised (SETTINGS_HEADER_TABLE_SIZE): the bound on `max`.
    limit: usize,
    scratch: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table may grow up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            table: DynamicTable::new(limit),
            limit,
            scratch: Vec::new(),
        }
    }

    /// Decodes `block`, calling `emit` with each field. The whole block is decoded (keeping the
    /// table in step with the peer's) even when its list is larger than `max_list` bytes, which
    /// is then reported as [`HpackError::TooLarge`].
    pub fn decode(
        &mut self,
        block: &[u8],
        max_list: usize,
        mut emit: impl FnMut(Name, Bytes),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut list = 0usize;
        let mut fields = 0usize;
        while let Some(&b) = block.get(pos) {
            if b & 0xe0 == 0x20 {
                if fields > 0 {
                    return Err(HpackError::LateSizeUpdate);
                }
                let size = get_int(block, &mut pos, 5)?;
                if size > self.limit {
                    return Err(HpackError::BadSizeUpdate(size));
                }
                self.table.set_max(size);
                continue;
            }
            fields += 1;
            let (name, value) = self.field(block, &mut pos)?;
            list = list.saturating_add(entry_size(name.len(), value.len()));
            if list <= max_list {
                emit(name, value);
            }
        }
        if list > max_list {
            return Err(HpackError::TooLarge(max_list));
        }
        Ok(())
    }

    /// The field at `*pos` (not a size update), added to the table when it says so.
    fn field(&mut self, block: &[u8], pos: &mut usize) -> Result<(Name, Bytes), HpackError> {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        if b & 0x80 != 0 {
            let index = get_int(block, pos, 7)?;
            return self.entry(index);
        }
        let (indexing, prefix) = if b & 0xc0 == 0x40 {
            (true, 6)
        } else {
            (false, 4)
        };
        let index = get_int(block, pos, prefix)?;
        let name = if index == 0 {
            Name::parse(self.string(block, pos)?)?
        } else {
            self.entry(index)?.0
        };
        let value = self.string(block, pos)?;
        if indexing {
            self.table.insert((name.clone(), value.clone()));
        }
        Ok((name, value))
    }

    fn entry(&self, index: usize) -> Result<(Name, Bytes), HpackError> {
        let found = match index {
            0 => None,
            i if i <= STATIC.len() => STATIC.get(i - 1),
            i => self.table.get(i - STATIC.len() - 1),
        };
        found.cloned().ok_or(HpackError::BadIndex(index))
    }

    /// A string literal at `*pos`: a copy of its octets, or of its Huffman decoding (never a
    /// slice of the block).
    fn string(&mut self, block: &[u8], pos: &mut usize) -> Result<Bytes, HpackError> {
        let huffman = block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
        let len = get_int(block, pos, 7)?;
        let end = pos.checked_add(len).ok_or(HpackError::Truncated)?;
        let raw = block.get(*pos..end).ok_or(HpackError::Truncated)?;
        *pos = end;
        if !huffman {
            return Ok(Bytes::copy_from_slice(raw));
        }
        self.scratch.clear();
        let decoded =
            huffman::decode(raw, &mut self.scratch).map(|()| Bytes::copy_from_slice(&self.scratch));
        if self.scratch.capacity() > SCRATCH_KEEP {
            self.scratch = Vec::new();
        }
        decoded.map_err(HpackError::from)
    }

    /// The dynamic table's size (the sum of its entries' sizes).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Checks the dynamic table's bookkeeping: its size is the sum of its entries' sizes,
    /// within its maximum, itself within what this side allowed (for the fuzz targets).
    pub fn check_table(&self) -> Result<(), String> {
        self.table.check()?;
        if self.table.max() > self.limit {
            return Err(format!(
                "table maximum {} above the limit {}",
                self.table.max(),
                self.limit
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "decoder_tests.rs"]
mod tests;
