//! What paddock creates upstream: the platform-wide bootstrap (the shared cluster-scope role
//! and the admission guard), each tenant's namespaces and least-privilege grants, and the
//! removal of everything a tenant owns when it is deleted.

use std::time::Duration;

use paddock_core::admission::policy::PodSecurityLevel;
use paddock_core::{TENANT_LABEL, TenantId};
use serde_json::{Value, json};

use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

use paddock_core::provision::guard::{guard_binding, guard_policies, services_guard_name};
use paddock_core::provision::{
    CLUSTER_SCOPE_ROLE, KEPT_LABEL, NAMESPACE_ADMIN_BINDING, POD_SECURITY_LEVEL, PSA_ENFORCE_LABEL,
    RESERVED_TENANT_IDS, TENANT_PRIORITY_LEVEL, cluster_scope_binding, cluster_scope_role,
    keeps_namespace_level, legacy_tenant_scope_binding_name, namespace_admin_binding, owned_by,
    owned_cluster_kinds, prefix_taken, tenant_cluster_role_name, tenant_flow_schema,
    tenant_flow_schema_name, tenant_own_flow_schema, tenant_priority_level,
};

use crate::namespaces::NamespaceIndex;
use paddock_core::tenant::MANAGED_FOR_LABEL;

/// Puts tenant `t`'s own FlowSchema in place (`own`: `Reconciler::own_flow_schema`) or
/// removes one it no longer has (its requests then go by the shared `paddock-tenants`
/// FlowSchema).
pub async fn sync_tenant_flow_schema(
    up: &Upstream,
    t: &TenantId,
    own: bool,
) -> Result<(), ServerError> {
    let path = format!(
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{}",
        tenant_flow_schema_name(t)
    );
    if own {
        upjson::apply(up, &path, &tenant_own_flow_schema(t)).await
    } else {
        upjson::delete(up, &path).await
    }
}

/// Installs what every tenant shares upstream: the cluster-scope role, the admission guard,
/// and (unless `tenant_priority_shares` is 0) the tenants' APF priority level.
/// Whether paddock's admission webhook enforces the tenant policy, recorded once at start-up
/// by the server (the webhook listener is the server's; the reconciler only needs to know
/// whether to install the guard's Service rule and the namespace quota's Service caps).
static ADMISSION_WEBHOOK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Records whether the admission webhook is served (first call wins).
pub fn set_admission_webhook(enabled: bool) {
    let _ = ADMISSION_WEBHOOK.set(enabled);
}

pub(crate) fn admission_webhook() -> bool {
    ADMISSION_WEBHOOK.get().copied().unwrap_or(false)
}

/// paddock's admission URL when it relays the tenants' webhooks (docs/webhooks.md), recorded
/// once at start-up by the server: the guard lets a tenant webhook name the relay.
static WEBHOOK_RELAY_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the relay's URL (first call wins).
pub fn set_webhook_relay_url(url: String) {
    let _ = WEBHOOK_RELAY_URL.set(url);
}

pub(crate) fn webhook_relay_url() -> Option<String> {
    WEBHOOK_RELAY_URL.get().cloned()
}

/// paddock's admission URL, when its admission webhook is served (the relay's URL is it).
pub fn admission_url() -> Option<String> {
    webhook_relay_url()
}

/// Where paddock is for tenant pods (the in-cluster path, docs/inside.md): the `kubernetes`
/// Endpoints of every tenant's `default` namespace. Set at start-up by the server from
/// `in_cluster_endpoints`, or kept by `api_endpoints` from paddock's own Service.
static IN_CLUSTER_ENDPOINTS: parking_lot::RwLock<Vec<std::net::SocketAddr>> =
    parking_lot::RwLock::new(Vec::new());

/// Records paddock's in-cluster addresses (none: the Service has no endpoints).
pub fn set_in_cluster_endpoints(endpoints: Vec<std::net::SocketAddr>) {
    *IN_CLUSTER_ENDPOINTS.write() = endpoints;
}

pub(crate) fn in_cluster_endpoints() -> Vec<std::net::SocketAddr> {
    IN_CLUSTER_ENDPOINTS.read().clone()
}

pub async fn bootstrap(up: &Upstream, tenant_priority_shares: u32) -> Result<(), ServerError> {
    bootstrap_with(up, tenant_priority_shares, admission_webhook()).await
}

