//! Isolation property: generated tenant requests (method, path, query, content type
//! and body, many of them hostile) are driven through the whole request path of the core,
//! `parse_request` -> `plan` -> `translate_request_body`, exactly as the server does; whatever
//! is accepted must name nothing upstream outside tenant `foofoo`: every namespace, every
//! prefixed cluster-scoped name, every API group, every RBAC subject and roleRef, every
//! reference to a namespace, the tenant label, and the selectors in the query.
//!
//! Runs `PROPTEST_CASES` cases (default 2,000). `PADDOCK_PROPTEST_SECONDS=600` instead keeps
//! generating for that long (fresh seeds each round) and prints the number of cases run.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use paddock_core::{Catalog, TenantContext, TenantId, parse_request, plan, translate_request_body};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

#[path = "isolation/down.rs"]
mod down;
#[path = "isolation/protobuf.rs"]
mod protobuf;
#[path = "isolation/reasons.rs"]
mod reasons;

const T: &str = "foofoo";

fn ctx() -> TenantContext {
    let d = env!("CARGO_MANIFEST_DIR");
    let c = Catalog::from_aggregated(
        &std::fs::read(format!("{d}/testdata/discovery-core.json")).unwrap(),
        &std::fs::read(format!("{d}/testdata/discovery-apis.json")).unwrap(),
    )
    .unwrap();
    TenantContext {
        tenant: TenantId::parse(T).unwrap(),
        catalog: Arc::new(c),
    }
}

// ---- generators -----------------------------------------------------------------------------

/// Names a hostile tenant would try: other tenants' and the platform's upstream names, path
/// tricks, encodings, reserved identities.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("default".to_owned()),
        Just("web".to_owned()),
        Just("kube-system".to_owned()),
        Just("barbar-web".to_owned()),
        Just("foofoo-web".to_owned()),
        Just("foofooo-web".to_owned()),
        Just("plat-core".to_owned()),
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("a%2Fb".to_owned()),
        Just("barbar-example.com".to_owned()),
        Just("example.com".to_owned()),
        Just("cluster-admin".to_owned()),
        Just("admin".to_owned()),
        Just("system:masters".to_owned()),
        Just("system:authenticated".to_owned()),
        Just("system:serviceaccounts".to_owned()),
        Just("system:serviceaccounts:barbar-web".to_owned()),
        Just("system:serviceaccount:kube-system:default".to_owned()),
        Just("system:serviceaccount:web:ci".to_owned()),
        Just("paddock:barbar:bob".to_owned()),
        Just("paddock:tenant:barbar".to_owned()),
        Just("paddock:cluster:barbar:paddock:barbar:bob".to_owned()),
        Just("paddock.io/tenant".to_owned()),
        Just(String::new()),
        "[a-z][a-z0-9-]{0,12}",
        "[a-z]{6}-[a-z]{1,8}",
        "[ -~]{0,16}",
    ]
}

/// Mostly ordinary names (so that most requests are accepted and their translation checked),
/// sometimes hostile ones.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-z0-9]{0,8}",
        1 => Just("barbar-web".to_owned()),
        1 => Just("kube-system".to_owned()),
        1 => Just("example.com".to_owned()),
        1 => Just("barbar-example.com".to_owned()),
        1 => "[a-z]{6}-[a-z]{1,8}",
        1 => nasty(),
    ]
}

