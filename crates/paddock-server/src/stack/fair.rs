//! The fair-share gate as a layer: a tenant's request is admitted under its limits (token
//! buckets, in-flight and watch slots, `maxList`; docs/fairshare.md) before anything else is
//! done for it, and its slot is held until the response body has been sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http::{Request, Response};
use paddock_core::TenantId;
use tower::{Layer, Service};

use crate::fair::limits::Permit;
use crate::fair::queue::{Seat, SeatWait, WorkQueue};
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::tap::{self, Guard};

/// Admits a tenant's request under its limits (the replica's limiter; a fake in tests). May
/// lower a LIST's `limit` in the request's URI.
pub trait Admit: Send + Sync + 'static {
    fn admit<B>(
        &self,
        tenant: &TenantId,
        req: &mut Request<B>,
    ) -> Result<Option<Permit>, ServerError>;

    /// The replica's tenant-fair work queue an admitted request then waits in (none: off).
    fn work_queue(&self) -> Option<&Arc<WorkQueue>> {
        None
    }
}

/// Admits the requests of one caller (the stack is made per request): a tenant's under its
/// limits; an admin's pass.
pub struct FairShareLayer<A> {
    admit: Arc<A>,
    tenant: Option<TenantId>,
}

impl<A> FairShareLayer<A> {
    pub fn new(admit: Arc<A>, caller: &Caller) -> Self {
        let tenant = match caller {
            Caller::Tenant { tenant, .. } => Some(tenant.clone()),
            Caller::Admin { .. } => None,
        };
        FairShareLayer { admit, tenant }
    }
}

impl<A, S> Layer<S> for FairShareLayer<A> {
    type Service = FairShare<A, S>;
    fn layer(&self, inner: S) -> Self::Service {
        FairShare {
            admit: self.admit.clone(),
            tenant: self.tenant.clone(),
            inner,
        }
    }
}

/// See [`FairShareLayer`].
pub struct FairShare<A, S> {
    admit: Arc<A>,
    tenant: Option<TenantId>,
    inner: S,
}

