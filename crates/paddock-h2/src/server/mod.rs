//! A lean HTTP/2 server for paddock's front connections (issue 19): what kubectl, client-go,
//! helm and other HTTP/2 clients need, in place of hyper's and the h2 crate's server.
//!
//! Shape (the client's, `crate::client`, turned around): one task per connection
//! ([`Connection`], polled by its owner) owns the socket and the HPACK decoder, reads the
//! client's frames and starts each request's work ([`Service::call`]); the streams share the
//! rest with it under one `parking_lot::Mutex` (`state.rs`): the stream map, the HPACK
//! encoder, flow-control windows and the buffer of frames to write. A stream's work
//! (`respond.rs`: the service's future, then the answer's head and body) runs inside the
//! connection's task when the service says it is small ([`Placement::Inline`]: no task, no
//! wake-up across threads), or in a task of its own ([`Placement::Spawn`]: lists, watches,
//! logs, which translate large answers). It encodes its HEADERS and DATA straight into the
//! shared buffer as the windows allow; the task writes everything queued in one `write` per
//! run. A stream reset by the client, or a connection that ends, stops its work at once.
//!
//! Supported: the preface and SETTINGS (MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE,
//! MAX_HEADER_LIST_SIZE advertised; the client's INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE,
//! HEADER_TABLE_SIZE applied); HEADERS/CONTINUATION, padding and priority on receipt; request
//! validation (RFC 9113 §8.3: pseudo-headers, connection-specific fields, `content-length`
//! against the DATA received); request trailers (accepted, not passed on); flow control both
//! ways; a header list over the limit answered 431; streams over the limit refused
//! (REFUSED_STREAM); PING (answered; a keep-alive one sent after `keepalive_interval` without
//! a frame, the connection closed when unanswered for `keepalive_timeout`); RST_STREAM;
//! GOAWAY both ways (graceful: the streams in progress finish first). Not supported: server
//! push, extended CONNECT (not advertised), answer trailers (not sent), priorities (ignored).

mod body;
mod date;
mod recv;
mod respond;
mod state;
mod task;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite};

pub use body::{BodyError, RecvBody};

/// A connection's settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE) and of the connection.
    pub stream_window: u32,
    pub conn_window: u32,
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    pub max_concurrent_streams: u32,
    /// Largest request header list (SETTINGS_MAX_HEADER_LIST_SIZE); a larger one is
    /// answered 431.
    pub max_header_list: u32,
    /// PING after this long without a frame from the client (`None`: never).
    pub keepalive_interval: Option<Duration>,
    pub keepalive_timeout: Duration,
}

/// Where a stream's work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In the connection's task: small, quick answers.
    Inline,
    /// In a task of its own, started by [`Service::spawn`].
    Spawn,
}

/// What serves a connection's requests.
pub trait Service {
    type Body: http_body::Body<Data = Bytes> + Send + Unpin + 'static;
    type Future: Future<Output = Response<Self::Body>> + Send + Unpin + 'static;

    /// The work of one request, and where it should run.
    fn call(&mut self, req: Request<RecvBody>) -> (Self::Future, Placement);

    /// Starts a stream's work placed [`Placement::Spawn`] in a task of its own.
    fn spawn(&self, work: Pin<Box<dyn Future<Output = ()> + Send>>);
}

/// Why a connection ended badly (a clean end, a client closing included, is `Ok`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("HTTP/2 protocol error by the client: {0}")]
    Protocol(String),
    #[error("connection: {0}")]
    Io(String),
}

/// One front HTTP/2 connection over `io` (TLS done, ALPN `h2`), served until it ends; its
/// SETTINGS leave with its first write.
pub struct Connection<T, S: Service> {
    task: task::Task<T, S>,
}

impl<T, S> Connection<T, S>
where
    T: AsyncRead + AsyncWrite + Unpin,
    S: Service,
{
    pub fn new(io: T, cfg: Config, service: S) -> Self {
        Connection {
            task: task::Task::new(io, cfg, service),
        }
    }

    /// Says GOAWAY (no new streams); the connection ends once its streams have.
    pub fn graceful_shutdown(&mut self) {
        self.task.shutdown = true;
    }
}

impl<T, S> Future for Connection<T, S>
where
    T: AsyncRead + AsyncWrite + Unpin,
    S: Service + Unpin,
{
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().task.poll(cx)
    }
}

#[cfg(test)]
mod tests;