fn resource_path() -> impl Strategy<Value = String> {
    // Mostly real (group, resource) pairs; sometimes mismatched or another tenant's group.
    let pairs = prop_oneof![
        Just(("/api/v1", "namespaces")),
        Just(("/api/v1", "pods")),
        Just(("/api/v1", "secrets")),
        Just(("/api/v1", "configmaps")),
        Just(("/api/v1", "serviceaccounts")),
        Just(("/api/v1", "persistentvolumes")),
        Just(("/api/v1", "persistentvolumeclaims")),
        Just(("/api/v1", "nodes")),
        Just(("/api/v1", "events")),
        Just(("/api/v1", "services")),
        Just(("/apis/apps/v1", "deployments")),
        Just(("/apis/rbac.authorization.k8s.io/v1", "roles")),
        Just(("/apis/rbac.authorization.k8s.io/v1", "rolebindings")),
        Just(("/apis/rbac.authorization.k8s.io/v1", "clusterroles")),
        Just(("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings")),
        Just(("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions")),
        Just((
            "/apis/admissionregistration.k8s.io/v1",
            "validatingwebhookconfigurations"
        )),
        Just((
            "/apis/admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations"
        )),
        Just((
            "/apis/admissionregistration.k8s.io/v1",
            "validatingadmissionpolicies"
        )),
        Just(("/apis/networking.k8s.io/v1", "networkpolicies")),
        Just(("/apis/authorization.k8s.io/v1", "selfsubjectaccessreviews")),
        Just(("/apis/authorization.k8s.io/v1", "subjectaccessreviews")),
        Just(("/apis/authorization.k8s.io/v1", "localsubjectaccessreviews")),
        Just(("/apis/example.com/v1", "gadgets")),
        Just(("/apis/example.com/v1", "widgets")),
        Just(("/apis/barbar-example.com/v1", "gadgets")),
        Just(("/apis/foofoo-example.com/v1", "gadgets")),
        Just(("/apis/cert-manager.io/v1", "certificates")),
        Just(("/apis/storage.k8s.io/v1", "storageclasses")),
        Just(("/apis/apiregistration.k8s.io/v1", "apiservices")),
        Just(("/api/v1", "clusterroles")),
    ];
    let sub = prop_oneof![
        16 => Just(None),
        1 => Just(Some("status")),
        1 => Just(Some("proxy")),
        1 => Just(Some("exec")),
        1 => Just(Some("log")),
        1 => Just(Some("token")),
        1 => Just(Some("finalize")),
        1 => Just(Some("binding")),
    ];
    (
        pairs,
        proptest::option::of(name()),
        proptest::option::of(name()),
        sub,
        prop::bool::weighted(0.1),
    )
        .prop_map(|((g, r), ns, name, sub, watch)| {
            let mut p = g.to_owned();
            if watch {
                p.push_str("/watch");
            }
            if let Some(ns) = ns {
                p.push_str("/namespaces/");
                p.push_str(&ns);
            }
            p.push('/');
            p.push_str(r);
            if let Some(n) = name {
                p.push('/');
                p.push_str(&n);
                if let Some(s) = sub {
                    p.push('/');
                    p.push_str(s);
                }
            }
            p
        })
}

fn raw_path() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => resource_path(),
        1 => "/[ -~]{0,40}",
        1 => Just("/api/v1/nodes/kwok-node-0/proxy/pods".to_owned()),
        1 => Just("/openapi/v3/apis/barbar-example.com/v1".to_owned()),
        1 => Just("/apis/barbar-example.com".to_owned()),
    ]
}

fn query() -> impl Strategy<Value = Option<String>> {
    let sel = prop_oneof![
        Just("paddock.io/tenant=barbar".to_owned()),
        Just("!paddock.io/tenant".to_owned()),
        Just("paddock.io/tenant in (foofoo,barbar)".to_owned()),
        Just("kubernetes.io/metadata.name=barbar-web".to_owned()),
        Just("kubernetes.io/metadata.name in (web,barbar-web)".to_owned()),
        Just("app=x".to_owned()),
        nasty(),
    ];
    let field = prop_oneof![
        Just("metadata.namespace=barbar-web".to_owned()),
        Just("metadata.namespace!=web".to_owned()),
        Just("metadata.name=barbar-web".to_owned()),
        Just("involvedObject.namespace=barbar-web".to_owned()),
        Just("spec.nodeName=kwok-node-0".to_owned()),
        nasty().prop_map(|n| format!("metadata.namespace={n}")),
        nasty().prop_map(|n| format!("metadata.name={n}")),
    ];
    proptest::option::of(
        (
            proptest::option::of(sel),
            proptest::option::of(field),
            any::<bool>(),
        )
            .prop_map(|(l, f, w)| {
                let mut q = form_urlencoded::Serializer::new(String::new());
                if let Some(l) = l {
                    q.append_pair("labelSelector", &l);
                }
                if let Some(f) = f {
                    q.append_pair("fieldSelector", &f);
                }
                if w {
                    q.append_pair("watch", "true");
                }
                q.finish()
            }),
    )
}

fn subject() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("User"),
            Just("Group"),
            Just("ServiceAccount"),
            Just("")
        ],
        name(),
        proptest::option::of(name()),
    )
        .prop_map(|(k, n, ns)| {
            let mut s = json!({"kind": k, "name": n});
            if let Some(ns) = ns {
                s["namespace"] = json!(ns);
            }
            if k != "ServiceAccount" {
                s["apiGroup"] = json!("rbac.authorization.k8s.io");
            }
            s
        })
}

