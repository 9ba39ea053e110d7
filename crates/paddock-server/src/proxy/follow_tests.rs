//! The follow-up step alone: which of the plan's actions run, on which answers, over a fake
//! replica and an inner service that answers as upstream would.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use tower::Layer;

use crate::proxy::{Step, step_fn};

use super::*;
use crate::proxy::test_support::{job, json_answer, sent, text};
use paddock_upstream::body::full;

/// Records the actions carried out; `absent` says whether the namespace is missing.
#[derive(Default)]
struct Fake {
    absent: bool,
    platform: bool,
    did: Mutex<Vec<String>>,
}

impl Fake {
    fn did(&self) -> Vec<String> {
        self.did.lock().unwrap().clone()
    }
}

impl FollowingUp for Fake {
    async fn absent_namespace(&self, job: &Job) -> Result<Option<Response<ResBody>>, ServerError> {
        self.did.lock().unwrap().push("absent?".into());
        Ok(self.absent.then(|| {
            Response::new(full(format!(
                "no namespace for {}",
                job.plan.upstream_path_and_query
            )))
        }))
    }
    async fn sync_rbac(&self, job: &Job, new_crd: Option<&NewCrd>) {
        let crd = new_crd
            .map(|c| format!(" crd {}", c.group))
            .unwrap_or_default();
        self.did
            .lock()
            .unwrap()
            .push(format!("sync {}{crd}", job.caller.tenant));
    }
    async fn self_review(&self, sent: Sent) -> Result<Response<ResBody>, ServerError> {
        self.did.lock().unwrap().push("review".into());
        Ok(Response::new(full(format!(
            "review {}",
            sent.resp.status()
        ))))
    }
    async fn bind_namespace(&self, sent: Sent) -> Result<Response<ResBody>, ServerError> {
        self.did.lock().unwrap().push("bind".into());
        Ok(Response::new(full(format!("bound {}", sent.resp.status()))))
    }
    async fn platform_object(
        &self,
        _sent: &Sent,
        path: &str,
    ) -> Result<Option<Response<AnswerBody>>, ServerError> {
        self.did.lock().unwrap().push(format!("platform? {path}"));
        if !self.platform {
            return Ok(None);
        }
        Ok(Some(json_answer(StatusCode::OK, "{}").await))
    }
}

/// Runs `method uri` through the step, upstream answering `status`.
async fn follow(fake: &Arc<Fake>, method: &str, uri: &str, status: StatusCode) -> FollowedUp {
    let inner = step_fn(move |p: Planned<()>| async move {
        Ok::<_, ServerError>(sent(p.job, json_answer(status, "{}").await))
    });
    let planned = Planned {
        job: job(method, uri),
        req: http::Request::new(()),
    };
    FollowUpLayer::new(fake)
        .layer(inner)
        .run(planned)
        .await
        .unwrap()
}

async fn answered(f: FollowedUp) -> String {
    match f {
        FollowedUp::Answered(r) => text(r).await,
        FollowedUp::Upstream(s) => format!("upstream {}", s.resp.status()),
    }
}

#[tokio::test]
async fn a_refusal_in_an_absent_namespace_is_answered_as_a_cluster_admin_would_be() {
    let fake = Arc::new(Fake {
        absent: true,
        ..Fake::default()
    });
    let uri = "/api/v1/namespaces/nowhere/configmaps";
    let f = follow(&fake, "GET", uri, StatusCode::FORBIDDEN).await;
    assert_eq!(
        answered(f).await,
        "no namespace for /api/v1/namespaces/foofoo-nowhere/configmaps"
    );
    assert_eq!(fake.did(), ["absent?"]);
}

#[tokio::test]
async fn a_refusal_in_an_existing_namespace_stays_upstreams() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces/web/configmaps";
    let f = follow(&fake, "GET", uri, StatusCode::FORBIDDEN).await;
    assert_eq!(answered(f).await, "upstream 403 Forbidden");
    assert_eq!(fake.did(), ["absent?"]);
}

#[tokio::test]
async fn a_changed_cluster_role_binding_syncs_the_mirrors_before_the_answer() {
    let fake = Arc::new(Fake::default());
    let uri = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    assert!(job("POST", uri).plan.actions.sync_rbac);
    let f = follow(&fake, "POST", uri, StatusCode::CREATED).await;
    assert_eq!(answered(f).await, "upstream 201 Created");
    assert_eq!(fake.did(), ["sync foofoo"]);
}