/// [`bootstrap`] of a cluster where paddock's admission webhook is (`true`) or is not
/// installed: the webhook is installed on the default cluster only (a registered cluster's
/// apiserver would call it with a client certificate of another CA), so a registered cluster
/// keeps the guard policies that stand in for it (the services guard).
pub async fn bootstrap_with(
    up: &Upstream,
    tenant_priority_shares: u32,
    webhook_here: bool,
) -> Result<(), ServerError> {
    if webhook_here {
        let name = services_guard_name();
        let base = "/apis/admissionregistration.k8s.io/v1";
        upjson::delete(
            up,
            &format!("{base}/validatingadmissionpolicybindings/{name}"),
        )
        .await?;
        upjson::delete(up, &format!("{base}/validatingadmissionpolicies/{name}")).await?;
    }
    for o in bootstrap_objects(tenant_priority_shares, webhook_here) {
        upjson::apply(up, &o.path(), &o.object).await?;
    }
    Ok(())
}

/// One object the bootstrap puts in place and the leader keeps there (`kept.rs`).
#[derive(Debug, Clone)]
pub struct KeptObject {
    /// Its collection, cluster-wide.
    pub collection: &'static str,
    pub name: String,
    /// As applied: with [`KEPT_LABEL`].
    pub object: Value,
}

impl KeptObject {
    fn new(collection: &'static str, name: &str, mut object: Value) -> KeptObject {
        object["metadata"]["labels"][KEPT_LABEL.0] = json!(KEPT_LABEL.1);
        KeptObject {
            collection,
            name: name.to_string(),
            object,
        }
    }

    pub fn path(&self) -> String {
        format!("{}/{}", self.collection, self.name)
    }
}

const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const ROLE_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const POLICY_BINDINGS: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// What every tenant shares upstream, as data: the tenants' APF priority level and FlowSchema
/// (unless `tenant_priority_shares` is 0), the cluster-scope role and binding, the admission
/// guard's policies and bindings (the services guard only where the webhook is not), and the
/// templates' lock guard.
pub fn bootstrap_objects(tenant_priority_shares: u32, webhook_here: bool) -> Vec<KeptObject> {
    let mut out = Vec::new();
    if tenant_priority_shares > 0 {
        out.push(KeptObject::new(
            LEVELS,
            TENANT_PRIORITY_LEVEL,
            tenant_priority_level(tenant_priority_shares),
        ));
        out.push(KeptObject::new(
            SCHEMAS,
            TENANT_PRIORITY_LEVEL,
            tenant_flow_schema(),
        ));
    }
    out.push(KeptObject::new(
        ROLES,
        CLUSTER_SCOPE_ROLE,
        cluster_scope_role(),
    ));
    out.push(KeptObject::new(
        ROLE_BINDINGS,
        CLUSTER_SCOPE_ROLE,
        cluster_scope_binding(),
    ));
    // The templates' lock guard is declared beside the templates (core `templates/guard.rs`),
    // which build on the provisioning data: composed here so neither module imports the other.
    let relay = webhook_here.then(webhook_relay_url).flatten();
    let guards = guard_policies(webhook_here, relay.as_deref())
        .into_iter()
        .chain(paddock_core::templates::templates_guards());
    for (name, policy) in guards {
        out.push(KeptObject::new(POLICIES, &name, policy));
        out.push(KeptObject::new(
            POLICY_BINDINGS,
            &name,
            guard_binding(&name),
        ));
    }
    out
}

/// Refuses an id whose prefix is already used upstream by something that is not this
/// tenant's (a reserved id), and the ids reserved by paddock itself. Reads `index` once it
/// has listed, else lists every namespace.
pub async fn check_prefix_unused(
    up: &Upstream,
    index: &NamespaceIndex,
    t: &TenantId,
) -> Result<(), ServerError> {
    if RESERVED_TENANT_IDS.contains(&t.as_str()) {
        return Err(ServerError::BadRequest(format!(
            "tenant id {t} is reserved by paddock"
        )));
    }
    let taken = match index.prefix_taken(t) {
        Some(taken) => taken,
        None => prefix_taken(t, &upjson::list(up, "/api/v1/namespaces").await?),
    };
    match taken {
        Some(name) => Err(ServerError::Conflict(format!(
            "tenant id {t} is reserved: namespace {name} already exists upstream and does not belong to it"
        ))),
        None => Ok(()),
    }
}

