//! The connection's one task: reads frames off the socket and hands them to the streams,
//! writes everything queued since its last run in one buffer (one `write` per run when the
//! socket takes it), answers and sends PINGs, and ends the connection.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::recv::{self, ConnError, protocol};
use super::state::State;
use super::{Config, Error};
use crate::frame::{self, Frame, reason};
use crate::hpack::Decoder;
use crate::shared::{Assembly, Keepalive, Unanswered, Writer};

/// Reads per run before the task lets others run (it is woken again at once).
const READS_PER_RUN: usize = 16;
/// Room kept in the read buffer.
const READ_ROOM: usize = 16 * 1024;
/// The HPACK table this side allows the peer (the default: not advertised).
const DECODER_TABLE: usize = 4096;
/// A header block being assembled from CONTINUATIONs may not exceed this.
const MAX_BLOCK_SLACK: usize = 64 * 1024;
const PING_PAYLOAD: [u8; 8] = *b"paddock!";
/// How long the last frames (a GOAWAY) get to leave when the connection ends.
const CLOSE_WRITE: Duration = Duration::from_secs(1);

/// How the connection ended.
enum End {
    /// No handles and no streams, or a GOAWAY and no streams left.
    Done,
    /// This side found the peer at fault: GOAWAY with the code.
    Fault(ConnError),
    /// The socket closed or failed, or the peer stopped answering.
    Lost(String),
}

pub(super) struct Task<T> {
    io: T,
    shared: Arc<Mutex<State>>,
    cfg: Config,
    rbuf: BytesMut,
    writer: Writer,
    decoder: Decoder,
    block: Assembly,
    keepalive: Keepalive,
    deadlines: Deadlines,
}

/// The one timer of the streams' deadlines, armed at the earliest known one. A later
/// stream's deadline does not move it: when it fires, the overdue streams are cancelled and
/// it is armed again at the earliest left, so a connection with streams answered in time
/// sets it about once per timeout, not once per request.
struct Deadlines {
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Instant>,
}

/// Runs the connection until it ends.
pub(super) async fn run<T>(io: T, shared: Arc<Mutex<State>>, cfg: Config)
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut t = Task {
        io,
        shared,
        cfg,
        rbuf: BytesMut::with_capacity(READ_ROOM),
        writer: Writer::new(),
        decoder: Decoder::new(DECODER_TABLE),
        block: Assembly::default(),
        keepalive: Keepalive::new(cfg.keepalive_interval, cfg.keepalive_timeout),
        deadlines: Deadlines {
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: None,
        },
    };
    let end = poll_fn(|cx| t.poll(cx)).await;
    t.finish(end).await;
}

