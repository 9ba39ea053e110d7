//! The admission guard of a suspended tenant (docs/security.md "The admission guard", rule 16;
//! docs/operations.md "Suspend, protection and TTL"), as data.
//!
//! paddock marks every upstream namespace of a suspended tenant with [`SUSPENDED_LABEL`]; one
//! policy, matched by a `namespaceSelector` on that label, refuses in those namespaces:
//!
//! - every write (create, update, patch, delete, subresources, connect) of the tenant's own
//!   identities: paddock's impersonated ones (`paddock:tenant:<tid>`, refused by paddock
//!   itself first) and the tenant's service accounts with their tokens straight at the
//!   apiserver (`system:serviceaccount:<tid>-…`), so that the tenant's pods and controllers
//!   stop writing;
//! - the creation of pods by anyone but `system:masters`: a Deployment's, a Job's or a
//!   StatefulSet's controller is kube-controller-manager, a platform identity, and would
//!   otherwise keep making pods for the tenant's workloads.
//!
//! What stays allowed: an update of an object already being deleted (removing finalizers, so
//! that a deletion Kubernetes has started can finish), reviews (access and token reviews are
//! reads), and everything platform identities do but creating pods (controllers' status
//! updates, the garbage collector's and the node's deletions, kubelet's status, the
//! scheduler's bindings). The mark itself is locked for tenants by the `-namespaces` policy
//! ([`mark_locked_validation`]).
//!
//! Cost: the namespace selector is matched in Go before anything else, so a namespace without
//! the mark, which is every namespace of every tenant that is not suspended, costs nothing.

use serde_json::{Value, json};

use crate::tenant::TENANT_LABEL;

/// The label paddock sets on every upstream namespace of a suspended tenant (value `true`).
pub const SUSPENDED_LABEL: &str = "paddock.io/suspended";

/// The policy name a refusal names (`paddock policy suspension: ...`).
pub const SUSPENSION_POLICY: &str = "suspension";

/// The guard policy's name after `paddock-tenant-guard-` (`provision::guard` makes it).
pub const GUARD_SUFFIX: &str = "suspended";

/// A tenant identity (any `paddock:tenant:` group), as every guard policy tests it.
const TENANT_IDENTITY: &str = "request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:'))";

/// One of the tenant's own service accounts: its namespace is `<tid>-…`, the prefix of the
/// request's namespace (ids are six characters; the selector holds only tenant namespaces).
const OWN_SERVICE_ACCOUNT: &str = "has(request.namespace) && size(request.namespace) > 7 && \
    request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace.substring(0, 7))";

/// A pod created (not a subresource: bindings, evictions) by anyone but `system:masters`.
const POD_CREATION: &str = "request.operation == 'CREATE' && request.resource.group == '' && \
    request.resource.resource == 'pods' && (!has(request.subResource) || request.subResource == '') && \
    !('system:masters' in request.userInfo.groups)";

/// The refusal when the message expression cannot be evaluated.
const MESSAGE: &str = "paddock policy suspension: the tenant of this namespace is suspended: writes by its identities and new pods are refused until the platform resumes it";

/// The `-suspended` policy's match constraints, match conditions and validations (see the
/// module's comment); `provision::guard` makes the policy of them.
pub fn policy_parts() -> (Value, Value, Value) {
    let all_writes = json!(["CREATE", "UPDATE", "DELETE", "CONNECT"]);
    (
        json!({
            "namespaceSelector": {"matchExpressions": [
                {"key": SUSPENDED_LABEL, "operator": "Exists"},
                {"key": TENANT_LABEL, "operator": "Exists"}
            ]},
            "resourceRules": [
                {"apiGroups": ["*"], "apiVersions": ["*"], "operations": all_writes,
                 "resources": ["*/*"], "scope": "Namespaced"},
                // The namespace itself (matched on its own labels; a removal of the mark is
                // the `-namespaces` policy's).
                {"apiGroups": [""], "apiVersions": ["*"], "operations": ["UPDATE", "DELETE"],
                 "resources": ["namespaces"]}
            ],
            "excludeResourceRules": [{
                "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["*"]
            }]
        }),
        json!([{
            "name": "tenant-or-new-pod",
            "expression": format!("{TENANT_IDENTITY} || ({OWN_SERVICE_ACCOUNT}) || ({POD_CREATION})")
        }]),
        json!([{
            "expression": "request.operation == 'UPDATE' && oldObject != null && has(oldObject.metadata) && has(oldObject.metadata.deletionTimestamp)",
            "messageExpression": format!(
                "'paddock policy {SUSPENSION_POLICY}: tenant ' + (has(request.namespace) && size(request.namespace) > 7 ? request.namespace.substring(0, 6) : '') + \
                 ' is suspended: writes by its identities and new pods in its namespaces are refused until the platform resumes it'"
            ),
            "message": MESSAGE
        }]),
    )
}

