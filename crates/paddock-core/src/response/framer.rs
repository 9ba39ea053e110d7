//! Incremental JSON framing over arbitrary byte chunks.
//!
//! The apiserver streams LIST bodies item by item and watch streams event by event; a response
//! can be hundreds of megabytes. We never build a DOM of the whole body: the framers here only
//! track structure (depth, in-string, escape) so that they can hand out complete *values* (one
//! list item, one watch event) as byte slices, and keep only the incomplete tail between chunks.
//! Memory is therefore bounded by one chunk plus the largest single value.
//!
//! The framers do not validate JSON beyond structure: the producer is the apiserver, and every
//! value handed out is parsed (or scanned) again by the per-item rewriter, which does validate.
//! Structural errors that would make framing ambiguous (a stray `}` at the top level, bytes after
//! the end of the document) are reported, never guessed around.

use std::borrow::Cow;

#[path = "framer_blocks.rs"]
mod blocks;
use blocks::Blocks;

/// Default cap on one framed value (a list item, a watch event, a non-streamed list member).
/// etcd refuses objects above 1.5 MiB, so anything this large is not a Kubernetes object and we
/// refuse it rather than buffer without bound.
pub const DEFAULT_MAX_VALUE: usize = 64 << 20;

/// A structural problem in a response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("malformed JSON in upstream response: {0}")]
    Malformed(&'static str),
    #[error("upstream response ended inside a JSON value")]
    Truncated,
    #[error("a single JSON value in the upstream response exceeds {0} bytes")]
    TooLarge(usize),
}

/// Resumable scanner for one JSON value. It is fed the bytes of the value starting at its
/// first (non-whitespace) byte and reports where the value ends. State survives across calls so
/// a value split over many chunks is scanned exactly once.
#[derive(Debug, Clone, Default)]
pub(crate) struct ValueScan {
    /// Bracket depth; 0 before the first byte.
    depth: u32,
    in_str: bool,
    /// The previous byte (possibly in the previous chunk) was a backslash inside a string.
    esc: bool,
    /// Scanning a bare scalar (number, true, false, null).
    scalar: bool,
    started: bool,
    /// Containers directly inside the value (opened at depth 1), and where the first one
    /// opened and the last one closed. A watch event `{"type":"X","object":{…}}` has exactly
    /// one, the object, so its bounds come from the framing pass for free (no second scan).
    inner: u32,
    first_open: usize,
    last_close: usize,
}

/// What the framing pass learned about a complete top-level value; offsets are relative to
/// the value's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Containers (objects/arrays) that are direct members/elements of the value.
    pub inner: u32,
    /// Offset of the first such container's opening bracket.
    pub first_open: usize,
    /// Offset one past the last such container's closing bracket.
    pub last_close: usize,
}

impl ValueScan {
    /// Scans `buf[*pos..]`. Returns `Ok(true)` when the value is complete; `*pos` is then one
    /// past its last byte. Returns `Ok(false)` when more input is needed; `*pos == buf.len()`.
    #[inline]
    pub(crate) fn scan(&mut self, buf: &[u8], pos: &mut usize) -> Result<bool, FrameError> {
        self.scan_with(buf, pos, true)
    }

