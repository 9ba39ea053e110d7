//! Request-side properties and fixture checks: the round-trip property
//! (object_up then object_down is the identity), the escape property (whatever a tenant asks,
//! every namespace, name and group that reaches upstream lies inside the tenant's prefix or the
//! shared set), and checks against objects captured from a real kube-apiserver 1.33.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use paddock_core::catalog::{Policy, Scope, is_builtin_group};
use paddock_core::rules::REDACTED;
use paddock_core::{
    ApiPath, Catalog, Disposition, TenantContext, TenantId, object_down, object_up, parse_request,
    plan, translate_request_body,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn fixture(name: &str) -> Vec<u8> {
    let p = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn real_catalog() -> Catalog {
    Catalog::from_aggregated(
        &fixture("discovery_agg_api_v2"),
        &fixture("discovery_agg_apis_v2"),
    )
    .unwrap()
}

fn test_catalog() -> Catalog {
    let d = env!("CARGO_MANIFEST_DIR");
    Catalog::from_aggregated(
        &std::fs::read(format!("{d}/testdata/discovery-core.json")).unwrap(),
        &std::fs::read(format!("{d}/testdata/discovery-apis.json")).unwrap(),
    )
    .unwrap()
}

fn ctx_with(c: Catalog) -> TenantContext {
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(c),
    }
}

fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
}

// ---- fixtures from a real apiserver ---------------------------------------------------------

#[test]
fn real_discovery_builds_the_catalog() {
    let c = real_catalog();
    let t = TenantId::parse("foofoo").unwrap();
    let w = c.resolve(&t, "example.com", "v1", "widgets").unwrap();
    assert!(w.tenant_crd);
    assert_eq!(w.upstream_group, "foofoo-example.com");
    assert_eq!(
        c.resolve(&t, "", "v1", "namespaces").unwrap().scope,
        Scope::Cluster
    );
    assert_eq!(
        c.resolve(&t, "", "v1", "nodes").unwrap().policy,
        Policy::SharedReadOnly
    );
    assert!(
        c.resolve(&t, "barbar-example.com", "v1", "widgets")
            .is_none()
    );
    let b = TenantId::parse("barbar").unwrap();
    assert_eq!(
        c.resolve(&b, "example.com", "v1", "widgets")
            .unwrap()
            .upstream_group,
        "barbar-example.com"
    );
}

#[test]
fn fixture_objects_round_trip() {
    let ctx = ctx_with(real_catalog());
    for name in [
        "object_clusterrole",
        "object_clusterrolebinding",
        "object_configmap",
        "object_crd",
        "object_deployment",
        "object_event",
        "object_event_v1",
        "object_namespace",
        "object_pod",
        "object_pvc",
        "object_rolebinding",
        "object_secret",
        "object_service",
        "object_serviceaccount",
        "object_widget",
    ] {
        let upstream: Value = serde_json::from_slice(&fixture(name)).unwrap();
        let mut tenant = upstream.clone();
        assert_eq!(
            object_down(&ctx, &mut tenant).unwrap(),
            Disposition::Keep,
            "{name}"
        );
        let text = serde_json::to_string(&tenant).unwrap();
        assert!(
            !text.contains("paddock.io/tenant"),
            "{name}: tenant label visible: {text}"
        );
        assert!(
            !text.contains("barbar"),
            "{name}: other tenant visible: {text}"
        );
        let mut back = tenant.clone();
        strip_managed_fields(&mut back);
        object_up(&ctx, &mut back, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut want = upstream.clone();
        strip_managed_fields(&mut want);
        // free text is un-prefixed on the way down and not re-prefixed on the way up
        for f in ["message", "note"] {
            if let (Some(a), Some(b)) = (back.get_mut(f), want.get(f)) {
                *a = b.clone();
            }
        }
        assert_eq!(back, want, "{name}");
    }
}

#[test]
fn fixture_pv_with_host_path_is_refused_on_the_way_up() {
    let ctx = ctx_with(real_catalog());
    let mut v: Value = serde_json::from_slice(&fixture("object_pv")).unwrap();
    assert_eq!(object_down(&ctx, &mut v).unwrap(), Disposition::Keep);
    assert_eq!(v["metadata"]["name"], "pv1");
    assert_eq!(v["spec"]["claimRef"]["namespace"], "default");
    assert_eq!(object_up(&ctx, &mut v, None).unwrap_err().http_code(), 403);
}

#[test]
fn fixture_lists_keep_only_the_tenant() {
    let ctx = ctx_with(real_catalog());
    for name in [
        "list_clusterrolebindings",
        "list_clusterroles",
        "list_configmaps_all",
        "list_crds",
        "list_events_all",
        "list_events_v1_all",
        "list_namespaces",
        "list_pods_all",
        "list_pvs",
        "list_rolebindings_all",
        "list_widgets_all",
    ] {
        let mut v: Value = serde_json::from_slice(&fixture(name)).unwrap();
        let before = v["items"].as_array().unwrap().len();
        assert_eq!(object_down(&ctx, &mut v).unwrap(), Disposition::Keep);
        let items = v["items"].as_array().unwrap();
        // every fixture list but the CR ones (whose group is per tenant) mixes tenants
        assert!(
            items.len() < before || name.starts_with("list_widgets"),
            "{name}: nothing filtered"
        );
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains("barbar"), "{name}: {text}");
        assert!(!text.contains("paddock.io/tenant"), "{name}");
        for it in items {
            if let Some(ns) = it["metadata"]["namespace"].as_str() {
                assert!(!ns.starts_with("foofoo-"), "{name}: {ns}");
            }
        }
    }
}

