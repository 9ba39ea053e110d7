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
//! A copy holds the platform role's rules as they are at provisioning (aggregated rules
//! included), without rules naming API groups that are not built in (a platform CRD's
//! aggregated rules mean nothing inside a tenant and would name platform groups), and without
//! its `aggregationRule` (the platform's aggregation controller would otherwise fill the copy
//! from the platform's labelled roles).

use serde_json::{Value, json};

use crate::catalog::is_builtin_group;
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
    let rules: Vec<Value> = platform_role["rules"]
        .as_array()
        .map(|rs| rs.iter().filter(|r| rule_is_builtin(r)).cloned().collect())
        .unwrap_or_default();
    Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": t.upstream_name(name),
            "labels": {
                TENANT_LABEL: t.as_str(),
                managed_for_label: t.as_str(),
                "app.kubernetes.io/managed-by": "paddock",
                "kubernetes.io/bootstrapping": "rbac-defaults"
            }
        },
        "rules": rules
    }))
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
        assert!(c.get("aggregationRule").is_none());
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
