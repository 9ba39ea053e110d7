//! What the connection task does with the client's frames, on the shared [`State`] (under
//! its lock): request bodies' data, resets, window updates, settings; and the decoding of a
//! request's header block into a request head (RFC 9113 §8.3). A [`ConnError`] ends the
//! connection.

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version, header};

use super::BodyError;
use super::state::State;
use crate::frame::{self, reason};
use crate::hpack::HpackError;
use crate::hpack::decoder::{Decoder, Name};

const MAX_WINDOW: i64 = (1 << 31) - 1;

pub(super) use crate::shared::{ConnError, protocol};

/// A decoded request header block.
#[derive(Default)]
pub(super) struct Head {
    method: Option<Bytes>,
    scheme: Option<Bytes>,
    authority: Option<Bytes>,
    path: Option<Bytes>,
    headers: HeaderMap,
    /// What makes the request malformed (a stream error), if anything.
    pub bad: Option<String>,
    /// The header list was larger than this side's limit.
    pub too_large: bool,
}

/// Headers HTTP/2 forbids in a request (RFC 9113 §8.2.2); `te` is allowed as `trailers`.
fn connection_specific(name: &HeaderName, value: &[u8]) -> bool {
    name == header::CONNECTION
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || (name == header::TE && value != b"trailers")
        || name == "keep-alive"
        || name == "proxy-connection"
}

/// Decodes a header block (outside the lock); an HPACK error is a connection error.
pub(super) fn decode(d: &mut Decoder, block: &Bytes, max_list: usize) -> Result<Head, ConnError> {
    let mut h = Head {
        headers: HeaderMap::with_capacity(16),
        ..Head::default()
    };
    let mut regular = false;
    let got = d.decode(block, max_list, |name, value| match name {
        Name::Pseudo(p) => {
            let slot = match &p[..] {
                b":method" => &mut h.method,
                b":scheme" => &mut h.scheme,
                b":authority" => &mut h.authority,
                b":path" => &mut h.path,
                _ => {
                    h.bad = Some(format!("pseudo-header {:?}", String::from_utf8_lossy(&p)));
                    return;
                }
            };
            if regular || slot.is_some() {
                h.bad = Some("a pseudo-header repeated or after a regular field".into());
            }
            *slot = Some(value);
        }
        Name::Header(n) => {
            regular = true;
            if connection_specific(&n, &value) {
                h.bad = Some(format!("connection-specific header {n}"));
                return;
            }
            match HeaderValue::from_maybe_shared(value) {
                Ok(v) => {
                    h.headers.append(n, v);
                }
                Err(_) => h.bad = Some(format!("invalid value of {n}")),
            }
        }
    });
    match got {
        Ok(()) => Ok(h),
        Err(HpackError::TooLarge(_)) => {
            h.too_large = true;
            Ok(h)
        }
        Err(e) => Err(ConnError {
            code: reason::COMPRESSION_ERROR,
            msg: e.to_string(),
        }),
    }
}

impl Head {
    /// The request head and its `content-length`, or why it is malformed.
    pub fn into_request(self) -> Result<(Request<()>, Option<u64>), String> {
        if let Some(bad) = self.bad {
            return Err(bad);
        }
        let method = self.method.ok_or("no :method")?;
        let method = Method::from_bytes(&method).map_err(|_| "bad :method")?;
        let path = self.path.filter(|p| !p.is_empty()).ok_or("no :path")?;
        let mut parts = http::uri::Parts::default();
        if let Some(a) = self.authority.filter(|a| !a.is_empty()) {
            let scheme = self.scheme.ok_or("no :scheme")?;
            parts.scheme = Some(Scheme::try_from(&scheme[..]).map_err(|_| "bad :scheme")?);
            parts.authority = Some(Authority::from_maybe_shared(a).map_err(|_| "bad :authority")?);
        } else if self.scheme.is_none() {
            return Err("no :scheme".into());
        }
        parts.path_and_query =
            Some(PathAndQuery::from_maybe_shared(path).map_err(|_| "bad :path")?);
        let uri = Uri::from_parts(parts).map_err(|_| "bad :path")?;
        let content_length = match self.headers.get(header::CONTENT_LENGTH) {
            None => None,
            Some(v) => Some(
                v.to_str()
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or("bad content-length")?,
            ),
        };
        let mut req = Request::new(());
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.version_mut() = Version::HTTP_2;
        *req.headers_mut() = self.headers;
        Ok((req, content_length))
    }
}

