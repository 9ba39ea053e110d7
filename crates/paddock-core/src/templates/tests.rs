use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::catalog::context::TenantContext;
use crate::tenant::TenantId;

fn ctx() -> TenantContext {
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(crate::catalog::tests::catalog()),
    }
}

/// A template of generation 3 (also the drift tests').
pub(super) fn tmpl(name: &str, mandatory: bool, manifests: Vec<Value>) -> NamespaceTemplate {
    NamespaceTemplate {
        name: name.into(),
        mandatory,
        tenants: vec![],
        manifests,
        generation: 3,
        created: String::new(),
        builtin: false,
    }
}

pub(super) fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
}

#[test]
fn builtin_default_is_todays_objects() {
    let c = ctx();
    for webhook in [false, true] {
        let b = builtin_templates(webhook, false);
        assert_eq!(b.len(), 1);
        validate(&b[0], &c).unwrap();
        let (path, np) = stamped_object(&c, &b[0], &b[0].manifests[0], "foofoo-web").unwrap();
        assert_eq!(
            path,
            "/apis/networking.k8s.io/v1/namespaces/foofoo-web/networkpolicies/paddock-tenant-isolation"
        );
        let today = crate::provision::namespace_network_policy(&c.tenant, "foofoo-web");
        assert_eq!(
            np["spec"], today["spec"],
            "the isolation policy is translated to today's form"
        );
        assert_eq!(np["metadata"]["namespace"], "foofoo-web");
        assert_eq!(np["metadata"]["labels"][LOCKED_LABEL], "true");
        assert_eq!(np["metadata"]["labels"][TEMPLATE_LABEL], BUILTIN_DEFAULT);
        let (_, q) = stamped_object(&c, &b[0], &b[0].manifests[1], "foofoo-web").unwrap();
        let today = crate::provision::namespace_quota(&c.tenant, "foofoo-web", webhook);
        assert_eq!(q["spec"], today["spec"]);
    }
    let both = builtin_templates(true, true);
    assert_eq!(both.len(), 2);
    validate(&both[1], &c).unwrap();
}

#[test]
fn validation_refuses_what_cannot_be_stamped() {
    let c = ctx();
    validate(&tmpl("ok", true, vec![cm("a"), json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "devs"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "developers"}]})]), &c).unwrap();
    let bad = [
        (tmpl("Bad_Name", true, vec![cm("a")]), "DNS label"),
        (tmpl("empty", true, vec![]), "no objects"),
        (
            tmpl(
                "deploy",
                true,
                vec![
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
                ],
            ),
            "cannot be stamped",
        ),
        (
            tmpl(
                "crb",
                true,
                vec![
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "d"}}),
                ],
            ),
            "cannot be stamped",
        ),
        (
            tmpl(
                "ns",
                true,
                vec![
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}}),
                ],
            ),
            "metadata.namespace",
        ),
        (
            tmpl(
                "noname",
                true,
                vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})],
            ),
            "metadata.name",
        ),
        (
            tmpl(
                "lbl",
                true,
                vec![
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {LOCKED_LABEL: "false"}}}),
                ],
            ),
            "reserved",
        ),
        (
            tmpl(
                "tlbl",
                true,
                vec![
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"paddock.io/tenant": "barbar"}}}),
                ],
            ),
            "reserved",
        ),
        (tmpl("dup", true, vec![cm("a"), cm("a")]), "twice"),
        (
            tmpl(
                "admins",
                true,
                vec![
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "paddock-tenant-admins"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
                ],
            ),
            "paddock's own",
        ),
        // the rule table refuses what a tenant could not write either
        (
            tmpl(
                "escape",
                true,
                vec![
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]}),
                ],
            ),
            "system:masters",
        ),
    ];
    for (t, why) in bad {
        let e = validate(&t, &c).unwrap_err();
        assert!(e.to_string().contains(why), "{}: {e}", t.name);
    }
    let mut scoped = tmpl("scoped", true, vec![cm("a")]);
    scoped.tenants = vec!["NOPE".into()];
    assert!(validate(&scoped, &c).is_err());
}

#[test]
fn overlap_between_templates_is_refused() {
    let a = tmpl("a", true, vec![cm("x")]);
    let b = tmpl("b", false, vec![cm("x")]);
    assert!(
        check_overlap(&b, std::slice::from_ref(&a))
            .unwrap_err()
            .to_string()
            .contains("namespace template a")
    );
    assert!(
        check_overlap(&a, std::slice::from_ref(&a)).is_ok(),
        "a template does not overlap itself"
    );
}

