//! What paddock creates upstream: the platform-wide bootstrap (the shared cluster-scope role
//! and the admission guard), each tenant's namespaces and least-privilege grants, and the
//! removal of everything a tenant owns when it is deleted.

use std::time::Duration;

use paddock_core::{TENANT_LABEL, TenantId};
use serde_json::{Value, json};

use crate::error::ServerError;
use crate::upjson;
use crate::upstream::Upstream;

/// The tenant's default namespaces (its view).
pub const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];
/// In-tenant group of the tenant's administrators.
pub const TENANT_ADMIN_GROUP: &str = "tenant-admins";
/// Shared ClusterRole with the cluster-scoped rights of tenant admins.
pub const CLUSTER_SCOPE_ROLE: &str = "paddock:tenant-cluster-scope";
/// Name of the admission guard policy and binding.
pub const GUARD_NAME: &str = "paddock-tenant-guard";
/// Label on objects paddock manages for a tenant that are not the tenant's own objects.
pub const MANAGED_FOR_LABEL: &str = "paddock.io/managed-for";
/// Name of the RoleBinding paddock keeps in each tenant namespace.
pub const NAMESPACE_ADMIN_BINDING: &str = "paddock-tenant-admins";

fn upstream_admin_group(t: &TenantId) -> String {
    format!("paddock:{}:{}", t.as_str(), TENANT_ADMIN_GROUP)
}

/// The cluster-scope role shared by every tenant's admins: rights on the cluster-scoped kinds a
/// tenant owns (the admission guard limits them to the tenant's prefix and label) and reads of
/// the shared read-only kinds. It grants nothing inside any namespace.
pub fn cluster_scope_role() -> Value {
    let all = json!(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]);
    let read = json!(["get", "list", "watch"]);
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CLUSTER_SCOPE_ROLE, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces", "persistentvolumes"], "verbs": all},
            {"apiGroups": [""], "resources": ["namespaces/status", "namespaces/finalize"], "verbs": ["get", "update", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "clusterrolebindings"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind", "escalate"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions", "customresourcedefinitions/status"], "verbs": all},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": read},
            {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csidrivers", "csinodes"], "verbs": read},
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": read},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": read},
            {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": read},
            {"apiGroups": ["flowcontrol.apiserver.k8s.io"], "resources": ["flowschemas", "prioritylevelconfigurations"], "verbs": read},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews", "localsubjectaccessreviews"], "verbs": ["create"]}
        ]
    })
}

/// The admission guard: the second wall. Any write by a `paddock:tenant:<tid>` identity to
/// anything outside that tenant's namespaces, prefix or label is refused by the apiserver
/// itself, even if paddock's translation had a bug or were bypassed.
pub fn guard_policy() -> Value {
    // Fields of `request` that are empty are absent in CEL, hence the has() guards.
    let name_var = "(has(request.name) && request.name != '') ? request.name : \
        ((variables.obj != null && has(variables.obj.metadata) && has(variables.obj.metadata.name)) ? variables.obj.metadata.name : '')";
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": GUARD_NAME, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": ["*"], "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    // "*/*": every resource and every subresource.
                    "resources": ["*/*"]
                }],
                "excludeResourceRules": [{
                    "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "apiVersions": ["*"],
                    "operations": ["CREATE"], "resources": ["*"]
                }]
            },
            "matchConditions": [{
                "name": "tenant-identity",
                "expression": "request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:'))"
            }],
            "variables": [
                {"name": "tids", "expression": "request.userInfo.groups.filter(g, g.startsWith('paddock:tenant:')).map(g, g.substring(15))"},
                {"name": "tid", "expression": "variables.tids[0]"},
                {"name": "obj", "expression": "request.operation == 'DELETE' ? oldObject : object"},
                {"name": "ns", "expression": "has(request.namespace) ? request.namespace : ''"},
                {"name": "sub", "expression": "has(request.subResource) ? request.subResource : ''"},
                {"name": "name", "expression": name_var},
                {"name": "isCRD", "expression": "request.resource.group == 'apiextensions.k8s.io' && request.resource.resource == 'customresourcedefinitions'"}
            ],
            "validations": [
                {"expression": "size(variables.tids) == 1",
                 "message": "paddock: a request may carry exactly one tenant identity"},
                {"expression": "variables.ns == '' || variables.ns.startsWith(variables.tid + '-')",
                 "message": "paddock: a tenant may only write inside its own namespaces"},
                {"expression": "variables.ns != '' || (variables.isCRD ? (variables.obj != null && variables.obj.spec.group.startsWith(variables.tid + '-')) : variables.name.startsWith(variables.tid + '-'))",
                 "message": "paddock: a tenant may only write cluster-scoped objects under its own prefix"},
                {"expression": "variables.ns != '' || variables.sub != '' || (variables.obj != null && has(variables.obj.metadata.labels) && 'paddock.io/tenant' in variables.obj.metadata.labels && variables.obj.metadata.labels['paddock.io/tenant'] == variables.tid)",
                 "message": "paddock: cluster-scoped objects of a tenant must carry its paddock.io/tenant label"},
                {"expression": "request.operation != 'UPDATE' || oldObject == null || !has(oldObject.metadata.labels) || !('paddock.io/tenant' in oldObject.metadata.labels) || (has(object.metadata.labels) && 'paddock.io/tenant' in object.metadata.labels && object.metadata.labels['paddock.io/tenant'] == oldObject.metadata.labels['paddock.io/tenant'])",
                 "message": "paddock: the paddock.io/tenant label cannot be changed or removed"}
            ]
        }
    })
}

