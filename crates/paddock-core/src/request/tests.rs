//! Unit tests of parsing, planning and selector translation.

use super::*;

use crate::catalog::ResourceInfo;
use crate::error::TranslateError;

use crate::catalog::context::tests::ctx;

fn pr(method: &str, path: &str, q: Option<&str>) -> ParsedRequest {
    parse_request(method, path, q).unwrap()
}

pub(super) fn up(method: &str, path: &str, q: Option<&str>) -> Result<Plan, TranslateError> {
    plan(&ctx(), parse_request(method, path, q)?)
}

pub(super) fn up_path(method: &str, path: &str, q: Option<&str>) -> String {
    up(method, path, q).unwrap().upstream_path_and_query
}

fn res(p: &ParsedRequest) -> &ResourcePath {
    match &p.path {
        ApiPath::Resource(r) => r,
        other => panic!("not a resource: {other:?}"),
    }
}

#[test]
fn parse_non_resource_paths() {
    assert_eq!(pr("GET", "/", None).path, ApiPath::Root);
    assert_eq!(pr("GET", "/version", None).path, ApiPath::Version);
    assert_eq!(pr("GET", "/healthz", None).path, ApiPath::Healthz);
    assert_eq!(pr("GET", "/livez", None).path, ApiPath::Healthz);
    assert_eq!(pr("GET", "/readyz", None).path, ApiPath::Healthz);
    assert_eq!(pr("GET", "/api", None).path, ApiPath::Api);
    assert_eq!(pr("GET", "/apis", None).path, ApiPath::Apis);
    assert_eq!(
        pr("GET", "/api/v1", None).path,
        ApiPath::ApiGroupVersion {
            group: "".into(),
            version: "v1".into()
        }
    );
    assert_eq!(
        pr("GET", "/apis/apps", None).path,
        ApiPath::ApiGroup {
            group: "apps".into()
        }
    );
    assert_eq!(
        pr("GET", "/apis/apps/v1", None).path,
        ApiPath::ApiGroupVersion {
            group: "apps".into(),
            version: "v1".into()
        }
    );
    assert_eq!(pr("GET", "/openapi/v2", None).path, ApiPath::OpenApiV2);
    assert_eq!(pr("GET", "/version/", None).path, ApiPath::Version);
    assert_eq!(pr("GET", "/openapi/v3", None).path, ApiPath::OpenApiV3Root);
    assert_eq!(
        pr("GET", "/openapi/v3/apis/apps/v1", None).path,
        ApiPath::OpenApiV3 {
            group: "apps".into(),
            version: "v1".into()
        }
    );
    assert_eq!(
        pr("GET", "/openapi/v3/api/v1", None).path,
        ApiPath::OpenApiV3 {
            group: "".into(),
            version: "v1".into()
        }
    );
    assert_eq!(
        parse_request("POST", "/apis", None)
            .unwrap_err()
            .http_code(),
        405
    );
    assert_eq!(
        parse_request("GET", "/metrics", None)
            .unwrap_err()
            .http_code(),
        404
    );
    assert_eq!(
        parse_request("GET", "/debug/pprof", None)
            .unwrap_err()
            .http_code(),
        404
    );
}

