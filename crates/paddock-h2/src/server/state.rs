//! A front connection's state, shared by its task and its streams' answers under one lock: the
//! streams, the frames waiting to be written, the HPACK encoder, flow-control windows.
//! This file holds what the answers and request bodies do (send a head and data, take data,
//! give back window, end); `recv.rs` what the task does with the client's frames.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::{HeaderMap, StatusCode};

use super::{BodyError, Config};
use crate::frame::{self, DATA, END_STREAM, reason};
use crate::hpack::Encoder;
use crate::shared::{Chunks, Credit, IdHasher};

/// Bytes queued for the socket above which answers wait for the task to write them: bounds
/// what a client that does not read makes paddock hold (flow-control windows bound each
/// stream, not their sum).
const MAX_QUEUED: usize = 512 * 1024;

pub(super) struct Stream {
    /// The request body: received DATA not yet read, and how much.
    pub data: Chunks,
    pub buffered: usize,
    /// The client sent END_STREAM (or the stream ended otherwise).
    pub recv_end: bool,
    pub recv_error: Option<BodyError>,
    pub recv_waker: Option<Waker>,
    /// What the client may still send, and what was read but not yet given back.
    pub recv: Credit,
    /// No [`super::RecvBody`] reads this stream (never made, or dropped).
    pub recv_dropped: bool,
    /// The request's `content-length`, and the DATA bytes received so far.
    pub content_length: Option<u64>,
    pub received: u64,
    /// What this side may still send of the answer.
    pub send_window: i64,
    pub send_waker: Option<Waker>,
    /// The stream ended early (reset by either side, connection gone): the answer stops.
    pub reset: bool,
    /// The answer was sent (or given up).
    pub send_done: bool,
}

impl Stream {
    pub fn new(recv_window: u32, send_window: i64, content_length: Option<u64>) -> Self {
        Stream {
            data: Chunks::default(),
            buffered: 0,
            recv_end: false,
            recv_error: None,
            recv_waker: None,
            recv: Credit::new(recv_window),
            recv_dropped: false,
            content_length,
            received: 0,
            send_window,
            send_waker: None,
            reset: false,
            send_done: false,
        }
    }

    pub fn wake_all(&mut self) {
        if let Some(w) = self.recv_waker.take() {
            w.wake();
        }
        if let Some(w) = self.send_waker.take() {
            w.wake();
        }
    }
}

fn register(slot: &mut Option<Waker>, cx: &Context<'_>) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        *slot = Some(cx.waker().clone());
    }
}

pub(super) struct State {
    pub cfg: Config,
    /// The connection task's waker, and whether it was woken since it last ran (or is
    /// running: then it looks at `out` before it sleeps).
    pub task: Option<Waker>,
    pub notified: bool,
    /// Frames to write, in order.
    pub out: Vec<u8>,
    pub streams: HashMap<u32, Stream, BuildHasherDefault<IdHasher>>,
    pub encoder: Encoder,
    pub peer_max_frame: usize,
    pub peer_initial_window: i64,
    /// Connection send window, and the answers waiting for it or for room in `out`.
    pub send_window: i64,
    pub room: Vec<Waker>,
    /// Connection receive window, and what was read but not yet given back.
    pub recv: Credit,
    /// Why the connection ended, once it has.
    pub closed: Option<Arc<str>>,
}

impl State {
    pub fn new(cfg: Config) -> Self {
        State {
            cfg,
            task: None,
            notified: false,
            out: Vec::with_capacity(16 * 1024),
            streams: HashMap::default(),
            encoder: Encoder::default(),
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_initial_window: 65_535,
            send_window: 65_535,
            room: Vec::new(),
            recv: Credit::new(cfg.conn_window),
            closed: None,
        }
    }

    /// The task's waker, if it must be woken for what was just queued (once per run of it).
    pub fn notify(&mut self) -> Option<Waker> {
        if self.notified {
            return None;
        }
        self.notified = true;
        self.task.clone()
    }

    /// Whether stream `id`'s answer must stop (reset, forgotten, connection gone); if not,
    /// the answer's waker is kept for when it must.
    pub fn poll_reset(&mut self, cx: &Context<'_>, id: u32) -> bool {
        match self.streams.get_mut(&id) {
            Some(s) if !s.reset => {
                register(&mut s.send_waker, cx);
                false
            }
            _ => true,
        }
    }

    /// The answer's HEADERS (with END_STREAM when it has no body); `false` if the stream
    /// was reset meanwhile.
    pub fn send_head(
        &mut self,
        id: u32,
        status: StatusCode,
        headers: &HeaderMap,
        end: bool,
    ) -> bool {
        if self.streams.get(&id).is_none_or(|s| s.reset) {
            return false;
        }
        let start = frame::start_headers(&mut self.out);
        self.encoder.encode_response(status, headers, &mut self.out);
        frame::finish_headers(&mut self.out, start, id, end, self.peer_max_frame);
        true
    }

