//! A connection's state, shared by its task and the requests on it under one lock: the
//! streams, the frames waiting to be written, the HPACK encoder, flow-control windows.
//! This file holds what the requests do (open a stream, take its answer, give back window,
//! drop it); `recv.rs` what the task does with the peer's frames.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::task::{Context, Poll, Waker};

use tokio::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};

use super::{Config, Error};
use crate::frame::{self, DATA, END_STREAM, reason};
use crate::hpack::Encoder;
use crate::shared::{Chunks, Credit, IdHasher};

/// Highest client stream id.
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// Streams allowed at once until the peer's SETTINGS say otherwise.
const INITIAL_MAX_CONCURRENT: usize = 100;

pub(super) struct Stream {
    /// The answer's head, until the request takes it.
    pub head: Option<Response<()>>,
    pub got_head: bool,
    pub data: Chunks,
    /// Bytes in `data`.
    pub buffered: usize,
    pub trailers: Option<HeaderMap>,
    pub remote_end: bool,
    pub local_end: bool,
    pub error: Option<Error>,
    pub waker: Option<Waker>,
    /// What this side may still send (request body), and what is left to send.
    pub send_window: i64,
    pub pending: Bytes,
    /// What the peer may still send, and what was read but not yet given back.
    pub recv: Credit,
    /// Counted against the peer's MAX_CONCURRENT_STREAMS.
    pub counted: bool,
    /// When the answer's head is due (`SendRequest::send_until`).
    pub deadline: Option<Instant>,
}