#[test]
fn parse_resource_shapes_and_verbs() {
    let p = pr("GET", "/api/v1/pods", None);
    assert_eq!(p.verb, Verb::List);
    assert_eq!(res(&p).namespace, None);
    let p = pr("GET", "/api/v1/namespaces/default/pods", Some("watch=true"));
    assert_eq!(p.verb, Verb::Watch);
    assert_eq!(res(&p).namespace.as_deref(), Some("default"));
    let p = pr("GET", "/api/v1/namespaces/default/pods/web", None);
    assert_eq!(p.verb, Verb::Get);
    assert_eq!(res(&p).name.as_deref(), Some("web"));
    assert_eq!(
        pr("POST", "/api/v1/namespaces/default/pods", None).verb,
        Verb::Create
    );
    assert_eq!(
        pr("PUT", "/api/v1/namespaces/default/pods/web", None).verb,
        Verb::Update
    );
    assert_eq!(
        pr("PATCH", "/api/v1/namespaces/default/pods/web", None).verb,
        Verb::Patch
    );
    assert_eq!(
        pr("DELETE", "/api/v1/namespaces/default/pods/web", None).verb,
        Verb::Delete
    );
    assert_eq!(
        pr("DELETE", "/api/v1/namespaces/default/pods", None).verb,
        Verb::DeleteCollection
    );
    assert_eq!(
        parse_request("POST", "/api/v1/namespaces/default/pods/web", None)
            .unwrap_err()
            .http_code(),
        405
    );
    assert_eq!(
        parse_request("PUT", "/api/v1/namespaces/default/pods", None)
            .unwrap_err()
            .http_code(),
        405
    );
    // namespaces are cluster-scoped
    let p = pr("GET", "/api/v1/namespaces/default", None);
    let r = res(&p);
    assert_eq!(
        (
            r.resource.as_str(),
            r.name.as_deref(),
            r.namespace.as_deref()
        ),
        ("namespaces", Some("default"), None)
    );
    let p = pr("PUT", "/api/v1/namespaces/default/finalize", None);
    assert_eq!(res(&p).subresource.as_deref(), Some("finalize"));
    assert_eq!(res(&p).resource, "namespaces");
    let p = pr("GET", "/api/v1/namespaces/default/status", None);
    assert_eq!(res(&p).subresource.as_deref(), Some("status"));
    // group resources and subresources
    let p = pr(
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        None,
    );
    assert_eq!(res(&p).subresource.as_deref(), Some("scale"));
    assert_eq!(res(&p).group, "apps");
    let p = pr(
        "GET",
        "/api/v1/namespaces/default/pods/web/log",
        Some("follow=true&container=c"),
    );
    assert_eq!(p.verb, Verb::Get);
    for sub in ["exec", "attach", "portforward", "proxy"] {
        let p = pr(
            "POST",
            &format!("/api/v1/namespaces/default/pods/web/{sub}"),
            None,
        );
        assert_eq!(p.verb, Verb::Connect, "{sub}");
    }
    let p = pr(
        "GET",
        "/api/v1/namespaces/default/services/web:80/proxy/a/b%20c",
        Some("x=1"),
    );
    assert_eq!(p.verb, Verb::Connect);
    assert_eq!(res(&p).proxy_path.as_deref(), Some("a/b%20c"));
    assert_eq!(res(&p).name.as_deref(), Some("web:80"));
    // legacy watch
    let p = pr("GET", "/api/v1/watch/namespaces/default/pods", None);
    assert_eq!(p.verb, Verb::Watch);
    assert!(res(&p).legacy_watch);
    let p = pr("GET", "/api/v1/watch/namespaces", None);
    assert_eq!(res(&p).resource, "namespaces");
    assert!(parse_request("GET", "/api/v1/namespaces/default/pods/a/b/c", None).is_err());
    assert!(parse_request("GET", "/api/v1/namespaces/Bad_NS/pods", None).is_err());
    assert!(parse_request("GET", "/api/v1/namespaces/default/pods/..", None).is_err());
    assert!(parse_request("GET", "/api/v1/namespaces/default/pods/a%2Fb", None).is_err());
}

