//! The body-translation step alone: the upstream request it builds (URI, headers, identity,
//! translated body), over a fake replica and an inner service that keeps what it is sent.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use http::StatusCode;
use http_body_util::{BodyExt, Full};
use tower::Layer;

use crate::proxy::{Step, step_fn};

use super::*;
use crate::proxy::test_support::{job, json_answer, sent};

/// Bodies up to 1 KiB; records namespace admissions; the tenant at `level`.
#[derive(Default)]
struct Fake {
    admitted: Mutex<Vec<String>>,
    level: PodSecurityLevel,
}

impl Translating for Fake {
    fn upstream_uri(&self, path_and_query: &str) -> Result<Uri, ServerError> {
        Ok(format!("https://upstream.test{path_and_query}")
            .parse()
            .unwrap())
    }
    fn max_body_bytes(&self) -> usize {
        1024
    }
    fn pod_security(&self, _: &TenantId) -> PodSecurityLevel {
        self.level
    }
    async fn admit_namespace_create(
        &self,
        tenant: &TenantId,
        translated: &[u8],
        _: &str,
        dry_run: bool,
    ) -> Result<(), ServerError> {
        let v: serde_json::Value = serde_json::from_slice(translated).unwrap();
        self.admitted.lock().unwrap().push(format!(
            "{tenant} {} dry_run={dry_run}",
            v["metadata"]["name"].as_str().unwrap()
        ));
        Ok(())
    }
    fn replay_of(
        &self,
        _: &TenantId,
        _: &Plan,
        _: &Method,
        _: &HeaderMap,
        _: Bytes,
    ) -> Option<Replay> {
        None
    }
}

/// What reached the inner service: the upstream request's head and its body.
type Kept = Arc<Mutex<Option<(http::request::Parts, Bytes)>>>;

/// Runs `req` (planned as `method uri`) through the step; what it sends is kept.
async fn translate(
    fake: &Arc<Fake>,
    method: &str,
    uri: &str,
    req: http::Request<Full<Bytes>>,
) -> (Result<Sent, ServerError>, Kept) {
    let kept: Kept = Arc::default();
    let keep = kept.clone();
    let inner = step_fn(move |out: Outbound| {
        let keep = keep.clone();
        async move {
            let (parts, body) = out.request.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            *keep.lock().unwrap() = Some((parts, body));
            Ok::<_, ServerError>(sent(out.job, json_answer(StatusCode::OK, "{}").await))
        }
    });
    let planned = Planned {
        job: job(method, uri),
        req,
    };
    let r = TranslateLayer::new(fake).layer(inner).run(planned).await;
    (r, kept)
}

fn request(method: &str, body: &'static str) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method(method)
        .header(header::CONTENT_TYPE, "application/json")
        .header("impersonate-user", "system:admin")
        .header("impersonate-group", "system:masters")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

fn header_values<'a>(parts: &'a http::request::Parts, name: &str) -> Vec<&'a str> {
    parts
        .headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_get_goes_to_the_translated_path_as_the_tenant_user() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces/web/pods/p";
    let (r, kept) = translate(&fake, "GET", uri, request("GET", "")).await;
    r.unwrap();
    let (parts, body) = kept.lock().unwrap().take().unwrap();
    assert_eq!(
        parts.uri,
        "https://upstream.test/api/v1/namespaces/foofoo-web/pods/p"
    );
    assert!(body.is_empty());
    // The client's own Impersonate-* headers never reach upstream: only paddock's identity.
    let users = header_values(&parts, "impersonate-user");
    assert_eq!(users.len(), 1);
    assert!(
        users[0].contains("foofoo") && users[0].contains("alice"),
        "{users:?}"
    );
    let groups = header_values(&parts, "impersonate-group");
    assert!(!groups.contains(&"system:masters"), "{groups:?}");
    assert!(parts.headers.contains_key(header::ACCEPT));
}

