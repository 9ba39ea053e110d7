//! Tenant FlowSchemas and PriorityLevelConfigurations in JSON: confined up, shown back down.

use serde_json::{Value, json};

use super::SHARES_ANNOTATION;
use crate::catalog::context::tests::ctx;
use crate::rules::modes::Disposition;
use crate::rules::object::{object_down, object_up};

fn up(v: Value) -> Result<Value, crate::error::TranslateError> {
    let mut v = v;
    object_up(&ctx(), &mut v, None)?;
    Ok(v)
}

fn down(v: Value) -> Value {
    let mut v = v;
    assert_eq!(object_down(&ctx(), &mut v).unwrap(), Disposition::Keep);
    v
}

fn flow_schema(subjects: Value, level: &str) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "fs", "labels": {"app": "x"}},
        "spec": {
            "matchingPrecedence": 100,
            "priorityLevelConfiguration": {"name": level},
            "rules": [{
                "subjects": subjects,
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "namespaces": ["default", "*"]}]
            }]
        }
    })
}

/// The conformance test's FlowSchema, and the subjects a cluster admin writes: each mapped
/// into the tenant, and the tenant reads back what it wrote.
#[test]
fn flow_schema_is_confined_and_round_trips() {
    let subjects = json!([
        {"kind": "User", "user": {"name": "example-e2e-non-existent-user"}},
        {"kind": "Group", "group": {"name": "system:authenticated"}},
        {"kind": "Group", "group": {"name": "devs"}},
        {"kind": "Group", "group": {"name": "system:serviceaccounts:ci"}},
        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "ci", "name": "*"}},
        {"kind": "User", "user": {"name": "system:serviceaccount:ci:deployer"}}
    ]);
    let fs = flow_schema(subjects, "global-default");
    let u = up(fs.clone()).unwrap();
    assert_eq!(u["metadata"]["name"], "foofoo-fs");
    assert_eq!(u["metadata"]["labels"]["paddock.io/tenant"], "foofoo");
    assert_eq!(
        u["spec"]["priorityLevelConfiguration"]["name"],
        "foofoo-global-default"
    );
    let s = &u["spec"]["rules"][0]["subjects"];
    assert_eq!(
        s[0]["user"]["name"],
        "paddock:foofoo:example-e2e-non-existent-user"
    );
    assert_eq!(s[1]["group"]["name"], "paddock:tenant:foofoo");
    assert_eq!(s[2]["group"]["name"], "paddock:foofoo:devs");
    assert_eq!(s[3]["group"]["name"], "system:serviceaccounts:foofoo-ci");
    assert_eq!(s[4]["serviceAccount"]["namespace"], "foofoo-ci");
    assert_eq!(s[4]["serviceAccount"]["name"], "*");
    assert_eq!(
        s[5]["user"]["name"],
        "system:serviceaccount:foofoo-ci:deployer"
    );
    assert_eq!(
        u["spec"]["rules"][0]["resourceRules"][0]["namespaces"],
        json!(["foofoo-default", "*"])
    );
    assert_eq!(down(u), fs);
}

/// Attack cases: a FlowSchema that would match every user, other tenants' or the platform's
/// identities, or send requests to a platform level.
#[test]
fn flow_schema_cannot_reach_outside_the_tenant() {
    for (subject, code) in [
        (json!({"kind": "User", "user": {"name": "*"}}), 403),
        (json!({"kind": "Group", "group": {"name": "*"}}), 403),
        (
            json!({"kind": "Group", "group": {"name": "system:masters"}}),
            403,
        ),
        (
            json!({"kind": "Group", "group": {"name": "system:serviceaccounts"}}),
            403,
        ),
        (
            json!({"kind": "Group", "group": {"name": "paddock:tenant:barbar"}}),
            403,
        ),
        (
            json!({"kind": "User", "user": {"name": "paddock:barbar:alice"}}),
            403,
        ),
        (
            json!({"kind": "User", "user": {"name": "system:kube-controller-manager"}}),
            403,
        ),
        (
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "*", "name": "*"}}),
            403,
        ),
        (
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "Bad_NS", "name": "x"}}),
            422,
        ),
    ] {
        let e = up(flow_schema(json!([subject.clone()]), "mine")).unwrap_err();
        assert_eq!(e.http_code(), code, "{subject}: {}", e.message());
    }
    // A platform level or another tenant's level is only ever a name inside the tenant.
    for level in ["exempt", "barbar-mine", "paddock-tenants"] {
        let u = up(flow_schema(json!([]), level)).unwrap();
        assert_eq!(
            u["spec"]["priorityLevelConfiguration"]["name"],
            format!("foofoo-{level}")
        );
    }
    // A merge patch carrying a subject's member alone is mapped too.
    let mut patch =
        json!({"spec": {"rules": [{"subjects": [{"group": {"name": "system:authenticated"}}]}]}});
    let c = ctx();
    let info = c
        .catalog
        .resolve(
            &c.tenant,
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "flowschemas",
        )
        .expect("flowschemas in the test catalog");
    crate::rules::object::object_up_with(
        &c,
        &mut patch,
        Some(&info),
        None,
        crate::rules::modes::UpMode::MergePatch,
    )
    .unwrap();
    assert_eq!(
        patch["spec"]["rules"][0]["subjects"][0]["group"]["name"],
        "paddock:tenant:foofoo"
    );
}

fn priority_level(spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "pl"},
        "spec": spec
    })
}

