//! The down direction: generated upstream objects, whose naming fields hold a mix of the
//! tenant's upstream names (`foofoo-*`), another tenant's (`barbar-*`), the platform's, and
//! identities of both, are rewritten by `object_down`. Whatever the tenant receives must hold
//! nothing of another tenant and no upstream name: no `barbar`, no `foofoo-` prefix, no
//! `paddock:` identity, no tenant label. The oracle is a scan of every string of the result; it
//! knows nothing of the rule table (which fields are naming fields is the generator's own
//! knowledge of the Kubernetes API).

use paddock_core::{Disposition, object_down};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use super::ctx;

/// A namespace name upstream: ours, another tenant's, the platform's.
fn ns() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z]{1,6}".prop_map(|s| format!("foofoo-{s}")),
        1 => "[a-z]{1,6}".prop_map(|s| format!("barbar-{s}")),
        1 => Just("kube-system".to_owned()),
    ]
}

/// An API group upstream.
fn group() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("foofoo-example.com".to_owned()),
        Just("barbar-example.com".to_owned()),
        Just("apps".to_owned()),
    ]
}

/// A user or group as upstream RBAC sees it.
fn identity() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        Just(("User".to_owned(), "paddock:foofoo:alice".to_owned())),
        Just(("User".to_owned(), "paddock:barbar:bob".to_owned())),
        Just(("Group".to_owned(), "paddock:tenant:barbar".to_owned())),
        Just(("Group".to_owned(), "paddock:foofoo:dev".to_owned())),
        Just((
            "User".to_owned(),
            "paddock:cluster:barbar:paddock:barbar:bob".to_owned()
        )),
        Just((
            "User".to_owned(),
            "paddock:cluster:foofoo:paddock:foofoo:alice".to_owned()
        )),
        Just((
            "User".to_owned(),
            "system:serviceaccount:barbar-ci:builder".to_owned()
        )),
    ]
}

fn tenant_term(t: &str) -> Value {
    json!({"key": "paddock.io/tenant", "operator": "In", "values": [t]})
}

fn selector(ns: &str, term: &str) -> Value {
    json!({"matchLabels": {"kubernetes.io/metadata.name": ns}, "matchExpressions": [tenant_term(term)]})
}

fn objref(kind: &str, ns: &str, name: &str, group: &str) -> Value {
    let av = if group == "v1" {
        "v1".to_owned()
    } else {
        format!("{group}/v1")
    };
    json!({"apiVersion": av, "kind": kind, "namespace": ns, "name": name})
}

#[derive(Debug, Clone)]
struct Gen {
    kind: usize,
    own_ns: String,
    ns2: String,
    group: String,
    label: String,
    ident: (String, String),
}

fn upstream_object() -> impl Strategy<Value = Gen> {
    (
        0usize..14,
        ns(),
        ns(),
        group(),
        prop_oneof![Just("foofoo"), Just("barbar")],
        identity(),
    )
        .prop_map(|(kind, own_ns, ns2, group, label, ident)| Gen {
            kind,
            own_ns,
            ns2,
            group,
            label: label.to_owned(),
            ident,
        })
}

fn metadata(g: &Gen, namespaced: bool, name: &str) -> Value {
    let mut m = json!({
        "name": name,
        "labels": {"paddock.io/tenant": g.label, "app": "x"},
        "ownerReferences": [{"apiVersion": format!("{}/v1", g.group), "kind": "Widget", "name": "w", "uid": "u"}],
        "managedFields": [{"manager": "m", "apiVersion": format!("{}/v1", g.group), "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:paddock.io/tenant": {}, "f:app": {}}}}}],
    });
    if namespaced {
        m["namespace"] = json!(g.own_ns);
    }
    m
}

