//! What one object charges against a quota, as the apiserver's quota evaluators compute it
//! (k8s.io/kubernetes pkg/quota/v1/evaluator/core): pods (`pod.rs`: requests and limits of
//! all containers, init containers by their peak, plus overhead; terminal pods charge their
//! object count only), persistent volume claims (count and storage, in total and per storage class),
//! services (count, node ports, load balancers) and `count/<resource>[.<group>]` of every
//! kind. Names are the tenant's: a tenant CRD group is charged without its prefix.

use serde_json::Value;

use super::pod::pod_compute;
use super::quantity::{Milli, add, quantity_at};
pub use super::quantity::{Usage, UsageError};

/// The kind of object being charged, in the tenant's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargedKind<'a> {
    /// API group (`""` for the core group), tenant view.
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
}

/// The object-count resource name of a kind: `count/configmaps`, `count/widgets.example.com`.
pub fn count_resource(kind: &ChargedKind<'_>) -> String {
    if kind.group.is_empty() {
        format!("count/{}", kind.resource)
    } else {
        format!("count/{}.{}", kind.resource, kind.group)
    }
}

/// Core kinds that also have a legacy object-count name (`configmaps` as well as
/// `count/configmaps`).
const LEGACY_COUNTED: &[&str] = &[
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

/// Storage-class scoped quota names (`<class>.storageclass.storage.k8s.io/requests.storage`).
pub fn storage_class_resource(class: &str, what: &str) -> String {
    format!("{class}.storageclass.storage.k8s.io/{what}")
}

/// What `obj` (a `kind` object) charges.
pub fn usage_of(kind: &ChargedKind<'_>, obj: &Value) -> Result<Usage, UsageError> {
    let mut u = Usage::new();
    if kind.group.is_empty() {
        match kind.resource {
            // A terminal pod still charges its object count (`count/pods` counts every pod
            // stored), nothing else.
            "pods" if !is_terminal_pod(obj) => {
                add(&mut u, "pods", Milli::units(1));
                pod_compute(obj, &mut u)?;
            }
            "persistentvolumeclaims" => {
                add(&mut u, "persistentvolumeclaims", Milli::units(1));
                let storage = quantity_at(&obj["spec"]["resources"]["requests"]["storage"])?;
                add(&mut u, "requests.storage", storage);
                if let Some(class) = obj["spec"]["storageClassName"].as_str() {
                    add(
                        &mut u,
                        &storage_class_resource(class, "persistentvolumeclaims"),
                        Milli::units(1),
                    );
                    add(
                        &mut u,
                        &storage_class_resource(class, "requests.storage"),
                        storage,
                    );
                }
            }
            "services" => {
                add(&mut u, "services", Milli::units(1));
                let ty = obj["spec"]["type"].as_str().unwrap_or("ClusterIP");
                let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len) as i64;
                if ty == "LoadBalancer" {
                    add(&mut u, "services.loadbalancers", Milli::units(1));
                }
                let node_ports = match ty {
                    "NodePort" => ports,
                    "LoadBalancer"
                        if obj["spec"]["allocateLoadBalancerNodePorts"] != Value::Bool(false) =>
                    {
                        ports
                    }
                    _ => 0,
                };
                if node_ports > 0 {
                    add(&mut u, "services.nodeports", Milli::units(node_ports));
                }
            }
            "namespaces" => add(&mut u, "namespaces", Milli::units(1)),
            r if LEGACY_COUNTED.contains(&r) => add(&mut u, r, Milli::units(1)),
            _ => {}
        }
    }
    add(&mut u, &count_resource(kind), Milli::units(1));
    Ok(u)
}

/// What the recount's watches keep of an object (docs/quota.md "Recount"): everything
/// [`usage_of`] and the scopes read (the spec; a pod's phase and QoS class) and the cache
/// key, nothing else (no managedFields, annotations or other status), and only of objects in a tenant namespace or
/// cluster-scoped (those are watched by the tenant label). `None`: not a tenant's.
pub fn recount_shape(mut obj: Value) -> Option<Value> {
    let namespace = obj["metadata"]["namespace"].as_str();
    if namespace.is_some_and(|ns| crate::tenant::tenant_of(ns).is_none()) {
        return None;
    }
    let mut kept = serde_json::Map::new();
    let m = &obj["metadata"];
    let mut meta = serde_json::Map::new();
    for k in ["name", "namespace", "resourceVersion", "uid", "labels"] {
        if let Some(v) = m.get(k).filter(|v| !v.is_null()) {
            meta.insert(k.into(), v.clone());
        }
    }
    kept.insert("metadata".into(), Value::Object(meta));
    if let Some(spec) = obj.get_mut("spec").map(Value::take) {
        kept.insert("spec".into(), spec);
    }
    let mut status = serde_json::Map::new();
    for k in ["phase", "qosClass"] {
        if let Some(v) = obj["status"].get(k).filter(|v| !v.is_null()) {
            status.insert(k.into(), v.clone());
        }
    }
    if !status.is_empty() {
        kept.insert("status".into(), Value::Object(status));
    }
    Some(Value::Object(kept))
}

