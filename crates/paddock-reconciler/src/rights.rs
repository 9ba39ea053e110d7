//! paddock's own upstream rights, declared once: the start-up self-check asks the apiserver
//! for each of them (a SelfSubjectAccessReview per verb) and refuses to start with the exact
//! list of what is missing; the Helm chart's ClusterRole (deploy/chart) is this table, which a
//! test checks by rendering the chart.
//!
//! Tenants' own requests are impersonated: their rights come from the bindings paddock
//! provisions, not from this table. What paddock does as itself is provisioning and repair
//! (namespaces and what they hold, RBAC, the admission guard, the APF objects), tenant
//! deletion, the RBAC resync, service-account token reviews, and the namespace fan-out.

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

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

/// Server-side apply (a PATCH) creates what does not exist yet: the apiserver authorizes
/// `patch`, and `create` when the object is new.
const APPLY: &[&str] = &["create", "patch"];
/// Read for the usage report only.
const USAGE: &[&str] = &["list"];
/// Kept in step by the RBAC resync: listed (by label), applied, deleted.
const RESYNCED: &[&str] = &["list", "create", "patch", "delete"];

/// Everything paddock's own credential needs upstream.
pub const REQUIRED_RIGHTS: &[Right] = &[
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
    Right {
        group: "authentication.k8s.io",
        resource: "userextras/paddock.io/tenant",
        verbs: &["impersonate"],
        why: "tenant requests carry the tenant id as an extra",
    },
    Right {
        group: "authentication.k8s.io",
        resource: "tokenreviews",
        verbs: &["create"],
        why: "tenants' service-account tokens are reviewed",
    },
    Right {
        group: "",
        resource: "namespaces",
        verbs: &["get", "list", "watch", "create", "patch", "delete"],
        why: "tenant namespaces are provisioned (read first), fanned out over (list, watch) and deleted",
    },
    Right {
        group: "",
        resource: "services",
        verbs: &["list", "create", "patch"],
        why: "each tenant's default namespace gets its `kubernetes` Service; counted for the usage report",
    },
    Right {
        group: "",
        resource: "resourcequotas",
        verbs: APPLY,
        why: "each tenant namespace gets a quota",
    },
    Right {
        group: "networking.k8s.io",
        resource: "networkpolicies",
        verbs: &["list", "create", "patch"],
        why: "each tenant namespace gets a network policy; counted for the usage report",
    },
    Right {
        group: "rbac.authorization.k8s.io",
        resource: "rolebindings",
        verbs: RESYNCED,
        why: "namespace admin bindings and the mirrors of tenants' RBAC",
    },
    Right {
        group: "rbac.authorization.k8s.io",
        resource: "roles",
        verbs: &["list", "bind"],
        why: "mirrors bind roles tenants wrote; counted for the usage report",
    },
    Right {
        group: "rbac.authorization.k8s.io",
        resource: "clusterrolebindings",
        verbs: RESYNCED,
        why: "the shared cluster-scope binding and tenants' custom-resources bindings",
    },
    Right {
        group: "rbac.authorization.k8s.io",
        resource: "clusterroles",
        verbs: &["list", "create", "patch", "delete", "bind", "escalate"],
        why: "paddock's tenant roles grant what paddock hands on to tenants",
    },
    Right {
        group: "apiextensions.k8s.io",
        resource: "customresourcedefinitions",
        verbs: &["list", "delete"],
        why: "tenants' CRDs are resynced and deleted with the tenant",
    },
    Right {
        group: "",
        resource: "persistentvolumes",
        verbs: &["list", "delete"],
        why: "tenants' volumes are deleted with the tenant",
    },
    Right {
        group: "admissionregistration.k8s.io",
        resource: "validatingwebhookconfigurations",
        verbs: &["list", "delete", "create", "patch"],
        why: "tenants' webhooks are deleted with the tenant; paddock's own admission webhook is applied",
    },
    Right {
        group: "admissionregistration.k8s.io",
        resource: "mutatingwebhookconfigurations",
        verbs: &["list", "delete", "create", "patch"],
        why: "tenants' webhooks are deleted with the tenant; paddock's own admission webhook is applied",
    },
    Right {
        group: "admissionregistration.k8s.io",
        resource: "validatingadmissionpolicies",
        verbs: &["list", "create", "patch", "delete"],
        why: "the tenant guard policies (the Service-type one is removed when the admission webhook decides it); tenants' own policies are deleted with the tenant",
    },
    Right {
        group: "admissionregistration.k8s.io",
        resource: "validatingadmissionpolicybindings",
        verbs: &["list", "create", "patch", "delete"],
        why: "the tenant guard policies' bindings; tenants' own bindings are deleted with the tenant",
    },
    Right {
        group: "",
        resource: "nodes",
        verbs: &["get"],
        why: "the admission webhook checks a pod's nodeName against the tenant's node pool",
    },
    Right {
        group: "networking.k8s.io",
        resource: "ingresses",
        verbs: &["list"],
        why: "Ingress-host claims no Ingress of their holder names any more are returned (claims_gc.rs)",
    },
    Right {
        group: "flowcontrol.apiserver.k8s.io",
        resource: "flowschemas",
        verbs: RESYNCED,
        why: "the paddock-tenants FlowSchema and each tenant's own (tenant_priority_shares > 0); tenants' FlowSchemas are listed and deleted with the tenant",
    },
    Right {
        group: "flowcontrol.apiserver.k8s.io",
        resource: "prioritylevelconfigurations",
        verbs: RESYNCED,
        why: "the paddock-tenants priority level (tenant_priority_shares > 0); tenants' levels are listed and deleted with the tenant",
    },
    // The usage report's lists (paddock-server usage.rs): every kind it counts, never
    // secrets (a `list` on secrets grants their data cluster-wide; they stay uncounted).
    Right {
        group: "",
        resource: "pods",
        verbs: USAGE,
        why: "usage report (metering.md): pods: count, phase, CPU and memory requests and limits",
    },
    Right {
        group: "",
        resource: "persistentvolumeclaims",
        verbs: USAGE,
        why: "usage report (metering.md): PersistentVolumeClaims: count and storage requested",
    },
    Right {
        group: "",
        resource: "configmaps",
        verbs: USAGE,
        why: "usage report (metering.md): ConfigMaps: count",
    },
    Right {
        group: "",
        resource: "serviceaccounts",
        verbs: USAGE,
        why: "usage report (metering.md): ServiceAccounts: count",
    },
    Right {
        group: "apps",
        resource: "deployments",
        verbs: USAGE,
        why: "usage report (metering.md): Deployments: count",
    },
    Right {
        group: "apps",
        resource: "statefulsets",
        verbs: USAGE,
        why: "usage report (metering.md): StatefulSets: count",
    },
    Right {
        group: "apps",
        resource: "daemonsets",
        verbs: USAGE,
        why: "usage report (metering.md): DaemonSets: count",
    },
    Right {
        group: "apps",
        resource: "replicasets",
        verbs: USAGE,
        why: "usage report (metering.md): ReplicaSets: count",
    },
    Right {
        group: "batch",
        resource: "jobs",
        verbs: USAGE,
        why: "usage report (metering.md): Jobs: count",
    },
    Right {
        group: "batch",
        resource: "cronjobs",
        verbs: USAGE,
        why: "usage report (metering.md): CronJobs: count",
    },
];

