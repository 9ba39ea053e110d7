#![allow(clippy::unwrap_used)]
use std::sync::Arc;

use serde_json::{Value, json};

use crate::catalog::context::TenantContext;
use crate::catalog::context::tests::ctx;
use crate::catalog::webhook_relay::WebhookRelay;
use crate::rules::modes::{Disposition, UpMode};
use crate::rules::object::{object_down, object_up, object_up_with};

/// The test tenant, its webhooks relayed through paddock at `url`.
pub(crate) fn relayed(url: &str) -> TenantContext {
    let mut c = ctx();
    let relay = WebhookRelay {
        url: url.into(),
        ca_pem: "PADDOCK".into(),
    };
    c.catalog = Arc::new(
        (*c.catalog)
            .clone()
            .with_webhook_relay(Some(Arc::new(relay))),
    );
    c
}

fn config(cc: Value) -> Value {
    json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"vw"},"webhooks":[
        {"name":"a.example.com","clientConfig":cc,
         "rules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}],
         "sideEffects":"None","admissionReviewVersions":["v1"]}]})
}

#[test]
fn a_tenant_webhook_is_relayed_and_reads_back_as_written() {
    let c = relayed("https://127.0.0.1:9443");
    let written = json!({"service":{"namespace":"hooks","name":"svc","path":"/validate"},"caBundle":"VEVOQU5UQ0E="});
    let mut v = config(written.clone());
    object_up(&c, &mut v, None).unwrap();
    let cc = &v["webhooks"][0]["clientConfig"];
    assert!(cc.get("service").is_none(), "{cc}");
    assert_eq!(cc["caBundle"], "UEFERE9DSw=="); // paddock's CA
    let url = cc["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://127.0.0.1:9443/tenant-webhook/v1/foofoo/hooks/svc/443/ca1/"),
        "{url}"
    );
    assert!(url.ends_with("/validate"), "{url}");
    assert_eq!(object_down(&c, &mut v).unwrap(), Disposition::Keep);
    // as the apiserver shows it: the port defaulted
    let mut expect = written;
    expect["service"]["port"] = json!(443);
    assert_eq!(v["webhooks"][0]["clientConfig"], expect);
}

#[test]
fn behind_a_service_url_the_relay_is_a_service_reference() {
    let c = relayed("https://paddock.paddock-system.svc:9443");
    let mut v = config(json!({"service":{"namespace":"hooks","name":"svc","port":8443}}));
    object_up(&c, &mut v, None).unwrap();
    let svc = &v["webhooks"][0]["clientConfig"]["service"];
    assert_eq!(svc["namespace"], "paddock-system");
    assert_eq!(svc["port"], 9443);
    assert_eq!(svc["path"], "/tenant-webhook/v1/foofoo/hooks/svc/8443/ca0");
    object_down(&c, &mut v).unwrap();
    assert_eq!(
        v["webhooks"][0]["clientConfig"],
        json!({"service":{"namespace":"hooks","name":"svc","port":8443}})
    );
}

#[test]
fn a_part_of_a_client_config_is_refused_and_a_url_forbidden() {
    let c = relayed("https://127.0.0.1:9443");
    let e = object_up(&c, &mut config(json!({"url":"https://evil"})), None).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = object_up(&c, &mut config(json!({"caBundle":"Zm9v"})), None).unwrap_err();
    assert_eq!(e.http_code(), 422);
    assert!(e.message().contains("written whole"), "{}", e.message());
    let e = object_up(
        &c,
        &mut config(json!({"service":{"namespace":"x y","name":"s"}})),
        None,
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 422);
    let e = object_up(
        &c,
        &mut config(json!({"service":{"namespace":"h","name":"s"},"caBundle":"!!"})),
        None,
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 400);
    let huge = crate::catalog::webhook_relay::b64_encode(&vec![b'x'; 7000]);
    let e = object_up(
        &c,
        &mut config(json!({"service":{"namespace":"h","name":"s"},"caBundle":huge})),
        None,
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 422);
    // a merge patch that changes the CA alone cannot be carried
    let mut p = json!({"webhooks":[{"name":"a.example.com","clientConfig":{"caBundle":"Zm9v"}}]});
    let info = c
        .catalog
        .resolve(
            &c.tenant,
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
        )
        .unwrap();
    let e = object_up_with(&c, &mut p, Some(&info), None, UpMode::MergePatch).unwrap_err();
    assert_eq!(e.http_code(), 422);
    // the whole config in a merge patch: the stored form of the other kind is removed
    let mut p = json!({"webhooks":[{"name":"a.example.com","clientConfig":{"service":{"namespace":"h","name":"s"},"caBundle":"Zm9v"}}]});
    object_up_with(&c, &mut p, Some(&info), None, UpMode::MergePatch).unwrap();
    let cc = &p["webhooks"][0]["clientConfig"];
    assert_eq!(cc["service"], Value::Null);
    assert!(
        cc["url"]
            .as_str()
            .unwrap()
            .contains("/tenant-webhook/v1/foofoo/h/s/443/ca1/")
    );
}

#[test]
fn a_client_config_stored_before_the_relay_still_reads_back() {
    let c = relayed("https://127.0.0.1:9443");
    let mut v = config(json!({"service":{"namespace":"foofoo-hooks","name":"svc","port":443}}));
    v["metadata"]["name"] = json!("foofoo-vw");
    v["metadata"]["labels"] = json!({"paddock.io/tenant":"foofoo"});
    assert_eq!(object_down(&c, &mut v).unwrap(), Disposition::Keep);
    assert_eq!(
        v["webhooks"][0]["clientConfig"]["service"]["namespace"],
        "hooks"
    );
}

#[test]
fn conversion_webhooks_are_not_relayed() {
    let c = relayed("https://127.0.0.1:9443");
    let mut v = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com",
        "conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"conv","name":"svc","port":443}},"conversionReviewVersions":["v1"]}}}});
    object_up(&c, &mut v, None).unwrap();
    assert_eq!(
        v["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
        "foofoo-conv"
    );
}
