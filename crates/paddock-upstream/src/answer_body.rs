//! The body of an upstream answer: read from hyper's pools (lists, long-running requests,
//! watches) or from a short connection of paddock's lean HTTP/2 client ([`crate::h2_conn`],
//! [`paddock_h2::client`]).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

/// An upstream answer's body.
pub enum AnswerBody {
    /// From a hyper client (HTTP/1.1 pools, the watch pool).
    Hyper(Incoming),
    /// From a short HTTP/2 connection of [`crate::short_set::ShortSet`].
    H2(H2Body),
}

/// Why reading an upstream answer's body failed.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    #[error(transparent)]
    H2(#[from] paddock_h2::client::Error),
}

/// An HTTP/2 stream's data, its flow-control window given back as it is read.
pub struct H2Body {
    recv: paddock_h2::client::RecvStream,
    /// What Content-Length announced and is not read yet.
    remaining: Option<u64>,
    data_done: bool,
}

impl AnswerBody {
    /// The body of an h2 answer with these headers.
    pub fn h2(recv: paddock_h2::client::RecvStream, headers: &HeaderMap) -> Self {
        let remaining = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        AnswerBody::H2(H2Body {
            recv,
            remaining,
            data_done: false,
        })
    }
}

impl From<Incoming> for AnswerBody {
    fn from(b: Incoming) -> Self {
        AnswerBody::Hyper(b)
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = AnswerError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, AnswerError>>> {
        match self.get_mut() {
            AnswerBody::Hyper(b) => Pin::new(b).poll_frame(cx).map_err(AnswerError::Hyper),
            AnswerBody::H2(b) => b.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AnswerBody::Hyper(b) => b.is_end_stream(),
            AnswerBody::H2(b) => b.recv.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AnswerBody::Hyper(b) => b.size_hint(),
            AnswerBody::H2(b) if b.recv.is_end_stream() => SizeHint::with_exact(0),
            AnswerBody::H2(b) => b.remaining.map(SizeHint::with_exact).unwrap_or_default(),
        }
    }
}

impl H2Body {
    fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, AnswerError>>> {
        if !self.data_done {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    // The window was given back as the data was taken (`paddock_h2::client`): what
                    // paddock holds is bounded by its own readers (RewriteBody, collect_until).
                    if let Some(r) = self.remaining.as_mut() {
                        *r = r.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                None => self.data_done = true,
            }
        }
        Poll::Ready(self.recv.take_trailers().map(|t| Ok(Frame::trailers(t))))
    }
}