impl<T: AsyncRead + AsyncWrite + Unpin> Task<T> {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<End> {
        let new_deadline = {
            let mut st = self.shared.lock();
            st.notified = false;
            if !st.task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.task = Some(cx.waker().clone());
            }
            st.new_deadline.take()
        };
        if let Err(e) = self.poll_read(cx) {
            return Poll::Ready(e);
        }
        if let Err(e) = self.poll_keepalive(cx) {
            return Poll::Ready(e);
        }
        self.poll_deadlines(cx, new_deadline);
        if let Err(e) = self.poll_write(cx) {
            return Poll::Ready(End::Lost(format!("writing: {e}")));
        }
        let st = self.shared.lock();
        let idle = st.streams.is_empty() && (st.handles == 0 || st.goaway.is_some());
        if idle && st.out.is_empty() && self.writer.is_idle() {
            return Poll::Ready(End::Done);
        }
        Poll::Pending
    }

    fn poll_read(&mut self, cx: &mut Context<'_>) -> Result<(), End> {
        for _ in 0..READS_PER_RUN {
            loop {
                let next = frame::next(&mut self.rbuf, frame::DEFAULT_MAX_FRAME);
                let f = next.map_err(|e| {
                    End::Fault(ConnError {
                        code: e.reason(),
                        msg: e.to_string(),
                    })
                })?;
                match f {
                    Some(f) => {
                        self.keepalive.heard();
                        self.on_frame(f).map_err(End::Fault)?;
                    }
                    None => break,
                }
            }
            if self.rbuf.capacity() - self.rbuf.len() < READ_ROOM / 4 {
                self.rbuf.reserve(READ_ROOM);
            }
            let io = Pin::new(&mut self.io);
            match tokio_util::io::poll_read_buf(io, cx, &mut self.rbuf) {
                Poll::Ready(Ok(0)) => return Err(End::Lost("closed by the upstream".into())),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Err(End::Lost(format!("reading: {e}"))),
                Poll::Pending => return Ok(()),
            }
        }
        // More may be waiting: run again after the tasks this one woke.
        cx.waker().wake_by_ref();
        Ok(())
    }

    fn on_frame(&mut self, f: Frame) -> Result<(), ConnError> {
        if self.block.in_progress() && !matches!(f, Frame::Continuation { .. }) {
            return Err(protocol("a frame inside a header block"));
        }
        match f {
            Frame::Data {
                stream,
                end,
                data,
                flow,
            } => self.shared.lock().on_data(stream, end, data, flow),
            Frame::Headers {
                stream,
                end_stream,
                end_headers: true,
                block,
            } => self.deliver(stream, end_stream, &block),
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
            Frame::RstStream { stream, code } => self.shared.lock().on_rst(stream, code),
            Frame::Settings { ack: false, params } => self.shared.lock().on_settings(&params),
            Frame::Ping {
                ack: false,
                payload,
            } => {
                Frame::Ping { ack: true, payload }.encode(&mut self.shared.lock().out);
                Ok(())
            }
            Frame::GoAway { last, code, .. } => {
                self.shared.lock().on_goaway(last, code);
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                self.shared.lock().on_window_update(stream, increment)
            }
            Frame::PushPromise { .. } => Err(protocol("PUSH_PROMISE, though push is disabled")),
            Frame::Settings { ack: true, .. }
            | Frame::Ping { ack: true, .. }
            | Frame::Priority { .. }
            | Frame::Unknown { .. } => Ok(()),
        }
    }

    fn continuation(&mut self, stream: u32, end: bool, block: &Bytes) -> Result<(), ConnError> {
        let max = self.cfg.max_header_list as usize + MAX_BLOCK_SLACK;
        match self.block.continuation(stream, end, block, max)? {
            Some((id, end_stream, whole)) => self.deliver(id, end_stream, &whole),
            None => Ok(()),
        }
    }

    /// Decodes a whole header block (keeping the table in step even for a forgotten stream)
    /// and hands it to its stream.
    fn deliver(&mut self, stream: u32, end: bool, block: &Bytes) -> Result<(), ConnError> {
        let fields = recv::decode(&mut self.decoder, block, self.cfg.max_header_list as usize)?;
        self.shared.lock().on_headers(stream, end, fields)
    }

    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Result<(), End> {
        match self.keepalive.poll(cx) {
            Err(Unanswered) => {
                tracing::info!(
                    "upstream short connection did not answer a keep-alive ping; closed"
                );
                Err(End::Lost("a keep-alive ping went unanswered".into()))
            }
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

    /// Arms the deadline timer for `new` if it is earlier than the armed one; when the timer
    /// fires, cancels the overdue streams and arms it at the next deadline.
    fn poll_deadlines(&mut self, cx: &mut Context<'_>, new: Option<Instant>) {
        let d = &mut self.deadlines;
        if let Some(at) = new
            && d.armed.is_none_or(|armed| at < armed)
        {
            d.timer.as_mut().reset(at);
            d.armed = Some(at);
        }
        while d.armed.is_some() && d.timer.as_mut().poll(cx).is_ready() {
            d.armed = self.shared.lock().expire(Instant::now());
            if let Some(at) = d.armed {
                d.timer.as_mut().reset(at);
            }
        }
    }

    /// Writes what is queued, everything since the last run in one buffer.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> std::io::Result<()> {
        let shared = &self.shared;
        self.writer.poll_write(&mut self.io, cx, |buf| {
            std::mem::swap(&mut shared.lock().out, buf);
        })
    }

    /// Fails what is left, says GOAWAY when this side ends it, and closes the socket.
    async fn finish(mut self, end: End) {
        let (err, goaway) = match end {
            End::Done => (
                Error::Closed("connection closed".into()),
                Some(reason::NO_ERROR),
            ),
            End::Fault(e) => {
                tracing::debug!(error = %e.msg, code = e.code, "upstream short connection: protocol error");
                (
                    Error::Closed(format!("protocol error: {}", e.msg).into()),
                    Some(e.code),
                )
            }
            End::Lost(why) => {
                tracing::debug!(%why, "upstream short connection ended");
                (Error::Closed(why.into()), None)
            }
        };
        let rest = {
            let mut st = self.shared.lock();
            st.fail_all(&err);
            if let Some(code) = goaway {
                let f = Frame::GoAway {
                    last: 0,
                    code,
                    debug: Bytes::new(),
                };
                f.encode(&mut st.out);
            }
            std::mem::take(&mut st.out)
        };
        let mut pending = self.writer.take_rest();
        pending.extend_from_slice(&rest);
        let close = async {
            let _ = self.io.write_all(&pending).await;
            let _ = self.io.shutdown().await;
        };
        let _ = tokio::time::timeout(CLOSE_WRITE, close).await;
    }
}

impl<T> Drop for Task<T> {
    /// A task dropped without ending (its runtime shut down) still fails its streams, so that
    /// no request waits for it forever.
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if st.closed.is_none() {
            st.fail_all(&Error::Closed("connection task dropped".into()));
        }
    }
}