/// Binding that puts the guard in force (Deny).
pub fn guard_binding() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": GUARD_NAME, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {"policyName": GUARD_NAME, "validationActions": ["Deny"]}
    })
}

/// Idempotently installs the platform-wide objects.
pub async fn bootstrap(up: &Upstream) -> Result<(), ServerError> {
    upjson::apply(up, &format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{CLUSTER_SCOPE_ROLE}"), &cluster_scope_role())
        .await?;
    upjson::apply(up, &format!("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{GUARD_NAME}"), &guard_policy())
        .await?;
    upjson::apply(
        up,
        &format!("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{GUARD_NAME}"),
        &guard_binding(),
    )
    .await?;
    Ok(())
}

/// Refuses an id whose prefix is already used upstream by something that is not this
/// tenant's (a reserved id).
pub async fn check_prefix_unused(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    let prefix = t.prefix();
    for ns in upjson::list(up, "/api/v1/namespaces").await? {
        let name = ns["metadata"]["name"].as_str().unwrap_or_default();
        let owner = ns["metadata"]["labels"][TENANT_LABEL].as_str();
        if name.starts_with(&prefix) && owner != Some(t.as_str()) {
            return Err(ServerError::Conflict(format!(
                "tenant id {t} is reserved: namespace {name} already exists upstream and does not belong to it"
            )));
        }
    }
    Ok(())
}

/// The RoleBinding that gives the tenant's admins full rights inside one of its namespaces.
pub fn namespace_admin_binding(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": NAMESPACE_ADMIN_BINDING, "namespace": upstream_ns,
                     "labels": {MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": upstream_admin_group(t)}]
    })
}

/// Makes sure the admin binding exists in a tenant namespace (after the tenant creates one).
pub async fn ensure_namespace_binding(up: &Upstream, t: &TenantId, upstream_ns: &str) -> Result<(), ServerError> {
    upjson::apply(
        up,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{upstream_ns}/rolebindings/{NAMESPACE_ADMIN_BINDING}"),
        &namespace_admin_binding(t, upstream_ns),
    )
    .await
}

/// Creates (or repairs) everything a tenant needs upstream. Idempotent.
pub async fn provision_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    let crb_name = format!("paddock:tenant:{}", t.as_str());
    upjson::apply(
        up,
        &format!("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{crb_name}"),
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": crb_name, "labels": {MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_SCOPE_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": upstream_admin_group(t)}]
        }),
    )
    .await?;
    for ns in DEFAULT_NAMESPACES {
        let up_ns = t.upstream_name(ns);
        upjson::apply(
            up,
            &format!("/api/v1/namespaces/{up_ns}"),
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": up_ns, "labels": {TENANT_LABEL: t.as_str()}}}),
        )
        .await?;
        ensure_namespace_binding(up, t, &up_ns).await?;
    }
    Ok(())
}

/// Cluster-scoped kinds a tenant can own, as list paths. Namespaces are handled first and
/// separately (their deletion takes the namespaced contents with it).
const OWNED_CLUSTER_KINDS: &[&str] = &[
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/api/v1/persistentvolumes",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
];

fn owned_by(obj: &Value, t: &TenantId, crd: bool) -> bool {
    let labelled = obj["metadata"]["labels"][TENANT_LABEL].as_str() == Some(t.as_str());
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    // Exact `<tid>-` check, never a bare prefix match: `foofoo` must not take `foofoox-...`.
    let prefixed = if crd {
        obj["spec"]["group"].as_str().is_some_and(|g| g.starts_with(&t.prefix()))
    } else {
        name.starts_with(&t.prefix())
    };
    labelled && prefixed
}

/// Deletes everything the tenant owns upstream, reporting progress. Idempotent; returns when
/// nothing is left (or after `timeout`).
pub async fn delete_tenant_objects(
    up: &Upstream,
    t: &TenantId,
    timeout: Duration,
    mut progress: impl FnMut(String),
) -> Result<(), ServerError> {
    let selector = format!("labelSelector={TENANT_LABEL}%3D{}", t.as_str());
    let managed = format!("labelSelector={MANAGED_FOR_LABEL}%3D{}", t.as_str());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let namespaces: Vec<String> = upjson::list(up, &format!("/api/v1/namespaces?{selector}"))
            .await?
            .into_iter()
            .filter(|ns| owned_by(ns, t, false))
            .filter_map(|ns| ns["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        let mut remaining = namespaces.len();
        for ns in &namespaces {
            upjson::delete(up, &format!("/api/v1/namespaces/{ns}")).await?;
        }
        for kind in OWNED_CLUSTER_KINDS {
            let crd = kind.ends_with("customresourcedefinitions");
            let items = match upjson::list(up, &format!("{kind}?{selector}")).await {
                Ok(i) => i,
                // A kind the upstream does not serve has nothing to delete.
                Err(_) => continue,
            };
            for obj in items.iter().filter(|o| owned_by(o, t, crd)) {
                if let Some(name) = obj["metadata"]["name"].as_str() {
                    upjson::delete(up, &format!("{kind}/{name}")).await?;
                    remaining += 1;
                }
            }
        }
        for obj in upjson::list(up, &format!("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?{managed}")).await? {
            if let Some(name) = obj["metadata"]["name"].as_str()
                && name == format!("paddock:tenant:{}", t.as_str())
            {
                upjson::delete(up, &format!("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")).await?;
            }
        }
        if remaining == 0 {
            progress("all upstream objects removed".into());
            return Ok(());
        }
        progress(format!("waiting for {} namespace(s) and cluster-scoped objects to go", remaining));
        if tokio::time::Instant::now() > deadline {
            return Err(ServerError::Unavailable(format!(
                "tenant {t}: {remaining} upstream object(s) still terminating after {}s; retry the delete",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
