//! Benchmark inputs and helpers shared by the criterion benches and the memory probe.
//!
//! The inputs are generated, not captured, so that their size is fixed (a 5,000-pod LIST of
//! about 23 MB, a 10,000-event watch stream) and every run measures the same bytes. The pod
//! is shaped like what a 1.33 apiserver returns for a running Deployment pod: ReplicaSet owner,
//! managedFields of three managers with `k:{"name":…}` keys, probes, status with conditions.

use std::sync::Arc;

use paddock_core::{Catalog, Plan, TenantContext, TenantId, parse_request, plan};
use serde_json::{Value, json};

/// Aggregated discovery of a real 1.33 apiserver (captured fixtures of paddock-core).
const AGG_CORE: &[u8] =
    include_bytes!("../../crates/paddock-core/tests/fixtures/discovery_agg_api_v2.json");
const AGG_APIS: &[u8] =
    include_bytes!("../../crates/paddock-core/tests/fixtures/discovery_agg_apis_v2.json");

/// Tenant `foofoo` over the captured catalog.
pub fn tenant_context() -> TenantContext {
    let catalog = match Catalog::from_aggregated(AGG_CORE, AGG_APIS) {
        Ok(c) => c,
        Err(e) => panic!("captured discovery does not parse: {e}"),
    };
    let tenant = match TenantId::parse("foofoo") {
        Ok(t) => t,
        Err(e) => panic!("tenant id: {e}"),
    };
    TenantContext {
        tenant,
        catalog: Arc::new(catalog),
    }
}

/// The plan for the tenant's `GET /api/v1/pods` (all namespaces), or its watch.
pub fn pods_plan(ctx: &TenantContext, watch: bool) -> Plan {
    let q = if watch { Some("watch=1") } else { None };
    match parse_request("GET", "/api/v1/pods", q).and_then(|r| plan(ctx, r)) {
        Ok(p) => p,
        Err(e) => panic!("plan: {e}"),
    }
}

/// One realistic pod. `i` varies names and uids; `ns` is the upstream namespace.
pub fn pod(i: usize, ns: &str) -> Value {
    let rs = format!("web-{:x}", 0x5d8f_c7b9_u64 + (i as u64 % 7));
    let name = format!("{rs}-{:05x}", i * 7919 % 0xfffff);
    let uid = format!(
        "{:08x}-4c1e-4d7a-9f2b-{:012x}",
        i * 2_654_435_761 % 0xffff_ffff,
        i
    );
    let ts = "2026-01-01T00:00:00Z";
    let container_fields = json!({
        "f:env": {".": {}, "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}},
        "f:image": {}, "f:imagePullPolicy": {},
        "f:name": {},
        "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
        "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/web\"}": {".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}}}
    });
    json!({
        "metadata": {
            "name": name,
            "generateName": format!("{rs}-"),
            "namespace": ns,
            "uid": uid,
            "resourceVersion": format!("{}", 100_000 + i),
            "creationTimestamp": ts,
            "labels": {"app": "web", "pod-template-hash": rs.trim_start_matches("web-"), "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": ts, "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("{uid}-rs"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                                             "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{uid}-rs\"}}"): {}}},
                              "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": container_fields},
                                         "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                                         "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts, "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                                            "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                                            "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                                          "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
                                          "f:podIPs": {".": {}, "k:{\"ip\":\"10.244.1.17\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                {"name": "kube-api-access-x7k2p", "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}],
                    "defaultMode": 420}}
            ],
            "containers": [{
                "name": "web",
                "image": "registry.example.com/team/web:1.27.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}],
                "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [{"name": "config", "readOnly": true, "mountPath": "/etc/web"},
                                 {"name": "kube-api-access-x7k2p", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": format!("worker-{}", i % 40),
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts}],
            "hostIP": "172.18.0.4",
            "hostIPs": [{"ip": "172.18.0.4"}],
            "podIP": format!("10.244.{}.{}", i / 250 % 250, i % 250),
            "podIPs": [{"ip": format!("10.244.{}.{}", i / 250 % 250, i % 250)}],
            "startTime": ts,
            "containerStatuses": [{
                "name": "web",
                "state": {"running": {"startedAt": ts}},
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": "registry.example.com/team/web:1.27.3",
                "imageID": "registry.example.com/team/web@sha256:4f2b8f6c3e1d0a9b7c5e3f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c",
                "containerID": format!("containerd://{:064x}", i as u128 * 0x9e37_79b9_7f4a_7c15),
                "started": true
            }],
            "qosClass": "Burstable"
        }
    })
}