#[test]
fn fixture_statuses_are_scrubbed() {
    let ctx = ctx_with(real_catalog());
    for name in [
        "status_already_exists",
        "status_conflict",
        "status_forbidden_cluster",
        "status_forbidden_other_tenant",
        "status_invalid",
        "status_notfound_clusterrole",
        "status_notfound_pod",
        "status_notfound_widget",
    ] {
        let mut v: Value = serde_json::from_slice(&fixture(name)).unwrap();
        object_down(&ctx, &mut v).unwrap();
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains("foofoo"), "{name}: {text}");
        assert!(!text.contains("barbar"), "{name}: {text}");
    }
}

// ---- the round-trip property ----------------------------------------------------------------

fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9-]{0,20}[a-z0-9])?"
}

fn label_map() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(
        proptest::collection::btree_map("[a-z]{1,8}(/[a-z]{1,8})?", "[a-z0-9]{0,10}", 1..4)
            .prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
            }),
    )
}

fn meta(name: String, ns: Option<String>, labels: Option<Value>) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("name".into(), Value::String(name));
    if let Some(ns) = ns {
        m.insert("namespace".into(), Value::String(ns));
    }
    if let Some(l) = labels {
        m.insert("labels".into(), l);
    }
    Value::Object(m)
}

fn subject() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z][a-z0-9@.]{0,12}".prop_map(|n| json!({"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":n})),
        "[a-z][a-z0-9-]{0,12}".prop_map(|n| json!({"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":n})),
        (dns_label(), dns_label()).prop_map(|(n, ns)| json!({"kind":"ServiceAccount","name":n,"namespace":ns})),
        dns_label().prop_map(|ns| json!({"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":format!("system:serviceaccounts:{ns}")})),
    ]
}

