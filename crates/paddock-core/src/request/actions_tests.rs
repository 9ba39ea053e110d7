//! The decisions a plan carries: route, identity, actions.

use super::*;
use crate::catalog::context::tests::ctx;
use crate::request::{Plan, identity_for, needs_sync, parse_request, plan};

fn planned(method: &str, path: &str, query: Option<&str>) -> Plan {
    plan(&ctx(), parse_request(method, path, query).unwrap()).unwrap()
}

#[test]
fn route_by_verb_and_length() {
    let cases = [
        ("GET", "/api/v1/namespaces/a/pods/p", None, Route::Short),
        ("POST", "/api/v1/namespaces/a/pods", None, Route::Short),
        ("GET", "/api/v1/namespaces/a/pods", None, Route::Bulk),
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            Some("watch=true"),
            Route::Watch,
        ),
        ("GET", "/api/v1/watch/namespaces/a/pods", None, Route::Watch),
        (
            "GET",
            "/api/v1/namespaces/a/pods/p/log",
            Some("follow=true"),
            Route::Stream,
        ),
        ("GET", "/api/v1/namespaces/a/pods/p/log", None, Route::Short),
        (
            "POST",
            "/api/v1/namespaces/a/pods/p/exec",
            Some("command=ls"),
            Route::Stream,
        ),
        ("GET", "/apis", None, Route::Short),
    ];
    for (method, path, query, route) in cases {
        assert_eq!(
            planned(method, path, query).route,
            route,
            "{method} {path} {query:?}"
        );
    }
}

#[test]
fn identity_real_shadow_or_by_review_body() {
    assert_eq!(
        planned("GET", "/api/v1/namespaces/a/pods/p", None).identity,
        Identity::Real
    );
    assert_eq!(
        planned("GET", "/api/v1/nodes", None).identity,
        Identity::Shadow
    );
    let crb = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    assert_eq!(planned("POST", crb, None).identity, Identity::Shadow);
    // The namespace object itself is cluster-scoped; anything inside one is not.
    assert_eq!(
        planned("GET", "/api/v1/namespaces/a", None).identity,
        Identity::Shadow
    );
    assert_eq!(
        planned("PUT", "/api/v1/namespaces/a/status", None).identity,
        Identity::Shadow
    );
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let p = planned("POST", ssar, None);
    assert_eq!(p.identity, Identity::SelfAccessReview);
    let cluster = br#"{"spec":{"resourceAttributes":{"resource":"nodes"}}}"#;
    let in_ns = br#"{"spec":{"resourceAttributes":{"resource":"pods","namespace":"x"}}}"#;
    let non_resource = br#"{"spec":{"nonResourceAttributes":{"path":"/api"}}}"#;
    assert_eq!(identity_for(&p, Some(cluster)), As::Shadow);
    assert_eq!(identity_for(&p, Some(non_resource)), As::Shadow);
    assert_eq!(identity_for(&p, Some(in_ns)), As::Real);
    assert_eq!(identity_for(&p, Some(b"not json")), As::Real);
    assert_eq!(identity_for(&p, None), As::Real);
    let sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    assert_eq!(planned("POST", sar, None).identity, Identity::Shadow);
    let lsar = "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews";
    assert_eq!(planned("POST", lsar, None).identity, Identity::Real);
    // A TokenReview as the shadow (only it holds `create tokenreviews` upstream); a
    // SelfSubjectReview as the caller.
    let tr = "/apis/authentication.k8s.io/v1/tokenreviews";
    assert_eq!(planned("POST", tr, None).identity, Identity::Shadow);
    let ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    assert_eq!(planned("POST", ssr, None).identity, Identity::Real);
}

#[test]
fn actions_of_namespace_writes() {
    let create = planned("POST", "/api/v1/namespaces", None).actions;
    assert!(create.lock_namespace_labels && create.admit_namespace_quota && create.bind_namespace);
    let update = planned("PUT", "/api/v1/namespaces/a", None).actions;
    assert!(
        update.lock_namespace_labels && !update.admit_namespace_quota && !update.bind_namespace
    );
    // Server-side apply may create the namespace: bound after, but its body is a patch.
    let apply = planned("PATCH", "/api/v1/namespaces/a", None).actions;
    assert!(!apply.lock_namespace_labels && apply.bind_namespace);
    // A server-side dry run creates nothing, so nothing is set up (setting up would create
    // the namespace: found by the import's dry run, stack/portable).
    let dry = planned("POST", "/api/v1/namespaces", Some("dryRun=All")).actions;
    assert!(dry.lock_namespace_labels && dry.admit_namespace_quota && !dry.bind_namespace);
    let dry_apply = planned("PATCH", "/api/v1/namespaces/a", Some("dryRun=All")).actions;
    assert!(!dry_apply.bind_namespace);
    // Every write of a namespace's labels may carry the privileged group; a read or a
    // delete does not need it.
    assert!(create.namespace_write && update.namespace_write && apply.namespace_write);
    let read = planned("GET", "/api/v1/namespaces/a", None).actions;
    let delete = planned("DELETE", "/api/v1/namespaces/a", None).actions;
    assert!(!read.namespace_write && !delete.namespace_write);
    let status = planned("PUT", "/api/v1/namespaces/a/status", None).actions;
    assert_eq!(status, Actions::default());
    let pod = planned("POST", "/api/v1/namespaces/a/pods", None).actions;
    assert_eq!(pod, Actions::default());
}

#[test]
fn actions_of_rbac_crds_reviews_and_fan_out() {
    let crb = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    assert!(needs_sync(&planned("POST", crb, None)));
    assert!(needs_sync(&planned("DELETE", &format!("{crb}/x"), None)));
    assert!(!needs_sync(&planned("GET", crb, None)));
    let crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert!(needs_sync(&planned("POST", crd, None)));
    let rb = "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings";
    assert!(!needs_sync(&planned("POST", rb, None)));
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    assert!(planned("POST", ssar, None).actions.self_review);
    let ssrr = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    assert!(planned("POST", ssrr, None).actions.self_review);
    assert!(planned("GET", "/api/v1/pods", None).actions.fan_out);
    assert!(
        planned("GET", "/api/v1/pods", Some("watch=1"))
            .actions
            .fan_out
    );
    assert!(
        !planned("GET", "/api/v1/namespaces/a/pods", None)
            .actions
            .fan_out
    );
    assert!(!planned("GET", "/api/v1/nodes", None).actions.fan_out);
}
