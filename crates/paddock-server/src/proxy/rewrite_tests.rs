//! The rewrite step alone: upstream's answer (a real `Incoming` from an in-process
//! connection) rewritten for the tenant, whole or streamed, over a fake replica.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::BodyExt;
use tower::Layer;

use crate::proxy::{Step, step_fn};

use super::*;
use crate::proxy::test_support::{job, json_answer, sent, text};

/// Reads bodies as upstream's client does; counts open watches.
#[derive(Default)]
struct Fake {
    open_watches: Arc<AtomicUsize>,
    shutdown: CancellationToken,
    lost: CancellationToken,
}

struct Open(Arc<AtomicUsize>);
impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Rewriting for Fake {
    type WatchGuard = Open;
    async fn collect_until(
        &self,
        body: AnswerBody,
        limit: usize,
        _: tokio::time::Instant,
    ) -> Result<Bytes, ServerError> {
        let b = body.collect().await.unwrap().to_bytes();
        assert!(b.len() <= limit);
        Ok(b)
    }
    fn watch_opened(&self) -> Open {
        self.open_watches.fetch_add(1, Ordering::SeqCst);
        Open(self.open_watches.clone())
    }
    fn shutdown(&self) -> CancellationToken {
        self.shutdown.clone()
    }
    fn upstream_lost(&self) -> CancellationToken {
        self.lost.clone()
    }
}

/// `method uri` through the step, the inner service answering `body` with `status`.
async fn rewrite(
    fake: &Arc<Fake>,
    method: &str,
    uri: &str,
    status: StatusCode,
    body: &'static str,
) -> Response<ResBody> {
    let inner = step_fn(move |p: Planned<()>| async move {
        Ok::<_, ServerError>(FollowedUp::Upstream(sent(
            p.job,
            json_answer(status, body).await,
        )))
    });
    let planned = Planned {
        job: job(method, uri),
        req: http::Request::new(()),
    };
    RewriteLayer::new(fake)
        .layer(inner)
        .run(planned)
        .await
        .unwrap()
}

const CM: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"foofoo-web","resourceVersion":"7"},"data":{"k":"v"}}"#;

#[tokio::test]
async fn an_answer_made_by_a_follow_up_passes_untouched() {
    let inner = step_fn(|_: Planned<()>| async {
        Ok::<_, ServerError>(FollowedUp::Answered(Response::new(full("as it is"))))
    });
    let planned = Planned {
        job: job("GET", "/api/v1/namespaces/web/configmaps/c"),
        req: http::Request::new(()),
    };
    let fake = Arc::new(Fake::default());
    let resp = RewriteLayer::new(&fake)
        .layer(inner)
        .run(planned)
        .await
        .unwrap();
    assert_eq!(text(resp).await, "as it is");
}

#[tokio::test]
async fn one_object_is_rewritten_whole_into_the_tenants_names() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces/web/configmaps/c";
    let resp = rewrite(&fake, "GET", uri, StatusCode::OK, CM).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()[http::header::CONTENT_TYPE],
        "application/json"
    );
    let v: serde_json::Value = serde_json::from_str(&text(resp).await).unwrap();
    assert_eq!(v["metadata"]["namespace"], "web");
    assert_eq!(v["metadata"]["name"], "c");
    assert_eq!(v["data"]["k"], "v");
}

#[tokio::test]
async fn a_list_is_rewritten_as_a_stream() {
    let fake = Arc::new(Fake::default());
    let list = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a","namespace":"foofoo-web"}},{"metadata":{"name":"b","namespace":"foofoo-web"}}]}"#;
    let uri = "/api/v1/namespaces/web/configmaps";
    let resp = rewrite(&fake, "GET", uri, StatusCode::OK, list).await;
    let body = text(resp).await;
    assert!(!body.contains("foofoo"), "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["items"][1]["metadata"]["namespace"], "web");
    assert_eq!(fake.open_watches.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_watch_is_counted_while_its_body_lives() {
    let fake = Arc::new(Fake::default());
    let event = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"foofoo-web"}}}
"#;
    let uri = "/api/v1/namespaces/web/configmaps?watch=1";
    let resp = rewrite(&fake, "GET", uri, StatusCode::OK, event).await;
    assert_eq!(fake.open_watches.load(Ordering::SeqCst), 1);
    let body = text(resp).await;
    assert!(body.contains(r#""namespace":"web""#), "{body}");
    assert!(!body.contains("foofoo"), "{body}");
    assert_eq!(fake.open_watches.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_upstream_refusal_names_only_the_tenants_objects() {
    let fake = Arc::new(Fake::default());
    let status = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"c\" is forbidden: User \"x\" cannot get resource \"configmaps\" in the namespace \"foofoo-web\"","reason":"Forbidden","details":{"name":"c","kind":"configmaps"},"code":403}"#;
    let uri = "/api/v1/namespaces/web/configmaps/c";
    let resp = rewrite(&fake, "GET", uri, StatusCode::FORBIDDEN, status).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body = text(resp).await;
    assert!(!body.contains("foofoo"), "{body}");
    assert!(body.contains(r#"namespace \"web\""#), "{body}");
}
