//! A lean HTTP/2 client for paddock's short upstream requests: just what a
//! request to kube-apiserver (Go's HTTP/2 server) needs, in place of the h2 crate on that
//! path.
//!
//! Shape: one task per connection ([`connect`]'s future, spawned by the dialer on its own
//! thread) owns the socket and the HPACK decoder; the requests share the rest with it in one
//! `parking_lot::Mutex<State>` (`state.rs`): the stream map, the HPACK encoder and the
//! buffer of frames to write. A request opens its stream by encoding its HEADERS (and DATA,
//! as far as the windows allow) straight into that buffer under the lock, wakes the task at
//! most once per run of it, and waits for its answer with its own waker. The task swaps the
//! buffer out and writes everything the requests queued in one `write`; it decodes the
//! peer's frames and hands heads, data (`Bytes` sliced from the read buffer, not copied) and
//! trailers to the streams (`recv.rs`, `task.rs`). No task, channel or allocation per request
//! beyond the answer's `HeaderMap`, a chunk queue when an answer has several DATA frames and
//! HPACK's dynamic-table inserts.
//!
//! Supported: the preface and SETTINGS (push off, stream and connection windows, header list
//! bound), the peer's MAX_CONCURRENT_STREAMS (a request waits for a free slot),
//! MAX_FRAME_SIZE, INITIAL_WINDOW_SIZE, HEADER_TABLE_SIZE; HEADERS/CONTINUATION both ways,
//! padding and priority on receipt; flow control both ways; PING (answered; a keep-alive one
//! sent every `keepalive_interval`, the connection closed when unanswered for
//! `keepalive_timeout`); RST_STREAM; GOAWAY. Not supported: server push (a protocol error),
//! sending priorities, Huffman-coding of what is sent (`hpack/encoder.rs`).

pub(crate) mod recv;
mod state;
mod task;

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::frame::{self, reason};
use state::State;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A connection's settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE) and of the connection.
    pub stream_window: u32,
    pub conn_window: u32,
    /// Largest header list of an answer (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list: u32,
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
}

/// Why a request or its answer failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The peer said GOAWAY and this stream was above its last one, or opened after it.
    #[error(
        "the upstream is going away (GOAWAY, error code {code}); the request was not processed"
    )]
    GoAway { code: u32 },
    /// The peer reset the stream.
    #[error("the upstream reset the stream (error code {0})")]
    Reset(u32),
    /// No answer's head by the request's deadline ([`SendRequest::send_until`]); the stream
    /// was cancelled.
    #[error("no answer from the upstream by the request's deadline")]
    TimedOut,
    /// The connection was closed before the request's stream was opened.
    #[error("upstream connection closed before the request was sent: {0}")]
    NotSent(Arc<str>),
    /// The connection ended (socket closed or failed, protocol error, keep-alive timeout).
    #[error("upstream connection: {0}")]
    Closed(Arc<str>),
    /// The answer broke the protocol on its stream (which was reset).
    #[error("malformed upstream answer: {0}")]
    Malformed(Arc<str>),
}

/// Whether the upstream certainly did not process the request that failed with `e`
/// (RFC 9113 §6.8 and §8.7): a GOAWAY below the stream, REFUSED_STREAM, or never sent.
pub fn not_processed(e: &Error) -> bool {
    matches!(
        e,
        Error::GoAway { .. } | Error::Reset(reason::REFUSED_STREAM) | Error::NotSent(_)
    )
}

/// Starts an HTTP/2 connection over `io` (TLS done, ALPN `h2`): the handle to send requests
/// with, and the connection's task to spawn. The preface and SETTINGS leave with its first
/// write.
pub fn connect<T>(io: T, cfg: Config) -> (SendRequest, impl Future<Output = ()> + Send + 'static)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut st = State::new(cfg);
    st.out.extend_from_slice(PREFACE);
    let params = vec![
        (frame::ENABLE_PUSH, 0),
        (frame::INITIAL_WINDOW_SIZE, cfg.stream_window),
        (frame::MAX_HEADER_LIST_SIZE, cfg.max_header_list),
    ];
    frame::put_opening(&mut st.out, params, cfg.conn_window);
    let shared = Arc::new(Mutex::new(st));
    let send = SendRequest {
        shared: shared.clone(),
    };
    (send, task::run(io, shared, cfg))
}

/// A handle on a connection to send requests on (cheap to clone). When the last one is
/// dropped and no stream is left, the connection closes.
pub struct SendRequest {
    shared: Arc<Mutex<State>>,
}