#[test]
fn plan_namespaced_paths() {
    assert_eq!(
        up_path("GET", "/api/v1/namespaces/default/pods/web", None),
        "/api/v1/namespaces/foofoo-default/pods/web"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/apps/v1/namespaces/kube-system/deployments",
            Some("limit=500")
        ),
        "/apis/apps/v1/namespaces/foofoo-kube-system/deployments?limit=500"
    );
    assert_eq!(
        up_path("GET", "/api/v1/watch/namespaces/default/pods", None),
        "/api/v1/watch/namespaces/foofoo-default/pods"
    );
    let p = up(
        "GET",
        "/api/v1/namespaces/default/pods/web/log",
        Some("follow=true"),
    )
    .unwrap();
    assert!(p.long_running);
    assert_eq!(p.response, ResponseKind::PassThrough);
    let p = up(
        "POST",
        "/api/v1/namespaces/default/pods/web/exec",
        Some("command=sh&command=-c&stdin=true&tty=true"),
    )
    .unwrap();
    assert!(p.upgrade && p.long_running);
    assert_eq!(
        p.upstream_path_and_query,
        "/api/v1/namespaces/foofoo-default/pods/web/exec?command=sh&command=-c&stdin=true&tty=true"
    );
    let p = up(
        "GET",
        "/api/v1/namespaces/default/services/web:80/proxy/x/y",
        Some("anything=1"),
    )
    .unwrap();
    assert_eq!(
        p.upstream_path_and_query,
        "/api/v1/namespaces/foofoo-default/services/web:80/proxy/x/y?anything=1"
    );
    assert!(!p.upgrade && p.long_running);
}

#[test]
fn plan_namespace_name_length() {
    let ns = "a".repeat(57);
    let e = up("GET", &format!("/api/v1/namespaces/{ns}/pods"), None).unwrap_err();
    assert!(e.message().contains("56"));
    let e = up("POST", "/api/v1/namespaces", None).map(|_| ()).err();
    assert!(e.is_none());
}

#[test]
fn plan_cluster_scoped_names() {
    assert_eq!(
        up_path("GET", "/api/v1/namespaces/default", None),
        "/api/v1/namespaces/foofoo-default"
    );
    assert_eq!(
        up_path("PUT", "/api/v1/namespaces/default/finalize", None),
        "/api/v1/namespaces/foofoo-default/finalize"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/reader",
            None
        ),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/foofoo-reader"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            None
        ),
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.foofoo-example.com"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets/w1",
            None
        ),
        "/apis/foofoo-example.com/v1/namespaces/foofoo-default/widgets/w1"
    );
    assert_eq!(
        up_path("GET", "/apis/example.com/v1/gadgets/g1", None),
        "/apis/foofoo-example.com/v1/gadgets/foofoo-g1"
    );
    assert_eq!(
        up_path("GET", "/api/v1/persistentvolumes/pv1", None),
        "/api/v1/persistentvolumes/foofoo-pv1"
    );
    // shared: names untouched
    assert_eq!(
        up_path("GET", "/api/v1/nodes/node-1", None),
        "/api/v1/nodes/node-1"
    );
    assert_eq!(
        up_path(
            "GET",
            "/apis/storage.k8s.io/v1/storageclasses/standard",
            None
        ),
        "/apis/storage.k8s.io/v1/storageclasses/standard"
    );
    // RBAC names with colons survive
    assert_eq!(
        up_path(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:thing",
            None
        ),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/foofoo-system:thing"
    );
}

