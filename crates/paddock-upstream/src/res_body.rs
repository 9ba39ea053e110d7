//! The server's response body: a complete body held as it is, or any other body boxed.
//!
//! Most answers are complete before they leave (a small object, a Status, a document): for
//! those the body is its bytes, with no box, and the layers that would wrap it to hold
//! something until its last byte (a permit, a work seat, a meter) can see that the last byte
//! is already there ([`ResBody::complete_len`]) and not wrap it at all.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;

/// The error of a body's frame (`crate::body::BoxError`, spelled out here so that this
/// module does not depend on the one that re-exports it).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// See [`ResBody::is_small_complete`].
pub const SMALL_COMPLETE_BYTES: usize = 64 * 1024;

/// Response body type of the server.
pub struct ResBody(Kind);

enum Kind {
    /// All of it (taken when polled).
    Complete(Option<Bytes>),
    Boxed(UnsyncBoxBody<Bytes, BoxError>),
}

impl ResBody {
    /// A body whose bytes are all here.
    pub fn complete(bytes: Bytes) -> Self {
        ResBody(Kind::Complete(Some(bytes)))
    }

    /// Any other body.
    pub fn boxed<B>(body: B) -> Self
    where
        B: Body<Data = Bytes, Error = BoxError> + Send + 'static,
    {
        ResBody(Kind::Boxed(UnsyncBoxBody::new(body)))
    }

    /// The length of a body that is complete and not yet read: it ends with the frame that
    /// carries it.
    pub fn complete_len(&self) -> Option<usize> {
        match &self.0 {
            Kind::Complete(Some(b)) => Some(b.len()),
            Kind::Complete(None) => Some(0),
            Kind::Boxed(_) => None,
        }
    }

    /// The bytes of a complete body not yet read.
    pub fn complete_bytes(&self) -> Option<&Bytes> {
        match &self.0 {
            Kind::Complete(b) => b.as_ref(),
            Kind::Boxed(_) => None,
        }
    }

    /// A complete body small enough that what must last until its end (a connection's
    /// activity, a fair-share permit, a work seat) can end now: its bytes are sent in the
    /// same write as its headers, and a client that does not read them holds at most
    /// this much per stream ([`SMALL_COMPLETE_BYTES`]). Larger ones (documents) keep their
    /// permits until their last byte, so that in-flight limits bound the memory they hold.
    pub fn is_small_complete(&self) -> bool {
        self.complete_len()
            .is_some_and(|n| n <= SMALL_COMPLETE_BYTES)
    }
}

impl Default for ResBody {
    fn default() -> Self {
        ResBody(Kind::Complete(None))
    }
}

impl fmt::Debug for ResBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Complete(b) => f
                .debug_struct("ResBody")
                .field("complete", &b.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::Boxed(_) => f.write_str("ResBody(boxed)"),
        }
    }
}

impl Body for ResBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().0 {
            Kind::Complete(bytes) => Poll::Ready(
                bytes
                    .take()
                    .filter(|b| !b.is_empty())
                    .map(|b| Ok(Frame::data(b))),
            ),
            Kind::Boxed(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Complete(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            Kind::Boxed(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Complete(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Boxed(body) => body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn complete_body_is_one_frame_then_the_end() {
        let mut b = ResBody::complete(Bytes::from_static(b"hello"));
        assert_eq!(b.complete_len(), Some(5));
        assert!(b.is_small_complete());
        let big = ResBody::complete(Bytes::from(vec![b'x'; SMALL_COMPLETE_BYTES + 1]));
        assert!(!big.is_small_complete());
        assert!(!b.is_end_stream());
        assert_eq!(b.size_hint().exact(), Some(5));
        let frame = b.frame().await.and_then(|f| f.ok());
        assert_eq!(
            frame.and_then(|f| f.into_data().ok()).as_deref(),
            Some(&b"hello"[..])
        );
        assert!(b.is_end_stream());
        assert!(b.frame().await.is_none());
    }

    #[tokio::test]
    async fn empty_and_boxed_bodies() {
        let empty = ResBody::complete(Bytes::new());
        assert!(empty.is_end_stream());
        assert_eq!(
            empty.collect().await.ok().map(|c| c.to_bytes().len()),
            Some(0)
        );
        let boxed = ResBody::boxed(
            http_body_util::Full::new(Bytes::from_static(b"abc"))
                .map_err(|never| -> BoxError { match never {} }),
        );
        assert_eq!(boxed.complete_len(), None);
        let all = boxed.collect().await.ok().map(|c| c.to_bytes());
        assert_eq!(all.as_deref(), Some(&b"abc"[..]));
    }
}