impl Stream {
    pub fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

pub(super) struct State {
    pub cfg: Config,
    /// The connection task's waker, and whether it was woken since it last ran.
    pub task: Option<Waker>,
    pub notified: bool,
    /// Frames to write, in order.
    pub out: Vec<u8>,
    pub streams: HashMap<u32, Stream, BuildHasherDefault<IdHasher>>,
    pub next_id: u32,
    pub active: usize,
    pub max_concurrent: usize,
    /// Requests waiting for a stream slot (all woken when one frees: rare, and none is lost).
    pub waiting: Vec<Waker>,
    pub encoder: Encoder,
    pub peer_max_frame: usize,
    pub peer_initial_window: i64,
    /// Connection send window, and the streams whose body waits for window.
    pub send_window: i64,
    pub blocked: Vec<u32>,
    /// Connection receive window, and what was read but not yet given back.
    pub recv: Credit,
    /// The peer's GOAWAY: last stream id it processes, error code.
    pub goaway: Option<(u32, u32)>,
    pub closed: Option<Error>,
    /// Live [`super::SendRequest`] handles: none, and no streams, ends the connection.
    pub handles: usize,
    /// The earliest deadline of the streams opened since the task last looked (it arms its
    /// deadline timer from it).
    pub new_deadline: Option<Instant>,
}

impl State {
    pub fn new(cfg: Config) -> Self {
        State {
            cfg,
            task: None,
            notified: false,
            out: Vec::with_capacity(16 * 1024),
            streams: HashMap::default(),
            next_id: 1,
            active: 0,
            max_concurrent: INITIAL_MAX_CONCURRENT,
            waiting: Vec::new(),
            encoder: Encoder::default(),
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            peer_initial_window: 65_535,
            send_window: 65_535,
            blocked: Vec::new(),
            recv: Credit::new(cfg.conn_window),
            goaway: None,
            closed: None,
            handles: 1,
            new_deadline: None,
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

    /// Why no new stream can be opened, if so.
    pub fn refusal(&self) -> Option<Error> {
        if let Some(e) = &self.closed {
            return Some(Error::NotSent(e.to_string().into()));
        }
        if let Some((_, code)) = self.goaway {
            return Some(Error::GoAway { code });
        }
        if self.next_id > MAX_STREAM_ID {
            return Some(Error::GoAway {
                code: reason::NO_ERROR,
            });
        }
        None
    }

    /// Opens a stream for `head` and `body` when a slot is free.
    pub fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        head: &Request<()>,
        body: &Bytes,
        deadline: Option<Instant>,
    ) -> Poll<Result<u32, Error>> {
        if let Some(e) = self.refusal() {
            return Poll::Ready(Err(e));
        }
        if self.active >= self.max_concurrent {
            if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                self.waiting.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let id = self.next_id;
        self.next_id += 2;
        self.active += 1;
        self.put_headers(id, head, body.is_empty());
        let stream = Stream {
            head: None,
            got_head: false,
            data: Chunks::default(),
            buffered: 0,
            trailers: None,
            remote_end: false,
            local_end: body.is_empty(),
            error: None,
            waker: None,
            send_window: self.peer_initial_window,
            pending: body.clone(),
            recv: Credit::new(self.cfg.stream_window),
            counted: true,
            deadline,
        };
        self.streams.insert(id, stream);
        if let Some(d) = deadline
            && self.new_deadline.is_none_or(|n| d < n)
        {
            self.new_deadline = Some(d);
        }
        if !body.is_empty() {
            self.push_body(id);
        }
        Poll::Ready(Ok(id))
    }

    /// HEADERS (and CONTINUATIONs past the peer's frame size) for `head`.
    fn put_headers(&mut self, id: u32, head: &Request<()>, end_stream: bool) {
        let start = frame::start_headers(&mut self.out);
        self.encoder.encode(head, &mut self.out);
        frame::finish_headers(&mut self.out, start, id, end_stream, self.peer_max_frame);
    }

    /// Sends as much of stream `id`'s body as the windows allow; remembers it if blocked.
    pub fn push_body(&mut self, id: u32) {
        let State {
            streams,
            out,
            send_window,
            blocked,
            peer_max_frame,
            ..
        } = self;
        let Some(s) = streams.get_mut(&id) else {
            return;
        };
        while !s.pending.is_empty() {
            let window = s.send_window.min(*send_window).max(0) as usize;
            let n = s.pending.len().min(window).min(*peer_max_frame);
            if n == 0 {
                if !blocked.contains(&id) {
                    blocked.push(id);
                }
                return;
            }
            let chunk = s.pending.split_to(n);
            let end = s.pending.is_empty();
            frame::put_head(out, n, DATA, if end { END_STREAM } else { 0 }, id);
            out.extend_from_slice(&chunk);
            s.send_window -= n as i64;
            *send_window -= n as i64;
            if end {
                s.local_end = true;
            }
        }
        if s.local_end && s.remote_end {
            self.uncount(id);
        }
    }

    /// Frees stream `id`'s slot (once).
    pub fn uncount(&mut self, id: u32) {
        if let Some(s) = self.streams.get_mut(&id)
            && s.counted
        {
            s.counted = false;
            self.active -= 1;
            for w in self.waiting.drain(..) {
                w.wake();
            }
        }
    }

    /// The answer's head of stream `id`.
    pub fn poll_head(
        &mut self,
        cx: &mut Context<'_>,
        id: u32,
    ) -> Poll<Result<Response<()>, Error>> {
        let Some(s) = self.streams.get_mut(&id) else {
            return Poll::Ready(Err(Error::Closed("stream forgotten".into())));
        };
        if let Some(h) = s.head.take() {
            return Poll::Ready(Ok(h));
        }
        if let Some(e) = &s.error {
            return Poll::Ready(Err(e.clone()));
        }
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The next chunk of stream `id`'s answer body; its window is given back at once.
    pub fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
        id: u32,
    ) -> Poll<Option<Result<Bytes, Error>>> {
        let Some(s) = self.streams.get_mut(&id) else {
            return Poll::Ready(None);
        };
        if let Some(b) = s.data.pop() {
            s.buffered -= b.len();
            self.release(id, b.len());
            return Poll::Ready(Some(Ok(b)));
        }
        if let Some(e) = &s.error {
            return Poll::Ready(Some(Err(e.clone())));
        }
        if s.remote_end {
            return Poll::Ready(None);
        }
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Gives back `n` read bytes of stream `id`: a WINDOW_UPDATE once half a window was read.
    fn release(&mut self, id: u32, n: usize) {
        let n = n as u32;
        if let Some(s) = self.streams.get_mut(&id)
            && !s.remote_end
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

    /// Whether stream `id` has nothing more to give.
    pub fn is_end_stream(&self, id: u32) -> bool {
        self.streams.get(&id).is_none_or(|s| {
            s.remote_end && s.data.is_empty() && s.trailers.is_none() && s.error.is_none()
        })
    }

    /// The request let go of stream `id`: forgotten; cancelled if the answer had not ended
    /// (RST_STREAM CANCEL), its unread bytes given back to the connection.
    pub fn drop_stream(&mut self, id: u32) {
        self.uncount(id);
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        if self.closed.is_some() {
            return;
        }
        if !s.remote_end || !s.local_end {
            let rst = frame::Frame::RstStream {
                stream: id,
                code: reason::CANCEL,
            };
            rst.encode(&mut self.out);
        }
        self.release_connection(s.buffered as u32);
    }

    /// Fails every stream whose answer has not ended, and every request to come, with `e`.
    pub fn fail_all(&mut self, e: &Error) {
        if self.closed.is_none() {
            self.closed = Some(e.clone());
        }
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            self.uncount(id);
            if let Some(s) = self.streams.get_mut(&id)
                && !s.remote_end
            {
                s.error = Some(e.clone());
                s.remote_end = true;
                s.wake();
            }
        }
        self.blocked.clear();
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }
}