fn namespaced_object() -> impl Strategy<Value = Value> {
    let cm = (dns_label(), dns_label(), label_map(), "[ -~]{0,20}").prop_map(|(n, ns, l, d)| {
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":meta(n, Some(ns), l),"data":{"k":d}})
    });
    let pod = (dns_label(), dns_label(), proptest::collection::vec(dns_label(), 0..3), dns_label()).prop_map(|(n, ns, nss, sel)| {
        json!({"apiVersion":"v1","kind":"Pod","metadata":meta(n, Some(ns), None),"spec":{"containers":[{"name":"c","image":"nginx"}],
            "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"kubernetes.io/hostname","namespaces":nss,
            "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":sel}}}]}}}})
    });
    let rb = (dns_label(), dns_label(), proptest::collection::vec(subject(), 0..4), prop_oneof![Just("view".to_owned()), dns_label()], any::<bool>())
        .prop_map(|(n, ns, subjects, role, cluster)| {
            json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":meta(n, Some(ns), None),
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":if cluster {"ClusterRole"} else {"Role"},"name":role},"subjects":subjects})
        });
    let ev = (dns_label(), dns_label(), dns_label(), dns_label()).prop_map(|(n, ns, pod, nsname)| {
        json!({"apiVersion":"v1","kind":"Event","metadata":meta(n, Some(ns.clone()), None),"involvedObject":{"kind":"Pod","apiVersion":"v1","namespace":ns,"name":pod},
            "related":{"kind":"Namespace","apiVersion":"v1","name":nsname},"reason":"Started"})
    });
    let cr = (dns_label(), dns_label(), dns_label()).prop_map(|(n, ns, owner)| {
        json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":n,"namespace":ns,"ownerReferences":[{"apiVersion":"example.com/v1","kind":"Gadget","name":owner,"uid":"u"}]},"spec":{"size":1}})
    });
    let np = (dns_label(), dns_label(), proptest::collection::vec(dns_label(), 1..3)).prop_map(|(n, ns, names)| {
        json!({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":meta(n, Some(ns), None),"spec":{"podSelector":{},
            "ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":names}]}}]}]}})
    });
    prop_oneof![cm, pod, rb, ev, cr, np]
}

fn cluster_object() -> impl Strategy<Value = Value> {
    let ns = (dns_label(), label_map()).prop_map(
        |(n, l)| json!({"apiVersion":"v1","kind":"Namespace","metadata":meta(n, None, l)}),
    );
    let cr = (dns_label(), proptest::collection::vec("[a-z]{3,8}\\.[a-z]{2,4}", 0..3)).prop_map(|(n, groups)| {
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":n},
            "rules":[{"apiGroups":groups,"resources":["things"],"verbs":["get"]},{"apiGroups":[""],"resources":["namespaces"],"resourceNames":["a","b"],"verbs":["get"]}]})
    });
    let crb = (dns_label(), dns_label(), proptest::collection::vec(subject(), 0..4)).prop_map(|(n, role, subjects)| {
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":n},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":role},"subjects":subjects})
    });
    let pv = (dns_label(), dns_label(), dns_label()).prop_map(|(n, ns, claim)| {
        json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":n},"spec":{"nfs":{"server":"s","path":"/x"},"claimRef":{"namespace":ns,"name":claim}}})
    });
    let gadget = (dns_label(), label_map()).prop_map(|(n, l)| json!({"apiVersion":"example.com/v1","kind":"Gadget","metadata":meta(n, None, l),"spec":{}}));
    let crd = ("[a-z]{3,10}", "[a-z]{2,8}\\.(io|com|dev)").prop_map(|(plural, group)| {
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":format!("{plural}.{group}")},
            "spec":{"group":group,"names":{"plural":plural,"kind":"Thing"},"scope":"Namespaced"}})
    });
    prop_oneof![ns, cr, crb, pv, gadget, crd]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_namespaced(obj in namespaced_object()) {
        let ctx = ctx_with(test_catalog());
        let mut v = obj.clone();
        object_up(&ctx, &mut v, None).unwrap();
        prop_assert_ne!(&v, &obj);
        prop_assert_eq!(object_down(&ctx, &mut v).unwrap(), Disposition::Keep);
        prop_assert_eq!(v, obj);
    }

    #[test]
    fn round_trip_cluster_scoped(obj in cluster_object()) {
        let ctx = ctx_with(test_catalog());
        let mut v = obj.clone();
        object_up(&ctx, &mut v, None).unwrap();
        prop_assert_eq!(v["metadata"]["labels"]["paddock.io/tenant"].as_str(), Some("foofoo"));
        prop_assert_eq!(object_down(&ctx, &mut v).unwrap(), Disposition::Keep);
        prop_assert_eq!(v, obj);
    }

    /// Whatever another tenant's object looks like, it never survives object_down for us.
    #[test]
    fn other_tenants_objects_are_dropped(obj in prop_oneof![namespaced_object(), cluster_object()]) {
        let c = Arc::new(test_catalog());
        let other = TenantContext { tenant: TenantId::parse("barbar").unwrap(), catalog: c.clone() };
        let mut v = obj.clone();
        // Kinds barbar does not have (its CRD group lacks gadgets) cannot be written by it.
        prop_assume!(object_up(&other, &mut v, None).is_ok());
        let ours = TenantContext { tenant: TenantId::parse("foofoo").unwrap(), catalog: c };
        prop_assert_eq!(object_down(&ours, &mut v).unwrap(), Disposition::Drop);
    }
}

