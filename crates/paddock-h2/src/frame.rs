//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte head, decoding with length and stream-id
//! checks, and encoding. Payloads are `Bytes` sliced from the read buffer, never copied.

use bytes::{Buf, Bytes, BytesMut};

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const HEADER_TABLE_SIZE: u16 = 1;
pub const ENABLE_PUSH: u16 = 2;
pub const MAX_CONCURRENT_STREAMS: u16 = 3;
pub const INITIAL_WINDOW_SIZE: u16 = 4;
pub const MAX_FRAME_SIZE: u16 = 5;
pub const MAX_HEADER_LIST_SIZE: u16 = 6;

/// Error codes (RFC 9113 §7).
pub mod reason {
    pub const NO_ERROR: u32 = 0;
    pub const PROTOCOL_ERROR: u32 = 1;
    pub const INTERNAL_ERROR: u32 = 2;
    pub const FLOW_CONTROL_ERROR: u32 = 3;
    pub const STREAM_CLOSED: u32 = 5;
    pub const FRAME_SIZE_ERROR: u32 = 6;
    pub const REFUSED_STREAM: u32 = 7;
    pub const CANCEL: u32 = 8;
    pub const COMPRESSION_ERROR: u32 = 9;
}

/// The default and smallest SETTINGS_MAX_FRAME_SIZE.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
const MAX_WINDOW: u32 = (1 << 31) - 1;

/// A frame the peer should not have sent: a connection error with [`FrameError::reason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes, above the {max} allowed")]
    TooLarge { len: usize, max: usize },
    #[error("frame type {kind} with a payload of {len} bytes")]
    BadLength { kind: u8, len: usize },
    #[error("padding longer than the frame")]
    BadPadding,
    #[error("frame type {0} on the wrong stream")]
    BadStream(u8),
    #[error("WINDOW_UPDATE of 0")]
    ZeroIncrement,
    #[error("setting {id} = {value} out of range")]
    BadSetting { id: u16, value: u32 },
}

