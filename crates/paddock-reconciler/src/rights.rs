//! paddock's own upstream rights, declared once (impersonation here, its rights on each kind in
//! that kind's row of `paddock_core::catalog::kinds`): the start-up self-check asks the apiserver
//! for each of them (a SelfSubjectAccessReview per verb) and refuses to start with the exact
//! list of what is missing; the Helm chart's ClusterRole (deploy/chart) is this table, which a
//! test checks by rendering the chart. One right is namespaced, not cluster-wide: the leader
//! election's Lease ([`LEASE_RIGHT`]), granted by a Role in paddock's own namespace only, so
//! that paddock cannot touch any other component's Lease (kube-controller-manager's,
//! kube-scheduler's, the nodes').
//!
//! Tenants' own requests are impersonated: their rights come from the bindings paddock
//! provisions, not from this table. What paddock does as itself is provisioning and repair
//! (namespaces and what they hold, RBAC, the admission guard, the APF objects), tenant
//! deletion, the RBAC resync, service-account token reviews, and the namespace fan-out.

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

use paddock_core::catalog::kinds::KINDS;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

/// One rule: verbs on a resource (with subresource) of an API group, cluster-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Right {
    pub group: &'static str,
    /// `resource` or `resource/subresource`, as in an RBAC rule.
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
    /// What paddock does with it (for the docs and the error message).
    pub why: &'static str,
}

/// What paddock's credential needs besides its rights on kinds: acting as the tenants.
const IMPERSONATION: &[Right] = &[
    Right {
        group: "",
        resource: "users",
        verbs: &["impersonate"],
        why: "tenant requests run as the impersonated tenant user",
    },
    Right {
        group: "",
        resource: "groups",
        verbs: &["impersonate"],
        why: "tenant requests carry the tenant's groups",
    },
];

/// The leader election's right, in the Lease's namespace only (the chart's Role).
pub const LEASE_RIGHT: Right = Right {
    group: "coordination.k8s.io",
    resource: "leases",
    verbs: &["get", "list", "watch", "create", "update"],
    why: "leader election: the Lease that picks the replica doing the once-per-fleet work (read, watched, created, renewed)",
};

/// The rules of the Role in the Lease's namespace.
pub fn lease_role_rules() -> Value {
    let r = LEASE_RIGHT;
    json!([{"apiGroups": [r.group], "resources": [r.resource], "verbs": r.verbs}])
}

/// Everything paddock's own credential needs upstream: impersonation, then its rights on each
/// kind, declared in that kind's row of the kind table (`paddock_core::catalog::kinds`).
pub fn required_rights() -> Vec<Right> {
    let on_kinds = KINDS
        .iter()
        .filter(|k| !k.paddock_verbs.is_empty())
        .map(|k| Right {
            group: k.group,
            resource: k.resource,
            verbs: k.paddock_verbs,
            why: k.paddock_why,
        });
    IMPERSONATION.iter().copied().chain(on_kinds).collect()
}

/// The rules of the least ClusterRole: one rule per [`required_rights`].
pub fn cluster_role_rules() -> Value {
    Value::Array(
        required_rights()
            .iter()
            .map(|r| json!({"apiGroups": [r.group], "resources": [r.resource], "verbs": r.verbs}))
            .collect(),
    )
}

/// `verb group/resource` as `kubectl auth can-i` spells it (`create namespaces`,
/// `patch flowschemas.flowcontrol.apiserver.k8s.io`).
pub fn describe(r: &Right, verb: &str) -> String {
    if r.group.is_empty() {
        format!("{verb} {}", r.resource)
    } else {
        let (res, sub) = match r.resource.split_once('/') {
            Some((res, sub)) => (res, Some(sub)),
            None => (r.resource, None),
        };
        match sub {
            Some(s) => format!("{verb} {res}.{}/{s}", r.group),
            None => format!("{verb} {res}.{}", r.group),
        }
    }
}

/// One SelfSubjectAccessReview: may paddock's credential do `verb` on `r`, cluster-wide (or
/// in `namespace`)?
async fn allowed(
    up: &Upstream,
    r: &Right,
    verb: &str,
    namespace: Option<&str>,
) -> Result<bool, ServerError> {
    let (resource, subresource) = r.resource.split_once('/').unwrap_or((r.resource, ""));
    let mut review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "group": r.group, "resource": resource, "subresource": subresource, "verb": verb,
        }},
    });
    if let Some(ns) = namespace {
        review["spec"]["resourceAttributes"]["namespace"] = json!(ns);
    }
    let a = upjson::call(
        up,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some("application/json"),
        Some(&review),
    )
    .await?;
    if !a.status.is_success() {
        return Err(ServerError::Upstream(format!(
            "self-check: SelfSubjectAccessReview failed ({}): {}",
            a.status,
            a.message()
        )));
    }
    Ok(a.body["status"]["allowed"].as_bool() == Some(true))
}

