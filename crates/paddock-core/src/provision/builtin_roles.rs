//! The built-in ClusterRoles every cluster has (`cluster-admin`, `admin`, `edit`, `view` and the
//! discovery roles), in the tenant's view.
//!
//! CI service accounts and charts bind to them cluster-wide (`kubectl create clusterrolebinding
//! ci --clusterrole=cluster-admin ...`). A tenant's ClusterRoleBinding always names a ClusterRole
//! of the tenant (`<tid>-<name>` upstream), so paddock keeps a copy of each built-in role per
//! tenant, `<tid>-cluster-admin` and so on: the tenant reads it as `cluster-admin`, cannot
//! change it (it carries `paddock.io/managed-for`, which the admission guard protects), and a
//! Role- or ClusterRoleBinding to it grants inside the tenant what the role grants in a
//! cluster: in each of the tenant's namespaces through the binding or its mirrors, and for the
//! tenant's cluster-scoped objects through the shadow identity. The platform's own roles are
//! never named by a tenant binding and never extended.
//!
//! A copy of a role without an `aggregationRule` (`cluster-admin`, the discovery roles, the
//! `system:aggregate-to-*` parts) holds the platform role's rules, without rules naming API
//! groups that are not built in (a platform CRD's rules mean nothing inside a tenant and would
//! name platform groups). A copy of an aggregated role (`admin`, `edit`, `view`) keeps its
//! `aggregationRule`, in the tenant's form (rules/aggregate.rs): its selectors name the renamed
//! aggregation label and the tenant label, so the upstream aggregation controller fills it from
//! the tenant's copies of the parts and the tenant's own labelled ClusterRoles, never from the
//! platform's. The copies carry the platform role's aggregation labels renamed the same way
//! (`edit` aggregates into `admin`, `view` into `edit`, as in a cluster).

use serde_json::{Value, json};

use crate::catalog::is_builtin_group;
use crate::rules::{AGGREGATE_LABEL_PREFIX, TENANT_AGGREGATE_LABEL_PREFIX};
use crate::tenant::{TENANT_LABEL, TenantId};

/// The built-in ClusterRoles a tenant sees.
pub const BUILTIN_CLUSTER_ROLES: &[&str] = &[
    "cluster-admin",
    "admin",
    "edit",
    "view",
    "system:discovery",
    "system:basic-user",
    "system:public-info-viewer",
    "system:aggregate-to-admin",
    "system:aggregate-to-edit",
    "system:aggregate-to-view",
];

fn rule_is_builtin(rule: &Value) -> bool {
    rule["apiGroups"].as_array().is_none_or(|groups| {
        groups.iter().all(|g| {
            g.as_str()
                .is_some_and(|g| g.is_empty() || g == "*" || is_builtin_group(g))
        })
    })
}

/// The tenant's copy (upstream form) of `platform_role`, labelled for the tenant and as
/// managed by paddock (`managed_for_label`); None when `platform_role` is not one of
/// [`BUILTIN_CLUSTER_ROLES`].
pub fn tenant_copy(t: &TenantId, platform_role: &Value, managed_for_label: &str) -> Option<Value> {
    let name = platform_role["metadata"]["name"].as_str()?;
    if !BUILTIN_CLUSTER_ROLES.contains(&name) {
        return None;
    }
    let mut labels = json!({
        TENANT_LABEL: t.as_str(),
        managed_for_label: t.as_str(),
        "app.kubernetes.io/managed-by": "paddock",
        "kubernetes.io/bootstrapping": "rbac-defaults"
    });
    for (k, v) in platform_role["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if let Some(to) = k.strip_prefix(AGGREGATE_LABEL_PREFIX) {
            labels[format!("{TENANT_AGGREGATE_LABEL_PREFIX}{to}")] = v.clone();
        }
    }
    let mut copy = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": t.upstream_name(name), "labels": labels}
    });
    match platform_role["aggregationRule"]["clusterRoleSelectors"].as_array() {
        Some(selectors) => {
            // The aggregation controller owns `rules`; sending them would fight it.
            let selectors: Vec<Value> = selectors.iter().map(|s| tenant_selector(t, s)).collect();
            copy["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
        }
        None => {
            let rules: Vec<Value> = platform_role["rules"]
                .as_array()
                .map(|rs| rs.iter().filter(|r| rule_is_builtin(r)).cloned().collect())
                .unwrap_or_default();
            copy["rules"] = Value::Array(rules);
        }
    }
    Some(copy)
}