#[test]
fn plan_policy_errors() {
    assert_eq!(
        up("GET", "/api/v1/componentstatuses", None)
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up(
            "POST",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            None
        )
        .unwrap_err()
        .http_code(),
        403
    );
    // A TokenReview is the tenant's to ask (its answer is confined on the way down), as its
    // admins' shadow.
    let p = up("POST", "/apis/authentication.k8s.io/v1/tokenreviews", None).unwrap();
    assert_eq!(
        p.upstream_path_and_query,
        "/apis/authentication.k8s.io/v1/tokenreviews"
    );
    assert_eq!(
        up(
            "GET",
            "/apis/cert-manager.io/v1/namespaces/default/certificates",
            None
        )
        .unwrap_err()
        .http_code(),
        403
    );
    assert_eq!(
        up("GET", "/api/v1/nodes/n1/proxy/metrics", None)
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up("DELETE", "/api/v1/nodes/n1", None)
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up("PATCH", "/api/v1/nodes/n1", None)
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up("POST", "/apis/storage.k8s.io/v1/storageclasses", None)
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up("GET", "/api/v1/nosuch", None).unwrap_err().http_code(),
        404
    );
    assert_eq!(
        up(
            "GET",
            "/apis/barbar-example.com/v1/namespaces/default/widgets",
            None
        )
        .unwrap_err()
        .http_code(),
        404
    );
    assert_eq!(
        up("GET", "/apis/nosuch.io/v1/things", None)
            .unwrap_err()
            .http_code(),
        404
    );
    assert_eq!(
        up("GET", "/api/v1/namespaces/default/pods/web/nosub", None)
            .unwrap_err()
            .http_code(),
        404
    );
    assert_eq!(
        up("GET", "/api/v1/namespaces/default/nodes", None)
            .unwrap_err()
            .http_code(),
        404
    );
    assert_eq!(
        up("DELETE", "/api/v1/pods", None).unwrap_err().http_code(),
        403
    );
    assert_eq!(
        up(
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            None
        )
        .unwrap_err()
        .http_code(),
        405
    );
    assert_eq!(
        up("GET", "/api/v1/namespaces/default/pods", Some("bogus=1"))
            .unwrap_err()
            .http_code(),
        400
    );
    // nodes status can be read
    assert_eq!(
        up_path("GET", "/api/v1/nodes/n1/status", None),
        "/api/v1/nodes/n1/status"
    );
}

#[test]
fn plan_cluster_wide_list_of_namespaced_kind() {
    let p = up(
        "GET",
        "/api/v1/pods",
        Some("fieldSelector=metadata.namespace%3Ddefault"),
    )
    .unwrap();
    assert!(p.cluster_wide);
    assert_eq!(p.response, ResponseKind::List);
    assert_eq!(
        p.upstream_path_and_query,
        "/api/v1/pods?fieldSelector=metadata.namespace%3Dfoofoo-default"
    );
    let p = up("GET", "/api/v1/pods", Some("watch=1")).unwrap();
    assert_eq!(p.response, ResponseKind::Watch);
    assert!(p.cluster_wide && p.long_running);
}

#[test]
fn field_selectors() {
    let c = ctx();
    let ns = c
        .catalog
        .resolve(&c.tenant, "", "v1", "namespaces")
        .unwrap();
    let pods = c.catalog.resolve(&c.tenant, "", "v1", "pods").unwrap();
    let events = c.catalog.resolve(&c.tenant, "", "v1", "events").unwrap();
    let crds = c
        .catalog
        .resolve(
            &c.tenant,
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
        )
        .unwrap();
    let f = |i: &ResourceInfo, s: &str| translate_field_selector(&c, i, s).unwrap();
    assert_eq!(f(&ns, "metadata.name=foo"), "metadata.name=foofoo-foo");
    assert_eq!(f(&pods, "metadata.name=foo"), "metadata.name=foo");
    assert_eq!(
        f(&pods, "metadata.namespace!=default,spec.nodeName=n1"),
        "metadata.namespace!=foofoo-default,spec.nodeName=n1"
    );
    assert_eq!(f(&pods, "status.phase==Running"), "status.phase==Running");
    assert_eq!(
        f(&crds, "metadata.name=widgets.example.com"),
        "metadata.name=widgets.foofoo-example.com"
    );
    assert_eq!(
        f(
            &events,
            "involvedObject.name=foo,involvedObject.namespace=,involvedObject.kind=Namespace,involvedObject.uid=u1"
        ),
        "involvedObject.name=foofoo-foo,involvedObject.namespace=,involvedObject.kind=Namespace,involvedObject.uid=u1"
    );
    assert_eq!(
        f(
            &events,
            "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod"
        ),
        "involvedObject.name=web,involvedObject.namespace=foofoo-default,involvedObject.kind=Pod"
    );
    assert_eq!(
        f(&events, "involvedObject.name=n1,involvedObject.kind=Node"),
        "involvedObject.name=n1,involvedObject.kind=Node"
    );
    assert_eq!(
        f(
            &events,
            "regarding.name=g1,regarding.kind=Gadget,regarding.apiVersion=example.com/v1"
        ),
        "regarding.name=foofoo-g1,regarding.kind=Gadget,regarding.apiVersion=foofoo-example.com/v1"
    );
    assert_eq!(
        f(&events, "regarding.namespace=x"),
        "regarding.namespace=foofoo-x"
    );
    assert!(translate_field_selector(&c, &pods, "nonsense").is_err());
}