impl FrameError {
    /// The error code of the GOAWAY that answers it.
    pub fn reason(&self) -> u32 {
        match self {
            FrameError::TooLarge { .. } | FrameError::BadLength { .. } => reason::FRAME_SIZE_ERROR,
            FrameError::BadSetting {
                id: INITIAL_WINDOW_SIZE,
                ..
            } => reason::FLOW_CONTROL_ERROR,
            _ => reason::PROTOCOL_ERROR,
        }
    }
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `flow` is the whole payload's length (padding included), what flow control counts.
    Data {
        stream: u32,
        end: bool,
        data: Bytes,
        flow: usize,
    },
    Headers {
        stream: u32,
        end_stream: bool,
        end_headers: bool,
        block: Bytes,
    },
    Continuation {
        stream: u32,
        end_headers: bool,
        block: Bytes,
    },
    Priority {
        stream: u32,
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    Settings {
        ack: bool,
        params: Vec<(u16, u32)>,
    },
    PushPromise {
        stream: u32,
    },
    Ping {
        ack: bool,
        payload: [u8; 8],
    },
    GoAway {
        last: u32,
        code: u32,
        debug: Bytes,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    Unknown {
        kind: u8,
        stream: u32,
    },
}

/// Takes the next whole frame off `buf` (`None`: more bytes are needed). Frames longer than
/// `max` (the SETTINGS_MAX_FRAME_SIZE this side advertised) are errors.
pub fn next(buf: &mut BytesMut, max: usize) -> Result<Option<Frame>, FrameError> {
    if buf.len() < 9 {
        return Ok(None);
    }
    let len = (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if buf.len() < 9 + len {
        buf.reserve(9 + len - buf.len());
        return Ok(None);
    }
    let kind = buf[3];
    let flags = buf[4];
    let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & MAX_WINDOW;
    buf.advance(9);
    let payload = buf.split_to(len).freeze();
    decode(kind, flags, stream, payload).map(Some)
}

fn need_stream(kind: u8, stream: u32) -> Result<(), FrameError> {
    if stream == 0 {
        Err(FrameError::BadStream(kind))
    } else {
        Ok(())
    }
}

fn need_zero(kind: u8, stream: u32) -> Result<(), FrameError> {
    if stream != 0 {
        Err(FrameError::BadStream(kind))
    } else {
        Ok(())
    }
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    match p.get(at..at + 4) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Removes the padding of a PADDED frame (its length octet and trailing bytes).
fn unpad(flags: u8, mut payload: Bytes) -> Result<Bytes, FrameError> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = usize::from(*payload.first().ok_or(FrameError::BadPadding)?);
    if pad + 1 > payload.len() {
        return Err(FrameError::BadPadding);
    }
    payload.advance(1);
    payload.truncate(payload.len() - pad);
    Ok(payload)
}

/// Decodes a frame from its head fields and payload.
pub fn decode(kind: u8, flags: u8, stream: u32, payload: Bytes) -> Result<Frame, FrameError> {
    let len = payload.len();
    let exact = |n: usize| {
        if len == n {
            Ok(())
        } else {
            Err(FrameError::BadLength { kind, len })
        }
    };
    Ok(match kind {
        DATA => {
            need_stream(kind, stream)?;
            let data = unpad(flags, payload)?;
            Frame::Data {
                stream,
                end: flags & END_STREAM != 0,
                data,
                flow: len,
            }
        }
        HEADERS => {
            need_stream(kind, stream)?;
            let mut block = unpad(flags, payload)?;
            if flags & PRIORITY_FLAG != 0 {
                if block.len() < 5 {
                    return Err(FrameError::BadLength { kind, len });
                }
                block.advance(5);
            }
            let end_stream = flags & END_STREAM != 0;
            Frame::Headers {
                stream,
                end_stream,
                end_headers: flags & END_HEADERS != 0,
                block,
            }
        }
        CONTINUATION => {
            need_stream(kind, stream)?;
            Frame::Continuation {
                stream,
                end_headers: flags & END_HEADERS != 0,
                block: payload,
            }
        }
        PRIORITY => {
            need_stream(kind, stream)?;
            exact(5)?;
            Frame::Priority { stream }
        }
        RST_STREAM => {
            need_stream(kind, stream)?;
            exact(4)?;
            Frame::RstStream {
                stream,
                code: u32_at(&payload, 0),
            }
        }
        SETTINGS => settings(flags, stream, &payload)?,
        PUSH_PROMISE => Frame::PushPromise { stream },
        PING => {
            need_zero(kind, stream)?;
            exact(8)?;
            let mut p = [0u8; 8];
            p.copy_from_slice(&payload);
            Frame::Ping {
                ack: flags & ACK != 0,
                payload: p,
            }
        }
        GOAWAY => {
            need_zero(kind, stream)?;
            if len < 8 {
                return Err(FrameError::BadLength { kind, len });
            }
            let last = u32_at(&payload, 0) & MAX_WINDOW;
            Frame::GoAway {
                last,
                code: u32_at(&payload, 4),
                debug: payload.slice(8..),
            }
        }
        WINDOW_UPDATE => {
            exact(4)?;
            let increment = u32_at(&payload, 0) & MAX_WINDOW;
            if increment == 0 {
                return Err(FrameError::ZeroIncrement);
            }
            Frame::WindowUpdate { stream, increment }
        }
        _ => Frame::Unknown { kind, stream },
    })
}

fn settings(flags: u8, stream: u32, payload: &[u8]) -> Result<Frame, FrameError> {
    need_zero(SETTINGS, stream)?;
    let ack = flags & ACK != 0;
    if (ack && !payload.is_empty()) || !payload.len().is_multiple_of(6) {
        return Err(FrameError::BadLength {
            kind: SETTINGS,
            len: payload.len(),
        });
    }
    let mut params = Vec::with_capacity(payload.len() / 6);
    for p in payload.chunks_exact(6) {
        let id = u16::from_be_bytes([p[0], p[1]]);
        let value = u32_at(p, 2);
        let bad = match id {
            ENABLE_PUSH => value > 1,
            INITIAL_WINDOW_SIZE => value > MAX_WINDOW,
            MAX_FRAME_SIZE => !(DEFAULT_MAX_FRAME as u32..=0xff_ffff).contains(&value),
            _ => false,
        };
        if bad {
            return Err(FrameError::BadSetting { id, value });
        }
        params.push((id, value));
    }
    Ok(Frame::Settings { ack, params })
}

/// A frame head.
pub fn head(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// Appends a frame head.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&head(len, kind, flags, stream));
}

impl Frame {
    /// Appends the frame (no padding, no priority).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Data {
                stream, end, data, ..
            } => {
                put_head(
                    out,
                    data.len(),
                    DATA,
                    if *end { END_STREAM } else { 0 },
                    *stream,
                );
                out.extend_from_slice(data);
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
            } => {
                let flags =
                    (u8::from(*end_stream) * END_STREAM) | (u8::from(*end_headers) * END_HEADERS);
                put_head(out, block.len(), HEADERS, flags, *stream);
                out.extend_from_slice(block);
            }
            Frame::Continuation {
                stream,
                end_headers,
                block,
            } => {
                let flags = u8::from(*end_headers) * END_HEADERS;
                put_head(out, block.len(), CONTINUATION, flags, *stream);
                out.extend_from_slice(block);
            }
            Frame::Priority { stream } => {
                put_head(out, 5, PRIORITY, 0, *stream);
                out.extend_from_slice(&[0, 0, 0, 0, 15]);
            }
            Frame::RstStream { stream, code } => {
                put_head(out, 4, RST_STREAM, 0, *stream);
                out.extend_from_slice(&code.to_be_bytes());
            }
            Frame::Settings { ack, params } => {
                put_head(out, params.len() * 6, SETTINGS, u8::from(*ack) * ACK, 0);
                for (id, value) in params {
                    out.extend_from_slice(&id.to_be_bytes());
                    out.extend_from_slice(&value.to_be_bytes());
                }
            }
            Frame::PushPromise { stream } => {
                put_head(out, 4, PUSH_PROMISE, END_HEADERS, *stream);
                out.extend_from_slice(&[0, 0, 0, 2]);
            }
            Frame::Ping { ack, payload } => {
                put_head(out, 8, PING, u8::from(*ack) * ACK, 0);
                out.extend_from_slice(payload);
            }
            Frame::GoAway { last, code, debug } => {
                put_head(out, 8 + debug.len(), GOAWAY, 0, 0);
                out.extend_from_slice(&last.to_be_bytes());
                out.extend_from_slice(&code.to_be_bytes());
                out.extend_from_slice(debug);
            }
            Frame::WindowUpdate { stream, increment } => {
                put_head(out, 4, WINDOW_UPDATE, 0, *stream);
                out.extend_from_slice(&increment.to_be_bytes());
            }
            Frame::Unknown { kind, stream } => put_head(out, 0, *kind, 0, *stream),
        }
    }
}

