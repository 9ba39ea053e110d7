//! The send step alone: the plan's route picks the pool, the deadline is the one the answer
//! carries on, and upstream errors are counted by kind.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use crate::proxy::Step;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;

use super::*;
use crate::proxy::SentWith;
use crate::proxy::test_support::{job, upstream_answer};

/// Answers every short request with `status` (or `error`), records what it was asked.
struct Fake {
    status: StatusCode,
    timeout: bool,
    deadline: Instant,
    pools: Mutex<Vec<String>>,
    errors: Mutex<Vec<&'static str>>,
}

impl Fake {
    fn new(status: StatusCode, timeout: bool) -> Arc<Fake> {
        Arc::new(Fake {
            status,
            timeout,
            deadline: Instant::now() + std::time::Duration::from_secs(3600),
            pools: Mutex::default(),
            errors: Mutex::default(),
        })
    }
}

impl Sending for Fake {
    fn deadline(&self) -> Instant {
        self.deadline
    }
    async fn send_watch(&self, _: Request<UpBody>) -> WatchAnswer {
        self.pools.lock().unwrap().push("watch".into());
        Err(ServerError::Internal("no watch pool here".into()))
    }
    async fn send_until(&self, request: Request<UpBody>, pool: Route, deadline: Instant) -> Answer {
        assert_eq!(deadline, self.deadline, "the deadline of the port");
        self.pools
            .lock()
            .unwrap()
            .push(format!("{pool:?} {}", request.uri()));
        if self.timeout {
            return Err(ServerError::UpstreamTimeout(
                std::time::Duration::from_secs(1),
                "GET".into(),
            ));
        }
        let resp = Response::builder()
            .status(self.status)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        Ok(upstream_answer(resp).await)
    }
    fn upstream_error(&self, kind: &'static str) {
        self.errors.lock().unwrap().push(kind);
    }
    async fn replay(self: Arc<Self>, _: Replay) {
        unreachable!("no replay without a spanning tenant's write");
    }
}

fn outbound(method: &str, uri: &str) -> Outbound {
    let job = job(method, uri);
    let request = Request::builder()
        .method(method)
        .uri(format!(
            "https://upstream{}",
            job.plan.upstream_path_and_query
        ))
        .body(paddock_upstream::body::empty_up())
        .unwrap();
    Outbound {
        job,
        request,
        sent: SentWith {
            who: paddock_core::identity::As::Real,
            rules_namespace: None,
            client_upgrade: None,
            new_crd: None,
        },
    }
}

#[tokio::test]
async fn a_get_goes_through_the_short_pool_and_carries_the_deadline() {
    let fake = Fake::new(StatusCode::OK, false);
    let sent = Send::new(&fake)
        .run(outbound("GET", "/api/v1/namespaces/web/pods/p"))
        .await
        .unwrap();
    assert_eq!(sent.resp.status(), StatusCode::OK);
    assert_eq!(sent.deadline, fake.deadline);
    assert!(sent.slot.is_none());
    assert_eq!(
        *fake.pools.lock().unwrap(),
        ["Short https://upstream/api/v1/namespaces/foofoo-web/pods/p"]
    );
    assert!(fake.errors.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_list_goes_through_the_bulk_pool_and_a_5xx_is_counted() {
    let fake = Fake::new(StatusCode::SERVICE_UNAVAILABLE, false);
    let sent = Send::new(&fake)
        .run(outbound("GET", "/api/v1/namespaces/web/pods"))
        .await
        .unwrap();
    // The answer is upstream's, passed on: the rewrite step makes the tenant's Status of it.
    assert_eq!(sent.resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        *fake.pools.lock().unwrap(),
        ["Bulk https://upstream/api/v1/namespaces/foofoo-web/pods"]
    );
    assert_eq!(*fake.errors.lock().unwrap(), ["status_5xx"]);
}

#[tokio::test]
async fn a_timeout_and_a_failed_watch_are_counted_apart() {
    let fake = Fake::new(StatusCode::OK, true);
    let err = Send::new(&fake)
        .run(outbound("GET", "/api/v1/namespaces/web/configmaps/c"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.into_response().status(), StatusCode::GATEWAY_TIMEOUT);
    let watch = Send::new(&fake)
        .run(outbound("GET", "/api/v1/namespaces/web/pods?watch=1"))
        .await;
    assert!(watch.is_err());
    assert_eq!(fake.pools.lock().unwrap().last().unwrap(), "watch");
    assert_eq!(*fake.errors.lock().unwrap(), ["timeout", "connect"]);
}
