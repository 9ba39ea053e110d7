//! A tenant's view of APIServices, both ways: what it reads (objects, lists, watches, Tables,
//! protobuf) and what it asks (a name, a field selector, a refused write).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::catalog::Catalog;
use crate::request::{Verb, parse_request, plan, response_kind_for};
use crate::rules::object::{object_down, object_up};
use crate::tenant::TenantId;

const AV: &str = "apiregistration.k8s.io/v1";
const BASE: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// The test catalog (tenant `foofoo` with its CRD group `example.com`, tenant `barbar`'s
/// `barbar-example.com`, the platform's `cert-manager.io`), plus metrics.k8s.io as
/// metrics-server serves it, with both tenants known.
fn ctx() -> TenantContext {
    let mut apis: Value =
        serde_json::from_slice(include_bytes!("../../testdata/discovery-apis.json")).unwrap();
    apis["items"].as_array_mut().unwrap().push(json!({
        "metadata": {"name": "metrics.k8s.io"},
        "versions": [{"version": "v1beta1", "resources": [{"resource": "nodes",
            "responseKind": {"group": "metrics.k8s.io", "version": "v1beta1", "kind": "NodeMetrics"},
            "scope": "Cluster", "verbs": ["get", "list"]}]}]
    }));
    let catalog = Catalog::from_aggregated(
        include_bytes!("../../testdata/discovery-core.json"),
        &serde_json::to_vec(&apis).unwrap(),
    )
    .unwrap()
    .with_known_tenants(["foofoo".to_owned(), "barbar".to_owned()]);
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(catalog),
    }
}

/// An APIService as the apiserver keeps it: local (crd-autoregistration, built-in groups) or
/// served by a Service (an aggregated API).
fn apiservice(version: &str, group: &str, service: Option<(&str, &str)>) -> Value {
    let name = if group.is_empty() {
        format!("{version}.")
    } else {
        format!("{version}.{group}")
    };
    let message = if service.is_some() {
        format!("failing or missing response from https://10.0.0.9:443/apis/{group}/{version}")
    } else {
        "Local APIServices are always available".to_owned()
    };
    json!({
        "apiVersion": AV, "kind": "APIService",
        "metadata": {"name": name, "labels": {"kube-aggregator.kubernetes.io/automanaged": "true"}},
        "spec": {
            "service": service.map(|(ns, n)| json!({"namespace": ns, "name": n, "port": 443})),
            "group": group, "version": version, "groupPriorityMinimum": 1000, "versionPriority": 15
        },
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local", "message": message}]}
    })
}

fn down(v: &Value) -> Option<Value> {
    let mut v = v.clone();
    (object_down(&ctx(), &mut v).unwrap() == Disposition::Keep).then_some(v)
}

#[test]
fn built_in_groups_are_shown_as_they_are() {
    for (version, group) in [
        ("v1", ""),
        ("v1", "apps"),
        ("v1", "rbac.authorization.k8s.io"),
    ] {
        let o = apiservice(version, group, None);
        assert_eq!(down(&o), Some(o.clone()), "{version}.{group}");
    }
}

#[test]
fn the_tenants_own_crd_group_is_shown_under_its_names() {
    let mut o = apiservice("v1", "foofoo-example.com", None);
    o["status"]["conditions"][0]["message"] = json!("all checks passed for foofoo-example.com");
    let d = down(&o).expect("kept");
    assert_eq!(d["metadata"]["name"], "v1.example.com");
    assert_eq!(d["spec"]["group"], "example.com");
    assert_eq!(d["spec"]["version"], "v1");
    assert_eq!(
        d["status"]["conditions"][0]["message"],
        "all checks passed for example.com"
    );
    // A group the catalog has not read yet is the tenant's all the same (its APIService may
    // come before paddock's next discovery read).
    let d = down(&apiservice("v1alpha1", "foofoo-new.example.org", None)).expect("kept");
    assert_eq!(d["metadata"]["name"], "v1alpha1.new.example.org");
}