impl State {
    /// DATA of a request body.
    pub(super) fn on_data(
        &mut self,
        id: u32,
        end: bool,
        data: Bytes,
        flow: usize,
        last_id: u32,
    ) -> Result<(), ConnError> {
        if id == 0 || id.is_multiple_of(2) || id > last_id {
            return Err(protocol(format!("DATA on stream {id}, which is not open")));
        }
        self.recv.window -= flow as i64;
        if self.recv.window < 0 {
            return Err(ConnError {
                code: reason::FLOW_CONTROL_ERROR,
                msg: "DATA beyond the connection window".into(),
            });
        }
        let Some(s) = self.streams.get_mut(&id) else {
            // A stream already closed here (reset, or answered and forgotten).
            self.release_connection(flow as u32);
            return Ok(());
        };
        if s.recv_end {
            let reset = s.reset;
            self.release_connection(flow as u32);
            if !reset {
                self.reset_stream(id, reason::STREAM_CLOSED);
            }
            return Ok(());
        }
        s.recv.window -= flow as i64;
        if s.recv.window < 0 {
            self.release_connection(flow as u32);
            self.reset_stream(id, reason::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.received += data.len() as u64;
        let over = s
            .content_length
            .is_some_and(|n| s.received > n || (end && s.received != n));
        if over {
            self.release_connection(flow as u32);
            self.reset_stream(id, reason::PROTOCOL_ERROR);
            return Ok(());
        }
        // Padding and what nobody reads go back at once.
        let keep = if s.recv_dropped { 0 } else { data.len() };
        if keep > 0 {
            s.buffered += keep;
            s.data.push(data);
        }
        if end {
            s.recv_end = true;
        }
        if let Some(w) = s.recv_waker.take() {
            w.wake();
        }
        self.release_connection((flow - keep) as u32);
        if end {
            self.forget_if_done(id);
        }
        Ok(())
    }

    /// Trailers of a request body (their fields are not passed on): the end of the body.
    pub(super) fn on_trailers(&mut self, id: u32, end: bool) -> Result<(), ConnError> {
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if !end {
            self.reset_stream(id, reason::PROTOCOL_ERROR);
            return Ok(());
        }
        if s.content_length.is_some_and(|n| n != s.received) {
            self.reset_stream(id, reason::PROTOCOL_ERROR);
            return Ok(());
        }
        s.recv_end = true;
        if let Some(w) = s.recv_waker.take() {
            w.wake();
        }
        self.forget_if_done(id);
        Ok(())
    }

    pub(super) fn on_rst(&mut self, id: u32, last_id: u32) -> Result<(), ConnError> {
        if id == 0 || id > last_id {
            return Err(protocol(format!("RST_STREAM on idle stream {id}")));
        }
        if let Some(s) = self.streams.get_mut(&id) {
            s.reset = true;
            if !s.recv_end {
                s.recv_end = true;
                s.recv_error = Some(BodyError::new("the client reset the stream"));
            }
            s.wake_all();
            self.forget_if_done(id);
        }
        Ok(())
    }

    pub(super) fn on_settings(&mut self, params: &[(u16, u32)]) -> Result<(), ConnError> {
        for &(id, value) in params {
            match id {
                frame::HEADER_TABLE_SIZE => self.encoder.set_peer_limit(value as usize),
                frame::INITIAL_WINDOW_SIZE => {
                    if i64::from(value) > MAX_WINDOW {
                        return Err(ConnError {
                            code: reason::FLOW_CONTROL_ERROR,
                            msg: "INITIAL_WINDOW_SIZE above 2^31-1".into(),
                        });
                    }
                    let delta = i64::from(value) - self.peer_initial_window;
                    self.peer_initial_window = i64::from(value);
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                        if delta > 0
                            && let Some(w) = s.send_waker.take()
                        {
                            w.wake();
                        }
                    }
                }
                frame::MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(protocol("MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = value as usize;
                }
                frame::ENABLE_PUSH if value > 1 => return Err(protocol("ENABLE_PUSH above 1")),
                _ => {}
            }
        }
        frame::Frame::Settings {
            ack: true,
            params: Vec::new(),
        }
        .encode(&mut self.out);
        Ok(())
    }

    pub(super) fn on_window_update(&mut self, id: u32, increment: u32) -> Result<(), ConnError> {
        if id == 0 {
            if increment == 0 {
                return Err(protocol("connection WINDOW_UPDATE of 0"));
            }
            self.send_window += i64::from(increment);
            if self.send_window > MAX_WINDOW {
                return Err(ConnError {
                    code: reason::FLOW_CONTROL_ERROR,
                    msg: "connection window above 2^31-1".into(),
                });
            }
            self.wake_room();
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if increment == 0 {
            self.reset_stream(id, reason::PROTOCOL_ERROR);
            return Ok(());
        }
        s.send_window += i64::from(increment);
        if s.send_window > MAX_WINDOW {
            self.reset_stream(id, reason::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        if let Some(w) = s.send_waker.take() {
            w.wake();
        }
        Ok(())
    }
}
