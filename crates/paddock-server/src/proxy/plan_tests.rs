//! The planning layer alone, over a fake replica and a trivial inner service.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use paddock_core::TenantId;
use tower::Layer;

use crate::proxy::{Step, step_fn};

use super::*;
use paddock_upstream::body::full;

const CORE: &[u8] = include_bytes!("../../../paddock-core/testdata/discovery-core.json");
const APIS: &[u8] = include_bytes!("../../../paddock-core/testdata/discovery-apis.json");
const NO_GROUPS: &[u8] = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}"#;

/// A replica whose discovery first knows the core group only, and every group once re-read.
struct Fake {
    before: Arc<Catalog>,
    after: Arc<Catalog>,
    refreshes: AtomicUsize,
    acting_as: Option<(String, Vec<String>)>,
}

impl Fake {
    fn new(acting_as: Option<(String, Vec<String>)>) -> Arc<Fake> {
        Arc::new(Fake {
            before: Arc::new(Catalog::from_aggregated(CORE, NO_GROUPS).unwrap()),
            after: Arc::new(Catalog::from_aggregated(CORE, APIS).unwrap()),
            refreshes: AtomicUsize::new(0),
            acting_as,
        })
    }
}

impl Planning for Fake {
    async fn acting(
        &self,
        _: &TenantUser,
        _: &HeaderMap,
    ) -> Result<Option<(String, Vec<String>)>, ServerError> {
        Ok(self.acting_as.clone())
    }
    async fn catalog(&self) -> Result<Arc<Catalog>, ServerError> {
        Ok(self.before.clone())
    }
    async fn refreshed(&self) -> Result<Arc<Catalog>, ServerError> {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        Ok(self.after.clone())
    }
    async fn shared_object_absent(
        &self,
        _: &TenantContext,
        _: &ParsedRequest,
        _: &TenantUser,
    ) -> Result<Option<Response<ResBody>>, ServerError> {
        Ok(None)
    }
}

fn caller() -> TenantUser {
    TenantUser {
        tenant: TenantId::parse("foofoo").unwrap(),
        user: "alice".into(),
        groups: Arc::from(["dev".to_owned()]),
    }
}

/// Answers with the upstream path and the user the request would be sent as.
async fn echo(planned: Planned<()>) -> Result<Response<ResBody>, ServerError> {
    let job = &planned.job;
    let text = format!(
        "{} as {}",
        job.plan.upstream_path_and_query, job.caller.user
    );
    Ok(Response::new(full(text)))
}

async fn body_of(resp: Response<ResBody>) -> String {
    use http_body_util::BodyExt;
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn get(path: &str) -> Request<()> {
    Request::builder().uri(path).body(()).unwrap()
}

#[tokio::test]
async fn a_group_unknown_to_the_catalog_is_planned_after_one_refresh() {
    let fake = Fake::new(None);
    let svc = PlanLayer::new(&fake).layer(step_fn(echo));
    let req = get("/apis/apps/v1/namespaces/web/deployments?watch=1");
    let (resp, verb) = svc.clone().run((caller(), req)).await.unwrap();
    assert_eq!(verb, "watch");
    let body = body_of(resp).await;
    assert_eq!(
        body,
        "/apis/apps/v1/namespaces/foofoo-web/deployments?watch=1 as alice"
    );
    assert_eq!(fake.refreshes.load(Ordering::SeqCst), 1);
    // Known already: no refresh.
    let (resp, verb) = svc
        .run((caller(), get("/api/v1/namespaces/web/pods")))
        .await
        .unwrap();
    assert_eq!(
        (verb, body_of(resp).await.as_str()),
        ("list", "/api/v1/namespaces/foofoo-web/pods as alice")
    );
    assert_eq!(fake.refreshes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_group_unknown_after_the_refresh_is_not_found_and_never_sent() {
    let fake = Fake::new(None);
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let inner = step_fn(move |p: Planned<()>| {
        counted.fetch_add(1, Ordering::SeqCst);
        echo(p)
    });
    let svc = PlanLayer::new(&fake).layer(inner);
    let err = svc
        .run((caller(), get("/apis/nope.example.com/v1/things")))
        .await
        .unwrap_err();
    assert_eq!(err.into_response().status(), 404);
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    assert_eq!(fake.refreshes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_acting_identity_replaces_the_caller() {
    let fake = Fake::new(Some(("bob".into(), vec![])));
    let svc = PlanLayer::new(&fake).layer(step_fn(echo));
    let (resp, _) = svc
        .run((caller(), get("/api/v1/namespaces/web/pods/p")))
        .await
        .unwrap();
    assert_eq!(
        body_of(resp).await,
        "/api/v1/namespaces/foofoo-web/pods/p as bob"
    );
}