/// Pods in phase Succeeded or Failed no longer hold resources (the apiserver's
/// `QuotaV1Pod`).
fn is_terminal_pod(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn k<'a>(group: &'a str, resource: &'a str) -> ChargedKind<'a> {
        ChargedKind { group, resource }
    }

    #[test]
    fn a_pod_charges_like_the_quota_evaluator() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "150m"}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
            "overhead": {"cpu": "10m"}
        }});
        let u = usage_of(&k("", "pods"), &pod).unwrap();
        assert_eq!(u["pods"], Milli::units(1));
        assert_eq!(u["count/pods"], Milli::units(1));
        // max(100m+150m, 1) + 10m overhead
        assert_eq!(u["requests.cpu"], Milli(1010));
        assert_eq!(u["cpu"], Milli(1010));
        // max(64Mi, 32Mi)
        assert_eq!(u["requests.memory"], Milli::parse("64Mi").unwrap());
        assert_eq!(u["limits.cpu"], Milli(210));
        assert!(!u.contains_key("limits.memory"));
    }

    #[test]
    fn terminal_pods_charge_their_count_only() {
        let pod = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Succeeded"}});
        let u = usage_of(&k("", "pods"), &pod).unwrap();
        assert_eq!(u.len(), 1);
        assert_eq!(u["count/pods"], Milli::units(1));
    }

    #[test]
    fn pvcs_charge_storage_per_class() {
        let pvc = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "5Gi"}}}});
        let u = usage_of(&k("", "persistentvolumeclaims"), &pvc).unwrap();
        assert_eq!(u["persistentvolumeclaims"], Milli::units(1));
        assert_eq!(u["requests.storage"], Milli::parse("5Gi").unwrap());
        assert_eq!(
            u["fast.storageclass.storage.k8s.io/requests.storage"],
            Milli::parse("5Gi").unwrap()
        );
        assert_eq!(
            u["fast.storageclass.storage.k8s.io/persistentvolumeclaims"],
            Milli::units(1)
        );
    }

    #[test]
    fn services_charge_by_type() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        let u = usage_of(&k("", "services"), &lb).unwrap();
        assert_eq!(u["services"], Milli::units(1));
        assert_eq!(u["services.loadbalancers"], Milli::units(1));
        assert_eq!(u["services.nodeports"], Milli::units(2));
        let cip = json!({"spec": {"ports": [{"port": 80}]}});
        let u = usage_of(&k("", "services"), &cip).unwrap();
        assert!(!u.contains_key("services.nodeports"));
        let np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        assert_eq!(
            usage_of(&k("", "services"), &np).unwrap()["services.nodeports"],
            Milli::units(1)
        );
    }

    #[test]
    fn every_kind_is_counted() {
        let u = usage_of(&k("", "configmaps"), &json!({})).unwrap();
        assert_eq!(u["configmaps"], Milli::units(1));
        assert_eq!(u["count/configmaps"], Milli::units(1));
        let u = usage_of(&k("example.com", "widgets"), &json!({})).unwrap();
        assert_eq!(u.len(), 1);
        assert_eq!(u["count/widgets.example.com"], Milli::units(1));
        assert_eq!(
            usage_of(&k("apps", "deployments"), &json!({})).unwrap()["count/deployments.apps"],
            Milli::units(1)
        );
    }

    #[test]
    fn bad_quantities_are_errors() {
        let pod = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}});
        assert!(usage_of(&k("", "pods"), &pod).is_err());
    }

    #[test]
    fn the_recount_shape_keeps_what_usage_reads() {
        let pod = json!({"metadata": {"name": "p", "namespace": "foofoo-a", "resourceVersion": "7",
                "managedFields": [{"manager": "m"}], "annotations": {"a": "b"}},
            "spec": {"overhead": {"cpu": "10m"},
                "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
                "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                    "limits": {"cpu": "1"}}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": []}});
        let svc = json!({"metadata": {"name": "s", "namespace": "foofoo-a"},
            "spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}});
        let pvc = json!({"metadata": {"name": "c", "namespace": "foofoo-a"},
            "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}});
        for (resource, obj) in [
            ("pods", pod.clone()),
            ("services", svc),
            ("persistentvolumeclaims", pvc),
        ] {
            let kind = ChargedKind {
                group: "",
                resource,
            };
            let kept = recount_shape(obj.clone()).expect("a tenant's object is kept");
            assert_eq!(usage_of(&kind, &kept), usage_of(&kind, &obj), "{resource}");
            assert!(kept["metadata"].get("managedFields").is_none());
        }
        let kept = recount_shape(pod.clone()).expect("kept");
        assert_eq!(kept["status"], json!({"phase": "Running"}));
        let mut platform = pod;
        platform["metadata"]["namespace"] = json!("kube-system");
        assert!(recount_shape(platform).is_none());
    }
}
