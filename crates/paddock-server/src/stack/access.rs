//! The outermost layer: every answer is logged, counted, audited and metered here, and every
//! error of the layers inside becomes its `Status` here (the one edge where that happens).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use http::{Method, Request, Response};
use tower::{Layer, Service};

use super::Answered;
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;

/// One request as it was answered.
pub struct Done<'a> {
    /// The authenticated caller (`None`: refused before authentication).
    pub caller: Option<&'a Caller>,
    pub method: &'a Method,
    pub path: &'a str,
    /// The Kubernetes verb (the plan's, or the method's when there is no plan).
    pub verb: &'static str,
    pub code: u16,
    pub elapsed: Duration,
    /// The request body's announced length (0 when none was announced).
    pub announced: u64,
}

/// Where answered requests are recorded (the replica's access log, metrics, audit trail and
/// per-tenant meters; a recorder in tests).
pub trait Observe: Send + Sync + 'static {
    /// What is kept of a request from its start (the audit trail's view of it).
    type Note: Send + 'static;
    /// Called as the request enters.
    fn begin<B>(&self, req: &mut Request<B>, start: Instant) -> Self::Note;
    /// Called with the answer; returns it as it leaves (its body metered).
    fn answered(
        &self,
        note: Self::Note,
        done: &Done<'_>,
        resp: Response<ResBody>,
    ) -> Response<ResBody>;
}

/// Logs and counts every answer of the service it wraps, as the answers to one caller (the
/// stack is made per request, with its caller known: `None` before authentication).
pub struct AccessLogLayer<O> {
    observer: Arc<O>,
    caller: Option<Arc<Caller>>,
}

impl<O> AccessLogLayer<O> {
    pub fn new(observer: Arc<O>, caller: Option<Arc<Caller>>) -> Self {
        AccessLogLayer { observer, caller }
    }
}

impl<O, S> Layer<S> for AccessLogLayer<O> {
    type Service = AccessLog<O, S>;
    fn layer(&self, inner: S) -> Self::Service {
        AccessLog {
            observer: self.observer.clone(),
            caller: self.caller.clone(),
            inner,
        }
    }
}

/// See [`AccessLogLayer`].
pub struct AccessLog<O, S> {
    observer: Arc<O>,
    caller: Option<Arc<Caller>>,
    inner: S,
}

impl<O, S: Clone> Clone for AccessLog<O, S> {
    fn clone(&self) -> Self {
        AccessLog {
            observer: self.observer.clone(),
            caller: self.caller.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<O, S, B> Service<Request<B>> for AccessLog<O, S>
where
    O: Observe,
    S: Service<Request<B>, Response = Response<ResBody>, Error = ServerError>,
{
    type Response = Response<ResBody>;
    type Error = Infallible;
    type Future = AccessLogFuture<O, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The services inside are always ready (they hold no capacity of their own).
        let _ = ready!(self.inner.poll_ready(cx));
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let start = Instant::now();
        let note = self.observer.begin(&mut req, start);
        let announced = req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let seen = Seen {
            caller: self.caller.clone(),
            method: req.method().clone(),
            path: req.uri().path().to_owned(),
            watch: asks_watch(req.uri()),
            announced,
            start,
        };
        AccessLogFuture {
            inner: self.inner.call(req),
            done: Some((self.observer.clone(), note, seen)),
        }
    }
}

/// Whether a request's query asks for a watch, as far as the verb of a request answered
/// without a plan goes ([`crate::observe::metrics::unplanned_verb`]).
pub(crate) fn asks_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| q.contains("watch="))
}

/// What the layer keeps of the request until it is answered.
struct Seen {
    caller: Option<Arc<Caller>>,
    method: Method,
    path: String,
    /// The query asks for a watch (the verb of a request refused before planning).
    watch: bool,
    announced: u64,
    start: Instant,
}

pin_project_lite::pin_project! {
    /// The inner service's future, recorded when it completes.
    pub struct AccessLogFuture<O: Observe, F> {
        #[pin]
        inner: F,
        done: Option<(Arc<O>, O::Note, Seen)>,
    }
}

impl<O, F> Future for AccessLogFuture<O, F>
where
    O: Observe,
    F: Future<Output = Result<Response<ResBody>, ServerError>>,
{
    type Output = Result<Response<ResBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        let Some((observer, note, seen)) = this.done.take() else {
            return Poll::Ready(Ok(
                ServerError::Internal("polled after completion".into()).into_response()
            ));
        };
        let caller = seen.caller.as_deref();
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                if matches!(e, ServerError::Internal(_) | ServerError::Upstream(_))
                    || e.is_upstream_fault()
                {
                    let tenant = caller.map_or("_anonymous", Caller::tenant_label);
                    tracing::warn!(tenant, error = %e, path = %seen.path, "request failed");
                }
                e.into_response()
            }
        };
        let verb = resp.extensions().get::<Answered>().map_or_else(
            || crate::observe::metrics::unplanned_verb(&seen.method, &seen.path, seen.watch),
            |a| a.verb,
        );
        let done = Done {
            caller,
            method: &seen.method,
            path: &seen.path,
            verb,
            code: resp.status().as_u16(),
            elapsed: seen.start.elapsed(),
            announced: seen.announced,
        };
        Poll::Ready(Ok(observer.answered(note, &done, resp)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use paddock_upstream::body::full;
    use parking_lot::Mutex;
    use tower::ServiceExt;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, &'static str, u16, u64)>>);

    impl Observe for Recorder {
        type Note = ();
        fn begin<B>(&self, _: &mut Request<B>, _: Instant) {}
        fn answered(&self, _: (), d: &Done<'_>, resp: Response<ResBody>) -> Response<ResBody> {
            let who = d
                .caller
                .map_or("_anonymous", Caller::tenant_label)
                .to_owned();
            self.0.lock().push((who, d.verb, d.code, d.announced));
            resp
        }
    }

    fn tenant() -> Arc<Caller> {
        Arc::new(Caller::Tenant {
            tenant: paddock_core::TenantId::parse("acme01").unwrap(),
            user: "u".into(),
            groups: Arc::from([]),
            serial: "01".into(),
        })
    }

    #[tokio::test]
    async fn records_answers_and_turns_errors_into_status() {
        let rec = Arc::new(Recorder::default());
        let ok = tower::service_fn(|_req: Request<()>| async {
            let mut r = Response::new(full("x"));
            r.extensions_mut().insert(Answered { verb: "watch" });
            Ok::<_, ServerError>(r)
        });
        let req = Request::builder()
            .uri("/api/v1/pods")
            .header("content-length", "7")
            .body(())
            .unwrap();
        let resp = AccessLogLayer::new(rec.clone(), Some(tenant()))
            .layer(ok)
            .oneshot(req)
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);

        let failing = tower::service_fn(|_req: Request<()>| async {
            Err::<Response<ResBody>, _>(ServerError::BadRequest("no".into()))
        });
        let req = Request::builder()
            .method("DELETE")
            .uri("/x")
            .body(())
            .unwrap();
        let resp = AccessLogLayer::new(rec.clone(), None)
            .layer(failing)
            .oneshot(req)
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let seen = rec.0.lock().clone();
        assert_eq!(
            seen,
            vec![
                ("acme01".to_owned(), "watch", 200, 7),
                ("_anonymous".to_owned(), "delete", 400, 0)
            ]
        );
    }
}
