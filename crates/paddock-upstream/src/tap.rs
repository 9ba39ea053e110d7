//! One response body wrapper for everything that must last as long as an answer's body, or
//! see it pass: a fair-share permit, a work seat, a connection's activity, a tenant's meters,
//! an audit event waiting for the answer it records. Each of those is a [`Tap`]; [`wrap`] and
//! [`hold`] put it around a body, and the wrapper does the forwarding (`poll_frame`,
//! `is_end_stream`, `size_hint`) and decides once, for all of them, when the body has ended.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body::BoxError;
use crate::res_body::ResBody;

/// What rides along a response body. Every method has a default that does nothing, so a
/// guard that only has to live until the body ends implements none of them.
pub trait Tap: Send + Unpin + 'static {
    /// Runs one poll of the body (a work seat charges its time); the default just runs it.
    fn poll<R>(&mut self, poll: impl FnOnce() -> R) -> R {
        poll()
    }

    /// A data frame is passing to the client.
    fn data(&mut self, _data: &Bytes) {}

    /// The body ended, once: `whole` when its last byte was passed on, false when it failed or
    /// was dropped before its end (the client went away). Dropping `self` here is what ends a
    /// guard.
    fn end(self, _whole: bool)
    where
        Self: Sized,
    {
    }
}

/// A guard that only has to live until the body ends (a permit, a connection's activity).
pub struct Guard<G>(pub G);

impl<G: Send + Unpin + 'static> Tap for Guard<G> {}

/// Wraps `body` so that `tap` sees it pass and is told when it ends.
pub fn wrap<T: Tap>(body: ResBody, tap: T) -> ResBody {
    ResBody::boxed(Tapped {
        inner: body,
        tap: Some(tap),
    })
}

/// Like [`wrap`], for a tap that only holds something until the end: a small complete body
/// (`ResBody::is_small_complete`) leaves in the same write as its headers, so its tap ends now
/// and the body is not wrapped.
pub fn hold<T: Tap>(body: ResBody, tap: T) -> ResBody {
    if body.is_small_complete() {
        tap.end(true);
        return body;
    }
    wrap(body, tap)
}

/// A body and its tap (taken when the body ends).
struct Tapped<T: Tap> {
    inner: ResBody,
    tap: Option<T>,
}

impl<T: Tap> Tapped<T> {
    fn end(&mut self, whole: bool) {
        if let Some(t) = self.tap.take() {
            t.end(whole);
        }
    }
}

impl<T: Tap> Body for Tapped<T> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let inner = &mut this.inner;
        let r = match this.tap.as_mut() {
            Some(t) => t.poll(|| Pin::new(inner).poll_frame(cx)),
            None => Pin::new(inner).poll_frame(cx),
        };
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(t), Some(d)) = (this.tap.as_mut(), frame.data_ref()) {
                    t.data(d);
                }
                // hyper stops polling a body that says it has ended: the last frame is the
                // end, not a later `None`.
                if this.inner.is_end_stream() {
                    this.end(true);
                }
            }
            Poll::Ready(None) => this.end(true),
            Poll::Ready(Some(Err(_))) => this.end(false),
            Poll::Pending => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<T: Tap> Drop for Tapped<T> {
    /// A body dropped before its tap ended: whole if it had said it had ended (hyper drops it
    /// then, without another poll), cut short otherwise.
    fn drop(&mut self) {
        let whole = self.inner.is_end_stream();
        self.end(whole);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::{Arc, Mutex};

    /// What a tap saw: the bytes, and how the body ended.
    type Log = Arc<Mutex<(usize, Option<bool>)>>;

    struct Seen(Log);

    impl Tap for Seen {
        fn data(&mut self, d: &Bytes) {
            if let Ok(mut s) = self.0.lock() {
                s.0 += d.len();
            }
        }
        fn end(self, whole: bool) {
            if let Ok(mut s) = self.0.lock() {
                s.1 = Some(whole);
            }
        }
    }

    /// A streamed (boxed) body of one frame, tapped.
    fn tapped(part: &'static [u8]) -> (ResBody, Log) {
        let log = Log::default();
        let body = ResBody::boxed(
            http_body_util::Full::new(Bytes::from_static(part))
                .map_err(|never| -> BoxError { match never {} }),
        );
        (wrap(body, Seen(log.clone())), log)
    }

    fn log_of(log: &Log) -> (usize, Option<bool>) {
        log.lock().map(|s| *s).unwrap_or_default()
    }

    #[tokio::test]
    async fn the_last_frame_ends_the_tap() {
        let (mut body, log) = tapped(b"abc");
        assert_eq!(log_of(&log), (0, None));
        assert!(body.frame().await.is_some());
        // Ended with the frame that said so, not at a later poll or drop.
        assert_eq!(log_of(&log), (3, Some(true)));
        assert!(body.is_end_stream());
    }

    #[test]
    fn a_body_dropped_early_is_cut_short() {
        let (body, log) = tapped(b"abc");
        drop(body);
        assert_eq!(log_of(&log), (0, Some(false)));
    }

    #[test]
    fn a_small_complete_body_is_not_held() {
        let log = Log::default();
        let body = hold(
            ResBody::complete(Bytes::from_static(b"ok")),
            Seen(log.clone()),
        );
        assert_eq!(body.complete_len(), Some(2));
        assert_eq!(log_of(&log), (0, Some(true)));
    }
}