/// The rights of [`required_rights`] paddock's credential lacks, as [`describe`] spells them,
/// then those of [`LEASE_RIGHT`] in `lease_namespace` (leader election on). Without `apf`
/// (tenant_priority_shares = 0) the APF objects are left alone, so their rights are not
/// needed; with a front-proxy upstream (`upstream_identity_mode`) the `impersonate` rights
/// are not either.
pub async fn missing_rights(
    up: &Upstream,
    apf: bool,
    lease_namespace: Option<&str>,
) -> Result<Vec<String>, ServerError> {
    // Tenants' own APF objects are listed and deleted with the tenant whatever `apf` says.
    // As the front proxy, paddock asserts tenant identities without impersonating them.
    let front_proxy = up.is_front_proxy();
    let needed = move |r: &Right, v: &str| {
        let apf_ok =
            apf || r.group != "flowcontrol.apiserver.k8s.io" || matches!(v, "list" | "delete");
        apf_ok && !(front_proxy && v == "impersonate")
    };
    let rights = required_rights();
    let checks = rights.iter().flat_map(move |r| {
        r.verbs
            .iter()
            .filter(move |v| needed(r, v))
            .map(move |v| (r, *v))
    });
    let answers =
        futures_util::future::try_join_all(checks.clone().map(|(r, v)| allowed(up, r, v, None)))
            .await?;
    let mut missing: Vec<String> = checks
        .zip(answers)
        .filter(|(_, ok)| !ok)
        .map(|((r, v), _)| describe(r, v))
        .collect();
    if let Some(ns) = lease_namespace {
        let lease = &LEASE_RIGHT;
        let answers = futures_util::future::try_join_all(
            lease.verbs.iter().map(|v| allowed(up, lease, v, Some(ns))),
        )
        .await?;
        missing.extend(
            lease
                .verbs
                .iter()
                .zip(answers)
                .filter(|(_, ok)| !ok)
                .map(|(v, _)| format!("{} -n {ns}", describe(lease, v))),
        );
    }
    Ok(missing)
}

/// The start-up self-check: waits (with backoff, until `give_up`) for the apiserver to
/// answer, then fails with the list of missing rights if there are any.
pub async fn self_check(
    up: &Upstream,
    apf: bool,
    lease_namespace: Option<&str>,
    give_up: Duration,
) -> Result<(), ServerError> {
    let deadline = tokio::time::Instant::now() + give_up;
    let mut delay = Duration::from_millis(200);
    loop {
        match missing_rights(up, apf, lease_namespace).await {
            Ok(missing) if missing.is_empty() => {
                tracing::info!(
                    rights = required_rights().len(),
                    "self-check: paddock's upstream credential has every right it needs"
                );
                return Ok(());
            }
            Ok(missing) => {
                return Err(ServerError::Config(format!(
                    "upstream_kubeconfig: paddock's credential at {} lacks {} right(s) it needs: {} (the ClusterRole and the Role in deploy/chart grant exactly what paddock needs; docs/operations.md)",
                    up.server(),
                    missing.len(),
                    missing.join(", ")
                )));
            }
            Err(e) if tokio::time::Instant::now() + delay < deadline => {
                tracing::warn!(error = %e, "self-check: upstream not answering; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                return Err(ServerError::Config(format!(
                    "self-check: cannot ask the upstream what paddock may do: {e}"
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_are_spelled_as_kubectl_does() {
        let rights = required_rights();
        assert_eq!(describe(&rights[0], "impersonate"), "impersonate users");
        let sub = Right {
            group: "authentication.k8s.io",
            resource: "userextras/scopes",
            verbs: &["impersonate"],
            why: "",
        };
        assert_eq!(
            describe(&sub, "impersonate"),
            "impersonate userextras.authentication.k8s.io/scopes"
        );
        let rules = cluster_role_rules();
        assert_eq!(rules.as_array().map(Vec::len), Some(rights.len()));
    }

    #[test]
    fn each_resource_is_declared_once() {
        let mut seen = std::collections::HashSet::new();
        for r in required_rights() {
            assert!(seen.insert((r.group, r.resource)), "{r:?} twice");
            assert!(!r.verbs.is_empty() && !r.why.is_empty());
        }
    }
}
