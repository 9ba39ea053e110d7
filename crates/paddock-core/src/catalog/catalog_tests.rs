//! Unit tests of the catalog and its policy table (a file of their own: catalog.rs stays
//! under the ~800-line budget); `catalog()` is the test catalog other modules' tests use.

use super::*;

pub(crate) fn catalog() -> Catalog {
    Catalog::from_aggregated(
        include_bytes!("../../testdata/discovery-core.json"),
        include_bytes!("../../testdata/discovery-apis.json"),
    )
    .unwrap()
}

fn t() -> TenantId {
    TenantId::parse("foofoo").unwrap()
}

#[test]
fn policy_table() {
    let c = catalog();
    let t = t();
    let p = |g: &str, r: &str| {
        let v = if g.is_empty() {
            "v1"
        } else {
            c.upstream_versions(&c.upstream_group(&t, g).unwrap())[0].as_str()
        }
        .to_owned();
        c.resolve(&t, g, &v, r).map(|i| i.policy)
    };
    use Policy::*;
    assert_eq!(p("", "pods"), Some(TenantOwned));
    assert_eq!(p("", "namespaces"), Some(TenantOwned));
    assert_eq!(p("", "persistentvolumes"), Some(TenantOwned));
    assert_eq!(p("", "nodes"), Some(SharedReadOnly));
    assert_eq!(p("", "componentstatuses"), Some(Forbidden));
    assert_eq!(p("apps", "deployments"), Some(TenantOwned));
    assert_eq!(
        p("rbac.authorization.k8s.io", "clusterroles"),
        Some(TenantOwned)
    );
    assert_eq!(p("storage.k8s.io", "storageclasses"), Some(SharedReadOnly));
    assert_eq!(p("storage.k8s.io", "volumeattachments"), Some(Forbidden));
    assert_eq!(
        p("scheduling.k8s.io", "priorityclasses"),
        Some(SharedReadOnly)
    );
    assert_eq!(
        p("flowcontrol.apiserver.k8s.io", "flowschemas"),
        Some(TenantOwned)
    );
    assert_eq!(
        p("apiregistration.k8s.io", "apiservices"),
        Some(SharedReadOnly)
    );
    assert_eq!(
        p("certificates.k8s.io", "certificatesigningrequests"),
        Some(Forbidden)
    );
    assert_eq!(
        p("authentication.k8s.io", "tokenreviews"),
        Some(TenantOwned)
    );
    assert_eq!(
        p("authorization.k8s.io", "selfsubjectaccessreviews"),
        Some(TenantOwned)
    );
    assert_eq!(
        p(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations"
        ),
        Some(TenantOwned)
    );
    assert_eq!(
        p(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies"
        ),
        Some(TenantOwned)
    );
    assert_eq!(p("networking.k8s.io", "ipaddresses"), Some(Forbidden));
    assert_eq!(p("resource.k8s.io", "resourceclaims"), Some(TenantOwned));
    // platform CRD: default deny
    assert_eq!(p("cert-manager.io", "certificates"), Some(Forbidden));
    // own CRD group
    let w = c.resolve(&t, "example.com", "v1", "widgets").unwrap();
    assert_eq!(w.policy, TenantOwned);
    assert!(w.tenant_crd);
    assert_eq!(w.group, "example.com");
    assert_eq!(w.upstream_group, "foofoo-example.com");
    assert_eq!(w.kind, "Widget");
    // another tenant's group is invisible
    assert!(
        c.resolve(&t, "barbar-example.com", "v1", "widgets")
            .is_none()
    );
    assert!(c.upstream_group(&t, "barbar-example.com").is_none());
    assert!(c.resolve(&t, "", "v1", "nosuch").is_none());
}

/// The test catalog plus metrics.k8s.io as metrics-server v0.8 serves it.
fn catalog_with_metrics() -> Catalog {
    let mut apis: serde_json::Value =
        serde_json::from_slice(include_bytes!("../../testdata/discovery-apis.json")).unwrap();
    let metrics = serde_json::json!({"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "resources": [
        {"resource": "nodes", "responseKind": {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "NodeMetrics"}, "scope": "Cluster", "verbs": ["get", "list"]},
        {"resource": "pods", "responseKind": {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics"}, "scope": "Namespaced", "verbs": ["get", "list"]},
        {"resource": "other", "responseKind": {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "Other"}, "scope": "Cluster", "verbs": ["get"]}]}]});
    apis["items"].as_array_mut().unwrap().push(metrics);
    Catalog::from_aggregated(
        include_bytes!("../../testdata/discovery-core.json"),
        serde_json::to_vec(&apis).unwrap().as_slice(),
    )
    .unwrap()
}