/// [`ensure_namespace_binding`] with the namespace's mirror RoleBindings brought in step by
/// `mirrors` (the resync passes what it has already read instead of reading it again).
pub async fn set_up_namespace(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
    mirrors: impl std::future::Future<Output = Result<(), ServerError>>,
) -> Result<(), ServerError> {
    // Keep the level the tenant chose (its lock and the guard decided it may); a namespace
    // without one gets the platform's level.
    let current = upjson::call(
        up,
        http::Method::GET,
        &format!("/api/v1/namespaces/{upstream_ns}"),
        None,
        None,
    )
    .await?;
    let level = match current.body["metadata"]["labels"][PSA_ENFORCE_LABEL].as_str() {
        Some(l) if keeps_namespace_level(Some(l)) => l.to_string(),
        _ => POD_SECURITY_LEVEL.to_string(),
    };
    upjson::apply(
        up,
        &format!("/api/v1/namespaces/{upstream_ns}"),
        &json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": upstream_ns, "labels": {TENANT_LABEL: t.as_str(), PSA_ENFORCE_LABEL: level,
                                                              "pod-security.kubernetes.io/enforce-version": "latest"}}}),
    )
    .await?;
    // The namespace (with its locked labels) first; then its contents, side by side (each
    // is an upstream round trip; tenant creation does this for four namespaces at once):
    // the admins' binding, the mirrors, and the namespace templates (the isolation
    // NetworkPolicy and the quota are the built-in `paddock-default` template).
    let rb_path = format!(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{upstream_ns}/rolebindings/{NAMESPACE_ADMIN_BINDING}"
    );
    let rb = namespace_admin_binding(t, upstream_ns);
    let asked = if current.status.is_success() {
        current.body
    } else {
        json!({"metadata": {}})
    };
    futures_util::future::try_join3(
        upjson::apply(up, &rb_path, &rb),
        crate::templates::stamp_at_setup(up, t, upstream_ns, &asked),
        mirrors,
    )
    .await?;
    Ok(())
}

/// A tenant's namespace body on its way up (create or update), for a tenant at pod-security
/// level `level`: an enforce label the tenant may not carry (weaker than its level, unknown, or
/// none) is set to the level it gets unasked (`PodSecurityLevel::stamped`: baseline at least),
/// in JSON and protobuf bodies; a permitted one is kept. The admission guard refuses anything
/// else, so a body paddock could not rewrite is refused rather than let through.
pub fn lock_namespace_labels(
    body: Vec<u8>,
    content_type: &str,
    level: PodSecurityLevel,
) -> Result<Vec<u8>, ServerError> {
    let stamped = level.stamped().as_str();
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        // Typed clients (kubectl create namespace, client-go, the e2e framework) send protobuf:
        // hold the label there too rather than have the guard refuse the namespace.
        let current = paddock_core::wire::pb_label::protobuf_label(&body, PSA_ENFORCE_LABEL)?;
        if current.as_deref().is_some_and(|l| level.permits(l)) {
            return Ok(body);
        }
        return Ok(paddock_core::wire::pb_label::set_protobuf_label(
            &body,
            PSA_ENFORCE_LABEL,
            stamped,
        )?);
    }
    if !content_type.starts_with("application/json") {
        return Ok(body);
    }
    let mut v: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("namespace body: {e}")))?;
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Ok(body);
    };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if labels.is_null() {
        *labels = json!({});
    }
    if let Some(l) = labels.as_object_mut() {
        let keep = l
            .get(PSA_ENFORCE_LABEL)
            .and_then(Value::as_str)
            .is_some_and(|v| level.permits(v));
        if !keep {
            l.insert(PSA_ENFORCE_LABEL.into(), Value::String(stamped.into()));
        }
        l.insert(
            format!("{PSA_ENFORCE_LABEL}-version"),
            Value::String("latest".into()),
        );
    }
    serde_json::to_vec(&v).map_err(|e| ServerError::Internal(e.to_string()))
}

