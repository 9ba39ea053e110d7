//! A tenant's grant on its own CRD groups, as data (docs/security.md "Least privilege
//! upstream"): the ClusterRole [`tenant_cluster_role_name`] over the groups of the tenant's
//! CRDs (`<tid>-`-prefixed, so never another tenant's or the platform's), bound to its admins'
//! shadow group, present only while the tenant has CRDs. paddock-reconciler `crd_grant.rs`
//! writes it.
//!
//! The role is written compare-and-swap from a fresh read (the role, then the CRDs): a write
//! decided from an older read than another writer's fails and is decided again, so that two
//! CRDs created at once, or the leader's resync judging from caches a CRD's event has not
//! reached yet, never leave a group out (issue 39: a tenant's first custom resource was
//! refused 0.3 s after its CRD was created).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::tenant_cluster_role_name;
use crate::identity::shadow_admin_group;
use crate::tenant::{MANAGED_FOR_LABEL, TenantId};

/// The groups of the tenant's CRDs among `crds` (its own: prefixed with `<tid>-`).
pub fn crd_groups<'a>(t: &TenantId, crds: impl IntoIterator<Item = &'a Value>) -> BTreeSet<String> {
    crds.into_iter()
        .filter_map(|crd| crd["spec"]["group"].as_str())
        .filter(|g| t.strip(g).is_some())
        .map(str::to_owned)
        .collect()
}

/// The role's rules over `groups`.
pub fn role_rules(groups: &BTreeSet<String>) -> Value {
    json!([{"apiGroups": groups, "resources": ["*"], "verbs": ["*"]}])
}

fn labels(t: &TenantId) -> Value {
    json!({MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"})
}

/// The ClusterRole over `groups`.
pub fn role(t: &TenantId, groups: &BTreeSet<String>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": tenant_cluster_role_name(t), "labels": labels(t)},
           "rules": role_rules(groups)})
}

/// The ClusterRoleBinding of the role to the admins' shadow group.
pub fn binding(t: &TenantId) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": tenant_cluster_role_name(t), "labels": labels(t)},
           "roleRef": role_ref(t), "subjects": subjects(t)})
}

fn role_ref(t: &TenantId) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": tenant_cluster_role_name(t)})
}

fn subjects(t: &TenantId) -> Value {
    json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": shadow_admin_group(t)}])
}

/// Whether an existing binding is the one [`binding`] writes.
pub fn binding_ok(t: &TenantId, b: &Value) -> bool {
    b["roleRef"] == role_ref(t) && b["subjects"] == subjects(t)
}

/// Whether the role and binding as seen agree with `groups` (nothing to write).
pub fn in_step(
    t: &TenantId,
    groups: &BTreeSet<String>,
    role: Option<&Value>,
    binding: Option<&Value>,
) -> bool {
    if groups.is_empty() {
        return role.is_none() && binding.is_none();
    }
    role.is_some_and(|r| r["rules"] == role_rules(groups))
        && binding.is_some_and(|b| binding_ok(t, b))
}

/// What to write to the role, from the role as just read and the groups of the CRDs listed
/// after it. Creates and replacements carry the read's resourceVersion, so that a write
/// decided from a read older than another writer's fails (409) and is decided again.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleWrite {
    Keep,
    /// POST (fails when another writer created it meanwhile).
    Create(Value),
    /// A JSON merge patch of the rules carrying `metadata.resourceVersion` as read (the
    /// apiserver's precondition: 409 when the role changed; paddock's rights on ClusterRoles
    /// are `patch`, not `update`).
    Replace(Value),
    /// DELETE with a resourceVersion precondition (the tenant has no CRD left).
    Delete(Value),
}