#[tokio::test]
async fn a_self_review_is_answered_for_the_tenant() {
    let fake = Arc::new(Fake::default());
    let uri = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    assert!(job("POST", uri).plan.actions.self_review);
    let f = follow(&fake, "POST", uri, StatusCode::CREATED).await;
    assert_eq!(answered(f).await, "review 201 Created");
    assert_eq!(fake.did(), ["review"]);
}

#[tokio::test]
async fn a_new_namespace_is_bound_but_a_failed_creation_is_not() {
    let fake = Arc::new(Fake::default());
    let uri = "/api/v1/namespaces";
    assert!(job("POST", uri).plan.actions.bind_namespace);
    let f = follow(&fake, "POST", uri, StatusCode::CREATED).await;
    assert_eq!(answered(f).await, "bound 201 Created");
    let f = follow(&fake, "POST", uri, StatusCode::CONFLICT).await;
    assert_eq!(answered(f).await, "upstream 409 Conflict");
    assert_eq!(fake.did(), ["bind"]);
}

#[tokio::test]
async fn a_plain_read_has_no_follow_ups() {
    let fake = Arc::new(Fake::default());
    let f = follow(
        &fake,
        "GET",
        "/api/v1/namespaces/web/pods/p",
        StatusCode::OK,
    )
    .await;
    assert_eq!(answered(f).await, "upstream 200 OK");
    assert!(fake.did().is_empty());
}

#[tokio::test]
async fn a_missed_get_of_a_flowschema_reads_the_platforms_object_of_that_name() {
    let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    let fake = Arc::new(Fake {
        platform: true,
        ..Fake::default()
    });
    let f = follow(&fake, "GET", &format!("{fs}/exempt"), StatusCode::NOT_FOUND).await;
    assert_eq!(answered(f).await, "upstream 200 OK");
    assert_eq!(fake.did(), [format!("platform? {fs}/exempt")]);
    // Not the platform's (another tenant's, or absent): the 404 stands.
    let fake = Arc::new(Fake::default());
    let f = follow(
        &fake,
        "GET",
        &format!("{fs}/barbar-x"),
        StatusCode::NOT_FOUND,
    )
    .await;
    assert_eq!(answered(f).await, "upstream 404 Not Found");
    assert_eq!(fake.did(), [format!("platform? {fs}/barbar-x")]);
}

#[tokio::test]
async fn a_missed_get_of_another_kind_is_not_followed() {
    let fake = Arc::new(Fake {
        platform: true,
        ..Fake::default()
    });
    let cr = "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin";
    let f = follow(&fake, "GET", cr, StatusCode::NOT_FOUND).await;
    assert_eq!(answered(f).await, "upstream 404 Not Found");
    assert!(fake.did().is_empty());
}

#[tokio::test]
async fn a_missed_write_to_the_platforms_flowschema_is_refused_with_a_status() {
    let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/catch-all";
    let fake = Arc::new(Fake {
        platform: true,
        ..Fake::default()
    });
    let f = follow(&fake, "DELETE", fs, StatusCode::NOT_FOUND).await;
    let text = answered(f).await;
    assert!(
        text.contains("\"code\":403") && text.contains("catch-all is the platform's"),
        "{text}"
    );
    // No platform object of that name: the NotFound stands.
    let fake = Arc::new(Fake::default());
    let f = follow(&fake, "PATCH", fs, StatusCode::NOT_FOUND).await;
    assert_eq!(answered(f).await, "upstream 404 Not Found");
}

#[tokio::test]
async fn a_new_crd_is_handed_to_the_sync_before_the_answer() {
    let fake = Arc::new(Fake::default());
    let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let job = job("POST", uri);
    assert!(job.plan.actions.sync_rbac);
    let mut s = sent(job, json_answer(StatusCode::CREATED, "{}").await);
    s.with.new_crd = Some(Box::new(NewCrd {
        group: "foofoo-example.com".into(),
        plural: "widgets".into(),
    }));
    let f = follow_ups(&*fake, s).await.unwrap();
    assert_eq!(answered(f).await, "upstream 201 Created");
    assert_eq!(fake.did(), ["sync foofoo crd foofoo-example.com"]);
}