impl<A, S: Clone> Clone for FairShare<A, S> {
    fn clone(&self) -> Self {
        FairShare {
            admit: self.admit.clone(),
            tenant: self.tenant.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<A, S, B> Service<Request<B>> for FairShare<A, S>
where
    A: Admit,
    S: Service<Request<B>, Response = Response<ResBody>, Error = ServerError>,
    S::Future: Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = ServerError;
    type Future = FairShareFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let tenant = self.tenant.clone();
        let (permit, wait) = match tenant.map(|t| (self.admit.admit(&t, &mut req), t)) {
            Some((Err(e), _)) => return refused(e),
            Some((Ok(p), t)) => {
                // A request holding in-flight seats takes as many of the replica's work
                // seats; a watch, the weight of its start (`Permit::work_seats`).
                let seats = p.as_ref().and_then(Permit::work_seats);
                let queue = seats.and(self.admit.work_queue());
                let wait = seats.zip(queue).map(|(n, q)| q.acquire(&t, n));
                (p, wait)
            }
            None => (None, None),
        };
        let until_headers = permit.as_ref().is_some_and(Permit::is_watch);
        // The inner future does nothing until polled, which is after the seats are held.
        FairShareFuture::Admitted {
            inner: self.inner.call(req),
            permit,
            wait,
            seat: None,
            until_headers,
        }
    }
}

/// A refusal, answered after its tarpit (`paddock_core::fair::refusal::Refusal::tarpit`).
fn refused<F>(error: ServerError) -> FairShareFuture<F> {
    let wait = match &error {
        ServerError::TooManyRequests(refusal) => refusal.tarpit(),
        _ => None,
    };
    match wait {
        Some(wait) => FairShareFuture::Tarpit {
            sleep: tokio::time::sleep(wait),
            error: Some(error),
        },
        None => FairShareFuture::Refused { error: Some(error) },
    }
}

pin_project_lite::pin_project! {
    /// The inner future, polled once the work seats are held (`wait` resolved), its answer's
    /// body holding the permit and the seats; or the refusal, perhaps tarpitted.
    #[project = FairShareProj]
    pub enum FairShareFuture<F> {
        Admitted { #[pin] inner: F, permit: Option<Permit>, wait: Option<SeatWait>, seat: Option<Seat>, until_headers: bool },
        Tarpit { #[pin] sleep: tokio::time::Sleep, error: Option<ServerError> },
        Refused { error: Option<ServerError> },
    }
}

impl<F> Future for FairShareFuture<F>
where
    F: Future<Output = Result<Response<ResBody>, ServerError>>,
{
    type Output = Result<Response<ResBody>, ServerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            FairShareProj::Refused { error } => Poll::Ready(Err(error
                .take()
                .unwrap_or_else(|| ServerError::Internal("polled after completion".into())))),
            FairShareProj::Tarpit { sleep, error } => {
                ready!(sleep.poll(cx));
                Poll::Ready(Err(error.take().unwrap_or_else(|| {
                    ServerError::Internal("polled after completion".into())
                })))
            }
            FairShareProj::Admitted {
                inner,
                permit,
                wait,
                seat,
                until_headers,
            } => {
                if let Some(w) = wait {
                    // A wait past the queue's timeout is a 429; the permit drops with it.
                    *seat = Some(ready!(Pin::new(w).poll(cx))?);
                    *wait = None;
                }
                // The seat is charged the time of the polls (the request's work).
                let resp = match seat.as_mut() {
                    Some(s) => ready!(s.timed(|| inner.poll(cx)))?,
                    None => ready!(inner.poll(cx))?,
                };
                // A watch's seats end with its start (dropped here); anything else holds them
                // until its answer's last byte.
                let resp = match seat.take() {
                    Some(s) if !*until_headers => resp.map(|b| tap::hold(b, s)),
                    _ => resp,
                };
                Poll::Ready(Ok(match permit.take() {
                    None => resp,
                    Some(p) => resp.map(|b| tap::hold(b, Guard(p))),
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fair::limits::Limiter;
    use bytes::Bytes;
    use http_body::Frame;
    use http_body_util::{BodyExt, StreamBody};
    use paddock_core::fair::share::Limits;
    use paddock_upstream::body::BoxError;
    use paddock_upstream::body::full;
    use tower::ServiceExt;

    /// The real limiter with one in-flight slot per tenant.
    struct OneSlot(Limiter, Limits);

    impl Admit for OneSlot {
        fn admit<B>(
            &self,
            t: &TenantId,
            req: &mut Request<B>,
        ) -> Result<Option<Permit>, ServerError> {
            let class = paddock_core::fair::share::classify(
                req.method().as_str(),
                req.uri().query(),
                false,
            );
            self.0.admit(t, &self.1, class)
        }
    }

    fn request() -> Request<()> {
        Request::builder()
            .uri("/api/v1/namespaces/a/pods/p")
            .body(())
            .unwrap()
    }

    fn tenant() -> Caller {
        Caller::Tenant {
            tenant: TenantId::parse("acme01").unwrap(),
            user: "u".into(),
            groups: Arc::from([]),
            serial: "01".into(),
        }
    }

    #[tokio::test]
    async fn holds_the_slot_until_the_body_is_sent_and_lets_admins_pass() {
        let limits = Limits {
            max_inflight: 1,
            ..Limits::default()
        };
        let gate = Arc::new(OneSlot(Limiter::default(), limits));
        // A streamed answer (a list, a watch, a big document) holds the slot to its end.
        let streamed = tower::service_fn(|_req: Request<()>| async {
            let chunk = Ok::<_, BoxError>(Frame::data(Bytes::from_static(b"body")));
            let body = StreamBody::new(futures_util::stream::iter([chunk]));
            Ok::<_, ServerError>(Response::new(ResBody::boxed(body)))
        });
        let svc = FairShareLayer::new(gate.clone(), &tenant()).layer(streamed);
        let first = svc.clone().oneshot(request()).await.unwrap();
        // The first answer's body is not sent yet: its slot is still held.
        let refused = svc.clone().oneshot(request()).await.unwrap_err();
        assert!(matches!(refused, ServerError::TooManyRequests(_)));
        let admin = Caller::Admin {
            user: "root".into(),
            serial: "02".into(),
        };
        let as_admin = FairShareLayer::new(gate.clone(), &admin).layer(streamed);
        assert_eq!(as_admin.oneshot(request()).await.unwrap().status(), 200);
        let _ = first.into_body().collect().await.unwrap();
        assert_eq!(svc.oneshot(request()).await.unwrap().status(), 200);
        // A small complete answer (one object, a Status) frees it as it leaves: its bytes go
        // out with its headers.
        let small = FairShareLayer::new(gate, &tenant()).layer(tower::service_fn(
            |_req: Request<()>| async { Ok::<_, ServerError>(Response::new(full("body"))) },
        ));
        let unread = small.clone().oneshot(request()).await.unwrap();
        assert_eq!(small.oneshot(request()).await.unwrap().status(), 200);
        drop(unread);
    }
}