#[test]
fn label_selectors_for_namespace_names() {
    let c = ctx();
    let ns = c
        .catalog
        .resolve(&c.tenant, "", "v1", "namespaces")
        .unwrap();
    let pods = c.catalog.resolve(&c.tenant, "", "v1", "pods").unwrap();
    let l = |i: &ResourceInfo, s: &str| translate_label_selector(&c, i, s).unwrap();
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name=default"),
        "kubernetes.io/metadata.name=foofoo-default"
    );
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name==a"),
        "kubernetes.io/metadata.name==foofoo-a"
    );
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name!=a"),
        "kubernetes.io/metadata.name!=foofoo-a"
    );
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name in (a, b),env notin (x,y)"),
        "kubernetes.io/metadata.name in (foofoo-a,foofoo-b),env notin (x,y)"
    );
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name notin (a)"),
        "kubernetes.io/metadata.name notin (foofoo-a)"
    );
    assert_eq!(
        l(&ns, "kubernetes.io/metadata.name,!x,y>3"),
        "kubernetes.io/metadata.name,!x,y>3"
    );
    assert_eq!(
        l(&pods, "kubernetes.io/metadata.name=a"),
        "kubernetes.io/metadata.name=a"
    );
    assert!(
        translate_label_selector(
            &c,
            &ns,
            &format!("kubernetes.io/metadata.name={}", "a".repeat(57))
        )
        .is_err()
    );
    assert!(translate_label_selector(&c, &ns, "a,,b").is_err());
}

#[test]
fn query_parameters_kept_in_order() {
    let q = "resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=10&continue=abc%3D&timeoutSeconds=30&allowWatchBookmarks=true&sendInitialEvents=true&watch=true";
    assert_eq!(
        up_path("GET", "/api/v1/namespaces/default/pods", Some(q)),
        format!("/api/v1/namespaces/foofoo-default/pods?{q}")
    );
    let q = "dryRun=All&fieldManager=kubectl&fieldValidation=Strict&force=true";
    assert_eq!(
        up_path("PATCH", "/api/v1/namespaces/default/pods/x", Some(q)),
        format!("/api/v1/namespaces/foofoo-default/pods/x?{q}")
    );
    let q = "propagationPolicy=Foreground&gracePeriodSeconds=0";
    assert_eq!(
        up_path("DELETE", "/api/v1/namespaces/default/pods/x", Some(q)),
        format!("/api/v1/namespaces/foofoo-default/pods/x?{q}")
    );
}