// ---- the escape property --------------------------------------------------------------------

/// Checks that every name reaching upstream lies inside the tenant: every `namespace` value,
/// every `namespaces` entry, every namespace selector carries the tenant term, every subject
/// is the tenant's, every cluster-scoped name is prefixed.
fn assert_confined(v: &Value, path: &str) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                match (k.as_str(), x) {
                    ("namespace", Value::String(s)) if !s.is_empty() => {
                        assert!(s.starts_with("foofoo-"), "{p} = {s}")
                    }
                    ("namespaces", Value::Array(a)) => {
                        for s in a {
                            assert!(s.as_str().unwrap().starts_with("foofoo-"), "{p} = {s}")
                        }
                    }
                    ("namespaceSelector", sel) if !sel.is_null() => {
                        let t =
                            json!({"key":"paddock.io/tenant","operator":"In","values":["foofoo"]});
                        assert!(
                            sel["matchExpressions"].as_array().unwrap().contains(&t),
                            "{p} = {sel}"
                        )
                    }
                    ("subjects", Value::Array(a)) => {
                        for s in a {
                            let n = s["name"].as_str().unwrap();
                            // A tenant ClusterRoleBinding stores its subjects in the inert
                            // shadow form `paddock:cluster:<tid>:<identity>` (they are granted
                            // per namespace by paddock); the identity inside must still be
                            // the tenant's.
                            let inner = n.strip_prefix("paddock:cluster:foofoo:").unwrap_or(n);
                            match s["kind"].as_str().unwrap() {
                                "User" | "Group" => assert!(
                                    inner.starts_with("paddock:foofoo:")
                                        || inner.starts_with("system:serviceaccounts:foofoo-")
                                        || inner.starts_with("system:serviceaccount:foofoo-"),
                                    "{p} = {n}"
                                ),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                assert_confined(x, &p);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                assert_confined(x, &format!("{path}/{i}"));
            }
        }
        _ => {}
    }
}

fn assert_upstream_path_confined(ctx: &TenantContext, method: &str, path_and_query: &str) {
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    let req = parse_request("GET", path, query).unwrap();
    let ApiPath::Resource(r) = &req.path else {
        return;
    };
    if let Some(ns) = &r.namespace {
        assert!(ns.starts_with("foofoo-"), "{path_and_query}");
    }
    assert!(
        is_builtin_group(&r.group) || r.group.starts_with("foofoo-"),
        "{path_and_query}"
    );
    // Resolve the upstream resource directly (it is not a tenant path any more).
    let (g, v) = (r.group.as_str(), r.version.as_str());
    let c = &ctx.catalog;
    let info = c
        .resolve_upstream_any_version(&ctx.tenant, g, &r.resource)
        .unwrap();
    let _ = v;
    if let Some(n) = &r.name
        && info.prefixes_name()
    {
        if info.is_crd() {
            assert!(n.contains(".foofoo-"), "{path_and_query}");
        } else {
            assert!(n.starts_with("foofoo-"), "{path_and_query}");
        }
    }
    if info.stamps_label() && r.name.is_none() && method != "POST" {
        let q: Vec<(String, String)> = form_urlencoded_pairs(query.unwrap_or(""));
        let sel = q
            .iter()
            .find(|(k, _)| k == "labelSelector")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        assert!(
            sel.split(',').any(|t| t == "paddock.io/tenant=foofoo"),
            "{path_and_query}"
        );
    }
    for (k, val) in form_urlencoded_pairs(query.unwrap_or("")) {
        if k == "fieldSelector" {
            for term in val.split(',') {
                if let Some((key, value)) = term.split_once('=') {
                    let key = key.trim_end_matches('!');
                    if key.ends_with(".namespace") && !value.trim_start_matches('=').is_empty() {
                        assert!(
                            value.trim_start_matches('=').starts_with("foofoo-"),
                            "{path_and_query}"
                        );
                    }
                }
            }
        }
    }
}