#[test]
fn groups_the_tenant_does_not_see_are_dropped() {
    // Another tenant's CRD group (even one the catalog does not know yet), a platform CRD
    // group the tenant's discovery hides.
    for group in ["barbar-example.com", "bazbaz-other.io", "cert-manager.io"] {
        assert_eq!(down(&apiservice("v1", group, None)), None, "{group}");
    }
    // By its name alone, as in a Table row's PartialObjectMetadata.
    let mut o = json!({"apiVersion": AV, "kind": "APIService", "metadata": {"name": "v1.barbar-example.com"}});
    assert_eq!(object_down(&ctx(), &mut o).unwrap(), Disposition::Drop);
    // A platform group the operator opened is shown.
    let mut c = ctx();
    let mut cat = (*c.catalog).clone();
    cat.set_policy(
        "cert-manager.io",
        "certificates",
        crate::Policy::SharedReadOnly,
    );
    c.catalog = Arc::new(cat);
    let mut o = apiservice("v1", "cert-manager.io", None);
    assert_eq!(object_down(&c, &mut o).unwrap(), Disposition::Keep);
    assert_eq!(o["metadata"]["name"], "v1.cert-manager.io");
}

#[test]
fn a_platform_group_shadowed_by_the_tenants_own_is_not_shown_twice() {
    // The platform serves `example.com` too (an aggregated API): the tenant's own CRD group of
    // that name is what the tenant sees, as its discovery does.
    let mut apis: Value =
        serde_json::from_slice(include_bytes!("../../testdata/discovery-apis.json")).unwrap();
    apis["items"].as_array_mut().unwrap().push(json!({
        "metadata": {"name": "example.com"},
        "versions": [{"version": "v1", "resources": [{"resource": "things",
            "responseKind": {"group": "example.com", "version": "v1", "kind": "Thing"},
            "scope": "Cluster", "verbs": ["get"]}]}]
    }));
    let mut cat = Catalog::from_aggregated(
        include_bytes!("../../testdata/discovery-core.json"),
        &serde_json::to_vec(&apis).unwrap(),
    )
    .unwrap();
    cat.set_policy("example.com", "things", crate::Policy::SharedReadOnly);
    let c = TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(cat),
    };
    let mut platform = apiservice("v1", "example.com", Some(("plat-api", "things")));
    assert_eq!(object_down(&c, &mut platform).unwrap(), Disposition::Drop);
    let mut own = apiservice("v1", "foofoo-example.com", None);
    assert_eq!(object_down(&c, &mut own).unwrap(), Disposition::Keep);
    assert_eq!(own["metadata"]["name"], "v1.example.com");
}

/// Decision (docs/security.md "APIServices"): a platform's aggregated API is shown, its
/// `spec.service.namespace` through the rule of every namespace paddock shows down: the
/// tenant's own loses its prefix, another tenant's is redacted, a platform namespace is kept,
/// as in the Table's SERVICE column.
#[test]
fn an_aggregated_apis_service_namespace() {
    let metrics = apiservice(
        "v1beta1",
        "metrics.k8s.io",
        Some(("kube-system", "metrics-server")),
    );
    assert_eq!(down(&metrics), Some(metrics.clone()));
    let foreign = apiservice("v1beta1", "metrics.k8s.io", Some(("barbar-mon", "metrics")));
    let d = down(&foreign).expect("kept");
    assert_eq!(d["spec"]["service"]["namespace"], REDACTED_NS);
    let own = apiservice("v1beta1", "metrics.k8s.io", Some(("foofoo-mon", "metrics")));
    let d = down(&own).expect("kept");
    assert_eq!(d["spec"]["service"]["namespace"], "mon");
}

const REDACTED_NS: &str = crate::rules::REDACTED;

#[test]
fn writes_are_refused_with_the_shared_read_only_status() {
    let c = ctx();
    for (method, path, verb) in [
        ("DELETE", format!("{BASE}/v1.example.com"), "delete"),
        ("DELETE", format!("{BASE}/v1.apps"), "delete"),
        ("PUT", format!("{BASE}/v1.apps"), "update"),
        ("PATCH", format!("{BASE}/v1.apps"), "patch"),
        ("PUT", format!("{BASE}/v1.apps/status"), "update"),
        ("POST", BASE.to_owned(), "create"),
        ("DELETE", BASE.to_owned(), "deletecollection"),
    ] {
        let e = plan(&c, parse_request(method, &path, None).unwrap()).unwrap_err();
        assert_eq!(e.http_code(), 403, "{method} {path}");
        assert_eq!(
            e.to_string(),
            format!(
                "apiservices.apiregistration.k8s.io is forbidden: {verb} is not allowed, apiservices.apiregistration.k8s.io are shared read-only in this cluster"
            ),
            "{method} {path}"
        );
    }
    let mut body = apiservice("v1", "example.com", None);
    assert_eq!(object_up(&c, &mut body, None).unwrap_err().http_code(), 403);
}