fn body() -> impl Strategy<Value = Value> {
    let kinds = prop_oneof![
        Just(("v1", "Namespace")),
        Just(("v1", "ConfigMap")),
        Just(("v1", "Pod")),
        Just(("v1", "Secret")),
        Just(("v1", "PersistentVolume")),
        Just(("v1", "PersistentVolumeClaim")),
        Just(("v1", "Event")),
        Just(("v1", "ServiceAccount")),
        Just(("apps/v1", "Deployment")),
        Just(("rbac.authorization.k8s.io/v1", "Role")),
        Just(("rbac.authorization.k8s.io/v1", "RoleBinding")),
        Just(("rbac.authorization.k8s.io/v1", "ClusterRole")),
        Just(("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")),
        Just(("apiextensions.k8s.io/v1", "CustomResourceDefinition")),
        Just((
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration"
        )),
        Just(("networking.k8s.io/v1", "NetworkPolicy")),
        Just(("authorization.k8s.io/v1", "SubjectAccessReview")),
        Just(("authorization.k8s.io/v1", "SelfSubjectAccessReview")),
        Just(("example.com/v1", "Gadget")),
        Just(("barbar-example.com/v1", "Gadget")),
    ];
    (
        kinds,
        name(),
        proptest::option::of(name()),
        proptest::collection::vec(subject(), 0..3),
        (prop_oneof![Just("ClusterRole"), Just("Role")], name()),
        name(),
        prop_oneof![3 => Just("example.com".to_owned()), 1 => Just(String::new()), 1 => nasty()],
        proptest::option::of(prop_oneof![4 => Just("app".to_owned()), 1 => nasty()]),
    )
        .prop_map(|((av, kind), name, ns, subjects, (rk, rn), other, group, label)| {
            let mut meta = json!({"name": name});
            if let Some(ns) = &ns {
                meta["namespace"] = json!(ns);
            }
            if let Some(l) = label {
                meta["labels"] = if l == "app" {
                    json!({"app": "x"})
                } else {
                    json!({l.clone(): "x", "rbac.authorization.k8s.io/aggregate-to-edit": "true"})
                };
            }
            if !group.is_empty() {
                meta["ownerReferences"] = json!([{"apiVersion": format!("{group}/v1"), "kind": "Gadget", "name": other, "uid": "u"}]);
            }
            let mut o = json!({"apiVersion": av, "kind": kind, "metadata": meta});
            match kind {
                "RoleBinding" | "ClusterRoleBinding" => {
                    o["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": rk, "name": rn});
                    o["subjects"] = json!(subjects);
                }
                "ClusterRole" => {
                    o["rules"] = json!([{"apiGroups": [group], "resources": ["*"], "verbs": ["*"], "resourceNames": [other]}]);
                    o["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"kubernetes.io/metadata.name": other}}]});
                }
                "PersistentVolume" => {
                    o["spec"] = json!({"claimRef": {"namespace": other, "name": "c"}, "capacity": {"storage": "1Gi"}});
                }
                "PersistentVolumeClaim" => o["spec"] = json!({"volumeName": other, "storageClassName": other}),
                "Pod" => {
                    o["spec"] = json!({"serviceAccountName": other, "priorityClassName": other, "nodeName": other,
                        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "k", "namespaces": [other], "namespaceSelector": {}}]}},
                        "containers": [{"name": "c", "image": "i", "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]}]});
                }
                "Event" => {
                    o["involvedObject"] = json!({"kind": "Pod", "namespace": other, "name": "p"});
                }
                "CustomResourceDefinition" => {
                    o["spec"] = json!({"group": group, "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced",
                        "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": other, "name": "s"}}}},
                        "versions": [{"name": "v1", "served": true, "storage": true}]});
                }
                "ValidatingWebhookConfiguration" => {
                    o["webhooks"] = json!([{"name": "w.example.com", "clientConfig": {"service": {"namespace": other, "name": "s"}},
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": other}},
                        "rules": [{"apiGroups": [group], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"], "scope": "*"}]}]);
                }
                "NetworkPolicy" => {
                    o["spec"] = json!({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]});
                }
                "SubjectAccessReview" | "SelfSubjectAccessReview" => {
                    o["spec"] = json!({"user": other, "groups": [group],
                        "resourceAttributes": {"namespace": other, "group": group, "resource": "secrets", "name": name}});
                }
                _ => {}
            }
            o
        })
}

fn content_type() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        4 => Just("application/json"),
        1 => Just("application/merge-patch+json"),
        1 => Just("application/strategic-merge-patch+json"),
        1 => Just("application/apply-patch+yaml"),
        1 => Just("application/json-patch+json"),
    ]
}