/// The tenant's copies of the built-in ClusterRoles (`cluster-admin`, `admin`, `edit`, `view`,
/// the discovery roles; paddock_core::provision::builtin_roles), from the platform's current roles.
pub async fn ensure_builtin_roles(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    use paddock_core::provision::builtin_roles::{BUILTIN_CLUSTER_ROLES, tenant_copy};
    let base = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    futures_util::future::try_join_all(BUILTIN_CLUSTER_ROLES.iter().map(|name| async move {
        let platform =
            upjson::call(up, http::Method::GET, &format!("{base}/{name}"), None, None).await?;
        // A cluster without one of them (an apiserver with other bootstrap roles) has nothing
        // to copy.
        let Some(copy) = platform
            .status
            .is_success()
            .then(|| tenant_copy(t, &platform.body, MANAGED_FOR_LABEL))
            .flatten()
        else {
            return Ok(());
        };
        let path = format!("{base}/{}", t.upstream_name(name));
        upjson::apply(up, &path, &copy).await
    }))
    .await?;
    Ok(())
}

/// Deletes everything the tenant owns upstream, reporting progress. Idempotent; returns when
/// nothing is left (or after `timeout`). `manages_apf` (tenant_priority_shares > 0): the
/// tenant has a FlowSchema of its own to delete; without it paddock's credential need not hold
/// any right on APF objects (rights.rs).
pub async fn delete_tenant_objects(
    up: &Upstream,
    t: &TenantId,
    manages_apf: bool,
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
        for kind in owned_cluster_kinds() {
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
        // After the admission kinds: a tenant's policy or webhook could refuse the deletion
        // of its namespaces.
        for ns in &namespaces {
            upjson::delete(up, &format!("/api/v1/namespaces/{ns}")).await?;
        }
        // paddock's own per-tenant cluster objects: exact names, and the managed-for label.
        let own = [
            legacy_tenant_scope_binding_name(t),
            tenant_cluster_role_name(t),
            paddock_core::catalog::platform_grant::grant_role_name(t),
        ];
        for kind in ["clusterrolebindings", "clusterroles"] {
            let path = format!("/apis/rbac.authorization.k8s.io/v1/{kind}");
            for obj in upjson::list(up, &format!("{path}?{managed}")).await? {
                if let Some(name) = obj["metadata"]["name"].as_str()
                    && own.iter().any(|o| o == name)
                {
                    upjson::delete(up, &format!("{path}/{name}")).await?;
                }
            }
        }
        if manages_apf {
            upjson::delete(
                up,
                &format!(
                    "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{}",
                    tenant_flow_schema_name(t)
                ),
            )
            .await?;
        }
        if remaining == 0 {
            progress("all upstream objects removed".into());
            return Ok(());
        }
        progress(format!(
            "waiting for {} namespace(s) and cluster-scoped objects to go",
            remaining
        ));
        if tokio::time::Instant::now() > deadline {
            return Err(ServerError::Unavailable(format!(
                "tenant {t}: {remaining} upstream object(s) still terminating after {}s; retry the delete",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The enforce label `lock_namespace_labels` sends for a namespace asking for `asked`.
    fn locked(asked: Option<&str>, level: PodSecurityLevel) -> String {
        let mut ns =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme01-x"}});
        if let Some(a) = asked {
            ns["metadata"]["labels"] = json!({PSA_ENFORCE_LABEL: a});
        }
        let body = serde_json::to_vec(&ns).unwrap();
        let out = lock_namespace_labels(body, "application/json", level).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["metadata"]["labels"][format!("{PSA_ENFORCE_LABEL}-version")],
            "latest"
        );
        v["metadata"]["labels"][PSA_ENFORCE_LABEL]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn the_lock_follows_the_tenant_level() {
        use PodSecurityLevel::*;
        for (asked, level, sent) in [
            (Some("privileged"), Baseline, "baseline"),
            (Some("privileged"), Privileged, "privileged"),
            (Some("baseline"), Privileged, "baseline"),
            (Some("restricted"), Baseline, "restricted"),
            (Some("baseline"), Restricted, "restricted"),
            (Some("nonsense"), Privileged, "baseline"),
            (None, Privileged, "baseline"),
            (None, Restricted, "restricted"),
        ] {
            assert_eq!(locked(asked, level), sent, "{asked:?} at {level:?}");
        }
    }

    #[test]
    fn the_reconciler_keeps_every_known_level_only() {
        for l in ["privileged", "baseline", "restricted"] {
            assert!(keeps_namespace_level(Some(l)), "{l}");
        }
        for l in [None, Some(""), Some("Privileged"), Some("none")] {
            assert!(!keeps_namespace_level(l), "{l:?}");
        }
    }
}
