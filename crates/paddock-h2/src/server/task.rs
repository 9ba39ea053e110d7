//! The connection's task: reads the client's frames and starts a stream's work for each
//! request, polls the streams that run in it, writes everything queued since its last run in
//! one buffer, answers and sends PINGs, says GOAWAY and closes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use http::{HeaderMap, StatusCode};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};

use super::body::RecvBody;
use super::recv::{self, ConnError, protocol};
use super::respond::Respond;
use super::state::{State, Stream};
use super::{Config, Error, Placement, Service};
use crate::frame::{self, Frame, reason};
use crate::hpack::Decoder;
use crate::shared::{Assembly, Keepalive, Unanswered, Writer};

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Reads per run before the task lets others run (it is woken again at once).
const READS_PER_RUN: usize = 16;
/// Passes (read, streams, write) per run while the streams keep queueing frames.
const PASSES_PER_RUN: usize = 4;
/// Room kept in the read buffer.
const READ_ROOM: usize = 16 * 1024;
/// Frames queued for a client that does not read, above which its frames are not read
/// either (its PINGs and SETTINGS each queue an answer; flow control bounds only DATA).
const MAX_UNWRITTEN: usize = 1024 * 1024;
/// The HPACK table this side allows the client (the default: not advertised).
const DECODER_TABLE: usize = 4096;
/// A header block being assembled from CONTINUATIONs may exceed the list limit by this.
const MAX_BLOCK_SLACK: usize = 64 * 1024;
const PING_PAYLOAD: [u8; 8] = *b"paddock?";

/// How the connection ends.
enum End {
    /// Everything answered after a GOAWAY (either side's).
    Done,
    /// The client broke the protocol: GOAWAY with the code.
    Fault(ConnError),
    /// The socket closed or failed, or the client stopped answering pings.
    Lost(Option<String>),
}

pub(super) struct Task<T, S: Service> {
    io: T,
    shared: Arc<Mutex<State>>,
    cfg: Config,
    svc: S,
    rbuf: BytesMut,
    writer: Writer,
    decoder: Decoder,
    block: Assembly,
    preface_seen: bool,
    /// The highest stream the client opened.
    last_id: u32,
    /// The streams whose work runs in this task.
    inline: FuturesUnordered<Respond<S::Future, S::Body>>,
    keepalive: Option<Keepalive>,
    pub shutdown: bool,
    goaway_sent: bool,
    peer_goaway: bool,
    /// Set once the connection ends: what it returns after the last frames are written.
    ending: Option<Result<(), Error>>,
}

