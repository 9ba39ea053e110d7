//! What the connection task does with the peer's frames, on the shared [`State`] (under its
//! lock): answers' heads, data and trailers to their streams, resets, window updates,
//! settings, GOAWAY. A [`ConnError`] ends the connection.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, Version};
use tokio::time::Instant;

use super::Error;
use super::state::State;
use crate::frame::{self, reason};
use crate::hpack::HpackError;
use crate::hpack::decoder::{Decoder, Name};

const MAX_WINDOW: i64 = (1 << 31) - 1;

pub(super) use crate::shared::{ConnError, protocol};

/// A decoded header block: `:status` and the regular fields, or what was wrong with it (a
/// stream error).
pub(crate) struct Fields {
    pub(crate) status: Option<StatusCode>,
    pub(crate) headers: HeaderMap,
    pub(crate) bad: Option<String>,
}

/// Decodes a header block (outside the lock); an HPACK error is a connection error. What
/// the peer may make a stream error (a bad field, a list past `max_list`, more fields than
/// a `HeaderMap` holds) is one, whatever the block: nothing here panics on the peer's bytes.
pub(crate) fn decode(d: &mut Decoder, block: &[u8], max_list: usize) -> Result<Fields, ConnError> {
    let mut f = Fields {
        status: None,
        headers: HeaderMap::with_capacity(16),
        bad: None,
    };
    let got = d.decode(block, max_list, |name, value| {
        if f.bad.is_some() {
            // The stream fails anyway: keep decoding (the table stays in step), keep nothing.
            return;
        }
        match name {
            Name::Pseudo(p) if &p[..] == b":status" && f.status.is_none() => {
                match StatusCode::from_bytes(&value) {
                    Ok(s) => f.status = Some(s),
                    Err(_) => f.bad = Some("bad :status".into()),
                }
            }
            Name::Pseudo(p) => {
                f.bad = Some(format!("pseudo-header {:?}", String::from_utf8_lossy(&p)));
            }
            // `value` holds just the field's octets (the decoder copied them out of the block),
            // so the `HeaderValue` made from it without a copy pins nothing else.
            Name::Header(h) => match HeaderValue::from_maybe_shared(value) {
                Ok(v) => {
                    if f.headers.try_append(h, v).is_err() {
                        f.bad = Some(format!(
                            "more header fields than a header map holds ({})",
                            f.headers.len()
                        ));
                        f.headers.clear();
                    }
                }
                Err(_) => f.bad = Some(format!("invalid value of {h}")),
            },
        }
    });
    match got {
        Ok(()) => Ok(f),
        Err(HpackError::TooLarge(n)) => {
            f.bad = Some(format!("header list larger than {n} bytes"));
            Ok(f)
        }
        Err(e) => Err(ConnError {
            code: reason::COMPRESSION_ERROR,
            msg: e.to_string(),
        }),
    }
}

impl State {
    /// Checks that the peer may send a frame of this kind on stream `id`: a stream this side
    /// opened (not an idle one, not a pushed one). Whether it is still open is the caller's.
    fn check_id(&self, id: u32) -> Result<(), ConnError> {
        if id.is_multiple_of(2) || id >= self.next_id {
            return Err(protocol(format!(
                "frame on stream {id}, which was never opened"
            )));
        }
        Ok(())
    }

    /// Cancels the streams whose answer's head is overdue at `now` (RST_STREAM CANCEL, the
    /// request fails with [`Error::TimedOut`]); the earliest deadline of the streams still
    /// waiting for theirs. A stream whose head came is not timed here: its body's reader
    /// keeps its own deadline.
    pub(super) fn expire(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut overdue: Vec<u32> = Vec::new();
        for (id, s) in &self.streams {
            let waiting = !s.got_head && !s.remote_end && s.error.is_none();
            match s.deadline {
                Some(d) if waiting && d <= now => overdue.push(*id),
                Some(d) if waiting => next = Some(next.map_or(d, |n| n.min(d))),
                _ => {}
            }
        }
        for id in overdue {
            self.reset_stream(id, reason::CANCEL, Error::TimedOut);
        }
        next
    }

    /// A stream error: RST_STREAM with `code` sent, the request fails with `e`.
    fn reset_stream(&mut self, id: u32, code: u32, e: Error) {
        frame::Frame::RstStream { stream: id, code }.encode(&mut self.out);
        self.end_stream_with(id, e);
    }

    fn end_stream_with(&mut self, id: u32, e: Error) {
        self.uncount(id);
        if let Some(s) = self.streams.get_mut(&id) {
            s.error = Some(e);
            s.remote_end = true;
            s.local_end = true;
            s.pending = Bytes::new();
            s.wake();
        }
    }

    /// The end of the answer of stream `id` arrived.
    fn remote_ended(&mut self, id: u32) {
        let done = match self.streams.get_mut(&id) {
            Some(s) => {
                s.remote_end = true;
                s.wake();
                s.local_end
            }
            None => false,
        };
        if done {
            self.uncount(id);
        }
    }