#[test]
fn metrics_api_is_open_to_tenants() {
    let c = catalog_with_metrics();
    let t = t();
    let pods = c.resolve(&t, "metrics.k8s.io", "v1beta1", "pods").unwrap();
    assert_eq!(
        (pods.policy, pods.scope),
        (Policy::TenantOwned, Scope::Namespaced)
    );
    assert_eq!(pods.upstream_group, "metrics.k8s.io");
    assert!(!pods.prefixes_name(), "PodMetrics keep their pods' names");
    let nodes = c.resolve(&t, "metrics.k8s.io", "v1beta1", "nodes").unwrap();
    assert_eq!(nodes.policy, Policy::SharedReadOnly);
    // default deny for anything else the group may serve
    let other = c.resolve(&t, "metrics.k8s.io", "v1beta1", "other").unwrap();
    assert_eq!(other.policy, Policy::Forbidden);
    assert!(c.group_visible(&t, "metrics.k8s.io"));
    // a tenant's RBAC rule naming the group names it upstream, unprefixed
    assert_eq!(c.rule_group_up(&t, "metrics.k8s.io"), "metrics.k8s.io");
    // the operator may still close it
    let mut closed = catalog_with_metrics();
    closed.set_policy("metrics.k8s.io", "pods", Policy::Forbidden);
    assert_eq!(
        closed
            .resolve(&t, "metrics.k8s.io", "v1beta1", "pods")
            .unwrap()
            .policy,
        Policy::Forbidden
    );
    // positive control: without metrics-server there is no such group
    assert!(
        catalog()
            .resolve(&t, "metrics.k8s.io", "v1beta1", "pods")
            .is_none()
    );
}

#[test]
fn overrides_open_platform_groups() {
    let mut c = catalog();
    c.set_policy("cert-manager.io", "certificates", Policy::SharedReadOnly);
    let i = c
        .resolve(&t(), "cert-manager.io", "v1", "certificates")
        .unwrap();
    assert_eq!(i.policy, Policy::SharedReadOnly);
    assert_eq!(c.rule_group_up(&t(), "cert-manager.io"), "cert-manager.io");
}

#[test]
fn rule_groups_do_not_depend_on_creation_order() {
    let c = catalog();
    let t = t();
    assert_eq!(c.rule_group_up(&t, "apps"), "apps");
    assert_eq!(c.rule_group_up(&t, "*"), "*");
    assert_eq!(c.rule_group_up(&t, "example.com"), "foofoo-example.com");
    assert_eq!(c.rule_group_up(&t, "notyet.io"), "foofoo-notyet.io");
    assert_eq!(
        c.rule_group_up(&t, "cert-manager.io"),
        "foofoo-cert-manager.io"
    );
    assert_eq!(
        c.rule_group_down(&t, "foofoo-notyet.io").as_deref(),
        Some("notyet.io")
    );
    assert_eq!(c.rule_group_down(&t, "barbar-x.io"), None);
}

#[test]
fn kinds_resolve_in_both_views() {
    let c = catalog();
    let t = t();
    let i = c.resolve_kind(&t, "example.com/v1", "Widget").unwrap();
    assert_eq!(i.resource, "widgets");
    let i = c
        .resolve_upstream_kind(&t, "foofoo-example.com/v1", "Gadget")
        .unwrap();
    assert_eq!(i.scope, Scope::Cluster);
    assert!(i.prefixes_name());
    assert!(
        c.resolve_upstream_kind(&t, "barbar-example.com/v1", "Widget")
            .is_none()
    );
    let ns = c.resolve_kind(&t, "v1", "Namespace").unwrap();
    assert!(ns.prefixes_name() && ns.stamps_label());
    let ssar = c
        .resolve_kind(&t, "authorization.k8s.io/v1", "SelfSubjectAccessReview")
        .unwrap();
    assert!(ssar.is_review() && !ssar.prefixes_name());
    // autoscaling/v1 HPA resolves although catalog lists v2 first
    assert!(
        c.resolve_kind(&t, "autoscaling/v1", "HorizontalPodAutoscaler")
            .is_some()
    );
}

#[test]
fn group_visibility() {
    let mut c = catalog();
    let t = t();
    assert!(c.group_visible(&t, "apps"));
    assert!(c.group_visible(&t, ""));
    assert!(c.group_visible(&t, "example.com"));
    assert!(!c.group_visible(&t, "cert-manager.io"));
    assert!(!c.group_visible(&t, "barbar-example.com"));
    c.set_policy("cert-manager.io", "certificates", Policy::SharedReadOnly);
    assert!(c.group_visible(&t, "cert-manager.io"));
}

#[test]
fn malformed_discovery_is_an_upstream_error() {
    let e = Catalog::from_aggregated(b"{", b"{}").unwrap_err();
    assert_eq!(e.http_code(), 502);
}