/// The rules of the least ClusterRole: one rule per row of [`REQUIRED_RIGHTS`].
pub fn cluster_role_rules() -> Value {
    Value::Array(
        REQUIRED_RIGHTS
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

/// One SelfSubjectAccessReview: may paddock's credential do `verb` on `r`, cluster-wide?
async fn allowed(up: &Upstream, r: &Right, verb: &str) -> Result<bool, ServerError> {
    let (resource, subresource) = r.resource.split_once('/').unwrap_or((r.resource, ""));
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "group": r.group, "resource": resource, "subresource": subresource, "verb": verb,
        }},
    });
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

/// The rights of [`REQUIRED_RIGHTS`] paddock's credential lacks, as [`describe`] spells them.
/// Without `apf` (tenant_priority_shares = 0) the APF objects are left alone, so their rights
/// are not needed.
pub async fn missing_rights(up: &Upstream, apf: bool) -> Result<Vec<String>, ServerError> {
    // Tenants' own APF objects are listed and deleted with the tenant whatever `apf` says.
    let needed = move |r: &Right, v: &str| {
        apf || r.group != "flowcontrol.apiserver.k8s.io" || matches!(v, "list" | "delete")
    };
    let checks = REQUIRED_RIGHTS.iter().flat_map(move |r| {
        r.verbs
            .iter()
            .filter(move |v| needed(r, v))
            .map(move |v| (r, *v))
    });
    let answers =
        futures_util::future::try_join_all(checks.clone().map(|(r, v)| allowed(up, r, v))).await?;
    Ok(checks
        .zip(answers)
        .filter(|(_, ok)| !ok)
        .map(|((r, v), _)| describe(r, v))
        .collect())
}