fn request() -> impl Strategy<Value = Req> {
    (
        prop_oneof![
            Just("GET"),
            Just("POST"),
            Just("PUT"),
            Just("PATCH"),
            Just("DELETE")
        ],
        raw_path(),
        query(),
        content_type(),
        body(),
        nasty(),
    )
        .prop_map(|(m, p, q, ct, b, v)| {
            let body = if ct == "application/json-patch+json" {
                serde_json::to_vec(&json!([
                    {"op": "replace", "path": "/metadata/namespace", "value": v},
                    {"op": "add", "path": "/subjects/0", "value": {"kind": "Group", "name": v}},
                    {"op": "replace", "path": "/roleRef/name", "value": v},
                    {"op": "add", "path": "/metadata/labels/paddock.io~1tenant", "value": v}
                ]))
                .unwrap()
            } else {
                serde_json::to_vec(&b).unwrap()
            };
            Req {
                method: m.to_owned(),
                path: p,
                query: q,
                content_type: ct.to_owned(),
                body,
            }
        })
}

#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    query: Option<String>,
    content_type: String,
    body: Vec<u8>,
}

// ---- the oracle -----------------------------------------------------------------------------

fn own(s: &str) -> bool {
    s.starts_with("foofoo-")
}

/// Another tenant's (or an unprefixed) name where only the tenant's may be.
fn check_ns(what: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || own(v) {
        Ok(())
    } else {
        Err(format!("{what} names namespace {v:?} outside the tenant"))
    }
}

fn check_identity(what: &str, kind: &str, v: &str) -> Result<(), String> {
    let ok = v.starts_with("paddock:foofoo:")
        || v.starts_with("paddock:cluster:foofoo:")
        || v.starts_with("system:serviceaccounts:foofoo-")
        || v.starts_with("system:serviceaccount:foofoo-")
        || (kind == "ServiceAccount" && !v.contains(':'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: {kind} {v:?} is not an identity of the tenant"
        ))
    }
}

fn check_group(what: &str, g: &str) -> Result<(), String> {
    if paddock_core::looks_tenant_prefixed(g) && !own(g) {
        return Err(format!("{what}: API group {g:?} of another tenant"));
    }
    Ok(())
}

