//! Body plumbing: the response body type, and the adapter that runs a translation-core
//! `ChunkRewriter` over an upstream body chunk by chunk (no buffering of lists or watches).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use paddock_core::ChunkRewriter;

use crate::answer_body::AnswerBody;

/// Boxed error used in body streams.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

use crate::res_body::ResBody;

/// Request body type sent upstream.
pub type UpBody = UnsyncBoxBody<Bytes, BoxError>;

/// A complete body.
pub fn full(b: impl Into<Bytes>) -> ResBody {
    ResBody::complete(b.into())
}

/// An empty body.
pub fn empty() -> ResBody {
    ResBody::default()
}

/// Passes an upstream body through unchanged.
pub fn passthrough(b: AnswerBody) -> ResBody {
    ResBody::boxed(b.map_err(|e| Box::new(e) as BoxError))
}

/// Largest frame [`RewriteBody`] makes by joining the output of upstream frames that are
/// ready at the same time.
const COALESCE_BYTES: usize = 64 * 1024;

/// Runs a rewriter over an upstream body. For a watch, what is ready leaves at once, so each
/// event reaches the client as soon as it is complete; anything else (a list) leaves in frames
/// of [`COALESCE_BYTES`] (and the rest at the end), since its reader needs all of it anyway.
pub struct RewriteBody {
    inner: AnswerBody,
    rewriter: Box<dyn ChunkRewriter>,
    finished: bool,
    /// Output held back until it fills a frame (lists), see [`RewriteBody::batched`].
    held: Vec<u8>,
    batched: bool,
    on_finish: Option<Box<dyn FnOnce() + Send>>,
    /// For watches: ends the stream cleanly (a normal end of body, which clients answer by
    /// re-watching, possibly through another replica) when the server shuts down.
    stop: Option<Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>>,
    /// For watches: when this fires (the upstream is lost), or when the upstream body fails,
    /// the stream ends with this watch `ERROR` event and a clean end of body, instead of a
    /// reset stream.
    interrupt: Option<Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>>,
    error_event: Option<Bytes>,
    /// For short requests: the body must be complete by then (`upstream_timeout`).
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl RewriteBody {
    /// Wraps `inner`; `on_finish` runs once when the body ends or is dropped (e.g. to
    /// decrement the open-watch gauge).
    pub fn new(
        inner: AnswerBody,
        rewriter: Box<dyn ChunkRewriter>,
        on_finish: Option<Box<dyn FnOnce() + Send>>,
    ) -> Self {
        RewriteBody {
            inner,
            rewriter,
            finished: false,
            held: Vec::new(),
            batched: false,
            on_finish,
            stop: None,
            interrupt: None,
            error_event: None,
            deadline: None,
        }
    }

    /// Ends the body with `event` (a watch `ERROR` event) when `token` is cancelled or the
    /// upstream body fails.
    pub fn interrupt_on(
        mut self,
        token: tokio_util::sync::CancellationToken,
        event: Bytes,
    ) -> Self {
        self.interrupt = Some(Box::pin(token.cancelled_owned()));
        self.error_event = Some(event);
        self
    }

    /// Fails the body if it is not complete by `deadline`.
    pub fn deadline(mut self, deadline: tokio::time::Instant) -> Self {
        self.deadline = Some(Box::pin(tokio::time::sleep_until(deadline)));
        self
    }

    /// Holds output back until a frame of [`COALESCE_BYTES`] is full (or the body ends).
    /// kube-apiserver writes a LIST in 4 KiB pieces, and paddock keeps up with it: passed on
    /// as they come, a 25 MB list left in about 6,000 frames, each its own TLS record, write
    /// and wake-up of the client. Never for watches: their events must not wait.
    pub fn batched(mut self) -> Self {
        self.batched = true;
        self
    }

    /// Ends the body when `token` is cancelled.
    pub fn until(mut self, token: tokio_util::sync::CancellationToken) -> Self {
        self.stop = Some(Box::pin(token.cancelled_owned()));
        self
    }
    /// Boxes it.
    pub fn boxed(self) -> ResBody {
        ResBody::boxed(self)
    }
}

impl Drop for RewriteBody {
    fn drop(&mut self) {
        if let Some(f) = self.on_finish.take() {
            f();
        }
    }
}

impl RewriteBody {
    /// The events complete so far, then the `ERROR` event; the body ends after it. A partial
    /// event still in the rewriter is dropped (the client watches again from the last complete
    /// one).
    fn end_with_error_event(&mut self, mut out: Vec<u8>) -> Option<Result<Frame<Bytes>, BoxError>> {
        self.finished = true;
        if let Some(f) = self.on_finish.take() {
            f();
        }
        if let Some(ev) = self.error_event.take() {
            out.extend_from_slice(&ev);
        }
        (!out.is_empty()).then(|| Ok(Frame::data(Bytes::from(out))))
    }
}

impl Body for RewriteBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        // What the frames that are ready now give, sent as one frame of up to COALESCE_BYTES:
        // a big LIST leaves in fewer, larger frames (fewer wake-ups, TLS records and
        // syscalls); a watch event still leaves as soon as nothing more is ready.
        let mut out: Vec<u8> = std::mem::take(&mut this.held);
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            if let Some(stop) = this.stop.as_mut()
                && stop.as_mut().poll(cx).is_ready()
            {
                this.finished = true;
                if let Some(f) = this.on_finish.take() {
                    f();
                }
                if !out.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                return Poll::Ready(None);
            }
            if let Some(lost) = this.interrupt.as_mut()
                && lost.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(this.end_with_error_event(out));
            }
            if let Some(d) = this.deadline.as_mut()
                && d.as_mut().poll(cx).is_ready()
            {
                this.finished = true;
                tracing::warn!("upstream answer not complete within upstream_timeout; cut off");
                return Poll::Ready(Some(Err("upstream answer not complete in time".into())));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => {
                    if out.is_empty() {
                        return Poll::Pending;
                    }
                    if this.batched && out.len() < COALESCE_BYTES {
                        // Woken again by the upstream body when more arrives.
                        this.held = out;
                        return Poll::Pending;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                Poll::Ready(Some(Err(e))) => {
                    if this.error_event.is_some() {
                        tracing::info!(error = %e, "upstream watch failed; ending it with an ERROR event");
                        return Poll::Ready(this.end_with_error_event(out));
                    }
                    this.finished = true;
                    return Poll::Ready(Some(Err(Box::new(e))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        // Trailers: Kubernetes sends none; drop them.
                        continue;
                    };
                    if out.capacity() == 0 {
                        out.reserve(COALESCE_BYTES.max(data.len() + data.len() / 8));
                    }
                    if let Err(e) = this.rewriter.feed(&data, &mut out) {
                        this.finished = true;
                        tracing::warn!(error = %e, "response rewrite failed mid-stream");
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                    if out.len() >= COALESCE_BYTES {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                }
                Poll::Ready(None) => {
                    this.finished = true;
                    if let Err(e) = this.rewriter.finish(&mut out) {
                        tracing::warn!(error = %e, "response rewrite failed at end of body");
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                    if let Some(f) = this.on_finish.take() {
                        f();
                    }
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// Most bytes read and thrown away after a refused body, and for how long.
const DRAIN_MAX_BYTES: usize = 64 << 20;
const DRAIN_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads and discards what is left of a refused request body (bounded in bytes and time), so
/// that the client receives the error response instead of a reset stream.
pub async fn drain<B>(mut body: B)
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let _ = tokio::time::timeout(DRAIN_MAX_TIME, async {
        let mut seen = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(d) = frame.data_ref() {
                seen += d.len();
                if seen > DRAIN_MAX_BYTES {
                    break;
                }
            }
        }
    })
    .await;
}

/// A complete upstream request body.
pub fn full_up(b: impl Into<Bytes>) -> UpBody {
    http_body_util::Full::new(b.into())
        .map_err(|never| -> BoxError { match never {} })
        .boxed_unsync()
}

/// An empty upstream request body.
pub fn empty_up() -> UpBody {
    http_body_util::Empty::new()
        .map_err(|never| -> BoxError { match never {} })
        .boxed_unsync()
}
