//! A request's body as the gateway reads it, whichever HTTP server received it: hyper's
//! (HTTP/1.1, and HTTP/2 unless the lean front server is on) or paddock's own HTTP/2 server
//! (`paddock_h2::server`).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use paddock_h2::server::{BodyError, RecvBody};

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReqBodyError {
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    #[error(transparent)]
    Lean(#[from] BodyError),
}

#[derive(Debug)]
pub enum ReqBody {
    Hyper(Incoming),
    Lean(RecvBody),
}

impl From<Incoming> for ReqBody {
    fn from(b: Incoming) -> Self {
        ReqBody::Hyper(b)
    }
}

impl From<RecvBody> for ReqBody {
    fn from(b: RecvBody) -> Self {
        ReqBody::Lean(b)
    }
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = ReqBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ReqBodyError>>> {
        match self.get_mut() {
            ReqBody::Hyper(b) => Pin::new(b).poll_frame(cx).map_err(ReqBodyError::from),
            ReqBody::Lean(b) => Pin::new(b).poll_frame(cx).map_err(ReqBodyError::from),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReqBody::Hyper(b) => b.is_end_stream(),
            ReqBody::Lean(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Hyper(b) => b.size_hint(),
            ReqBody::Lean(b) => b.size_hint(),
        }
    }
}