/// Namespace of pod `i`: three in four are the tenant's.
fn ns_of(i: usize) -> &'static str {
    if i % 4 == 3 {
        "barbar-prod"
    } else {
        "foofoo-default"
    }
}

/// A compact PodList of `n` pods as the apiserver writes it (kind, apiVersion, metadata, items).
pub fn pod_list(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 4800);
    out.extend_from_slice(
        br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"987654"},"items":["#,
    );
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        if let Err(e) = serde_json::to_writer(&mut out, &pod(i, ns_of(i))) {
            panic!("serialise pod: {e}");
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// A watch stream of `n` events, one per line, as the apiserver writes it.
pub fn watch_stream(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 4900);
    for i in 0..n {
        // Watch objects carry kind and apiVersion, first, as the apiserver writes them.
        let mut p = json!({"kind": "Pod", "apiVersion": "v1"});
        if let (Some(o), Value::Object(rest)) = (p.as_object_mut(), pod(i, ns_of(i))) {
            o.extend(rest);
        }
        let ty = ["ADDED", "MODIFIED", "MODIFIED", "DELETED"][i % 4];
        if let Err(e) = serde_json::to_writer(&mut out, &json!({"type": ty, "object": p})) {
            panic!("serialise event: {e}");
        }
        out.push(b'\n');
    }
    out
}

/// The baseline: parse the whole body into a `serde_json::Value`, filter and rewrite the
/// namespaces, serialise. What a DOM-based proxy does.
pub fn baseline_list(body: &[u8]) -> Vec<u8> {
    let mut v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => panic!("baseline parse: {e}"),
    };
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.retain_mut(|it| {
            let Some(ns) = it.pointer_mut("/metadata/namespace") else {
                return false;
            };
            match ns.as_str().and_then(|s| s.strip_prefix("foofoo-")) {
                Some(s) => {
                    *ns = Value::String(s.to_owned());
                    true
                }
                None => false,
            }
        });
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The watch baseline: `serde_json::Value` per line.
/// Like the streaming rewriter, each event's output is handed on (counted) and dropped.
pub fn baseline_watch(body: &[u8]) -> usize {
    let mut out = Vec::with_capacity(16 * 1024);
    let mut total = 0;
    for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => panic!("baseline parse: {e}"),
        };
        let keep = match v.pointer_mut("/object/metadata/namespace") {
            Some(ns) => match ns.as_str().and_then(|s| s.strip_prefix("foofoo-")) {
                Some(s) => {
                    *ns = Value::String(s.to_owned());
                    true
                }
                None => false,
            },
            None => false,
        };
        if keep && serde_json::to_writer(&mut out, &v).is_ok() {
            out.push(b'\n');
        }
        total += out.len();
        out.clear();
    }
    total
}

/// Runs a paddock rewriter over `body` in `chunk`-byte pieces, handing each output to `sink`
/// (the server would forward it and drop it).
pub fn run_rewriter(
    ctx: &TenantContext,
    plan: &Plan,
    body: &[u8],
    chunk: usize,
    sink: &mut dyn FnMut(&[u8]),
) {
    let mut rw = paddock_core::response_rewriter(ctx, plan, 200, "application/json");
    let mut out = Vec::with_capacity(chunk * 2);
    for c in body.chunks(chunk) {
        if let Err(e) = rw.feed(c, &mut out) {
            panic!("rewrite: {e}");
        }
        sink(&out);
        out.clear();
    }
    if let Err(e) = rw.finish(&mut out) {
        panic!("rewrite: {e}");
    }
    sink(&out);
}
