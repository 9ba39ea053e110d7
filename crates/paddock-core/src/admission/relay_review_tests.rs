#![allow(clippy::unwrap_used)]
use base64::Engine as _;
use serde_json::{Value, json};

use super::*;
use crate::catalog::context::tests::ctx;

/// What the apiserver sends for a tenant's Widget in its namespace `app`.
fn review(group: &str, ns: &str, object: Value) -> Value {
    json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
        "uid":"u-1",
        "kind":{"group":group,"version":"v1","kind":"Widget"},
        "resource":{"group":group,"version":"v1","resource":"widgets"},
        "requestKind":{"group":group,"version":"v1","kind":"Widget"},
        "requestResource":{"group":group,"version":"v1","resource":"widgets"},
        "name":"w","namespace":ns,"operation":"CREATE",
        "userInfo":{"username":"paddock:foofoo:alice","groups":["paddock:tenant:foofoo","system:authenticated"]},
        "object":object,"oldObject":null,"dryRun":false,
        "options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions","fieldManager":"kubectl"}}})
}

fn widget(group: &str, ns: &str) -> Value {
    json!({"apiVersion":format!("{group}/v1"),"kind":"Widget","metadata":{"name":"w","namespace":ns,
        "labels":{"paddock.io/tenant":"foofoo","app":"x"}},"spec":{"size":1}})
}

#[test]
fn the_tenant_webhook_gets_the_review_in_its_names() {
    let c = ctx();
    let r = review(
        "foofoo-example.com",
        "foofoo-app",
        widget("foofoo-example.com", "foofoo-app"),
    );
    let Relayed::Review(sent) = review_down(&c, &r).unwrap() else {
        panic!("not relayed")
    };
    let q = &sent["request"];
    assert_eq!(q["kind"]["group"], "example.com");
    assert_eq!(q["resource"]["group"], "example.com");
    assert_eq!(q["requestResource"]["group"], "example.com");
    assert_eq!(q["namespace"], "app");
    assert_eq!(q["name"], "w");
    assert_eq!(q["object"]["apiVersion"], "example.com/v1");
    assert_eq!(q["object"]["metadata"]["namespace"], "app");
    assert_eq!(q["userInfo"]["username"], "alice");
    assert_eq!(q["uid"], "u-1");
    assert_eq!(q["options"]["fieldManager"], "kubectl");
    assert!(!sent.to_string().contains("foofoo"), "{sent}");
}

#[test]
fn another_tenants_or_the_platforms_objects_are_never_sent() {
    let c = ctx();
    for r in [
        review(
            "barbar-example.com",
            "barbar-app",
            widget("barbar-example.com", "barbar-app"),
        ),
        review(
            "foofoo-example.com",
            "barbar-app",
            widget("foofoo-example.com", "barbar-app"),
        ),
        review(
            "foofoo-example.com",
            "kube-system",
            widget("foofoo-example.com", "kube-system"),
        ),
        review("foofoo-example.com", "", widget("foofoo-example.com", "")),
    ] {
        assert_eq!(review_down(&c, &r).unwrap(), Relayed::NotTheTenants, "{r}");
        let a = allowed(&r);
        assert_eq!(a["response"], json!({"uid":"u-1","allowed":true}));
    }
    // a Namespace of the tenant is the tenant's, another's is not
    let ns = |name: &str| {
        let mut r = review(
            "",
            "",
            json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":name,"labels":{"paddock.io/tenant":"foofoo"}}}),
        );
        r["request"]["resource"] = json!({"group":"","version":"v1","resource":"namespaces"});
        r["request"]["kind"] = json!({"group":"","version":"v1","kind":"Namespace"});
        r["request"]["name"] = json!(name);
        r
    };
    let Relayed::Review(sent) = review_down(&c, &ns("foofoo-dev")).unwrap() else {
        panic!("own namespace not relayed")
    };
    assert_eq!(sent["request"]["name"], "dev");
    assert_eq!(
        review_down(&c, &ns("barbar-dev")).unwrap(),
        Relayed::NotTheTenants
    );
    assert!(review_down(&c, &json!({"kind":"Nope"})).is_err());
}

#[test]
fn the_answer_goes_back_with_its_patch_in_upstream_names() {
    let c = ctx();
    let r = review(
        "foofoo-example.com",
        "foofoo-app",
        widget("foofoo-example.com", "foofoo-app"),
    );
    let Relayed::Review(sent) = review_down(&c, &r).unwrap() else {
        panic!()
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let patch = json!([{"op":"add","path":"/metadata/annotations","value":{"seen":"yes"}},
                       {"op":"replace","path":"/metadata/namespace","value":"app"}]);
    let answer = json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{
        "uid":"u-1","allowed":true,"patchType":"JSONPatch","patch":b64.encode(patch.to_string()),
        "warnings":["w1"]}});
    let up = answer_up(&c, &sent, answer.to_string().as_bytes()).unwrap();
    assert_eq!(up["response"]["allowed"], true);
    assert_eq!(up["response"]["warnings"], json!(["w1"]));
    let p: Value = serde_json::from_slice(
        &b64.decode(up["response"]["patch"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(p[1]["value"], "foofoo-app");
    assert_eq!(p[0]["value"], json!({"seen":"yes"}));

    // a denial keeps the webhook's own words
    let deny =
        json!({"response":{"uid":"u-1","allowed":false,"status":{"code":403,"message":"no"}}});
    let up = answer_up(&c, &sent, deny.to_string().as_bytes()).unwrap();
    assert_eq!(up["response"]["status"]["message"], "no");
    // the wrong uid, no response, not JSON, a bad patch
    for bad in [
        json!({"response":{"uid":"other","allowed":true}}).to_string(),
        json!({"apiVersion":"admission.k8s.io/v1"}).to_string(),
        "<html>".to_owned(),
        json!({"response":{"uid":"u-1","allowed":true,"patch":"!!"}}).to_string(),
    ] {
        assert!(answer_up(&c, &sent, bad.as_bytes()).is_err(), "{bad}");
    }
}