/// Reserves a HEADERS frame head in `out` for a header block about to be encoded after it;
/// [`finish_headers`] fills it in.
pub fn start_headers(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 9]);
    start
}

/// Makes the header block encoded since [`start_headers`] a HEADERS frame of stream `id`,
/// split into CONTINUATIONs past the peer's frame size `max_frame`.
pub fn finish_headers(
    out: &mut Vec<u8>,
    start: usize,
    id: u32,
    end_stream: bool,
    max_frame: usize,
) {
    let len = out.len() - start - 9;
    let end = if end_stream { END_STREAM } else { 0 };
    if len <= max_frame {
        let h = head(len, HEADERS, end | END_HEADERS, id);
        out[start..start + 9].copy_from_slice(&h);
        return;
    }
    let block = out.split_off(start + 9);
    out.truncate(start);
    let mut chunks = block.chunks(max_frame).peekable();
    let mut kind = HEADERS;
    let mut flags = end;
    while let Some(c) = chunks.next() {
        let last = if chunks.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        put_head(out, c.len(), kind, flags | last, id);
        out.extend_from_slice(c);
        kind = CONTINUATION;
        flags = 0;
    }
}

/// A side's opening frames: its SETTINGS, and a connection WINDOW_UPDATE raising the
/// connection's receive window from the protocol's 65,535 to `conn_window`.
pub fn put_opening(out: &mut Vec<u8>, params: Vec<(u16, u32)>, conn_window: u32) {
    Frame::Settings { ack: false, params }.encode(out);
    if conn_window > 65_535 {
        let increment = conn_window - 65_535;
        Frame::WindowUpdate {
            stream: 0,
            increment,
        }
        .encode(out);
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