    /// Sends as much of `chunk` on stream `id` as the windows and the queue allow (END_STREAM
    /// on the last frame when `end`): `Ready(true)` once all of it is queued, `Ready(false)`
    /// if the stream was reset, `Pending` (waker kept) while blocked.
    pub fn poll_send(
        &mut self,
        cx: &Context<'_>,
        id: u32,
        chunk: &mut Bytes,
        end: bool,
    ) -> Poll<bool> {
        let State {
            streams,
            out,
            send_window,
            peer_max_frame,
            room,
            ..
        } = self;
        let Some(s) = streams.get_mut(&id) else {
            return Poll::Ready(false);
        };
        if s.reset {
            return Poll::Ready(false);
        }
        if chunk.is_empty() && end {
            frame::put_head(out, 0, DATA, END_STREAM, id);
            return Poll::Ready(true);
        }
        while !chunk.is_empty() {
            if out.len() >= MAX_QUEUED || *send_window <= 0 {
                // Woken by room or window; by the stream's waker too if it is reset meanwhile.
                room.push(cx.waker().clone());
                register(&mut s.send_waker, cx);
                return Poll::Pending;
            }
            if s.send_window <= 0 {
                register(&mut s.send_waker, cx);
                return Poll::Pending;
            }
            let window = s.send_window.min(*send_window) as usize;
            let n = chunk.len().min(window).min(*peer_max_frame);
            let last = n == chunk.len() && end;
            frame::put_head(out, n, DATA, if last { END_STREAM } else { 0 }, id);
            out.extend_from_slice(&chunk.split_to(n));
            s.send_window -= n as i64;
            *send_window -= n as i64;
        }
        Poll::Ready(true)
    }

    /// Resets stream `id` with `code` (a stream error, or an answer given up).
    pub fn reset_stream(&mut self, id: u32, code: u32) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if !s.reset && self.closed.is_none() {
            frame::Frame::RstStream { stream: id, code }.encode(&mut self.out);
        }
        s.reset = true;
        if !s.recv_end {
            s.recv_end = true;
            s.recv_error = Some(BodyError::new("the stream was reset"));
        }
        s.wake_all();
        self.forget_if_done(id);
    }

    /// Stream `id`'s answer is over (sent, or given up when `abandoned`).
    pub fn answer_done(&mut self, id: u32, abandoned: bool) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        s.send_done = true;
        if abandoned && !s.reset {
            return self.reset_stream(id, reason::CANCEL);
        }
        if !s.recv_end && s.recv_dropped && !s.reset {
            // The answer is complete; the rest of the request body is not wanted (RFC 9113
            // §8.1: RST_STREAM NO_ERROR after a complete response).
            return self.reset_stream(id, reason::NO_ERROR);
        }
        self.forget_if_done(id);
    }

    /// Forgets stream `id` once nothing reads or sends on it; its unread bytes go back to the
    /// connection's window.
    pub fn forget_if_done(&mut self, id: u32) {
        let done = self
            .streams
            .get(&id)
            .is_some_and(|s| s.send_done && (s.recv_dropped || (s.recv_end && s.data.is_empty())));
        if done && let Some(s) = self.streams.remove(&id) {
            self.release_connection(s.buffered as u32);
        }
    }

    /// The next chunk of stream `id`'s request body; its window is given back as it is read.
    pub fn poll_data(
        &mut self,
        cx: &Context<'_>,
        id: u32,
    ) -> Poll<Option<Result<Bytes, BodyError>>> {
        let Some(s) = self.streams.get_mut(&id) else {
            return Poll::Ready(None);
        };
        if let Some(b) = s.data.pop() {
            s.buffered -= b.len();
            self.release(id, b.len());
            return Poll::Ready(Some(Ok(b)));
        }
        if let Some(e) = &s.recv_error {
            return Poll::Ready(Some(Err(e.clone())));
        }
        if s.recv_end {
            return Poll::Ready(None);
        }
        register(&mut s.recv_waker, cx);
        Poll::Pending
    }

    /// Whether stream `id`'s request body has nothing more to give.
    pub fn body_ended(&self, id: u32) -> bool {
        self.streams
            .get(&id)
            .is_none_or(|s| s.recv_end && s.data.is_empty() && s.recv_error.is_none())
    }

    /// The request body of stream `id` is no longer read.
    pub fn drop_body(&mut self, id: u32) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        s.recv_dropped = true;
        let unread = std::mem::take(&mut s.buffered);
        s.data = Chunks::default();
        let open = !s.recv_end && s.send_done && !s.reset;
        self.release_connection(unread as u32);
        if open {
            self.reset_stream(id, reason::NO_ERROR);
        } else {
            self.forget_if_done(id);
        }
    }

    /// Gives back `n` read bytes of stream `id`: a WINDOW_UPDATE once half a window was read.
    fn release(&mut self, id: u32, n: usize) {
        let n = n as u32;
        if let Some(s) = self.streams.get_mut(&id)
            && !s.recv_end
        {
            s.recv
                .give_back(n, self.cfg.stream_window / 2, id, &mut self.out);
        }
        self.release_connection(n);
    }

    /// Gives back `n` bytes of the connection window: a WINDOW_UPDATE once half of it.
    pub fn release_connection(&mut self, n: u32) {
        let threshold = if self.closed.is_none() {
            self.cfg.conn_window / 2
        } else {
            u32::MAX
        };
        self.recv.give_back(n, threshold, 0, &mut self.out);
    }

    /// Wakes the answers waiting for connection window or for room in the queue.
    pub fn wake_room(&mut self) {
        for w in self.room.drain(..) {
            w.wake();
        }
    }

    /// The connection ended: every stream stops, every waiter is woken.
    pub fn close_all(&mut self, why: &str) {
        if self.closed.is_none() {
            self.closed = Some(why.into());
        }
        for s in self.streams.values_mut() {
            s.reset = true;
            if !s.recv_end {
                s.recv_end = true;
                s.recv_error = Some(BodyError::new(why));
            }
            s.wake_all();
        }
        self.wake_room();
    }
}