    /// [`Self::scan`]; with `blocks` false, the byte loop alone (the reference the 64-byte
    /// block path is tested against).
    #[inline]
    fn scan_with(&mut self, buf: &[u8], pos: &mut usize, blocks: bool) -> Result<bool, FrameError> {
        let mut i = *pos;
        let len = buf.len();
        if !self.started {
            if i >= len {
                return Ok(false);
            }
            self.started = true;
            match buf[i] {
                b'{' | b'[' => {
                    self.depth = 1;
                    i += 1;
                }
                b'"' => {
                    self.in_str = true;
                    i += 1;
                }
                b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                    self.scalar = true;
                    i += 1;
                }
                _ => return Err(FrameError::Malformed("unexpected byte at start of value")),
            }
        }
        if self.scalar {
            while i < len {
                match buf[i] {
                    b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n' => {
                        *pos = i;
                        return Ok(true);
                    }
                    _ => i += 1,
                }
            }
            *pos = i;
            return Ok(false);
        }
        if self.esc {
            // The escaped byte is the first byte of this chunk; it cannot end the string.
            if i >= len {
                return Ok(false);
            }
            self.esc = false;
            i += 1;
        }
        if blocks && self.depth > 0 {
            match self.scan_blocks(buf, &mut i) {
                Blocks::Ended => {
                    *pos = i;
                    return Ok(true);
                }
                Blocks::Starved => {
                    *pos = len;
                    return Ok(false);
                }
                Blocks::Bytes => {}
            }
        }
        loop {
            if self.in_str {
                // Strings dominate Kubernetes JSON (keys, managedFields `k:{...}` keys, values),
                // so find the next quote or backslash with memchr instead of a byte loop.
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => {
                        *pos = len;
                        return Ok(false);
                    }
                    Some(k) => {
                        i += k;
                        if buf[i] == b'\\' {
                            if i + 1 < len {
                                i += 2;
                            } else {
                                self.esc = true;
                                *pos = len;
                                return Ok(false);
                            }
                        } else {
                            self.in_str = false;
                            i += 1;
                            if self.depth == 0 {
                                *pos = i;
                                return Ok(true);
                            }
                        }
                    }
                }
            } else {
                // Outside strings only five bytes matter.
                loop {
                    if i >= len {
                        *pos = len;
                        return Ok(false);
                    }
                    let b = buf[i];
                    i += 1;
                    match b {
                        b'"' => {
                            self.in_str = true;
                            break;
                        }
                        b'{' | b'[' => {
                            if self.depth == 1 {
                                if self.inner == 0 {
                                    self.first_open = i - 1;
                                }
                                self.inner += 1;
                            }
                            self.depth += 1;
                        }
                        b'}' | b']' => {
                            self.depth -= 1;
                            if self.depth == 0 {
                                *pos = i;
                                return Ok(true);
                            }
                            if self.depth == 1 {
                                self.last_close = i;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// The buffer lost its first `n` bytes: keep recorded offsets pointing at the same bytes.
    fn shift(&mut self, n: usize) {
        self.first_open = self.first_open.saturating_sub(n);
        self.last_close = self.last_close.saturating_sub(n);
    }

    /// For a scalar at the very end of the input (only possible for a bare top-level scalar).
    pub(crate) fn scalar_pending(&self) -> bool {
        self.started && self.scalar
    }
}

#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// One framing event of [`ObjectFramer`]. Slices borrow the framer's buffer and are valid only
/// during the callback.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The top-level object opened (`{`).
    Begin,
    /// A complete top-level member that is not streamed (or a streamed key whose value is not
    /// an array, such as `"items":null`).
    Member { key: &'a str, value: &'a [u8] },
    /// A streamed array member begins (`"items":[`).
    ArrayStart { key: &'a str },
    /// One complete element of the streamed array.
    Element { key: &'a str, value: &'a [u8] },
    /// The streamed array ended (`]`).
    ArrayEnd { key: &'a str },
    /// The top-level object closed.
    End,
}

/// Where the framer's events go.
trait Sink<E>: FnMut(Event<'_>) -> Result<(), E> {}
impl<E, F: FnMut(Event<'_>) -> Result<(), E>> Sink<E> for F {}

/// One step of the state machine: `Some(keep)` when it needs more input.
type Step<E> = Result<Option<usize>, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopState {
    /// Before the opening `{`.
    Start,
    /// After `{` or `,`: a key (or `}` right after `{`).
    KeyOrEnd,
    /// Inside a key string; `key_start` is the offset of its opening quote.
    InKey,
    Colon,
    /// Before a member value.
    Value,
    /// Inside a non-streamed member value.
    InValue,
    CommaOrEnd,
    /// Inside a streamed array, before an element (or `]`).
    ElemOrEnd,
    InElem,
    CommaOrArrEnd,
    Done,
}

/// Frames one top-level JSON object (a List, a Table) incrementally. Members named in
/// `streamed` whose value is an array are delivered element by element; every other member is
/// delivered whole. Keys may come in any order (CR lists put `items` before `metadata`).
#[derive(Debug)]
pub struct ObjectFramer {
    buf: Vec<u8>,
    /// Scan position in `buf`.
    pos: usize,
    state: TopState,
    /// Offset of the current key's opening quote, or of the current value's first byte.
    start: usize,
    key: String,
    key_esc: bool,
    streamed: &'static [&'static str],
    scan: ValueScan,
    max_value: usize,
}

impl ObjectFramer {
    pub fn new(streamed: &'static [&'static str]) -> Self {
        Self::with_limit(streamed, DEFAULT_MAX_VALUE)
    }

    pub fn with_limit(streamed: &'static [&'static str], max_value: usize) -> Self {
        ObjectFramer {
            buf: Vec::new(),
            pos: 0,
            state: TopState::Start,
            start: 0,
            key: String::new(),
            key_esc: false,
            streamed,
            scan: ValueScan::default(),
            max_value,
        }
    }

    /// True once the closing `}` has been seen.
    pub fn is_done(&self) -> bool {
        self.state == TopState::Done
    }

    /// Bytes currently retained (for memory accounting in tests and benches).
    pub fn retained(&self) -> usize {
        self.buf.capacity()
    }

    /// Feeds one chunk; calls `sink` for every event completed by it.
    pub fn feed<E, F>(&mut self, chunk: &[u8], sink: &mut F) -> Result<(), E>
    where
        E: From<FrameError>,
        F: FnMut(Event<'_>) -> Result<(), E>,
    {
        self.buf.extend_from_slice(chunk);
        let keep_from = self.run(sink)?;
        if keep_from > 0 {
            // Only the incomplete tail (at most one value) survives; this memmove is what
            // bounds memory to chunk + largest value.
            self.buf.drain(..keep_from);
            self.pos -= keep_from;
            self.start = self.start.saturating_sub(keep_from);
        }
        let pending = match self.state {
            TopState::InKey | TopState::InValue | TopState::InElem => self.pos - self.start,
            _ => 0,
        };
        if pending > self.max_value {
            return Err(FrameError::TooLarge(self.max_value).into());
        }
        Ok(())
    }

    /// Declares the end of the body.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        if self.state != TopState::Done {
            return Err(FrameError::Truncated);
        }
        Ok(())
    }

    /// Runs the state machine over `buf[pos..]`; returns how many leading bytes of `buf` are no
    /// longer needed. Each step returns `Some(keep)` when it needs more input.
    fn run<E, F>(&mut self, sink: &mut F) -> Result<usize, E>
    where
        E: From<FrameError>,
        F: FnMut(Event<'_>) -> Result<(), E>,
    {
        loop {
            let stop = match self.state {
                TopState::Start | TopState::Colon => self.open_or_colon(sink)?,
                TopState::KeyOrEnd => self.key_or_end(sink)?,
                TopState::InKey => self.in_key()?,
                TopState::Value => self.value_start(sink)?,
                TopState::InValue | TopState::InElem => self.in_value(sink)?,
                TopState::CommaOrEnd => self.comma_or_end(sink)?,
                TopState::ElemOrEnd => self.elem_or_end(sink)?,
                TopState::CommaOrArrEnd => self.comma_or_arr_end(sink)?,
                TopState::Done => {
                    if !self.at_end() {
                        let e = FrameError::Malformed("data after the end of the object");
                        return Err(e.into());
                    }
                    Some(self.pos)
                }
            };
            if let Some(keep) = stop {
                return Ok(keep);
            }
        }
    }

    /// Skips whitespace; true when the input is used up.
    #[inline]
    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.buf.len()
    }

    /// `{` at the start, or `:` after a key.
    #[inline]
    fn open_or_colon<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        let start = self.state == TopState::Start;
        match (start, self.buf[self.pos]) {
            (true, b'{') => {
                self.pos += 1;
                self.state = TopState::KeyOrEnd;
                sink(Event::Begin)?;
            }
            (true, _) => return Err(FrameError::Malformed("expected a JSON object").into()),
            (false, b':') => {
                self.pos += 1;
                self.state = TopState::Value;
            }
            (false, _) => return Err(FrameError::Malformed("expected ':'").into()),
        }
        Ok(None)
    }

    #[inline]
    fn key_or_end<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        match self.buf[self.pos] {
            b'"' => {
                self.start = self.pos;
                self.pos += 1;
                self.key_esc = false;
                self.scan = ValueScan {
                    in_str: true,
                    started: true,
                    ..ValueScan::default()
                };
                self.state = TopState::InKey;
            }
            b'}' => {
                self.pos += 1;
                self.state = TopState::Done;
                sink(Event::End)?;
            }
            _ => return Err(FrameError::Malformed("expected a key").into()),
        }
        Ok(None)
    }

    #[inline]
    fn in_key<E: From<FrameError>>(&mut self) -> Step<E> {
        let from = self.pos;
        let done = self.scan.scan(&self.buf, &mut self.pos)?;
        if memchr::memchr(b'\\', &self.buf[from..self.pos]).is_some() {
            self.key_esc = true;
        }
        if !done {
            return Ok(Some(self.start));
        }
        let raw = &self.buf[self.start..self.pos];
        self.key = decode_key(raw, self.key_esc)?.into_owned();
        self.state = TopState::Colon;
        Ok(None)
    }

    /// A member's value starts: a streamed array opens, anything else is scanned whole.
    #[inline]
    fn value_start<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        if self.buf[self.pos] == b'[' && self.streamed.contains(&self.key.as_str()) {
            self.pos += 1;
            self.state = TopState::ElemOrEnd;
            sink(Event::ArrayStart { key: &self.key })?;
        } else {
            self.start = self.pos;
            self.scan = ValueScan::default();
            self.state = TopState::InValue;
        }
        Ok(None)
    }

    /// A member's value or an array element being scanned; emitted once complete.
    #[inline]
    fn in_value<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if !self.scan.scan(&self.buf, &mut self.pos)? {
            return Ok(Some(self.start));
        }
        let (key, value) = (&self.key, &self.buf[self.start..self.pos]);
        if self.state == TopState::InElem {
            self.state = TopState::CommaOrArrEnd;
            sink(Event::Element { key, value })?;
        } else {
            self.state = TopState::CommaOrEnd;
            sink(Event::Member { key, value })?;
        }
        Ok(None)
    }

    #[inline]
    fn comma_or_end<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        match self.buf[self.pos] {
            b',' => self.state = TopState::KeyOrEnd,
            b'}' => {
                self.state = TopState::Done;
                sink(Event::End)?;
            }
            _ => return Err(FrameError::Malformed("expected ',' or '}'").into()),
        }
        self.pos += 1;
        Ok(None)
    }

    #[inline]
    fn elem_or_end<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        if self.buf[self.pos] == b']' {
            self.pos += 1;
            self.state = TopState::CommaOrEnd;
            sink(Event::ArrayEnd { key: &self.key })?;
        } else {
            self.start = self.pos;
            self.scan = ValueScan::default();
            self.state = TopState::InElem;
        }
        Ok(None)
    }

    #[inline]
    fn comma_or_arr_end<E: From<FrameError>>(&mut self, sink: &mut impl Sink<E>) -> Step<E> {
        if self.at_end() {
            return Ok(Some(self.pos));
        }
        match self.buf[self.pos] {
            b',' => {
                self.pos += 1;
                // A `]` right after `,` is malformed; treat it as such.
                self.skip_ws();
                if self.pos < self.buf.len() && self.buf[self.pos] == b']' {
                    return Err(FrameError::Malformed("trailing ',' in array").into());
                }
                self.state = TopState::ElemOrEnd;
            }
            b']' => {
                self.pos += 1;
                self.state = TopState::CommaOrEnd;
                sink(Event::ArrayEnd { key: &self.key })?;
            }
            _ => return Err(FrameError::Malformed("expected ',' or ']'").into()),
        }
        Ok(None)
    }

    #[inline]
    fn skip_ws(&mut self) {
        while self.pos < self.buf.len() && is_ws(self.buf[self.pos]) {
            self.pos += 1;
        }
    }
}