fn object(g: &Gen) -> Value {
    let (ik, iname) = &g.ident;
    let subject = json!({"kind": ik, "apiGroup": "rbac.authorization.k8s.io", "name": iname});
    let sa = json!({"kind": "ServiceAccount", "name": "ci", "namespace": g.ns2});
    let term = json!({"topologyKey": "k", "namespaces": [g.ns2], "namespaceSelector": selector(&g.ns2, &g.label)});
    match g.kind {
        0 => json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata(g, true, "p"),
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
                "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeName": g.ns2,
                    "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "s", "namespace": g.ns2}}}}}]}}),
        1 => json!({"apiVersion": "v1", "kind": "Event", "metadata": metadata(g, true, "e"),
            "involvedObject": objref("Pod", &g.ns2, "p", "v1"), "related": objref("Widget", &g.ns2, "w", &g.group),
            "message": format!("pod {}/p and {} failed", g.ns2, iname)}),
        2 => {
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": metadata(g, true, "e"),
            "regarding": objref("Namespace", "", &g.ns2, "v1"), "note": format!("in {}", g.ns2)})
        }
        3 => {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": metadata(g, true, "b"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{}-r", g.label)},
            "subjects": [subject, sa]})
        }
        4 => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": metadata(g, false, &format!("{}-b", g.label)),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{}-r", g.label)},
            "subjects": [subject]}),
        5 => {
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": metadata(g, false, &format!("{}-pv", g.label)),
            "spec": {"claimRef": objref("PersistentVolumeClaim", &g.ns2, "c", "v1"),
                "csi": {"driver": "d", "volumeHandle": "h", "nodePublishSecretRef": {"name": "s", "namespace": g.ns2}}}})
        }
        6 => {
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata(g, true, "c"),
            "spec": {"volumeName": format!("{}-pv", g.label), "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "s", "namespace": g.ns2}}})
        }
        7 => {
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(g, true, "np"),
            "spec": {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": selector(&g.ns2, &g.label)}]}]}})
        }
        8 => {
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": metadata(g, false, &format!("{}-v", g.label)),
            "webhooks": [{"name": "w.example.com", "clientConfig": {"service": {"namespace": g.ns2, "name": "s"}},
                "namespaceSelector": selector(&g.ns2, &g.label),
                "rules": [{"apiGroups": [g.group], "apiVersions": ["v1"], "operations": ["*"], "resources": ["widgets"]}]}]})
        }
        9 => json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": metadata(g, false, &format!("widgets.{}", g.group)),
            "spec": {"group": g.group, "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": g.ns2, "name": "s"}}}}}}),
        10 => json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata(g, true, "svc"),
            "subsets": [{"addresses": [{"ip": "10.0.0.1", "targetRef": objref("Pod", &g.ns2, "p", "v1")}]}]}),
        11 => {
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata(g, true, "cj"),
            "status": {"active": [objref("Job", &g.ns2, "j", "batch")]}})
        }
        12 => {
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
            "status": {"userInfo": {"username": iname, "groups": [iname, format!("paddock:tenant:{}", g.label), "system:authenticated"],
                "extra": {"paddock.io/tenant": [g.label]}}}})
        }
        _ => {
            json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "NotFound",
            "message": format!("namespaces \"{}\" not found for {}", g.ns2, iname),
            "details": {"name": g.ns2, "kind": "namespaces", "causes": [{"message": format!("{} denied", iname), "field": "metadata.namespace"}]}})
        }
    }
}

/// Every string (and key) of a document that names another tenant or is an upstream name.
fn leaks(v: &Value, path: &str, out: &mut Vec<String>) {
    let bad = |s: &str| {
        s.contains("barbar")
            || s.contains("foofoo-")
            || s.contains("paddock:")
            || s.contains("paddock.io/tenant")
    };
    match v {
        Value::String(s) if bad(s) => out.push(format!("{path} = {s:?}")),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaks(x, &format!("{path}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                if bad(k) {
                    out.push(format!("{path}: key {k:?}"));
                }
                leaks(x, &format!("{path}/{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn nothing_of_another_tenant_and_no_upstream_name_reaches_the_tenant() {
    let ctx = ctx();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let kept = std::sync::atomic::AtomicU32::new(0);
    runner
        .run(&upstream_object(), |g| {
            let mut v = object(&g);
            let orig = v.clone();
            match object_down(&ctx, &mut v) {
                // Refused whole (another tenant's group in an object or list): nothing shown.
                Err(_) | Ok(Disposition::Drop) => {}
                Ok(Disposition::Keep) => {
                    kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let mut found = Vec::new();
                    leaks(&v, "", &mut found);
                    prop_assert!(
                        found.is_empty(),
                        "the tenant would see {found:?}\n  upstream: {orig}\n  shown: {v}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // The generator keeps most objects: the check is not vacuous.
    assert!(
        kept.into_inner() > cases / 4,
        "too few objects kept to check"
    );
}

/// The oracle sees a leak when there is one (a positive control for the scan itself).
#[test]
fn the_down_oracle_sees_leaks() {
    let mut found = Vec::new();
    leaks(
        &json!({"a": ["ok", {"namespace": "barbar-x"}], "foofoo-k": 1, "b": "paddock:foofoo:u"}),
        "",
        &mut found,
    );
    assert_eq!(found.len(), 3, "{found:?}");
}