/// The `-namespaces` policy's rule that a tenant identity neither sets, changes nor removes
/// [`SUSPENDED_LABEL`] (the policy's variables `newLabels` and `oldLabels`).
pub fn mark_locked_validation() -> Value {
    json!({
        "expression": format!(
            "('{SUSPENDED_LABEL}' in variables.newLabels) == ('{SUSPENDED_LABEL}' in variables.oldLabels) && \
             (!('{SUSPENDED_LABEL}' in variables.newLabels) || variables.newLabels['{SUSPENDED_LABEL}'] == variables.oldLabels['{SUSPENDED_LABEL}'])"
        ),
        "message": format!("paddock policy {SUSPENSION_POLICY}: the {SUSPENDED_LABEL} label of a tenant namespace is the platform's: a tenant may not set, change or remove it")
    })
}

/// The namespace labels that mark `suspended` (merge patch of a namespace's metadata): the
/// label, or its removal.
pub fn mark_patch(suspended: bool) -> Value {
    let value = if suspended {
        json!("true")
    } else {
        Value::Null
    };
    json!({"metadata": {"labels": {SUSPENDED_LABEL: value}}})
}

/// Whether namespace `ns` (an upstream Namespace object) carries the mark as `suspended` says.
pub fn marked_as(ns: &Value, suspended: bool) -> bool {
    ns["metadata"]["labels"][SUSPENDED_LABEL].is_string() == suspended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_is_matched_only_in_marked_tenant_namespaces() {
        let (name, p) = crate::provision::guard::guard_policies(true, None)
            .into_iter()
            .find(|(n, _)| n.ends_with(GUARD_SUFFIX))
            .unwrap();
        assert_eq!(name, "paddock-tenant-guard-suspended");
        let spec = &p["spec"];
        let selector = &spec["matchConstraints"]["namespaceSelector"]["matchExpressions"];
        assert_eq!(selector[0]["key"], SUSPENDED_LABEL);
        assert_eq!(selector[1]["key"], TENANT_LABEL);
        assert_eq!(
            spec["matchConstraints"]["resourceRules"][0]["scope"],
            "Namespaced"
        );
        let condition = spec["matchConditions"][0]["expression"]
            .as_str()
            .unwrap_or_default();
        // The tenant's identities, its own service accounts, and pods anyone but
        // system:masters creates.
        for part in [
            "g.startsWith('paddock:tenant:')",
            "'system:serviceaccount:' + request.namespace.substring(0, 7)",
            "request.resource.resource == 'pods'",
            "!('system:masters' in request.userInfo.groups)",
        ] {
            assert!(condition.contains(part), "{part} not in {condition}");
        }
        // The one thing let through: an object being deleted (finalizers removed).
        assert!(
            spec["validations"][0]["expression"]
                .as_str()
                .unwrap_or_default()
                .contains("oldObject.metadata.deletionTimestamp")
        );
        assert!(
            spec["validations"][0]["messageExpression"]
                .as_str()
                .unwrap_or_default()
                .contains("paddock policy suspension: tenant ")
        );
    }

    #[test]
    fn the_mark_is_a_label_set_or_removed() {
        assert_eq!(
            mark_patch(true),
            json!({"metadata": {"labels": {"paddock.io/suspended": "true"}}})
        );
        assert_eq!(
            mark_patch(false),
            json!({"metadata": {"labels": {"paddock.io/suspended": null}}})
        );
        let marked = json!({"metadata": {"labels": {"paddock.io/suspended": "true"}}});
        let bare = json!({"metadata": {"name": "a"}});
        assert!(marked_as(&marked, true) && !marked_as(&marked, false));
        assert!(marked_as(&bare, false) && !marked_as(&bare, true));
        let rule = mark_locked_validation();
        assert!(
            rule["message"]
                .as_str()
                .unwrap_or_default()
                .contains("paddock policy suspension")
        );
    }
}