fn form_urlencoded_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let dec = |s: &str| percent_decode(&s.replace('+', " "));
            (dec(k), dec(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let h = u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap();
            out.push(h);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn tenant_request() -> impl Strategy<Value = (String, String, Option<String>)> {
    let resources = prop_oneof![
        Just(("", "pods")),
        Just(("", "configmaps")),
        Just(("", "namespaces")),
        Just(("", "persistentvolumes")),
        Just(("", "events")),
        Just(("", "nodes")),
        Just(("apps", "deployments")),
        Just(("rbac.authorization.k8s.io", "clusterroles")),
        Just(("rbac.authorization.k8s.io", "rolebindings")),
        Just(("apiextensions.k8s.io", "customresourcedefinitions")),
        Just(("example.com", "widgets")),
        Just(("example.com", "gadgets")),
        Just(("storage.k8s.io", "storageclasses")),
    ];
    let method = prop_oneof![
        Just("GET"),
        Just("POST"),
        Just("PUT"),
        Just("PATCH"),
        Just("DELETE")
    ];
    let name = prop_oneof![dns_label(), Just("widgets.example.com".to_owned())];
    let sel = proptest::option::of(prop_oneof![
        dns_label().prop_map(|n| format!("fieldSelector=metadata.name%3D{n}")),
        dns_label().prop_map(|n| format!("fieldSelector=metadata.namespace%3D{n}")),
        dns_label().prop_map(|n| format!(
            "fieldSelector=involvedObject.namespace%3D{n}%2CinvolvedObject.name%3Dx"
        )),
        dns_label().prop_map(|n| format!("labelSelector=kubernetes.io%2Fmetadata.name%3D{n}")),
        Just("watch=true".to_owned()),
    ]);
    (
        resources,
        method,
        proptest::option::of(dns_label()),
        proptest::option::of(name),
        sel,
    )
        .prop_map(|((g, r), m, ns, name, q)| {
            let mut p = if g.is_empty() {
                "/api/v1".to_owned()
            } else {
                format!("/apis/{g}/v1")
            };
            if let Some(ns) = ns {
                p.push_str(&format!("/namespaces/{ns}"));
            }
            p.push_str(&format!("/{r}"));
            if let Some(n) = name {
                p.push_str(&format!("/{n}"));
            }
            (m.to_owned(), p, q)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn planned_paths_never_escape((method, path, query) in tenant_request()) {
        let ctx = ctx_with(test_catalog());
        let Ok(req) = parse_request(&method, &path, query.as_deref()) else { return Ok(()) };
        let Ok(p) = plan(&ctx, req) else { return Ok(()) };
        assert_upstream_path_confined(&ctx, &method, &p.upstream_path_and_query);
    }

    #[test]
    fn translated_bodies_never_escape(obj in prop_oneof![namespaced_object(), cluster_object()]) {
        let ctx = ctx_with(test_catalog());
        let mut v = obj;
        object_up(&ctx, &mut v, None).unwrap();
        assert_confined(&v, "");
        let m = &v["metadata"];
        if m.get("namespace").is_none() {
            let n = m["name"].as_str().unwrap();
            prop_assert!(n.starts_with("foofoo-") || n.contains(".foofoo-"), "{}", n);
        }
        if let Some(g) = v["spec"]["group"].as_str() {
            prop_assert!(g.starts_with("foofoo-"));
        }
    }

    /// A tenant-written selector or body naming the tenant label is always refused.
    #[test]
    fn tenant_label_is_never_accepted(ns in dns_label(), val in "[a-z]{1,6}") {
        let ctx = ctx_with(test_catalog());
        let q = format!("labelSelector=paddock.io%2Ftenant%3D{val}");
        let r = parse_request("GET", "/api/v1/namespaces", Some(&q)).unwrap();
        prop_assert!(plan(&ctx, r).is_err());
        let p = plan(&ctx, parse_request("POST", &format!("/api/v1/namespaces/{ns}/configmaps"), None).unwrap()).unwrap();
        let body = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"paddock.io/tenant":val}}});
        prop_assert!(translate_request_body(&ctx, &p, "application/json", &serde_json::to_vec(&body).unwrap()).is_err());
    }
}

#[test]
fn redacted_marker_is_stable() {
    assert_eq!(REDACTED, "<redacted>");
}
