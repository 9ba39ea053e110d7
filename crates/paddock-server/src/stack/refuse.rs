//! Refusals decided from the request's headers alone, before anything is read or admitted: a
//! body announced larger than the limit (413). The header block's own size is bounded earlier,
//! per connection, before authentication (`conn.rs`, 431).

use std::task::{Context, Poll};

use futures_util::future::{Either, Ready, ready};
use http::{Request, Response, header};
use http_body::Body;
use http_body_util::BodyExt;
use tower::{Layer, Service};

use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;

/// Refuses requests whose announced body is larger than `max_body_bytes`.
#[derive(Clone, Copy)]
pub struct RefuseLayer {
    max_body_bytes: usize,
}

impl RefuseLayer {
    pub fn new(max_body_bytes: usize) -> Self {
        RefuseLayer { max_body_bytes }
    }
}

impl<S> Layer<S> for RefuseLayer {
    type Service = Refuse<S>;
    fn layer(&self, inner: S) -> Refuse<S> {
        Refuse {
            max_body_bytes: self.max_body_bytes,
            inner,
        }
    }
}

/// See [`RefuseLayer`].
#[derive(Clone)]
pub struct Refuse<S> {
    max_body_bytes: usize,
    inner: S,
}

/// Most of a refused body read (and dropped) so that the refusal reaches the client.
const DRAIN_MAX_BYTES: usize = 8 << 20;

impl<S, B> Service<Request<B>> for Refuse<S>
where
    S: Service<Request<B>, Response = Response<ResBody>, Error = ServerError>,
    B: Body + Send + Unpin + 'static,
    B::Data: Send,
{
    type Response = Response<ResBody>;
    type Error = ServerError;
    type Future = Either<Ready<Result<Response<ResBody>, ServerError>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let announced = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        match announced {
            Some(len) if len > self.max_body_bytes => {
                // A client that sent `Expect: 100-continue` never sends it; the others' body is
                // drained (bounded) in the background while the 413 goes out: an HTTP/2 stream
                // whose body is dropped unread is reset, and the client would see a framing
                // error instead of this Status.
                tokio::spawn(drain(req.into_body()));
                Either::Left(ready(Err(ServerError::TooLarge(format!(
                    "request body of {len} bytes is larger than the limit of {} bytes",
                    self.max_body_bytes
                )))))
            }
            _ => Either::Right(self.inner.call(req)),
        }
    }
}

async fn drain<B: Body + Unpin>(mut body: B) {
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        let mut seen = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, bytes::Buf::remaining);
            if seen > DRAIN_MAX_BYTES {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http_body_util::Full;
    use paddock_upstream::body::full;
    use tower::ServiceExt;

    fn inner() -> impl Service<
        Request<Full<bytes::Bytes>>,
        Response = Response<ResBody>,
        Error = ServerError,
        Future = impl Send,
    > + Clone {
        tower::service_fn(|_req: Request<Full<bytes::Bytes>>| async {
            Ok::<_, ServerError>(Response::new(full("served")))
        })
    }

    fn req(len: usize) -> Request<Full<bytes::Bytes>> {
        Request::builder()
            .method("POST")
            .uri("/api/v1/namespaces/a/configmaps")
            .header("content-length", len.to_string())
            .body(Full::new(bytes::Bytes::from(vec![b'x'; len])))
            .unwrap()
    }

    #[tokio::test]
    async fn refuses_an_announced_body_over_the_limit_and_passes_the_rest() {
        let svc = RefuseLayer::new(16).layer(inner());
        let resp = svc.clone().oneshot(req(16)).await.unwrap();
        assert_eq!(resp.status(), 200);
        let err = svc.oneshot(req(17)).await.unwrap_err();
        assert!(matches!(err, ServerError::TooLarge(m) if m.contains("17 bytes")));
    }
}
