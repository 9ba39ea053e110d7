use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::TenantId;
use crate::admission::{
    AdmissionRequest, GroupVersionResource, Outcome, Platform, TenantPolicy, UserInfo, apply_op,
    registry, run_phase,
};

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn in_cluster(dns: Option<&str>) -> InCluster {
    InCluster {
        host: "kubernetes.default.svc.cluster.local".into(),
        port: 443,
        ca_pem: CA.into(),
        dns: dns.map(str::to_owned),
    }
}

/// A pod as the apiserver hands it to mutating webhooks: the ServiceAccount admission plugin
/// has added the token volume.
fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "namespace": "abcdef-ops"},
      "spec": {
        "containers": [{"name": "c", "image": "i",
          "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                  {"name": "URL", "value": "https://$(KUBERNETES_SERVICE_HOST)"}],
          "volumeMounts": [{"name": "kube-api-access-x1", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
        "initContainers": [{"name": "i", "image": "i"}],
        "volumes": [
          {"name": "kube-api-access-x1", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
          {"name": "info", "downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
                                                      {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}})
}

fn patched(pod: &Value, ic: &InCluster) -> Value {
    let mut doc = pod.clone();
    for op in pod_patch(pod, ic, "ops", "cluster.local") {
        apply_op(&mut doc, &op).expect("patch applies");
    }
    doc
}

fn env_of(c: &Value, name: &str) -> Option<Value> {
    c["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .cloned()
}

#[test]
fn every_container_names_paddock_and_keeps_its_own_variables_after() {
    let p = patched(&pod(), &in_cluster(None));
    for c in [&p["spec"]["containers"][0], &p["spec"]["initContainers"][0]] {
        assert_eq!(
            env_of(c, "KUBERNETES_SERVICE_HOST").unwrap()["value"],
            "kubernetes.default.svc.cluster.local"
        );
        assert_eq!(
            env_of(c, "KUBERNETES_SERVICE_PORT").unwrap()["value"],
            "443"
        );
        assert_eq!(
            env_of(c, "KUBERNETES_PORT_443_TCP").unwrap()["value"],
            "tcp://kubernetes.default.svc.cluster.local:443"
        );
    }
    let env = p["spec"]["containers"][0]["env"].as_array().unwrap();
    let pos = |n: &str| env.iter().position(|e| e["name"] == n).unwrap();
    assert!(
        pos("KUBERNETES_SERVICE_HOST") < pos("URL"),
        "ours come first: {env:?}"
    );
    assert_eq!(
        env_of(&p["spec"]["containers"][0], "POD_NAMESPACE").unwrap()["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['paddock.io/namespace']"
    );
}

#[test]
fn a_containers_own_api_host_is_left_alone() {
    let mut p = pod();
    p["spec"]["containers"][0]["env"] =
        json!([{"name": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"}]);
    let out = patched(&p, &in_cluster(None));
    let c = &out["spec"]["containers"][0];
    let hosts: Vec<&Value> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "KUBERNETES_SERVICE_HOST")
        .collect();
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0]["value"], "10.96.0.1");
    // the other variables still name paddock
    assert_eq!(
        env_of(c, "KUBERNETES_SERVICE_PORT").unwrap()["value"],
        "443"
    );
}

#[test]
fn the_token_volume_reads_the_ca_and_namespace_from_annotations() {
    let p = patched(&pod(), &in_cluster(None));
    assert_eq!(p["metadata"]["annotations"][CA_ANNOTATION], CA);
    assert_eq!(p["metadata"]["annotations"][NAMESPACE_ANNOTATION], "ops");
    let sources = &p["spec"]["volumes"][0]["projected"]["sources"];
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(
        sources[1],
        json!({"downwardAPI": {"items": [{"path": "ca.crt", "fieldRef": {"apiVersion": "v1",
            "fieldPath": "metadata.annotations['paddock.io/root-ca.crt']"}}]}})
    );
    assert_eq!(
        sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
        "metadata.annotations['paddock.io/namespace']"
    );
    // a plain downward-API volume too; other fields untouched
    let items = &p["spec"]["volumes"][1]["downwardAPI"]["items"];
    assert_eq!(
        items[0]["fieldRef"]["fieldPath"],
        "metadata.annotations['paddock.io/namespace']"
    );
    assert_eq!(items[1]["fieldRef"]["fieldPath"], "metadata.name");
    assert!(!p.to_string().contains("kube-root-ca.crt"));
}

#[test]
fn a_plain_volume_of_the_root_ca_config_map_reads_paddocks_ca() {
    let mut p = pod();
    p["spec"]["volumes"] = json!([
        {"name": "mesh-ca", "configMap": {"name": "kube-root-ca.crt", "defaultMode": 292}},
        {"name": "some", "configMap": {"name": "app-config"}},
        {"name": "picked", "configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "root.pem", "mode": 256}]}}
    ]);
    let out = patched(&p, &in_cluster(None));
    let v = &out["spec"]["volumes"];
    assert_eq!(
        v[0],
        json!({"name": "mesh-ca", "downwardAPI": {"defaultMode": 292, "items": [{"path": "ca.crt",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['paddock.io/root-ca.crt']"}}]}})
    );
    assert_eq!(
        v[1],
        json!({"name": "some", "configMap": {"name": "app-config"}})
    );
    assert_eq!(v[2]["downwardAPI"]["items"][0]["path"], "root.pem");
    assert_eq!(v[2]["downwardAPI"]["items"][0]["mode"], 256);
    assert_eq!(v.as_array().unwrap().len(), 3);
}

#[test]
fn existing_annotations_are_added_to_not_replaced() {
    let mut p = pod();
    p["metadata"]["annotations"] = json!({"team": "a", NAMESPACE_ANNOTATION: "forged"});
    let out = patched(&p, &in_cluster(None));
    assert_eq!(out["metadata"]["annotations"]["team"], "a");
    assert_eq!(out["metadata"]["annotations"][NAMESPACE_ANNOTATION], "ops");
}

#[test]
fn the_tenant_dns_with_the_tenants_search_path() {
    let p = patched(&pod(), &in_cluster(Some("10.243.0.3")));
    assert_eq!(p["spec"]["dnsPolicy"], "None");
    assert_eq!(
        p["spec"]["dnsConfig"],
        json!({"nameservers": ["10.243.0.3"],
               "searches": ["ops.svc.cluster.local", "svc.cluster.local", "cluster.local"],
               "options": [{"name": "ndots", "value": "5"}]})
    );
    // the pod's own dnsConfig follows ours
    let mut own = pod();
    own["spec"]["dnsConfig"] = json!({"nameservers": ["192.0.2.53"], "searches": ["corp.example"],
                                       "options": [{"name": "ndots", "value": "2"}]});
    let p = patched(&own, &in_cluster(Some("10.243.0.3")));
    assert_eq!(
        p["spec"]["dnsConfig"]["nameservers"],
        json!(["10.243.0.3", "192.0.2.53"])
    );
    assert_eq!(p["spec"]["dnsConfig"]["searches"][3], "corp.example");
    assert_eq!(
        p["spec"]["dnsConfig"]["options"],
        json!([{"name": "ndots", "value": "2"}])
    );
    // other DNS policies and host-network pods keep theirs
    for (k, v) in [
        ("dnsPolicy", json!("Default")),
        ("hostNetwork", json!(true)),
    ] {
        let mut q = pod();
        q["spec"][k] = v;
        let out = patched(&q, &in_cluster(Some("10.243.0.3")));
        assert!(out["spec"]["dnsConfig"].is_null(), "{k}: {out}");
    }
    // no tenant DNS configured: the cluster's
    assert!(
        patched(&pod(), &in_cluster(None))["spec"]["dnsPolicy"].is_null(),
        "no DNS given"
    );
}

fn request(resource: &str, group: &str, op: &str, ns: &str, object: Value) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u".into(),
        resource: GroupVersionResource {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
        },
        name: object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .into(),
        namespace: ns.into(),
        operation: op.into(),
        user_info: UserInfo {
            username: "paddock:abcdef:admin".into(),
            groups: vec!["paddock:tenant:abcdef".into()],
        },
        object: if op == "DELETE" {
            Value::Null
        } else {
            object.clone()
        },
        old_object: if op == "DELETE" { object } else { Value::Null },
        ..Default::default()
    }
}

fn run(phase: Phase, req: &AdmissionRequest, policy: &TenantPolicy, ic: bool) -> Outcome {
    let t = TenantId::parse("abcdef").unwrap();
    let platform = Platform {
        in_cluster: ic.then(|| Arc::new(in_cluster(Some("10.243.0.3")))),
        ..Platform::default()
    };
    let ctx = TenantContext {
        tenant: &t,
        policy,
        platform: &platform,
        node: None,
    };
    run_phase(&registry(), phase, req, &ctx)
}

#[test]
fn pods_are_pointed_at_paddock_unless_the_platform_opted_the_namespace_out() {
    let req = request("pods", "", "CREATE", "abcdef-ops", pod());
    let Outcome::Patch(ops) = run(Phase::Mutating, &req, &TenantPolicy::default(), true) else {
        panic!("a patch")
    };
    assert!(ops.iter().any(|o| o.path == "/spec/dnsPolicy"));
    let mut opted = TenantPolicy::default();
    opted.in_cluster.upstream_namespaces = vec!["ops".into()];
    assert_eq!(run(Phase::Mutating, &req, &opted, true), Outcome::Allow);
    // a platform without the in-cluster path changes nothing
    assert_eq!(
        run(Phase::Mutating, &req, &TenantPolicy::default(), false),
        Outcome::Allow
    );
    let policy =
        TenantPolicy::from_json(&json!({"inCluster": {"upstreamNamespaces": ["ops"]}})).unwrap();
    assert_eq!(policy, opted);
    assert!(TenantPolicy::from_json(&json!({"inCluster": {"upstream": ["ops"]}})).is_err());
}