#[test]
fn which_templates_a_namespace_wants() {
    let t = TenantId::parse("foofoo").unwrap();
    let mut only_other = tmpl("other", true, vec![cm("o")]);
    only_other.tenants = vec!["barbar".into()];
    let all = [
        tmpl("mand", true, vec![cm("m")]),
        tmpl("opt", false, vec![cm("p")]),
        only_other,
    ];
    let plain = json!({"metadata": {"name": "foofoo-a", "labels": {}}});
    let asks = json!({"metadata": {"name": "foofoo-b", "labels": {"templates.paddock.io/opt": "true", "templates.paddock.io/other": "true"}}});
    let names = |ns: &Value| {
        wanted(&all, &t, ns)
            .iter()
            .map(|x| x.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&plain), ["mand"]);
    assert_eq!(
        names(&asks),
        ["mand", "opt"],
        "optional on request only; another tenant's never"
    );
    let bar = TenantId::parse("barbar").unwrap();
    assert_eq!(wanted(&all, &bar, &plain).len(), 2);
}

#[test]
fn annotation_and_sync_state() {
    let a = tmpl("a", true, vec![cm("x")]);
    let b = tmpl("b", true, vec![cm("y")]);
    let mut stamps = std::collections::BTreeMap::new();
    stamps.insert(
        "b".to_string(),
        Stamp {
            generation: 3,
            in_sync: true,
        },
    );
    stamps.insert(
        "a".to_string(),
        Stamp {
            generation: 3,
            in_sync: false,
        },
    );
    let s = format_annotation(&stamps);
    assert_eq!(s, "a=3/failed,b=3/in-sync");
    assert_eq!(parse_annotation(&s), stamps);
    let ns = |ann: &str| json!({"metadata": {"annotations": {TEMPLATES_ANNOTATION: ann}}});
    assert!(needs_stamp(&ns(&s), &[&a, &b]), "a failed");
    assert!(!needs_stamp(&ns("a=3/in-sync,b=3/in-sync"), &[&a, &b]));
    assert!(
        needs_stamp(&ns("a=2/in-sync,b=3/in-sync"), &[&a, &b]),
        "a changed"
    );
    assert!(
        needs_stamp(&ns("a=3/in-sync,b=3/in-sync,c=1/in-sync"), &[&a, &b]),
        "c went"
    );
    assert!(needs_stamp(&json!({"metadata": {}}), &[&a]));
    assert!(!needs_stamp(&json!({"metadata": {}}), &[]));
}

#[test]
fn stale_locked_objects() {
    let cmk = template_kind(&cm("x")).unwrap();
    let a = tmpl("a", true, vec![cm("x")]);
    let found = vec![
        FoundLocked {
            kind: cmk,
            name: "x".into(),
            template: "a".into(),
        },
        FoundLocked {
            kind: cmk,
            name: "y".into(),
            template: "a".into(),
        },
        FoundLocked {
            kind: cmk,
            name: "z".into(),
            template: "gone".into(),
        },
    ];
    let stale: Vec<&str> = stale_locked(&found, &[&a])
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(stale, ["y", "z"]);
}

#[test]
fn guards_match_only_what_they_protect() {
    let guards = templates_guards();
    let names: Vec<&str> = guards.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [TEMPLATES_GUARD_NAME, TEMPLATES_NAMESPACE_GUARD_NAME]
    );
    // The lock: the stamped kinds and namespaces, only objects that carry (or carried) the
    // lock label (an ordinary ConfigMap write evaluates nothing).
    let lock = &guards[0].1["spec"];
    let rules = lock["matchConstraints"]["resourceRules"]
        .as_array()
        .unwrap();
    let core = rules
        .iter()
        .find(|r| r["apiGroups"] == json!([""]))
        .unwrap();
    for r in ["configmaps", "resourcequotas", "namespaces"] {
        assert!(
            core["resources"].as_array().unwrap().iter().any(|x| x == r),
            "{r}"
        );
    }
    assert!(
        rules
            .iter()
            .any(|r| r["apiGroups"] == json!(["networking.k8s.io"]))
    );
    assert_eq!(
        lock["matchConstraints"]["objectSelector"],
        json!({"matchExpressions": [{"key": LOCKED_LABEL, "operator": "Exists"}]})
    );
    // The annotation guard: namespace creates and updates only, any label.
    let ns = &guards[1].1["spec"];
    assert_eq!(
        ns["matchConstraints"]["resourceRules"],
        json!([{"apiGroups": [""], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}])
    );
    assert!(ns["matchConstraints"].get("objectSelector").is_none());
    for (_, p) in &guards {
        assert_eq!(
            p["spec"]["matchConditions"][0]["name"], "tenant-identity",
            "both apply to tenant identities only"
        );
        for v in p["spec"]["validations"].as_array().unwrap() {
            assert_eq!(v["reason"], "Forbidden");
        }
    }
}