#[test]
fn reads_go_upstream_as_the_cluster_identity_with_names_mapped() {
    let c = ctx();
    let get = |name: &str| {
        let p = plan(
            &c,
            parse_request("GET", &format!("{BASE}/{name}"), None).unwrap(),
        )
        .unwrap();
        assert_eq!(p.identity, crate::request::Identity::Shadow);
        p.upstream_path_and_query
    };
    assert_eq!(
        get("v1.example.com"),
        format!("{BASE}/v1.foofoo-example.com")
    );
    assert_eq!(get("v1.apps"), format!("{BASE}/v1.apps"));
    assert_eq!(get("v1."), format!("{BASE}/v1."));
    assert_eq!(
        get("v1beta1.metrics.k8s.io"),
        format!("{BASE}/v1beta1.metrics.k8s.io")
    );
    // Another tenant's group by its upstream name, a hidden platform group: asked inside the
    // tenant's own space, where nothing is (NotFound, as for an object that does not exist).
    assert_eq!(
        get("v1.barbar-example.com"),
        format!("{BASE}/v1.foofoo-barbar-example.com")
    );
    assert_eq!(
        get("v1.cert-manager.io"),
        format!("{BASE}/v1.foofoo-cert-manager.io")
    );
    // Lists and watches: shared read-only, without paddock's per-tenant objects.
    let p = plan(
        &c,
        parse_request(
            "GET",
            BASE,
            Some("watch=1&fieldSelector=metadata.name%3Dv1.example.com"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(p.request.verb, Verb::Watch);
    let q: Vec<(String, String)> = form_urlencoded::parse(
        p.upstream_path_and_query
            .split_once('?')
            .unwrap()
            .1
            .as_bytes(),
    )
    .into_owned()
    .collect();
    assert!(q.contains(&(
        "fieldSelector".into(),
        "metadata.name=v1.foofoo-example.com".into()
    )));
    assert!(q.contains(&("labelSelector".into(), "!paddock.io/tenant".into())));
}

#[test]
fn another_tenants_object_in_an_answer_is_not_found() {
    let c = ctx();
    let p = plan(
        &c,
        parse_request("GET", &format!("{BASE}/v1.example.com"), None).unwrap(),
    )
    .unwrap();
    let raw = serde_json::to_vec(&apiservice("v1", "barbar-example.com", None)).unwrap();
    let mut out = Vec::new();
    let e = crate::rewrite_whole_into(&c, &p, 200, "application/json", &raw, &mut out).unwrap_err();
    assert_eq!(e.http_code(), 404);
    // The upstream NotFound of the mapped name reads as the name the tenant asked for.
    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
        "message": "apiservices.apiregistration.k8s.io \"v1.foofoo-barbar-example.com\" not found",
        "details": {"name": "v1.foofoo-barbar-example.com", "group": "apiregistration.k8s.io", "kind": "apiservices"}});
    let mut out = Vec::new();
    crate::rewrite_whole_into(
        &c,
        &p,
        404,
        "application/json",
        &serde_json::to_vec(&status).unwrap(),
        &mut out,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["message"],
        "apiservices.apiregistration.k8s.io \"v1.barbar-example.com\" not found"
    );
    assert_eq!(v["details"]["name"], "v1.barbar-example.com");
}

/// Feeds `body` through the answer's rewriter of `GET <BASE>?<q>` with `accept`.
fn answer(q: Option<&str>, accept: &str, body: &[u8]) -> String {
    let c = ctx();
    let mut p = plan(&c, parse_request("GET", BASE, q).unwrap()).unwrap();
    p.response = response_kind_for(&p, Some(accept));
    let mut rw = crate::response_rewriter(&c, &p, 200, "application/json");
    let mut out = Vec::new();
    // In two pieces: the framers see an item cut in the middle.
    let (a, b) = body.split_at(body.len() / 2);
    rw.feed(a, &mut out).unwrap();
    rw.feed(b, &mut out).unwrap();
    rw.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn upstream_items() -> Vec<Value> {
    vec![
        apiservice("v1", "", None),
        apiservice("v1", "apps", None),
        apiservice("v1", "barbar-example.com", None),
        apiservice("v1", "foofoo-example.com", None),
        apiservice(
            "v1beta1",
            "metrics.k8s.io",
            Some(("kube-system", "metrics-server")),
        ),
    ]
}

fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

const SHOWN: [&str; 4] = ["v1.", "v1.apps", "v1.example.com", "v1beta1.metrics.k8s.io"];

#[test]
fn lists_and_watches_carry_only_what_the_tenant_sees() {
    let items: Vec<Value> = upstream_items()
        .into_iter()
        .map(|mut i| {
            // Items of a built-in list carry no kind of their own.
            let o = i.as_object_mut().unwrap();
            o.remove("apiVersion");
            o.remove("kind");
            i
        })
        .collect();
    let list = json!({"kind": "APIServiceList", "apiVersion": AV, "metadata": {"resourceVersion": "7"}, "items": items});
    let out = answer(
        None,
        "application/json",
        &serde_json::to_vec(&list).unwrap(),
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(item_names(&v), SHOWN);
    assert!(!out.contains("barbar") && !out.contains("foofoo"), "{out}");

    let mut events = Vec::new();
    for (ty, o) in ["ADDED", "ADDED", "MODIFIED", "ADDED", "DELETED"]
        .into_iter()
        .zip(upstream_items())
    {
        events.extend(serde_json::to_vec(&json!({"type": ty, "object": o})).unwrap());
        events.push(b'\n');
    }
    let out = answer(Some("watch=1"), "application/json", &events);
    let names: Vec<String> = out
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            e["object"]["metadata"]["name"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(names, SHOWN);
    assert!(!out.contains("barbar") && !out.contains("foofoo"), "{out}");
}

/// `kubectl get apiservices`: a Table whose rows carry a PartialObjectMetadata, or no object
/// at all (`includeObject=None`), where the Name cell decides.
#[test]
fn tables_with_and_without_objects() {
    let defs = json!([
        {"name": "Name", "type": "string", "format": "name"},
        {"name": "Service", "type": "string", "format": ""},
        {"name": "Available", "type": "string", "format": ""},
        {"name": "Age", "type": "string", "format": ""}
    ]);
    let row = |o: &Value, with_object: bool| {
        let name = o["metadata"]["name"].clone();
        let service = match o["spec"]["service"].as_object() {
            Some(s) => format!(
                "{}/{}",
                s["namespace"].as_str().unwrap(),
                s["name"].as_str().unwrap()
            ),
            None => "Local".to_owned(),
        };
        let mut r = json!({"cells": [name, service, "True", "5m"]});
        if with_object {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": o["metadata"]["name"], "resourceVersion": "3"}});
        }
        r
    };
    for with_object in [true, false] {
        let rows: Vec<Value> = upstream_items()
            .iter()
            .map(|o| row(o, with_object))
            .collect();
        let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "7"},
            "columnDefinitions": defs, "rows": rows});
        let out = answer(
            None,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            &serde_json::to_vec(&table).unwrap(),
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cells"][0].as_str().unwrap())
            .collect();
        assert_eq!(names, SHOWN, "with object: {with_object}");
        assert_eq!(v["rows"][3]["cells"][1], "kube-system/metrics-server");
        if with_object {
            assert_eq!(v["rows"][2]["object"]["metadata"]["name"], "v1.example.com");
            assert_eq!(v["rows"][2]["object"]["kind"], "PartialObjectMetadata");
        }
        assert!(!out.contains("barbar") && !out.contains("foofoo"), "{out}");
    }
}

/// Protobuf lifts to the same partial JSON and the same rules (`wire::protobuf`): the name,
/// the group and the service's namespace, by the field numbers of the table's row.
#[test]
fn protobuf_objects_take_the_same_rules() {
    use crate::wire::protobuf::protobuf_down;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as reg;
    use prost::Message;
    let st = |s: &str| Some(s.to_owned());
    let body = |version: &str, group: &str, ns: Option<&str>| {
        let o = reg::APIService {
            metadata: Some(ObjectMeta {
                name: st(&format!("{version}.{group}")),
                ..Default::default()
            }),
            spec: Some(reg::APIServiceSpec {
                service: ns.map(|ns| reg::ServiceReference {
                    namespace: st(ns),
                    name: st("api"),
                    port: Some(443),
                }),
                group: st(group),
                version: st(version),
                group_priority_minimum: Some(1000),
                ..Default::default()
            }),
            status: None,
        };
        let u = Unknown {
            type_meta: Some(TypeMeta {
                api_version: st(AV),
                kind: st("APIService"),
            }),
            raw: Some(o.encode_to_vec()),
            content_encoding: st(""),
            content_type: st(""),
        };
        let mut out = crate::wire::pb::MAGIC.to_vec();
        out.extend(u.encode_to_vec());
        out
    };
    let read = |b: &[u8]| {
        let u = Unknown::decode(&b[4..]).unwrap();
        reg::APIService::decode(u.raw.unwrap_or_default().as_slice()).unwrap()
    };
    let c = ctx();
    let own = protobuf_down(
        &c,
        None,
        &body("v1", "foofoo-example.com", Some("foofoo-api")),
    )
    .unwrap()
    .expect("kept");
    let own = read(&own);
    assert_eq!(
        own.metadata.unwrap().name.as_deref(),
        Some("v1.example.com")
    );
    let spec = own.spec.unwrap();
    assert_eq!(spec.group.as_deref(), Some("example.com"));
    assert_eq!(spec.group_priority_minimum, Some(1000));
    assert_eq!(spec.service.unwrap().namespace.as_deref(), Some("api"));
    assert!(
        protobuf_down(&c, None, &body("v1", "barbar-example.com", None))
            .unwrap()
            .is_none()
    );
    let apps = body("v1", "apps", None);
    assert_eq!(
        read(&protobuf_down(&c, None, &apps).unwrap().unwrap()),
        read(&apps)
    );
    // A write is refused before any rule: the kind is shared read-only.
    let e = crate::wire::protobuf::translate_protobuf_body(&c, None, None, &apps).unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn a_refused_write_probes_the_mapped_name() {
    let c = ctx();
    let probe = |name: &str| {
        crate::request::absent::shared_write_probe(
            &c,
            &parse_request("DELETE", &format!("{BASE}/{name}"), None).unwrap(),
        )
        .unwrap()
        .upstream_path
    };
    // The tenant's own object exists upstream under its prefixed group: the refusal stands.
    assert_eq!(
        probe("v1.example.com"),
        format!("{BASE}/v1%2Efoofoo%2Dexample%2Ecom")
    );
    // Another tenant's object is never what the probe reads.
    assert_eq!(
        probe("v1.barbar-example.com"),
        format!("{BASE}/v1%2Efoofoo%2Dbarbar%2Dexample%2Ecom")
    );
    assert_eq!(probe("v1.apps"), format!("{BASE}/v1%2Eapps"));
}

#[test]
fn names_both_ways() {
    let c = ctx();
    assert_eq!(name_up(&c, "v1.example.com"), "v1.foofoo-example.com");
    assert_eq!(name_up(&c, "v1.apps"), "v1.apps");
    assert_eq!(name_up(&c, "v1."), "v1.");
    assert_eq!(name_up(&c, "nodot"), "nodot");
    for n in [
        "v1.foofoo-example.com",
        "v1.apps",
        "v1.",
        "v1beta1.metrics.k8s.io",
    ] {
        let d = name_down(&c, n).unwrap();
        assert_eq!(name_up(&c, &d), n);
    }
    assert_eq!(name_down(&c, "v1.barbar-example.com"), None);
    let info = c
        .catalog
        .resolve(&c.tenant, "apiregistration.k8s.io", "v1", "apiservices")
        .unwrap();
    assert!(names_by_rule(&info));
    let nodes = c.catalog.resolve(&c.tenant, "", "v1", "nodes").unwrap();
    assert!(!names_by_rule(&nodes));
}

/// An ownerReference to an APIService (rare, but the tenant may write one): its name is the
/// tenant's view of the group both ways; another tenant's group is redacted down.
#[test]
fn owner_references_name_apiservices_in_the_tenants_view() {
    let c = ctx();
    let owner = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d",
            "ownerReferences": [{"apiVersion": AV, "kind": "APIService", "name": name, "uid": "u"}]}})
    };
    let mut o = owner("v1.example.com");
    object_up(&c, &mut o, None).unwrap();
    assert_eq!(
        o["metadata"]["ownerReferences"][0]["name"],
        "v1.foofoo-example.com"
    );
    assert_eq!(object_down(&c, &mut o).unwrap(), Disposition::Keep);
    assert_eq!(
        o["metadata"]["ownerReferences"][0]["name"],
        "v1.example.com"
    );
    let mut o = owner("v1.barbar-example.com");
    o["metadata"]["namespace"] = json!("foofoo-d");
    assert_eq!(object_down(&c, &mut o).unwrap(), Disposition::Keep);
    assert_eq!(
        o["metadata"]["ownerReferences"][0]["name"],
        format!("v1.{}", crate::rules::REDACTED)
    );
}