impl Clone for SendRequest {
    fn clone(&self) -> Self {
        self.shared.lock().handles += 1;
        SendRequest {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for SendRequest {
    fn drop(&mut self) {
        let wake = {
            let mut st = self.shared.lock();
            st.handles -= 1;
            if st.handles == 0 { st.notify() } else { None }
        };
        if let Some(w) = wake {
            w.wake();
        }
    }
}

impl SendRequest {
    /// This handle, if the connection can still take requests (not closed, no GOAWAY).
    pub async fn ready(self) -> Result<Self, Error> {
        let refused = self.shared.lock().refusal();
        match refused {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    /// Whether the connection can still take requests, without giving up this handle.
    pub fn usable(&self) -> Result<(), Error> {
        match self.shared.lock().refusal() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Sends `head` with `body` (empty: none), waiting for a stream slot; the answer's head
    /// and its body.
    pub async fn send(
        &self,
        head: &Request<()>,
        body: Bytes,
    ) -> Result<(Response<()>, RecvStream), Error> {
        self.send_with(head, body, None).await
    }

    /// [`SendRequest::send`] with the answer's head due by `deadline`: past it the stream is
    /// cancelled (RST_STREAM CANCEL) and the request fails with [`Error::TimedOut`]. The
    /// connection's task keeps one timer for all its streams' deadlines, so a request that
    /// is answered in time costs no timer of its own (a tokio timer per request is a
    /// registration and a removal on the runtime's timer wheel, under its lock).
    pub async fn send_until(
        &self,
        head: &Request<()>,
        body: Bytes,
        deadline: Instant,
    ) -> Result<(Response<()>, RecvStream), Error> {
        self.send_with(head, body, Some(deadline)).await
    }

    async fn send_with(
        &self,
        head: &Request<()>,
        body: Bytes,
        deadline: Option<Instant>,
    ) -> Result<(Response<()>, RecvStream), Error> {
        let mut open = std::pin::pin!(poll_fn(|cx| {
            let (opened, wake) = {
                let mut st = self.shared.lock();
                match st.poll_open(cx, head, &body, deadline) {
                    Poll::Ready(r) => (Poll::Ready(r), st.notify()),
                    Poll::Pending => (Poll::Pending, None),
                }
            };
            if let Some(w) = wake {
                w.wake();
            }
            opened
        }));
        // A stream slot is free but for a burst above the peer's concurrent streams: only
        // then does the wait for one take a timer.
        let id = match poll_fn(|cx| Poll::Ready(open.as_mut().poll(cx))).await {
            Poll::Ready(opened) => opened?,
            Poll::Pending => match deadline {
                Some(d) => tokio::time::timeout_at(d, open)
                    .await
                    .map_err(|_| Error::TimedOut)??,
                None => open.await?,
            },
        };
        let stream = RecvStream {
            shared: self.shared.clone(),
            id,
        };
        let head = poll_fn(|cx| stream.shared.lock().poll_head(cx, id)).await?;
        Ok((head, stream))
    }
}

impl SendRequest {
    /// How many streams were opened on the connection (for the fuzz targets).
    pub(crate) fn opened(&self) -> u32 {
        self.shared.lock().next_id / 2
    }
}

/// The body of an answer: its window is given back as it is read; dropped before its end,
/// the stream is cancelled.
pub struct RecvStream {
    shared: Arc<Mutex<State>>,
    id: u32,
}

impl RecvStream {
    /// The next chunk of data; `None` at the end of the data.
    pub fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Error>>> {
        let (got, wake) = {
            let mut st = self.shared.lock();
            let got = st.poll_data(cx, self.id);
            let wake = if st.out.is_empty() { None } else { st.notify() };
            (got, wake)
        };
        if let Some(w) = wake {
            w.wake();
        }
        got
    }

    /// The trailers, once the data has ended.
    pub fn take_trailers(&mut self) -> Option<HeaderMap> {
        self.shared
            .lock()
            .streams
            .get_mut(&self.id)
            .and_then(|s| s.trailers.take())
    }

    /// Whether nothing more will come.
    pub fn is_end_stream(&self) -> bool {
        self.shared.lock().is_end_stream(self.id)
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let wake = {
            let mut st = self.shared.lock();
            st.drop_stream(self.id);
            let idle = st.handles == 0 && st.streams.is_empty();
            if st.out.is_empty() && !idle {
                None
            } else {
                st.notify()
            }
        };
        if let Some(w) = wake {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests;