/// The start-up self-check: waits (with backoff, until `give_up`) for the apiserver to
/// answer, then fails with the list of missing rights if there are any.
pub async fn self_check(up: &Upstream, apf: bool, give_up: Duration) -> Result<(), ServerError> {
    let deadline = tokio::time::Instant::now() + give_up;
    let mut delay = Duration::from_millis(200);
    loop {
        match missing_rights(up, apf).await {
            Ok(missing) if missing.is_empty() => {
                tracing::info!(
                    rights = REQUIRED_RIGHTS.len(),
                    "self-check: paddock's upstream credential has every right it needs"
                );
                return Ok(());
            }
            Ok(missing) => {
                return Err(ServerError::Config(format!(
                    "upstream_kubeconfig: paddock's credential at {} lacks {} right(s) it needs: {} (the ClusterRole in deploy/chart grants exactly what paddock needs; docs/operations.md)",
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
        let r = &REQUIRED_RIGHTS[0];
        assert_eq!(describe(r, "impersonate"), "impersonate users");
        let extra = REQUIRED_RIGHTS
            .iter()
            .find(|r| r.resource.starts_with("userextras"))
            .expect("userextras right");
        assert_eq!(
            describe(extra, "impersonate"),
            "impersonate userextras.authentication.k8s.io/paddock.io/tenant"
        );
        let rules = cluster_role_rules();
        assert_eq!(rules.as_array().map(Vec::len), Some(REQUIRED_RIGHTS.len()));
    }

    /// Every kind the usage report counts may be listed, except secrets (docs/metering.md).
    #[test]
    fn usage_lists_are_rights() {
        use paddock_core::observe::usage::{COUNTED_CLUSTER, COUNTED_NAMESPACED};
        let counted = COUNTED_NAMESPACED
            .iter()
            .chain(COUNTED_CLUSTER)
            .map(|(name, _)| *name)
            .chain(["pods", "persistentvolumeclaims"]);
        for name in counted {
            let (resource, group) = name.split_once('.').unwrap_or((name, ""));
            let listed = REQUIRED_RIGHTS
                .iter()
                .any(|r| r.group == group && r.resource == resource && r.verbs.contains(&"list"));
            assert_eq!(listed, name != "secrets", "list {name}");
        }
    }

    #[test]
    fn each_resource_is_declared_once() {
        let mut seen = std::collections::HashSet::new();
        for r in REQUIRED_RIGHTS {
            assert!(seen.insert((r.group, r.resource)), "{r:?} twice");
            assert!(!r.verbs.is_empty());
        }
    }
}