/// Walks an upstream body (object or patch).
fn check_body(v: &Value, path: &str, kind: &str) -> Result<(), String> {
    match v {
        Value::Object(m) => {
            // RBAC reads `namespace` only on ServiceAccount subjects.
            let user_or_group_subject = path.contains("/subjects/")
                && matches!(
                    m.get("kind").and_then(Value::as_str),
                    Some("User" | "Group")
                );
            for (k, x) in m {
                let p = format!("{path}/{k}");
                match (k.as_str(), x) {
                    ("namespace", Value::String(_)) if user_or_group_subject => {}
                    ("namespace", Value::String(s)) => check_ns(&p, s)?,
                    ("namespaces", Value::Array(a)) => {
                        for s in a.iter().filter_map(Value::as_str) {
                            check_ns(&p, s)?;
                        }
                    }
                    ("apiVersion", Value::String(s)) => {
                        check_group(&p, s.rsplit_once('/').map_or("", |x| x.0))?
                    }
                    ("apiGroups", Value::Array(a)) => {
                        for s in a.iter().filter_map(Value::as_str) {
                            check_group(&p, s)?;
                        }
                    }
                    ("group", Value::String(s))
                        if path.ends_with("/spec") || path.ends_with("resourceAttributes") =>
                    {
                        check_group(&p, s)?;
                    }
                    ("labels", Value::Object(l)) => {
                        if let Some(t) = l.get("paddock.io/tenant")
                            && t != "foofoo"
                        {
                            return Err(format!("{p}: tenant label {t}"));
                        }
                        if kind == "ClusterRole"
                            && l.keys()
                                .any(|k| k.starts_with("rbac.authorization.k8s.io/aggregate-to-"))
                        {
                            return Err(format!("{p}: aggregation label into platform roles"));
                        }
                    }
                    ("subjects", Value::Array(a)) => {
                        for s in a {
                            let k = s["kind"].as_str().unwrap_or("");
                            if let Some(n) = s["name"].as_str()
                                && !k.is_empty()
                            {
                                check_identity(&p, k, n)?;
                            }
                        }
                    }
                    ("roleRef", Value::Object(r)) => {
                        let n = r.get("name").and_then(Value::as_str).unwrap_or("");
                        let k = r.get("kind").and_then(Value::as_str).unwrap_or("");
                        let shared =
                            kind == "RoleBinding" && ["admin", "edit", "view"].contains(&n);
                        if k == "ClusterRole" && !own(n) && !shared && !n.is_empty() {
                            return Err(format!("{p}: roleRef to ClusterRole {n:?}"));
                        }
                    }
                    // spec.user means something only in (Local)SubjectAccessReviews.
                    ("user", Value::String(u))
                        if path.ends_with("/spec")
                            && (kind == "SubjectAccessReview"
                                || kind == "LocalSubjectAccessReview") =>
                    {
                        check_identity(&p, "User", u)?
                    }
                    _ => {}
                }
                check_body(x, &p, kind)?;
            }
            Ok(())
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                // json-patch operations.
                if let (Some(op_path), Some(val)) =
                    (x.get("path").and_then(Value::as_str), x.get("value"))
                {
                    if op_path.ends_with("/namespace")
                        && let Some(s) = val.as_str()
                    {
                        check_ns(op_path, s)?;
                    }
                    if op_path.contains("paddock.io~1tenant") && val.as_str() != Some("foofoo") {
                        return Err(format!("{op_path}: tenant label {val}"));
                    }
                    if op_path.starts_with("/subjects")
                        && let (Some(k), Some(n)) = (val["kind"].as_str(), val["name"].as_str())
                    {
                        check_identity(op_path, k, n)?;
                    }
                }
                check_body(x, &format!("{path}/{i}"), kind)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(x) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The upstream path and query: namespaces, groups, prefixed names, selectors.
fn check_upstream_path(p: &paddock_core::Plan) -> Result<(), String> {
    let (path, q) = p
        .upstream_path_and_query
        .split_once('?')
        .unwrap_or((&p.upstream_path_and_query, ""));
    let segs: Vec<String> = path.split('/').map(pct_decode).collect();
    for (i, s) in segs.iter().enumerate() {
        if s == ".." || s == "." {
            return Err(format!("dot segment in {path}"));
        }
        if i > 0 && segs[i - 1] == "namespaces" && segs.get(i + 1).is_some() {
            check_ns("path", s)?;
        }
        if i == 2 && segs[1] == "apis" {
            check_group("path", s)?;
        }
        if i == 3 && segs[1] == "openapi" {
            check_group("openapi path", segs.get(4).map_or("", String::as_str))?;
        }
    }
    if let Some(info) = &p.resource {
        if p.request.verb != paddock_core::Verb::Connect
            && info.resource == "nodes"
            && path.contains("/proxy")
        {
            return Err("nodes/proxy planned".into());
        }
        if info.resource == "namespaces" && segs.len() > 4 && segs[3] == "namespaces" {
            check_ns("namespace object", &segs[4])?;
        }
        // A prefixed cluster-scoped kind: the name (the segment after the resource) must be the
        // tenant's.
        let rp = p.resource_path();
        if info.prefixes_name()
            && let Some(rp) = rp
            && rp.name.is_some()
        {
            let at = segs
                .iter()
                .rposition(|x| *x == info.resource)
                .map_or(segs.len(), |i| i + 1);
            let n = segs.get(at).map_or("", String::as_str);
            let n = if info.is_crd() {
                n.split_once('.').map_or("", |x| x.1)
            } else {
                n
            };
            if !own(n) {
                return Err(format!(
                    "cluster-scoped name {n:?} outside the tenant in {path}"
                ));
            }
        }
        // Lists of prefixed kinds carry the tenant label term; no selector names another tenant.
        // (A proxied request's query goes to the tenant's own backend, not to the apiserver.)
        let proxied = p.subresource() == Some("proxy");
        for (k, v) in form_urlencoded::parse(q.as_bytes()).filter(|_| !proxied) {
            if k == "labelSelector" {
                let tenant_terms: Vec<&str> = v
                    .split(',')
                    .filter(|t| t.contains("paddock.io/tenant"))
                    .collect();
                // On shared read-only kinds paddock adds `!paddock.io/tenant` (leave out
                // paddock's per-tenant objects): it can only narrow what is selected.
                let shared = info.policy == paddock_core::Policy::SharedReadOnly;
                if tenant_terms.iter().any(|t| {
                    *t != "paddock.io/tenant=foofoo" && !(shared && *t == "!paddock.io/tenant")
                }) {
                    return Err(format!("label selector {v:?}"));
                }
                if info.resource == "namespaces"
                    && v.contains("kubernetes.io/metadata.name")
                    && v.contains("barbar-")
                    && !v.contains("foofoo-barbar-")
                {
                    return Err(format!(
                        "label selector names another tenant's namespace: {v:?}"
                    ));
                }
            }
            if k == "fieldSelector" {
                for term in v.split(',') {
                    if let Some((f, val)) = term.split_once('=') {
                        let f = f.trim_end_matches('!').trim_end_matches('=');
                        let val = val.trim_start_matches('=');
                        if (f.ends_with(".namespace")
                            || (f == "metadata.name" && info.resource == "namespaces"))
                            && !val.is_empty()
                            && !own(val)
                        {
                            return Err(format!("field selector {term:?}"));
                        }
                    }
                }
            }
        }
        if info.prefixes_name()
            && matches!(
                p.request.verb,
                paddock_core::Verb::List | paddock_core::Verb::Watch
            )
            && !q.contains("paddock.io%2Ftenant%3Dfoofoo")
        {
            return Err(format!("cluster-scoped list without the tenant term: {q}"));
        }
    }
    Ok(())
}

/// The whole request path, as the server runs it. Ok(true) when the request was accepted.
fn drive(ctx: &TenantContext, r: &Req) -> Result<bool, String> {
    let Ok(parsed) = parse_request(&r.method, &r.path, r.query.as_deref()) else {
        return Ok(false);
    };
    let Ok(p) = plan(ctx, parsed) else {
        return Ok(false);
    };
    check_upstream_path(&p)?;
    if p.needs_body_translation {
        let Ok((body, ct)) = translate_request_body(ctx, &p, &r.content_type, &r.body) else {
            return Ok(true);
        };
        let v: Value = if ct.contains("yaml") {
            serde_norway::from_slice(&body).map_err(|e| format!("upstream yaml body: {e}"))?
        } else {
            serde_json::from_slice(&body).map_err(|e| format!("upstream body is not JSON: {e}"))?
        };
        let kind = v["kind"].as_str().unwrap_or("").to_owned();
        let kind = if kind.is_empty() {
            p.resource
                .as_ref()
                .map(|i| i.kind.clone())
                .unwrap_or_default()
        } else {
            kind
        };
        check_body(&v, "", &kind).map_err(|e| format!("{e}\n  upstream body: {v}"))?;
    }
    Ok(true)
}

fn run_cases(
    cases: u32,
    seed: Option<[u8; 32]>,
    count: &AtomicU64,
    accepted: &AtomicU64,
) -> Result<(), String> {
    let ctx = ctx();
    let cfg = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = match seed {
        Some(s) => TestRunner::new_with_rng(cfg, TestRng::from_seed(RngAlgorithm::ChaCha, &s)),
        None => TestRunner::new(cfg),
    };
    runner
        .run(&request(), |r| {
            count.fetch_add(1, Ordering::Relaxed);
            match drive(&ctx, &r) {
                Ok(true) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Ok(false) => Ok(()),
                Err(e) => Err(TestCaseError::fail(format!(
                    "{e}\n  request: {} {}?{}",
                    r.method,
                    r.path,
                    r.query.clone().unwrap_or_default()
                ))),
            }
        })
        .map_err(|e| e.to_string())
}

#[test]
fn no_generated_request_names_anything_outside_the_tenant() {
    let count = AtomicU64::new(0);
    let accepted = AtomicU64::new(0);
    let t0 = Instant::now();
    match std::env::var("PADDOCK_PROPTEST_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(secs) => {
            let deadline = Duration::from_secs(secs);
            let mut round: u64 = 0;
            while t0.elapsed() < deadline {
                let mut seed = [0u8; 32];
                seed[..8].copy_from_slice(&round.to_le_bytes());
                seed[8..16].copy_from_slice(&(t0.elapsed().as_nanos() as u64).to_le_bytes());
                if let Err(e) = run_cases(5_000, Some(seed), &count, &accepted) {
                    panic!("escape after {} cases: {e}", count.load(Ordering::Relaxed));
                }
                round += 1;
            }
        }
        None => {
            let cases = std::env::var("PROPTEST_CASES")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(2_000);
            if let Err(e) = run_cases(cases, None, &count, &accepted) {
                panic!("escape: {e}");
            }
        }
    }
    eprintln!(
        "isolation property: {} generated requests ({} accepted by the core and checked upstream-side) in {:.1}s, no escape",
        count.load(Ordering::Relaxed),
        accepted.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64()
    );
}
