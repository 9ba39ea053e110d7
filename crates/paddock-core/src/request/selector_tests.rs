//! Label selectors and the tenant term in list, watch and deletecollection queries.

use super::tests::{up, up_path};

/// FlowSchemas and levels: lists and watches show the platform's objects beside the tenant's
/// own, never paddock's per-tenant plumbing; a deletecollection takes the tenant's own only.
#[test]
fn plan_flowcontrol_lists_beside_the_platform() {
    let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    assert_eq!(
        up_path("GET", fs, Some("labelSelector=a%3Db&watch=true")),
        format!("{fs}?labelSelector=a%3Db%2C%21paddock.io%2Fmanaged-for&watch=true")
    );
    assert_eq!(
        up_path("DELETE", fs, None),
        format!("{fs}?labelSelector=paddock.io%2Ftenant%3Dfoofoo%2C%21paddock.io%2Fmanaged-for")
    );
    assert_eq!(
        up_path("GET", &format!("{fs}/exempt"), None),
        format!("{fs}/foofoo-exempt")
    );
}

/// `kubectl get clusterroles -l rbac.authorization.k8s.io/aggregate-to-edit=true`: the label
/// is stored renamed on the tenant's roles (rules/aggregate.rs), so the selector is too; every
/// term form keeps its operator and values; the upstream spelling is reserved.
#[test]
fn plan_cluster_role_selector_on_aggregation_labels() {
    let cr = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    for (sel, want) in [
        (
            "rbac.authorization.k8s.io%2Faggregate-to-edit%3Dtrue",
            "paddock.io%2Faggregate-to-edit%3Dtrue",
        ),
        (
            "rbac.authorization.k8s.io%2Faggregate-to-view",
            "paddock.io%2Faggregate-to-view",
        ),
        (
            "%21rbac.authorization.k8s.io%2Faggregate-to-admin",
            "%21paddock.io%2Faggregate-to-admin",
        ),
        (
            "rbac.authorization.k8s.io%2Faggregate-to-edit+in+%28true%29,app%3Dx",
            "paddock.io%2Faggregate-to-edit+in+%28true%29%2Capp%3Dx",
        ),
    ] {
        assert_eq!(
            up_path("GET", cr, Some(&format!("labelSelector={sel}"))),
            format!("{cr}?labelSelector={want}%2Cpaddock.io%2Ftenant%3Dfoofoo"),
            "{sel}"
        );
    }
    let e = up(
        "GET",
        cr,
        Some("labelSelector=paddock.io%2Faggregate-to-edit%3Dtrue"),
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 403);
    // Other kinds keep the key as it is.
    assert_eq!(
        up_path(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Some("labelSelector=rbac.authorization.k8s.io%2Faggregate-to-edit")
        ),
        "/api/v1/namespaces/foofoo-default/configmaps?labelSelector=rbac.authorization.k8s.io%2Faggregate-to-edit"
    );
}

#[test]
fn plan_tenant_label_on_cluster_scoped_collections() {
    assert_eq!(
        up_path("GET", "/api/v1/namespaces", None),
        "/api/v1/namespaces?labelSelector=paddock.io%2Ftenant%3Dfoofoo"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            Some("labelSelector=app%3Dx&watch=true")
        ),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=app%3Dx%2Cpaddock.io%2Ftenant%3Dfoofoo&watch=true"
    );
    assert_eq!(
        up_path("DELETE", "/apis/example.com/v1/gadgets", None),
        "/apis/foofoo-example.com/v1/gadgets?labelSelector=paddock.io%2Ftenant%3Dfoofoo"
    );
    // not for namespaced kinds, shared kinds, or gets
    // Shared read-only lists leave out paddock's per-tenant objects (tenant-labelled).
    assert_eq!(
        up_path("GET", "/api/v1/nodes", None),
        "/api/v1/nodes?labelSelector=%21paddock.io%2Ftenant"
    );
    assert_eq!(
        up_path(
            "GET",
            "/api/v1/nodes",
            Some("labelSelector=role%3Dgpu&watch=true")
        ),
        "/api/v1/nodes?labelSelector=role%3Dgpu%2C%21paddock.io%2Ftenant&watch=true"
    );
    assert_eq!(
        up_path("GET", "/api/v1/namespaces/default/pods", None),
        "/api/v1/namespaces/foofoo-default/pods"
    );
    let e = up(
        "GET",
        "/api/v1/namespaces",
        Some("labelSelector=paddock.io%2Ftenant%3Dbarbar"),
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(
        "GET",
        "/api/v1/pods",
        Some("labelSelector=!paddock.io%2Ftenant"),
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 403);
    // a second selector could hide the tenant term
    let e = up(
        "GET",
        "/api/v1/namespaces",
        Some("labelSelector=a%3Db&labelSelector="),
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 400);
}
