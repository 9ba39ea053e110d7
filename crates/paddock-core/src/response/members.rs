//! Scanning one complete JSON object or array held in memory (already framed): its members or
//! elements as byte ranges, without a DOM.

use std::borrow::Cow;
use std::ops::Range;

use super::framer::*;

/// Lists the members of one complete JSON object held in memory: `(key, value range)` in
/// document order. Used on already-framed values (a watch event's envelope, an item's
/// `metadata`) where a DOM would be wasted work.
/// `(key, value range)` of one member.
pub type MemberSpan<'a> = (Cow<'a, str>, Range<usize>);

pub fn object_members(raw: &[u8]) -> Result<Vec<MemberSpan<'_>>, FrameError> {
    let mut out = Vec::new();
    let len = raw.len();
    let skip = |i: &mut usize| {
        while *i < len && is_ws(raw[*i]) {
            *i += 1;
        }
    };
    let Some(mut i) = open_container(raw, b'{', b'}', "expected a JSON object")? else {
        return Ok(out);
    };
    loop {
        skip(&mut i);
        if i >= len || raw[i] != b'"' {
            return Err(FrameError::Malformed("expected a key"));
        }
        let ks = i;
        let mut scan = ValueScan::default();
        if !scan.scan(raw, &mut i)? {
            return Err(FrameError::Truncated);
        }
        let kraw = &raw[ks..i];
        let key = decode_key(kraw, memchr::memchr(b'\\', kraw).is_some())?;
        skip(&mut i);
        if i >= len || raw[i] != b':' {
            return Err(FrameError::Malformed("expected ':'"));
        }
        i += 1;
        skip(&mut i);
        let vs = i;
        let mut scan = ValueScan::default();
        if !scan.scan(raw, &mut i)? && !scan.scalar_pending() {
            return Err(FrameError::Truncated);
        }
        out.push((key, vs..i));
        skip(&mut i);
        if i >= len {
            return Err(FrameError::Truncated);
        }
        match raw[i] {
            b',' => i += 1,
            b'}' => return Ok(out),
            _ => return Err(FrameError::Malformed("expected ',' or '}'")),
        }
    }
}

/// One member of an object, as found by [`Members`]: the key without its quotes (and whether
/// it contains an escape, in which case comparing raw bytes is not enough), and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAt {
    pub key: Range<usize>,
    pub key_escaped: bool,
    pub value: Range<usize>,
}

/// Walks the members of one complete JSON object in memory lazily, so a caller looking for
/// `metadata` (first in built-in objects) or `namespace` (third in ObjectMeta) stops early
/// instead of scanning the whole object.
pub struct Members<'a> {
    raw: &'a [u8],
    pos: usize,
    started: bool,
    done: bool,
}

impl<'a> Members<'a> {
    pub fn new(raw: &'a [u8]) -> Self {
        Members {
            raw,
            pos: 0,
            started: false,
            done: false,
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.raw.len() && is_ws(self.raw[self.pos]) {
            self.pos += 1;
        }
    }

    /// Moves to the next member's key; afterwards the position is at its value's first byte,
    /// and the caller must call [`Self::value`] (or stop iterating). Returns the key without
    /// quotes and whether it contains an escape.
    pub fn next_key(&mut self) -> Result<Option<(Range<usize>, bool)>, FrameError> {
        let raw = self.raw;
        self.skip_ws();
        if !self.started {
            if raw.get(self.pos) != Some(&b'{') {
                return Err(FrameError::Malformed("expected a JSON object"));
            }
            self.pos += 1;
            self.started = true;
            self.skip_ws();
            if raw.get(self.pos) == Some(&b'}') {
                return Ok(None);
            }
        } else {
            match raw.get(self.pos) {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b'}') => return Ok(None),
                _ => return Err(FrameError::Malformed("expected ',' or '}'")),
            }
        }
        if raw.get(self.pos) != Some(&b'"') {
            return Err(FrameError::Malformed("expected a key"));
        }
        let ks = self.pos;
        let mut scan = ValueScan::default();
        if !scan.scan(raw, &mut self.pos)? {
            return Err(FrameError::Truncated);
        }
        let key = ks + 1..self.pos - 1;
        let key_escaped = memchr::memchr(b'\\', &raw[key.clone()]).is_some();
        self.skip_ws();
        if raw.get(self.pos) != Some(&b':') {
            return Err(FrameError::Malformed("expected ':'"));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(Some((key, key_escaped)))
    }

    /// Offset of the current value's first byte (after [`Self::next_key`]). A caller that only
    /// wants to descend into the value can start there without scanning the value to its end.
    pub fn value_start(&self) -> usize {
        self.pos
    }

    /// Scans the current value (after [`Self::next_key`]) and returns its range.
    pub fn value(&mut self) -> Result<Range<usize>, FrameError> {
        let vs = self.pos;
        let mut scan = ValueScan::default();
        if !scan.scan(self.raw, &mut self.pos)? && !scan.scalar_pending() {
            return Err(FrameError::Truncated);
        }
        Ok(vs..self.pos)
    }

    fn next_member(&mut self) -> Result<Option<MemberAt>, FrameError> {
        let Some((key, key_escaped)) = self.next_key()? else {
            return Ok(None);
        };
        let value = self.value()?;
        Ok(Some(MemberAt {
            key,
            key_escaped,
            value,
        }))
    }
}

impl Iterator for Members<'_> {
    type Item = Result<MemberAt, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_member() {
            Ok(Some(m)) => Some(Ok(m)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Calls `f` with the byte range of every element of one complete JSON array held in memory.
pub fn array_elements(raw: &[u8]) -> Result<Vec<Range<usize>>, FrameError> {
    let mut out = Vec::new();
    let len = raw.len();
    let skip = |i: &mut usize| {
        while *i < len && is_ws(raw[*i]) {
            *i += 1;
        }
    };
    let Some(mut i) = open_container(raw, b'[', b']', "expected a JSON array")? else {
        return Ok(out);
    };
    loop {
        skip(&mut i);
        let vs = i;
        let mut scan = ValueScan::default();
        if !scan.scan(raw, &mut i)? && !scan.scalar_pending() {
            return Err(FrameError::Truncated);
        }
        out.push(vs..i);
        skip(&mut i);
        if i >= len {
            return Err(FrameError::Truncated);
        }
        match raw[i] {
            b',' => i += 1,
            b']' => return Ok(out),
            _ => return Err(FrameError::Malformed("expected ',' or ']'")),
        }
    }
}

/// Past the opening bracket of the JSON container `raw` holds (whitespace around it
/// skipped): the index of its first member, or None when it is empty.
fn open_container(
    raw: &[u8],
    open: u8,
    close: u8,
    expected: &'static str,
) -> Result<Option<usize>, FrameError> {
    let at = |from: usize| from + raw[from..].iter().take_while(|b| is_ws(**b)).count();
    let i = at(0);
    if raw.get(i) != Some(&open) {
        return Err(FrameError::Malformed(expected));
    }
    let i = at(i + 1);
    Ok((raw.get(i) != Some(&close)).then_some(i))
}