pub fn role_write(t: &TenantId, current: Option<&Value>, groups: &BTreeSet<String>) -> RoleWrite {
    let version = current.map(|r| r["metadata"]["resourceVersion"].clone());
    match (current, version) {
        (None, _) if groups.is_empty() => RoleWrite::Keep,
        (None, _) => RoleWrite::Create(role(t, groups)),
        (Some(_), Some(rv)) if groups.is_empty() => RoleWrite::Delete(json!({
            "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": rv}
        })),
        (Some(r), _) if r["rules"] == role_rules(groups) => RoleWrite::Keep,
        (Some(_), rv) => RoleWrite::Replace(json!({
            "metadata": {"resourceVersion": rv.unwrap_or(Value::Null), "labels": labels(t)},
            "rules": role_rules(groups),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    fn groups(gs: &[&str]) -> BTreeSet<String> {
        gs.iter().map(|g| g.to_string()).collect()
    }

    #[test]
    fn only_the_tenants_own_groups_are_granted() {
        let crds = [
            json!({"spec": {"group": "foofoo-example.com"}}),
            json!({"spec": {"group": "barbar-example.com"}}),
            json!({"spec": {"group": "example.com"}}),
            json!({"spec": {"group": "foofoo-example.com"}}),
            json!({"spec": {}}),
        ];
        assert_eq!(crd_groups(&t(), &crds), groups(&["foofoo-example.com"]));
        let r = role(&t(), &groups(&["foofoo-a.io", "foofoo-b.io"]));
        assert_eq!(
            r["rules"],
            json!([{"apiGroups": ["foofoo-a.io", "foofoo-b.io"], "resources": ["*"], "verbs": ["*"]}])
        );
        assert_eq!(
            r["metadata"]["name"],
            "paddock:tenant:foofoo:custom-resources"
        );
        let b = binding(&t());
        assert_eq!(b["subjects"][0]["name"], shadow_admin_group(&t()));
        assert!(binding_ok(&t(), &b));
        let mut other = b.clone();
        other["subjects"][0]["name"] = json!("system:authenticated");
        assert!(!binding_ok(&t(), &other));
    }

    #[test]
    fn in_step_needs_both_objects_while_there_are_crds_and_neither_after() {
        let gs = groups(&["foofoo-a.io"]);
        let (r, b) = (role(&t(), &gs), binding(&t()));
        assert!(in_step(&t(), &gs, Some(&r), Some(&b)));
        assert!(!in_step(&t(), &gs, Some(&r), None));
        assert!(!in_step(&t(), &gs, None, Some(&b)));
        let more = groups(&["foofoo-a.io", "foofoo-b.io"]);
        assert!(!in_step(&t(), &more, Some(&r), Some(&b)));
        let none = BTreeSet::new();
        assert!(in_step(&t(), &none, None, None));
        assert!(!in_step(&t(), &none, None, Some(&b)));
        assert!(!in_step(&t(), &none, Some(&r), None));
    }

    #[test]
    fn every_write_is_conditional_on_the_role_as_read() {
        let a = groups(&["foofoo-a.io"]);
        let ab = groups(&["foofoo-a.io", "foofoo-b.io"]);
        assert_eq!(role_write(&t(), None, &BTreeSet::new()), RoleWrite::Keep);
        assert_eq!(
            role_write(&t(), None, &a),
            RoleWrite::Create(role(&t(), &a))
        );
        let mut current = role(&t(), &a);
        current["metadata"]["resourceVersion"] = json!("41");
        assert_eq!(role_write(&t(), Some(&current), &a), RoleWrite::Keep);
        let RoleWrite::Replace(patch) = role_write(&t(), Some(&current), &ab) else {
            panic!("a replacement")
        };
        assert_eq!(patch["metadata"]["resourceVersion"], "41");
        assert_eq!(patch["rules"], role_rules(&ab));
        let RoleWrite::Delete(opts) = role_write(&t(), Some(&current), &BTreeSet::new()) else {
            panic!("a deletion")
        };
        assert_eq!(opts["preconditions"]["resourceVersion"], "41");
    }
}
