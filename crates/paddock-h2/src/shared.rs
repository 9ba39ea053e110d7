//! What the client and the server do alike: stream maps and queues, connection errors,
//! receive windows, header blocks in pieces, the batched writer and keep-alive.

use std::collections::VecDeque;
use std::future::Future;
use std::hash::Hasher;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

/// Stream ids are distinct small integers: hashed by a multiplication, not SipHash.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A stream's received DATA not yet read: most answers are one chunk, kept without a queue.
#[derive(Default)]
pub(crate) struct Chunks {
    one: Option<Bytes>,
    more: VecDeque<Bytes>,
}

impl Chunks {
    pub fn push(&mut self, b: Bytes) {
        if self.one.is_none() && self.more.is_empty() {
            self.one = Some(b);
        } else {
            self.more.push_back(b);
        }
    }
    pub fn pop(&mut self) -> Option<Bytes> {
        self.one.take().or_else(|| self.more.pop_front())
    }
    pub fn is_empty(&self) -> bool {
        self.one.is_none() && self.more.is_empty()
    }
}

/// A connection error: the GOAWAY code to send and why.
#[derive(Debug)]
pub(crate) struct ConnError {
    pub code: u32,
    pub msg: String,
}

pub(crate) fn protocol(msg: impl Into<String>) -> ConnError {
    ConnError {
        code: crate::frame::reason::PROTOCOL_ERROR,
        msg: msg.into(),
    }
}

/// What the peer may still send (on a stream or the connection), and what was read but not
/// yet given back.
pub(crate) struct Credit {
    pub window: i64,
    pub unreleased: u32,
}

impl Credit {
    pub fn new(window: u32) -> Self {
        Credit {
            window: i64::from(window),
            unreleased: 0,
        }
    }

    /// Gives back `n` read bytes: a WINDOW_UPDATE of stream `id` (0: the connection) into
    /// `out` once `threshold` bytes are owed.
    pub fn give_back(&mut self, n: u32, threshold: u32, id: u32, out: &mut Vec<u8>) {
        self.unreleased = self.unreleased.saturating_add(n);
        if self.unreleased >= threshold {
            crate::frame::put_head(out, 4, crate::frame::WINDOW_UPDATE, 0, id);
            out.extend_from_slice(&self.unreleased.to_be_bytes());
            self.window += i64::from(self.unreleased);
            self.unreleased = 0;
        }
    }
}

/// A header block arriving as HEADERS without END_HEADERS and CONTINUATIONs.
#[derive(Default)]
pub(crate) struct Assembly {
    partial: Option<(u32, bool, Vec<u8>)>,
}

impl Assembly {
    /// Whether a block is being assembled (then only its CONTINUATIONs may come).
    pub fn in_progress(&self) -> bool {
        self.partial.is_some()
    }

    /// The first part of stream `stream`'s block.
    pub fn start(&mut self, stream: u32, end_stream: bool, block: &Bytes) {
        self.partial = Some((stream, end_stream, block.to_vec()));
    }

    /// A CONTINUATION: the whole block (stream, END_STREAM, block) once it has ended. A block
    /// past `max` bytes is a connection error.
    pub fn continuation(
        &mut self,
        stream: u32,
        end: bool,
        block: &Bytes,
        max: usize,
    ) -> Result<Option<(u32, bool, Bytes)>, ConnError> {
        let Some((id, _, buf)) = self.partial.as_mut() else {
            return Err(protocol("CONTINUATION without HEADERS"));
        };
        if *id != stream {
            return Err(protocol("CONTINUATION of another stream"));
        }
        buf.extend_from_slice(block);
        if buf.len() > max {
            return Err(protocol("header block too large"));
        }
        if !end {
            return Ok(None);
        }
        Ok(self
            .partial
            .take()
            .map(|(id, end_stream, buf)| (id, end_stream, Bytes::from(buf))))
    }
}

/// A write buffer above this size is shrunk once written.
const KEEP_WRITE_BUF: usize = 256 * 1024;

/// The connection task's side of writing: the buffer being written and how far.
pub(crate) struct Writer {
    buf: Vec<u8>,
    pos: usize,
    need_flush: bool,
}

impl Writer {
    pub fn new() -> Self {
        Writer {
            buf: Vec::with_capacity(16 * 1024),
            pos: 0,
            need_flush: false,
        }
    }

    /// Whether everything taken so far was written.
    pub fn is_idle(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// Writes until the socket would block: when its buffer is written, `refill` swaps it
    /// with the shared queue (both keep their capacity), and so one `write` carries every
    /// frame queued since the last.
    pub fn poll_write<T: AsyncWrite + Unpin>(
        &mut self,
        io: &mut T,
        cx: &mut Context<'_>,
        mut refill: impl FnMut(&mut Vec<u8>),
    ) -> std::io::Result<()> {
        loop {
            if self.pos == self.buf.len() {
                self.buf.clear();
                if self.buf.capacity() > KEEP_WRITE_BUF {
                    // After a large body: do not keep its size for the connection's life.
                    self.buf.shrink_to(KEEP_WRITE_BUF / 4);
                }
                self.pos = 0;
                refill(&mut self.buf);
                if self.buf.is_empty() {
                    break;
                }
            }
            match Pin::new(&mut *io).poll_write(cx, &self.buf[self.pos..]) {
                Poll::Ready(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.pos += n;
                    self.need_flush = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(()),
            }
        }
        if self.need_flush && Pin::new(io).poll_flush(cx)?.is_ready() {
            self.need_flush = false;
        }
        Ok(())
    }

    /// What is left unwritten, taken out (for the last write of a closing connection).
    pub fn take_rest(&mut self) -> Vec<u8> {
        let rest = self.buf.split_off(self.pos.min(self.buf.len()));
        self.buf.clear();
        self.pos = 0;
        rest
    }
}

/// Keep-alive: a PING after `interval` without hearing from the peer, the connection given up
/// when it is not answered within `timeout`. Hearing from the peer only sets a flag (no timer
/// is touched per frame): a PING goes out after between one and two intervals of silence.
pub(crate) struct Keepalive {
    interval: Duration,
    timeout: Duration,
    timer: Pin<Box<Sleep>>,
    heard: bool,
    ping_sent: bool,
}

/// The peer did not answer a keep-alive PING in time.
pub(crate) struct Unanswered;

impl Keepalive {
    pub fn new(interval: Duration, timeout: Duration) -> Self {
        Keepalive {
            interval,
            timeout,
            timer: Box::pin(tokio::time::sleep(interval)),
            heard: false,
            ping_sent: false,
        }
    }

    /// Something arrived from the peer.
    pub fn heard(&mut self) {
        self.heard = true;
    }

    /// Whether a PING must be sent now.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Result<bool, Unanswered> {
        let mut ping = false;
        while self.timer.as_mut().poll(cx).is_ready() {
            if std::mem::take(&mut self.heard) {
                self.ping_sent = false;
                let at = Instant::now() + self.interval;
                self.timer.as_mut().reset(at);
                continue;
            }
            if self.ping_sent {
                return Err(Unanswered);
            }
            self.ping_sent = true;
            ping = true;
            let at = Instant::now() + self.timeout;
            self.timer.as_mut().reset(at);
        }
        Ok(ping)
    }
}