/// Decodes a raw JSON string token (with quotes).
pub(crate) fn decode_key(raw: &[u8], has_escape: bool) -> Result<Cow<'_, str>, FrameError> {
    let inner = raw
        .get(1..raw.len().saturating_sub(1))
        .ok_or(FrameError::Malformed("bad key"))?;
    if !has_escape {
        return std::str::from_utf8(inner)
            .map(Cow::Borrowed)
            .map_err(|_| FrameError::Malformed("key is not UTF-8"));
    }
    serde_json::from_slice::<String>(raw)
        .map(Cow::Owned)
        .map_err(|_| FrameError::Malformed("bad key escape"))
}

/// Frames a stream of whitespace-separated top-level JSON values (a watch stream: one event per
/// line, but lines are not relied upon; client-go does not rely on them either).
#[derive(Debug)]
pub struct StreamFramer {
    buf: Vec<u8>,
    pos: usize,
    /// Offset of the current value's first byte, when inside one.
    start: Option<usize>,
    scan: ValueScan,
    max_value: usize,
}

impl Default for StreamFramer {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamFramer {
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_VALUE)
    }

    pub fn with_limit(max_value: usize) -> Self {
        StreamFramer {
            buf: Vec::new(),
            pos: 0,
            start: None,
            scan: ValueScan::default(),
            max_value,
        }
    }

    pub fn retained(&self) -> usize {
        self.buf.capacity()
    }

    /// Feeds one chunk; calls `sink` with every value completed by it.
    pub fn feed<E, F>(&mut self, chunk: &[u8], sink: &mut F) -> Result<(), E>
    where
        E: From<FrameError>,
        F: FnMut(&[u8], Shape) -> Result<(), E>,
    {
        // Fast path: nothing retained, so scan the chunk in place and copy only its tail.
        if self.buf.is_empty() {
            let mut pos = 0;
            let keep = Self::run(
                chunk,
                &mut pos,
                &mut self.start,
                &mut self.scan,
                sink,
                self.max_value,
            )?;
            self.buf.extend_from_slice(&chunk[keep..]);
            self.pos = pos - keep;
            self.start = self.start.map(|s| s - keep);
            self.scan.shift(keep);
            return Ok(());
        }
        self.buf.extend_from_slice(chunk);
        let keep = Self::run(
            &self.buf,
            &mut self.pos,
            &mut self.start,
            &mut self.scan,
            sink,
            self.max_value,
        )?;
        if keep > 0 {
            self.buf.drain(..keep);
            self.pos -= keep;
            self.start = self.start.map(|s| s - keep);
            self.scan.shift(keep);
        }
        Ok(())
    }

    fn run<E, F>(
        buf: &[u8],
        pos: &mut usize,
        start: &mut Option<usize>,
        scan: &mut ValueScan,
        sink: &mut F,
        max_value: usize,
    ) -> Result<usize, E>
    where
        E: From<FrameError>,
        F: FnMut(&[u8], Shape) -> Result<(), E>,
    {
        loop {
            match *start {
                None => {
                    while *pos < buf.len() && is_ws(buf[*pos]) {
                        *pos += 1;
                    }
                    if *pos >= buf.len() {
                        return Ok(*pos);
                    }
                    if buf[*pos] != b'{' {
                        return Err(
                            FrameError::Malformed("expected a JSON object in stream").into()
                        );
                    }
                    *start = Some(*pos);
                    *scan = ValueScan::default();
                }
                Some(s) => {
                    if !scan.scan(buf, pos)? {
                        if *pos - s > max_value {
                            return Err(FrameError::TooLarge(max_value).into());
                        }
                        return Ok(s);
                    }
                    *start = None;
                    let shape = Shape {
                        inner: scan.inner,
                        first_open: scan.first_open.saturating_sub(s),
                        last_close: scan.last_close.saturating_sub(s),
                    };
                    sink(&buf[s..*pos], shape)?;
                }
            }
        }
    }

    /// Declares the end of the stream; errors if it stopped inside a value.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        if self.start.is_some() && !self.scan.scalar_pending() {
            return Err(FrameError::Truncated);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "framer_tests.rs"]
mod tests;
