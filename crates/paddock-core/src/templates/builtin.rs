//! The templates paddock ships (docs/templates.md "Built-in templates"): computed from the
//! configuration at start, shown by the admin API, never stored and not editable there.

use serde_json::{Value, json};

use super::model::NamespaceTemplate;
use crate::provision::{NAMESPACE_NETWORK_POLICY, NAMESPACE_QUOTA};

/// The objects paddock has always stamped: the isolation NetworkPolicy (ingress only from the
/// tenant's own namespaces; MTB NI-1) and the per-namespace object-count quota (MTB FNS-2).
pub const BUILTIN_DEFAULT: &str = "paddock-default";
/// The multi-tenancy benchmark's profile level 1 set: compute quota (MTB-PL1-CC-FNS-1),
/// LimitRange defaults that let pods without requests run under it, and a default-deny
/// NetworkPolicy that admits traffic inside the namespace.
pub const BUILTIN_PL1: &str = "paddock-pl1";

/// Generation of the built-in templates: raised whenever their objects change in the code,
/// so every namespace is restamped by the next sync after an upgrade.
const BUILTIN_GENERATION: u64 = 1;

fn builtin(name: &str, manifests: Vec<Value>) -> NamespaceTemplate {
    NamespaceTemplate {
        name: name.to_string(),
        mandatory: true,
        tenants: Vec::new(),
        manifests,
        generation: BUILTIN_GENERATION,
        created: String::new(),
        builtin: true,
    }
}

/// The built-in templates in force: [`BUILTIN_DEFAULT`] always, [`BUILTIN_PL1`] when `pl1`.
/// `admission_webhook`: Service types follow each tenant's policy in paddock's webhook, so the
/// default quota does not cap NodePorts and LoadBalancers at 0 itself.
pub fn builtin_templates(admission_webhook: bool, pl1: bool) -> Vec<NamespaceTemplate> {
    let mut hard = json!({
        "pods": "500", "services": "200", "persistentvolumeclaims": "100", "secrets": "1000", "configmaps": "1000",
        "services.nodeports": "0", "services.loadbalancers": "0"
    });
    if admission_webhook && let Some(h) = hard.as_object_mut() {
        h.remove("services.nodeports");
        h.remove("services.loadbalancers");
    }
    let mut out = vec![builtin(
        BUILTIN_DEFAULT,
        vec![
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"name": NAMESPACE_NETWORK_POLICY},
                   "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                            "ingress": [{"from": [{"namespaceSelector": {}}]}]}}),
            json!({"apiVersion": "v1", "kind": "ResourceQuota",
                   "metadata": {"name": NAMESPACE_QUOTA}, "spec": {"hard": hard}}),
        ],
    )];
    if pl1 {
        out.push(builtin(
            BUILTIN_PL1,
            vec![
                json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "paddock-defaults"},
                       "spec": {"limits": [{"type": "Container",
                           "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                           "default": {"cpu": "1", "memory": "512Mi"}}]}}),
                json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "paddock-compute"},
                       "spec": {"hard": {"requests.cpu": "64", "requests.memory": "256Gi",
                                         "limits.cpu": "128", "limits.memory": "512Gi",
                                         "requests.storage": "1Ti", "requests.ephemeral-storage": "1Ti"}}}),
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                       "metadata": {"name": "paddock-default-deny"},
                       "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                                "ingress": [{"from": [{"podSelector": {}}]}]}}),
            ],
        ));
    }
    out
}
