//! A request's body as the gateway reads it: hyper's body (HTTP/1.1 or HTTP/2) held to a
//! deadline, so that a body trickling in (a byte a second keeps any per-read timeout happy)
//! is cut once the whole of it is overdue (`body_read_timeout`, docs/security.md "Front door").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReqBodyError {
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    #[error("the request body did not arrive within {}s (body_read_timeout)", .0.as_secs())]
    TimedOut(Duration),
}

/// A request's body and the time by which all of it must have arrived.
#[derive(Debug)]
pub struct ReqBody {
    /// None: a body read already, whose bytes travel in the request's extensions (a namespace
    /// create sent again with another generated name, stack::namespace_create).
    inner: Option<Incoming>,
    /// When the request began and how long its body may take.
    started: Instant,
    limit: Duration,
    /// Armed the first time the body is not ready (a body that arrives with its request never
    /// costs a timer).
    timer: Option<Pin<Box<Sleep>>>,
}

impl ReqBody {
    /// `inner`, all of which must arrive within `limit` from now.
    pub fn new(inner: Incoming, limit: Duration) -> Self {
        ReqBody {
            inner: Some(inner),
            started: Instant::now(),
            limit,
            timer: None,
        }
    }

    /// An empty body, for a request whose body was read already and is carried in its
    /// extensions.
    pub fn read_already() -> Self {
        ReqBody {
            inner: None,
            started: Instant::now(),
            limit: Duration::ZERO,
            timer: None,
        }
    }
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = ReqBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ReqBodyError>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(frame) = Pin::new(inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(ReqBodyError::from)));
        }
        let deadline = this.started + this.limit;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(ReqBodyError::TimedOut(this.limit)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}