/// A platform role's ClusterRole selector in the tenant's form: aggregation label keys
/// renamed, ANDed with the tenant label.
fn tenant_selector(t: &TenantId, s: &Value) -> Value {
    let rename = |k: &str| match k.strip_prefix(AGGREGATE_LABEL_PREFIX) {
        Some(to) => format!("{TENANT_AGGREGATE_LABEL_PREFIX}{to}"),
        None => k.to_owned(),
    };
    let mut out = json!({});
    if let Some(ml) = s["matchLabels"].as_object() {
        let m: serde_json::Map<String, Value> =
            ml.iter().map(|(k, v)| (rename(k), v.clone())).collect();
        out["matchLabels"] = Value::Object(m);
    }
    let mut exprs: Vec<Value> = s["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let mut e = e.clone();
            if let Some(k) = e["key"].as_str() {
                e["key"] = Value::String(rename(k));
            }
            e
        })
        .collect();
    exprs.push(json!({"key": TENANT_LABEL, "operator": "In", "values": [t.as_str()]}));
    out["matchExpressions"] = Value::Array(exprs);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_keep_built_in_rules_only() {
        let t = TenantId::parse("foofoo").unwrap();
        let admin = json!({"metadata": {"name": "admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
            {"apiGroups": ["apps", "batch"], "resources": ["*"], "verbs": ["get"]},
            {"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "verbs": ["*"]},
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}
        ]});
        let c = tenant_copy(&t, &admin, "paddock.io/managed-for").unwrap();
        assert_eq!(c["metadata"]["name"], "foofoo-admin");
        assert_eq!(c["metadata"]["labels"]["paddock.io/tenant"], "foofoo");
        assert_eq!(c["metadata"]["labels"]["paddock.io/managed-for"], "foofoo");
        // An aggregated role keeps its aggregationRule, confined to the tenant's roles with the
        // renamed label; the controller fills its rules.
        assert_eq!(
            c["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {"paddock.io/aggregate-to-admin": "true"},
                "matchExpressions": [{"key": "paddock.io/tenant", "operator": "In", "values": ["foofoo"]}]}]})
        );
        assert!(c.get("rules").is_none());
        let part = json!({"metadata": {"name": "system:aggregate-to-edit", "labels": {
            "rbac.authorization.k8s.io/aggregate-to-edit": "true", "kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": admin["rules"].clone()});
        let c = tenant_copy(&t, &part, "paddock.io/managed-for").unwrap();
        assert_eq!(
            c["metadata"]["labels"]["paddock.io/aggregate-to-edit"],
            "true"
        );
        assert!(
            !c.to_string()
                .contains("rbac.authorization.k8s.io/aggregate-to")
        );
        assert_eq!(c["rules"].as_array().unwrap().len(), 3);
        assert!(!c.to_string().contains("cert-manager"));
        let ca = json!({"metadata": {"name": "cluster-admin"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]});
        let c = tenant_copy(&t, &ca, "paddock.io/managed-for").unwrap();
        assert_eq!(c["metadata"]["name"], "foofoo-cluster-admin");
        assert_eq!(c["rules"], ca["rules"]);
        // Only the built-in roles are copied.
        let other = json!({"metadata": {"name": "system:node"}, "rules": []});
        assert!(tenant_copy(&t, &other, "paddock.io/managed-for").is_none());
    }
}