#[test]
fn plan_discovery_and_openapi() {
    let p = up("GET", "/apis/example.com/v1", None).unwrap();
    assert_eq!(p.upstream_path_and_query, "/apis/foofoo-example.com/v1");
    assert_eq!(p.response, ResponseKind::Discovery);
    assert_eq!(
        up_path("GET", "/apis/example.com", None),
        "/apis/foofoo-example.com"
    );
    assert_eq!(up_path("GET", "/api/v1", None), "/api/v1");
    assert_eq!(up_path("GET", "/apis", None), "/apis");
    assert_eq!(
        up("GET", "/apis/barbar-example.com", None)
            .unwrap_err()
            .http_code(),
        404
    );
    assert_eq!(
        up("GET", "/apis/apps/v7", None).unwrap_err().http_code(),
        404
    );
    for p in [
        "/apis/cert-manager.io",
        "/apis/cert-manager.io/v1",
        "/openapi/v3/apis/cert-manager.io/v1",
    ] {
        assert_eq!(up("GET", p, None).unwrap_err().http_code(), 404, "{p}");
    }
    let p = up("GET", "/openapi/v3/apis/example.com/v1", Some("hash=ABC")).unwrap();
    assert_eq!(
        p.upstream_path_and_query,
        "/openapi/v3/apis/foofoo-example.com/v1?hash=ABC"
    );
    assert_eq!(p.response, ResponseKind::OpenApi);
    assert_eq!(
        up_path("GET", "/openapi/v3/api/v1", None),
        "/openapi/v3/api/v1"
    );
    assert_eq!(up_path("GET", "/openapi/v2", None), "/openapi/v2");
    assert_eq!(
        up("GET", "/version", None).unwrap().response,
        ResponseKind::PassThrough
    );
}

#[test]
fn accept_negotiation() {
    assert_eq!(upstream_accept(None), "application/json");
    assert_eq!(
        upstream_accept(Some("application/vnd.kubernetes.protobuf,application/json")),
        "application/json"
    );
    assert_eq!(
        upstream_accept(Some("application/vnd.kubernetes.protobuf")),
        "application/json"
    );
    assert_eq!(
        upstream_accept(Some("application/cbor")),
        "application/json"
    );
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    assert_eq!(upstream_accept(Some(table)), table);
    let disc =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    assert_eq!(upstream_accept(Some(disc)), disc);
    assert_eq!(
        upstream_accept(Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
        )),
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    );
    assert_eq!(
        upstream_accept(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        )),
        "application/json"
    );
    // Any case; spaces and empty ranges are dropped whether or not a range is removed.
    assert_eq!(
        upstream_accept(Some(
            "Application/Vnd.Kubernetes.PROTOBUF, application/json"
        )),
        "application/json"
    );
    assert_eq!(
        upstream_accept(Some("application/json, */*,")),
        "application/json,*/*"
    );
    // Unchanged, the client's own header is sent without a copy.
    assert!(matches!(
        upstream_accept(Some(table)),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn response_kinds() {
    let table = Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
    let p = up("GET", "/api/v1/namespaces/default/pods", None).unwrap();
    assert_eq!(response_kind_for(&p, None), ResponseKind::List);
    assert_eq!(response_kind_for(&p, table), ResponseKind::Table);
    let p = up("GET", "/api/v1/namespaces/default/pods", Some("watch=true")).unwrap();
    assert_eq!(response_kind_for(&p, table), ResponseKind::TableWatch);
    assert_eq!(
        response_kind_for(&p, Some("application/json")),
        ResponseKind::Watch
    );
    let p = up("GET", "/api/v1/namespaces/default/pods/x", None).unwrap();
    assert_eq!(response_kind_for(&p, table), ResponseKind::Table);
    assert_eq!(response_kind_for(&p, None), ResponseKind::Object);
    let p = up("GET", "/apis", None).unwrap();
    assert_eq!(response_kind_for(&p, table), ResponseKind::Discovery);
    let p = up(
        "POST",
        "/api/v1/namespaces/default/pods/x/portforward",
        None,
    )
    .unwrap();
    assert_eq!(response_kind_for(&p, None), ResponseKind::PassThrough);
}

mod fuzz_regressions {
    /// An escape before a multi-byte character in a field selector used to panic on a char
    /// boundary while the selector was rewritten (found by the path_parser fuzz target).
    #[test]
    fn escaped_multibyte_in_field_selector() {
        let mut input = vec![0u8];
        input.extend_from_slice(
            "/api/v1/pods?watch=true&fieldSelector=metadata.name%3Dx\\\u{e9}b".as_bytes(),
        );
        assert_eq!(crate::fuzzing::path_parser(&input), Ok(()));
    }
}