/// The conformance test's level: held at 0 shares upstream, the tenant's 2 shown back.
#[test]
fn priority_level_owns_no_seats_and_round_trips() {
    let pl = priority_level(json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": 2, "lendablePercent": 50,
        "limitResponse": {"type": "Reject"}}}));
    let u = up(pl.clone()).unwrap();
    assert_eq!(u["metadata"]["name"], "foofoo-pl");
    assert_eq!(u["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert_eq!(u["metadata"]["annotations"][SHARES_ANNOTATION], "2");
    assert_eq!(u["spec"]["limited"]["lendablePercent"], 50);
    assert_eq!(down(u), pl);

    // Left out: the v1 default (30), as a cluster would show.
    let u = up(priority_level(
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
    ))
    .unwrap();
    assert_eq!(u["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert_eq!(down(u)["spec"]["limited"]["nominalConcurrencyShares"], 30);

    // The tenant's own annotations stay beside paddock's.
    let mut pl =
        priority_level(json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 7}}));
    pl["metadata"]["annotations"] = json!({"team": "a"});
    let u = up(pl.clone()).unwrap();
    assert_eq!(u["metadata"]["annotations"]["team"], "a");
    assert_eq!(down(u), pl);
}

/// Attack cases: an Exempt level, huge or negative shares.
#[test]
fn priority_level_cannot_be_exempt_or_take_seats() {
    for (spec, code) in [
        (json!({"type": "Exempt"}), 403),
        (
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 100}}),
            403,
        ),
        (json!({"type": "Limited", "exempt": {}}), 403),
        (
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": -1}}),
            422,
        ),
        (
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 4294967296u64}}),
            422,
        ),
        (
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": "many"}}),
            422,
        ),
    ] {
        let e = up(priority_level(spec.clone())).unwrap_err();
        assert_eq!(e.http_code(), code, "{spec}: {}", e.message());
    }
    // Huge but valid: still 0 seats upstream.
    let u = up(priority_level(
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 2147483647}}),
    ))
    .unwrap();
    assert_eq!(u["spec"]["limited"]["nominalConcurrencyShares"], 0);
}

/// A merge patch of the shares moves them too; `null` (the default) as well; a json-patch
/// of them is refused (its value could not carry the annotation).
#[test]
fn priority_level_patches() {
    let c = ctx();
    let info = c
        .catalog
        .resolve(
            &c.tenant,
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "prioritylevelconfigurations",
        )
        .expect("prioritylevelconfigurations in the test catalog");
    let merge = |mut p: Value| {
        crate::rules::object::object_up_with(
            &c,
            &mut p,
            Some(&info),
            None,
            crate::rules::modes::UpMode::MergePatch,
        )
        .map(|()| p)
    };
    let p = merge(json!({"metadata": {"annotations": {"patched": "true"}},
                          "spec": {"limited": {"nominalConcurrencyShares": 4}}}))
    .unwrap();
    assert_eq!(p["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert_eq!(p["metadata"]["annotations"][SHARES_ANNOTATION], "4");
    assert_eq!(p["metadata"]["annotations"]["patched"], "true");
    let p = merge(json!({"spec": {"limited": {"nominalConcurrencyShares": null}}})).unwrap();
    assert_eq!(p["spec"]["limited"]["nominalConcurrencyShares"], 0);
    assert_eq!(p["metadata"]["annotations"][SHARES_ANNOTATION], "30");
    // Only the annotation: nothing about seats changes.
    let p = merge(json!({"metadata": {"annotations": {"a": "b"}}})).unwrap();
    assert!(p.get("spec").is_none());
    assert_eq!(
        merge(json!({"spec": {"type": "Exempt"}}))
            .unwrap_err()
            .http_code(),
        403
    );

    for path in [
        "/spec/limited/nominalConcurrencyShares",
        "/spec/limited",
        "/spec",
    ] {
        let body = json!([{"op": "replace", "path": path, "value": 5}]).to_string();
        let e = crate::wire::patch::translate_json_patch(&c, Some(&info), None, body.as_bytes())
            .unwrap_err();
        assert_eq!(e.http_code(), 422, "{path}");
    }
    let body = json!([{"op": "replace", "path": "/spec/limited/lendablePercent", "value": 5}]);
    crate::wire::patch::translate_json_patch(&c, Some(&info), None, body.to_string().as_bytes())
        .unwrap();
}

/// Lists show the platform's objects as they are beside the tenant's own; other tenants'
/// objects and paddock's per-tenant FlowSchemas never.
#[test]
fn platform_objects_are_listed_beside_the_tenants_own() {
    let fs = |name: &str, labels: Value| {
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
               "metadata": {"name": name, "labels": labels},
               "spec": {"priorityLevelConfiguration": {"name": "exempt"},
                        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:masters"}}]}]}})
    };
    let mut list = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchemaList",
        "metadata": {}, "items": [
        fs("exempt", json!({})),
        fs("foofoo-mine", json!({"paddock.io/tenant": "foofoo"})),
        fs("barbar-theirs", json!({"paddock.io/tenant": "barbar"})),
        fs("barbar-unlabelled-but-prefixed", json!({})),
        fs("paddock-tenants-foofoo-flow", json!({"paddock.io/tenant": "foofoo", "paddock.io/managed-for": "foofoo"})),
        fs("paddock-tenants-barbar-flow", json!({"paddock.io/tenant": "barbar", "paddock.io/managed-for": "barbar"})),
    ]});
    object_down(&ctx(), &mut list).unwrap();
    let items = list["items"].as_array().unwrap();
    let names: Vec<&str> = items
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    // An unlabelled object is the platform's whatever its name: the guard makes every tenant
    // object carry its label.
    assert_eq!(names, ["exempt", "mine", "barbar-unlabelled-but-prefixed"]);
    // The platform's object is shown as it is, untranslated.
    assert_eq!(
        items[0]["spec"]["priorityLevelConfiguration"]["name"],
        "exempt"
    );
    assert_eq!(
        items[0]["spec"]["rules"][0]["subjects"][0]["group"]["name"],
        "system:masters"
    );
}