#[tokio::test]
async fn a_write_is_sent_with_its_body_in_upstream_names() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces/web/configmaps";
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"web"},"data":{"k":"v"}}"#;
    let (r, kept) = translate(&fake, "POST", uri, request("POST", cm)).await;
    r.unwrap();
    let (parts, body) = kept.lock().unwrap().take().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["metadata"]["namespace"], "foofoo-web");
    assert_eq!(v["data"]["k"], "v");
    assert!(
        parts.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert!(fake.admitted.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_new_namespace_is_admitted_under_the_quota_in_upstream_names() {
    let fake = Arc::new(Fake::default());
    let ns = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev"}}"#;
    let (r, _) = translate(&fake, "POST", "/api/v1/namespaces", request("POST", ns)).await;
    r.unwrap();
    assert_eq!(
        *fake.admitted.lock().unwrap(),
        ["foofoo foofoo-dev dry_run=false"]
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413_and_never_sent() {
    let fake = Arc::new(Fake::default());
    let big: &'static str = Box::leak(
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c"}},"data":{{"k":"{}"}}}}"#,
            "x".repeat(2048)
        )
        .into_boxed_str(),
    );
    let uri = "/api/v1/namespaces/web/configmaps";
    let (r, kept) = translate(&fake, "POST", uri, request("POST", big)).await;
    let err = r.err().unwrap();
    assert_eq!(err.into_response().status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(kept.lock().unwrap().is_none());
}

#[tokio::test]
async fn a_body_naming_another_namespace_is_refused_and_never_sent() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces/web/configmaps";
    let cm =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"other"}}"#;
    let (r, kept) = translate(&fake, "POST", uri, request("POST", cm)).await;
    let status = r.err().unwrap().into_response().status();
    assert!(status.is_client_error(), "{status}");
    assert!(kept.lock().unwrap().is_none());
}

const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
const PRIVILEGED_NS: &str = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev","labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}"#;

/// The enforce label and the privileged groups a namespace write was sent with.
async fn sent_namespace(
    fake: Fake,
    method: &str,
    uri: &str,
    body: &'static str,
) -> (String, Vec<String>) {
    let fake = Arc::new(fake);
    let mut req = request(method, body);
    if method == "PATCH" {
        let ct = http::HeaderValue::from_static("application/merge-patch+json");
        req.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    let (r, kept) = translate(&fake, method, uri, req).await;
    r.unwrap();
    let (parts, body) = kept.lock().unwrap().take().unwrap();
    let label = if body.is_empty() {
        String::new()
    } else {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["metadata"]["labels"][ENFORCE]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let groups = header_values(&parts, "impersonate-group")
        .into_iter()
        .filter(|g| g.starts_with(paddock_core::admission::podsecurity::PRIVILEGED_GROUP_PREFIX))
        .map(str::to_owned)
        .collect();
    (label, groups)
}

#[tokio::test]
async fn privileged_is_held_at_baseline_for_a_tenant_without_the_setting() {
    let (label, groups) =
        sent_namespace(Fake::default(), "POST", "/api/v1/namespaces", PRIVILEGED_NS).await;
    assert_eq!(label, "baseline");
    assert!(groups.is_empty(), "{groups:?}");
}

#[tokio::test]
async fn a_privileged_tenant_keeps_its_label_and_asserts_its_own_group() {
    let privileged = || Fake {
        level: PodSecurityLevel::Privileged,
        ..Fake::default()
    };
    let (label, groups) =
        sent_namespace(privileged(), "POST", "/api/v1/namespaces", PRIVILEGED_NS).await;
    assert_eq!(label, "privileged");
    assert_eq!(groups, ["paddock:pod-security-privileged:foofoo"]);
    // Unasked, a namespace still gets the platform's floor.
    let plain = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev"}}"#;
    let (label, _) = sent_namespace(privileged(), "POST", "/api/v1/namespaces", plain).await;
    assert_eq!(label, "baseline");
    // A label patch carries the group too; a read does not.
    let patch = r#"{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}"#;
    let (_, groups) = sent_namespace(privileged(), "PATCH", "/api/v1/namespaces/dev", patch).await;
    assert_eq!(groups.len(), 1, "{groups:?}");
    let (_, groups) = sent_namespace(privileged(), "GET", "/api/v1/namespaces/dev", "").await;
    assert!(groups.is_empty(), "{groups:?}");
}

/// What the step decided of a request's new CRD (`SentWith::new_crd`), as `(group, plural)`.
async fn new_crd_of(uri: &str, body: &'static str) -> Option<(String, String)> {
    let inner = step_fn(move |out: Outbound| async move {
        let mut s = sent(out.job, json_answer(StatusCode::OK, "{}").await);
        s.with = out.sent;
        Ok::<_, ServerError>(s)
    });
    let planned = Planned {
        job: job("POST", uri),
        req: request("POST", body),
    };
    let fake = Arc::new(Fake::default());
    let s = TranslateLayer::new(&fake).layer(inner).run(planned).await;
    s.unwrap().with.new_crd.map(|c| (c.group, c.plural))
}

#[tokio::test]
async fn a_crd_create_names_its_group_for_the_grant_wait_and_a_dry_run_does_not() {
    let crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true}]}}"#;
    let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(
        new_crd_of(uri, crd).await,
        Some(("foofoo-example.com".into(), "widgets".into()))
    );
    assert_eq!(new_crd_of(&format!("{uri}?dryRun=All"), crd).await, None);
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#;
    assert_eq!(
        new_crd_of("/api/v1/namespaces/web/configmaps", cm).await,
        None
    );
}