impl<T: AsyncRead + AsyncWrite + Unpin, S: Service> Task<T, S> {
    pub fn new(io: T, cfg: Config, svc: S) -> Self {
        let mut st = State::new(cfg);
        let params = vec![
            (frame::MAX_CONCURRENT_STREAMS, cfg.max_concurrent_streams),
            (frame::INITIAL_WINDOW_SIZE, cfg.stream_window),
            (frame::MAX_HEADER_LIST_SIZE, cfg.max_header_list),
        ];
        frame::put_opening(&mut st.out, params, cfg.conn_window);
        Task {
            io,
            shared: Arc::new(Mutex::new(st)),
            cfg,
            svc,
            rbuf: BytesMut::with_capacity(READ_ROOM),
            writer: Writer::new(),
            decoder: Decoder::new(DECODER_TABLE),
            block: Assembly::default(),
            preface_seen: false,
            last_id: 0,
            inline: FuturesUnordered::new(),
            keepalive: cfg
                .keepalive_interval
                .map(|i| Keepalive::new(i, cfg.keepalive_timeout)),
            shutdown: false,
            goaway_sent: false,
            peer_goaway: false,
            ending: None,
        }
    }

    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.ending.is_some() {
            return self.poll_close(cx);
        }
        {
            let mut st = self.shared.lock();
            // Streams that queue frames while this runs need not wake it: it looks at the
            // queue before it sleeps.
            st.notified = true;
            if !st.task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.task = Some(cx.waker().clone());
            }
        }
        for _ in 0..PASSES_PER_RUN {
            if self.shutdown && !self.goaway_sent {
                self.goaway(reason::NO_ERROR);
            }
            let throttled = match self.poll_read(cx) {
                Ok(throttled) => throttled,
                Err(end) => return self.end(end, cx),
            };
            while let Poll::Ready(Some(())) = self.inline.poll_next_unpin(cx) {}
            if let Err(end) = self.poll_keepalive(cx) {
                return self.end(end, cx);
            }
            if let Err(e) = self.poll_write(cx) {
                return self.end(End::Lost(Some(format!("writing: {e}"))), cx);
            }
            let mut st = self.shared.lock();
            let going = self.goaway_sent || self.peer_goaway;
            if going && st.streams.is_empty() && self.inline.is_empty() {
                drop(st);
                return self.end(End::Done, cx);
            }
            // Throttled reads resume in the next pass once the socket took everything (no
            // read was attempted, so no read readiness would wake this task).
            let read_again = throttled && self.writer.is_idle();
            if (st.out.is_empty() && !read_again) || !self.writer.is_idle() {
                st.notified = false;
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn goaway(&mut self, code: u32) {
        if self.goaway_sent {
            return;
        }
        self.goaway_sent = true;
        let f = Frame::GoAway {
            last: self.last_id,
            code,
            debug: Bytes::new(),
        };
        f.encode(&mut self.shared.lock().out);
    }

    /// Reads and handles the client's frames until the socket would block; `Ok(true)` if it
    /// stopped because too much is queued for a client that does not read.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Result<bool, End> {
        for _ in 0..READS_PER_RUN {
            if !self.preface_seen && self.rbuf.len() >= PREFACE.len() {
                if &self.rbuf[..PREFACE.len()] != PREFACE {
                    return Err(End::Fault(protocol("not the HTTP/2 connection preface")));
                }
                let _ = self.rbuf.split_to(PREFACE.len());
                self.preface_seen = true;
            }
            while self.preface_seen {
                let next = frame::next(&mut self.rbuf, frame::DEFAULT_MAX_FRAME);
                let f = next.map_err(|e| {
                    End::Fault(ConnError {
                        code: e.reason(),
                        msg: e.to_string(),
                    })
                })?;
                match f {
                    Some(f) => {
                        if let Some(k) = self.keepalive.as_mut() {
                            k.heard();
                        }
                        self.on_frame(f).map_err(End::Fault)?;
                    }
                    None => break,
                }
            }
            if self.writer.unwritten() + self.shared.lock().out.len() > MAX_UNWRITTEN {
                // Read again once the socket has taken some (the write's waker wakes this task).
                return Ok(true);
            }
            if self.rbuf.capacity() - self.rbuf.len() < READ_ROOM / 4 {
                self.rbuf.reserve(READ_ROOM);
            }
            let io = Pin::new(&mut self.io);
            match tokio_util::io::poll_read_buf(io, cx, &mut self.rbuf) {
                Poll::Ready(Ok(0)) => return Err(End::Lost(None)),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Err(End::Lost(Some(format!("reading: {e}")))),
                Poll::Pending => return Ok(false),
            }
        }
        // More may be waiting: run again after the tasks this one woke.
        cx.waker().wake_by_ref();
        Ok(false)
    }

    fn on_frame(&mut self, f: Frame) -> Result<(), ConnError> {
        if self.block.in_progress() && !matches!(f, Frame::Continuation { .. }) {
            return Err(protocol("a frame inside a header block"));
        }
        let last = self.last_id;
        match f {
            Frame::Data {
                stream,
                end,
                data,
                flow,
            } => self.shared.lock().on_data(stream, end, data, flow, last),
            Frame::Headers {
                stream,
                end_stream,
                end_headers: true,
                block,
            } => self.headers(stream, end_stream, &block),
            Frame::Headers {
                stream,
                end_stream,
                block,
                ..
            } => {
                self.block.start(stream, end_stream, &block);
                Ok(())
            }
            Frame::Continuation {
                stream,
                end_headers,
                block,
            } => self.continuation(stream, end_headers, &block),
            Frame::RstStream { stream, .. } => self.shared.lock().on_rst(stream, last),
            Frame::Settings { ack: false, params } => self.shared.lock().on_settings(&params),
            Frame::Ping {
                ack: false,
                payload,
            } => {
                Frame::Ping { ack: true, payload }.encode(&mut self.shared.lock().out);
                Ok(())
            }
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                self.shared.lock().on_window_update(stream, increment)
            }
            Frame::PushPromise { .. } => Err(protocol("PUSH_PROMISE from a client")),
            Frame::Settings { ack: true, .. }
            | Frame::Ping { ack: true, .. }
            | Frame::Priority { .. }
            | Frame::Unknown { .. } => Ok(()),
        }
    }

    fn continuation(&mut self, stream: u32, end: bool, block: &Bytes) -> Result<(), ConnError> {
        let max = self.cfg.max_header_list as usize + MAX_BLOCK_SLACK;
        match self.block.continuation(stream, end, block, max)? {
            Some((id, end_stream, whole)) => self.headers(id, end_stream, &whole),
            None => Ok(()),
        }
    }

    /// A whole header block: a new request, or the trailers of one. The block is decoded
    /// first whatever becomes of it, keeping the HPACK table in step with the client's.
    fn headers(&mut self, id: u32, end: bool, block: &Bytes) -> Result<(), ConnError> {
        let head = recv::decode(&mut self.decoder, block, self.cfg.max_header_list as usize)?;
        if id == 0 || id.is_multiple_of(2) {
            return Err(protocol(format!("HEADERS on stream {id}")));
        }
        if id <= self.last_id {
            return self.shared.lock().on_trailers(id, end);
        }
        self.last_id = id;
        if self.goaway_sent {
            // Above the GOAWAY's last stream: not processed; the client retries it elsewhere.
            return Ok(());
        }
        let mut st = self.shared.lock();
        if head.too_large {
            let State {
                out,
                encoder,
                peer_max_frame,
                ..
            } = &mut *st;
            let start = frame::start_headers(out);
            let status = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
            encoder.encode_response(status, &HeaderMap::new(), out);
            frame::finish_headers(out, start, id, true, *peer_max_frame);
            if !end {
                Frame::RstStream {
                    stream: id,
                    code: reason::NO_ERROR,
                }
                .encode(&mut st.out);
            }
            return Ok(());
        }
        let refuse =
            |st: &mut State, code| Frame::RstStream { stream: id, code }.encode(&mut st.out);
        let (req, content_length) = match head.into_request() {
            Ok((req, n)) if !(end && n.is_some_and(|n| n > 0)) => (req, n),
            Ok(_) | Err(_) => {
                refuse(&mut st, reason::PROTOCOL_ERROR);
                return Ok(());
            }
        };
        if st.streams.len() >= self.cfg.max_concurrent_streams as usize {
            refuse(&mut st, reason::REFUSED_STREAM);
            return Ok(());
        }
        let mut stream = Stream::new(
            self.cfg.stream_window,
            st.peer_initial_window,
            content_length,
        );
        stream.recv_end = end;
        stream.recv_dropped = end;
        st.streams.insert(id, stream);
        drop(st);
        let body = if end {
            RecvBody::empty()
        } else {
            RecvBody::new(self.shared.clone(), id, content_length)
        };
        let (answer, placement) = self.svc.call(req.map(|()| body));
        let respond = Respond::new(self.shared.clone(), id, answer);
        match placement {
            Placement::Inline => self.inline.push(respond),
            Placement::Spawn => self.svc.spawn(Box::pin(respond)),
        }
        Ok(())
    }

    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Result<(), End> {
        let Some(keepalive) = self.keepalive.as_mut() else {
            return Ok(());
        };
        match keepalive.poll(cx) {
            Err(Unanswered) => Err(End::Lost(Some("a keep-alive ping went unanswered".into()))),
            Ok(true) => {
                let ping = Frame::Ping {
                    ack: false,
                    payload: PING_PAYLOAD,
                };
                ping.encode(&mut self.shared.lock().out);
                Ok(())
            }
            Ok(false) => Ok(()),
        }
    }

    /// Writes what is queued, everything since the last run in one buffer; the answers
    /// waiting for room in the queue are woken as it is taken.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> std::io::Result<()> {
        let shared = &self.shared;
        self.writer.poll_write(&mut self.io, cx, |buf| {
            let mut st = shared.lock();
            std::mem::swap(&mut st.out, buf);
            if !st.room.is_empty() {
                st.wake_room();
            }
        })
    }

    /// Ends the connection: GOAWAY when this side ends it, every stream stopped; the last
    /// frames are then written ([`Task::poll_close`]).
    fn end(&mut self, end: End, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let (why, result) = match end {
            End::Done => {
                self.goaway(reason::NO_ERROR);
                ("connection closed".to_owned(), Ok(()))
            }
            End::Fault(e) => {
                self.goaway_sent = false;
                self.goaway(e.code);
                (e.msg.clone(), Err(Error::Protocol(e.msg)))
            }
            End::Lost(None) => ("closed by the client".to_owned(), Ok(())),
            End::Lost(Some(why)) => (why.clone(), Err(Error::Io(why))),
        };
        self.shared.lock().close_all(&why);
        // Streams still running here stop now (each resets, which `close_all` made silent).
        self.inline.clear();
        self.ending = Some(result);
        self.poll_close(cx)
    }

    /// Writes the last frames and shuts the socket down.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let written = match self.poll_write(cx) {
            Ok(()) => self.writer.is_idle() && self.shared.lock().out.is_empty(),
            Err(_) => true,
        };
        if !written {
            return Poll::Pending;
        }
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(_) => Poll::Ready(self.ending.take().unwrap_or(Ok(()))),
        }
    }
}

impl<T, S: Service> Drop for Task<T, S> {
    /// A task dropped before its end (its owner gave up on it) still stops its streams, so
    /// that a stream's work in a task of its own does not wait for it forever.
    fn drop(&mut self) {
        self.shared.lock().close_all("connection dropped");
    }
}