    pub(super) fn on_headers(&mut self, id: u32, end: bool, f: Fields) -> Result<(), ConnError> {
        self.check_id(id)?;
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if s.remote_end {
            return Ok(());
        }
        let bad = |why: &str| Some(Error::Malformed(why.into()));
        let wrong = if let Some(why) = &f.bad {
            bad(why)
        } else if !s.got_head {
            match f.status {
                None => bad("answer without :status"),
                Some(st) if st.is_informational() && end => {
                    bad("informational answer ends the stream")
                }
                Some(st) if st.is_informational() => return Ok(()),
                Some(st) => {
                    let mut r = Response::new(());
                    *r.status_mut() = st;
                    *r.version_mut() = Version::HTTP_2;
                    *r.headers_mut() = f.headers;
                    s.head = Some(r);
                    s.got_head = true;
                    None
                }
            }
        } else if !end || f.status.is_some() {
            bad("trailers without END_STREAM or with :status")
        } else {
            s.trailers = Some(f.headers);
            None
        };
        match wrong {
            Some(e) => self.reset_stream(id, reason::PROTOCOL_ERROR, e),
            None if end => self.remote_ended(id),
            None => s.wake(),
        }
        Ok(())
    }

    pub(super) fn on_data(
        &mut self,
        id: u32,
        end: bool,
        data: Bytes,
        flow: usize,
    ) -> Result<(), ConnError> {
        self.check_id(id)?;
        self.recv.window -= flow as i64;
        if self.recv.window < 0 {
            return Err(ConnError {
                code: reason::FLOW_CONTROL_ERROR,
                msg: "DATA beyond the connection window".into(),
            });
        }
        let Some(s) = self.streams.get_mut(&id) else {
            // A stream already forgotten (cancelled): its bytes go back at once.
            self.release_connection(flow as u32);
            return Ok(());
        };
        if s.remote_end {
            self.release_connection(flow as u32);
            return Ok(());
        }
        s.recv.window -= flow as i64;
        let wrong = if !s.got_head {
            Some((reason::PROTOCOL_ERROR, "DATA before the answer's head"))
        } else if s.recv.window < 0 {
            Some((reason::FLOW_CONTROL_ERROR, "DATA beyond the stream window"))
        } else {
            None
        };
        if let Some((code, why)) = wrong {
            self.release_connection(flow as u32);
            self.reset_stream(id, code, Error::Malformed(why.into()));
            return Ok(());
        }
        // Padding is consumed as it arrives; the data as the request reads it.
        let pad = (flow - data.len()) as u32;
        s.recv.unreleased = s.recv.unreleased.saturating_add(pad);
        if !data.is_empty() {
            s.buffered += data.len();
            s.data.push(data);
        }
        if !end {
            s.wake();
        }
        self.release_connection(pad);
        if end {
            self.remote_ended(id);
        }
        Ok(())
    }

    pub(super) fn on_rst(&mut self, id: u32, code: u32) -> Result<(), ConnError> {
        self.check_id(id)?;
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if s.remote_end && s.error.is_none() && code == reason::NO_ERROR {
            // The whole answer came; the peer needs no more of the request body.
            s.pending = Bytes::new();
            s.local_end = true;
            self.uncount(id);
            return Ok(());
        }
        self.end_stream_with(id, Error::Reset(code));
        Ok(())
    }

    pub(super) fn on_window_update(&mut self, id: u32, inc: u32) -> Result<(), ConnError> {
        let too_large = || ConnError {
            code: reason::FLOW_CONTROL_ERROR,
            msg: "window above 2^31-1".into(),
        };
        if id == 0 {
            self.send_window += i64::from(inc);
            if self.send_window > MAX_WINDOW {
                return Err(too_large());
            }
            self.push_blocked();
            return Ok(());
        }
        self.check_id(id)?;
        if let Some(s) = self.streams.get_mut(&id) {
            s.send_window += i64::from(inc);
            if s.send_window > MAX_WINDOW {
                let e = Error::Malformed("stream window above 2^31-1".into());
                self.reset_stream(id, reason::FLOW_CONTROL_ERROR, e);
                return Ok(());
            }
            self.push_body(id);
        }
        Ok(())
    }

    fn push_blocked(&mut self) {
        for id in std::mem::take(&mut self.blocked) {
            self.push_body(id);
        }
    }

    pub(super) fn on_settings(&mut self, params: &[(u16, u32)]) -> Result<(), ConnError> {
        for &(id, value) in params {
            match id {
                frame::HEADER_TABLE_SIZE => self.encoder.set_peer_limit(value as usize),
                frame::MAX_CONCURRENT_STREAMS => {
                    self.max_concurrent = value as usize;
                    for w in self.waiting.drain(..) {
                        w.wake();
                    }
                }
                frame::INITIAL_WINDOW_SIZE => self.set_initial_window(i64::from(value))?,
                frame::MAX_FRAME_SIZE => self.peer_max_frame = value as usize,
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

    fn set_initial_window(&mut self, value: i64) -> Result<(), ConnError> {
        let delta = value - self.peer_initial_window;
        self.peer_initial_window = value;
        for s in self.streams.values_mut() {
            s.send_window += delta;
            if s.send_window > MAX_WINDOW {
                return Err(ConnError {
                    code: reason::FLOW_CONTROL_ERROR,
                    msg: "stream window above 2^31-1".into(),
                });
            }
        }
        if delta > 0 {
            self.push_blocked();
        }
        Ok(())
    }

    /// The peer goes away: streams above `last` were not processed and fail so; no stream
    /// opens any more.
    pub(super) fn on_goaway(&mut self, last: u32, code: u32) {
        let last = self.goaway.map_or(last, |(l, _)| l.min(last));
        self.goaway = Some((last, code));
        let refused: Vec<u32> = self
            .streams
            .keys()
            .copied()
            .filter(|id| *id > last)
            .collect();
        for id in refused {
            let unanswered = self.streams.get(&id).is_some_and(|s| !s.remote_end);
            if unanswered {
                self.end_stream_with(id, Error::GoAway { code });
            }
        }
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }
}
