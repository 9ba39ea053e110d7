//! Cluster-wide semantics inside a tenant without cluster-wide grants upstream.
//!
//! - **Two identities per tenant caller.** The *real* identity (`paddock:<tid>:<user>`, groups
//!   `paddock:<tid>:<g>`, `paddock:tenant:<tid>`, `system:authenticated`) is used for every
//!   namespaced request; it holds rights only through RoleBindings inside the tenant's
//!   namespaces. The *cluster shadow* identity (`paddock:cluster:<tid>:<real identity>`) is
//!   asserted by paddock only on requests for cluster-scoped objects, whose names paddock
//!   prefixes and whose lists it label-filters; no credential of anyone else can carry it. The
//!   admission guard applies to both (both carry `paddock:tenant:<tid>`).
//! - **Tenant ClusterRoleBindings are inert upstream.** Their subjects are stored in the shadow
//!   form (paddock-core maps them), so they grant nothing to any real identity. Their namespaced
//!   meaning is produced here: one mirror RoleBinding per tenant ClusterRoleBinding in every
//!   namespace of the tenant, kept in step when either side changes and on a periodic resync.
//! - **Tenant custom resources.** A per-tenant ClusterRole grants the admins' shadow group the
//!   tenant's own CRD groups (cluster-scoped custom resources); namespaced ones are covered by the
//!   admins' RoleBinding in each namespace.

use std::collections::{BTreeMap, BTreeSet};

use paddock_core::identity::{cluster_shadow, cluster_unshadow, tenant_group};
use paddock_core::{Impersonation, Plan, Scope, TENANT_LABEL, TenantId};
use serde_json::{Value, json};

use crate::error::ServerError;
use crate::provision::{
    CLUSTER_SCOPE_GROUP, MANAGED_FOR_LABEL, shadow_admin_group, tenant_cluster_role_name,
    upstream_admin_group,
};
use crate::upjson;
use crate::upstream::Upstream;

/// Name prefix of the mirror RoleBindings: `paddock:crb:<upstream ClusterRoleBinding name>`.
pub const MIRROR_PREFIX: &str = "paddock:crb:";
/// Label marking mirror RoleBindings (with `paddock.io/managed-for`).
pub const MIRROR_LABEL: &str = "paddock.io/mirror";

const SA_USER: &str = "system:serviceaccount:";

/// Which upstream identity a request is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    /// The real identity (namespaced requests, discovery, reviews).
    Real,
    /// The cluster shadow identity (cluster-scoped objects).
    Shadow,
}

/// The upstream identity of a tenant caller. `user` is a certificate CN (never contains ':')
/// or, for a tenant pod, `system:serviceaccount:<ns>:<sa>` in the tenant's view.
pub fn impersonation(t: &TenantId, user: &str, groups: &[String], who: As) -> Impersonation {
    let real = if let Some((ns, sa)) = user.strip_prefix(SA_USER).and_then(|r| r.split_once(':')) {
        let up_ns = t.upstream_name(ns);
        Impersonation {
            user: format!("{SA_USER}{up_ns}:{sa}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{up_ns}"),
                tenant_group(t),
                paddock_core::identity::ALL_TENANTS_GROUP.to_owned(),
                "system:authenticated".to_owned(),
            ],
            extra: vec![(TENANT_LABEL.to_owned(), t.as_str().to_owned())],
        }
    } else {
        paddock_core::impersonation_for(t, user, groups)
    };
    match who {
        As::Real => real,
        As::Shadow => {
            let keep = [
                tenant_group(t),
                paddock_core::identity::ALL_TENANTS_GROUP.to_owned(),
                "system:authenticated".to_owned(),
            ];
            let mut groups: Vec<String> = real
                .groups
                .iter()
                .map(|g| {
                    if keep.contains(g) {
                        g.clone()
                    } else {
                        cluster_shadow(t, g)
                    }
                })
                .collect();
            if real.groups.contains(&upstream_admin_group(t)) {
                groups.push(CLUSTER_SCOPE_GROUP.to_owned());
            }
            Impersonation {
                user: cluster_shadow(t, &real.user),
                groups,
                extra: real.extra,
            }
        }
    }
}

/// Does this request go upstream as the shadow identity? Cluster-scoped objects (not the
/// review kinds) and self access reviews of cluster-wide attributes do; a path that addresses
/// anything inside a namespace never does (defence in depth against a planning bug).
pub fn identity_for(plan: &Plan, translated_body: Option<&[u8]>) -> As {
    let Some(info) = &plan.resource else {
        return As::Real;
    };
    let path = plan.upstream_path_and_query.split('?').next().unwrap_or("");
    let in_namespace = match path.strip_prefix("/api/v1/namespaces/") {
        // `/api/v1/namespaces/<ns>[/status|/finalize]` is the namespace object itself.
        Some(rest) => {
            !(info.group.is_empty()
                && info.resource == "namespaces"
                && rest.split('/').count() <= 2)
        }
        None => path.contains("/namespaces/"),
    };
    if in_namespace {
        return As::Real;
    }
    if info.is_review() {
        if info.upstream_group == "authorization.k8s.io"
            && info.resource == "selfsubjectaccessreviews"
        {
            let body: Value = translated_body
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null);
            let spec = &body["spec"];
            let cluster_wide = spec
                .get("nonResourceAttributes")
                .is_some_and(|v| !v.is_null())
                || spec["resourceAttributes"].is_object()
                    && spec["resourceAttributes"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .is_empty();
            if cluster_wide {
                return As::Shadow;
            }
        }
        return As::Real;
    }
    if info.scope == Scope::Cluster {
        As::Shadow
    } else {
        As::Real
    }
}

/// A translated `SelfSubjectAccessReview` about a cluster-scoped kind (`kubectl auth can-i
/// delete nodes` sends the current namespace along): the namespace is dropped, so that the
/// answer is the one for the cluster-scoped object (asked as the shadow identity), not the
/// meaningless one for "nodes in a namespace" that a namespace admin would get.
pub fn normalize_self_review(
    ctx: &paddock_core::TenantContext,
    plan: &Plan,
    body: Vec<u8>,
) -> Vec<u8> {
    let Some(info) = &plan.resource else {
        return body;
    };
    if !(info.upstream_group == "authorization.k8s.io"
        && info.resource == "selfsubjectaccessreviews")
    {
        return body;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let ra = &mut v["spec"]["resourceAttributes"];
    if !ra.is_object() || ra["namespace"].as_str().unwrap_or("").is_empty() {
        return body;
    }
    let group = ra["group"].as_str().unwrap_or("").to_owned();
    let resource = ra["resource"].as_str().unwrap_or("").to_owned();
    let cluster = ctx
        .catalog
        .resolve_upstream_any_version(&ctx.tenant, &group, &resource)
        .is_some_and(|i| i.scope == Scope::Cluster);
    if !cluster {
        return body;
    }
    if let Some(m) = ra.as_object_mut() {
        m.remove("namespace");
    }
    serde_json::to_vec(&v).unwrap_or(body)
}

/// Is this a `SelfSubjectAccessReview`?
pub fn is_self_access_review(plan: &Plan) -> bool {
    plan.resource.as_ref().is_some_and(|i| {
        i.upstream_group == "authorization.k8s.io" && i.resource == "selfsubjectaccessreviews"
    })
}

/// Upstream's answer to a `SelfSubjectAccessReview` (JSON): when it was about a cluster-scoped
/// kind but carried a namespace, the review is asked again without it, as the shadow identity,
/// and that answer is returned; otherwise the answer as it is.
pub async fn recheck_self_review(
    state: &crate::state::AppState,
    ctx: &paddock_core::TenantContext,
    t: &TenantId,
    user: &str,
    groups: &[String],
    raw: bytes::Bytes,
) -> Result<bytes::Bytes, ServerError> {
    let Ok(v) = serde_json::from_slice::<Value>(&raw) else {
        return Ok(raw);
    };
    let req = normalize_self_review_value(ctx, v);
    let Some(req) = req else { return Ok(raw) };
    let body = serde_json::to_vec(&req).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = http::Request::builder()
        .method(http::Method::POST)
        .uri(
            state
                .upstream
                .uri("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")?,
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(crate::body::full_up(bytes::Bytes::from(body)))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    crate::proxy::add_impersonation_as(r.headers_mut(), t, user, groups, As::Shadow)?;
    let resp = state
        .upstream
        .send(r, crate::upstream::Route::Short)
        .await?;
    if !resp.status().is_success() {
        return Ok(raw);
    }
    crate::body::collect_limited(resp.into_body(), 1 << 20).await
}

fn normalize_self_review_value(ctx: &paddock_core::TenantContext, v: Value) -> Option<Value> {
    let ra = v["spec"]["resourceAttributes"].as_object()?;
    if ra
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return None;
    }
    let group = ra.get("group").and_then(Value::as_str).unwrap_or("");
    let resource = ra.get("resource").and_then(Value::as_str).unwrap_or("");
    let info = ctx
        .catalog
        .resolve_upstream_any_version(&ctx.tenant, group, resource)?;
    if info.scope != Scope::Cluster {
        return None;
    }
    let mut ra = ra.clone();
    ra.remove("namespace");
    Some(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": ra}}),
    )
}

/// A tenant's ClusterRoleBinding (upstream form) -> the subjects of its mirrors (real
/// identities of the tenant); subjects that are not the tenant's shadows are left out.
pub fn mirror_subjects(t: &TenantId, crb: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for s in crb["subjects"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let kind = s["kind"].as_str().unwrap_or("");
        let Some(real) = s["name"].as_str().and_then(|n| cluster_unshadow(t, n)) else {
            continue;
        };
        let own = format!("paddock:{}:", t.as_str());
        match kind {
            "User" => {
                if let Some((ns, sa)) = real.strip_prefix(SA_USER).and_then(|r| r.split_once(':')) {
                    if t.strip(ns).is_some() && !sa.is_empty() && !sa.contains(':') {
                        out.push(json!({"kind": "ServiceAccount", "name": sa, "namespace": ns}));
                    }
                } else if real.starts_with(&own) {
                    out.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": real}));
                }
            }
            "Group" => {
                let sa_group = real
                    .strip_prefix("system:serviceaccounts:")
                    .is_some_and(|ns| t.strip(ns).is_some());
                if real.starts_with(&own) || sa_group {
                    out.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": real}));
                }
            }
            _ => {}
        }
    }
    out
}

/// The mirror RoleBinding of `crb` in `upstream_ns`, or None when the binding is not a
/// well-formed tenant ClusterRoleBinding.
pub fn mirror_binding(t: &TenantId, crb: &Value, upstream_ns: &str) -> Option<(String, Value)> {
    let name = crb["metadata"]["name"].as_str()?;
    t.strip(name)?;
    if crb["metadata"]["labels"][TENANT_LABEL].as_str() != Some(t.as_str()) {
        return None;
    }
    let role = crb["roleRef"]["name"].as_str()?;
    if crb["roleRef"]["kind"].as_str() != Some("ClusterRole") || t.strip(role).is_none() {
        return None;
    }
    let subjects = mirror_subjects(t, crb);
    let rb_name = format!("{MIRROR_PREFIX}{name}");
    Some((
        rb_name.clone(),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": rb_name, "namespace": upstream_ns,
                         "labels": {MANAGED_FOR_LABEL: t.as_str(), MIRROR_LABEL: "cluster-role-binding",
                                    "app.kubernetes.io/managed-by": "paddock"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects
        }),
    ))
}

async fn tenant_crbs(up: &Upstream, t: &TenantId) -> Result<Vec<Value>, ServerError> {
    let items = upjson::list(
        up,
        &format!(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?labelSelector={}",
            crate::upjson::query_escape(&t.tenant_label_selector())
        ),
    )
    .await?;
    Ok(items
        .into_iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| t.strip(n).is_some())
        })
        .collect())
}

async fn sync_namespace_with(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
    crbs: &[Value],
) -> Result<(), ServerError> {
    let desired: BTreeMap<String, Value> = crbs
        .iter()
        .filter_map(|c| mirror_binding(t, c, upstream_ns))
        .collect();
    let base = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{upstream_ns}/rolebindings");
    let existing = upjson::list(
        up,
        &format!(
            "{base}?labelSelector={}",
            crate::upjson::query_escape(&format!(
                "{MANAGED_FOR_LABEL}={},{MIRROR_LABEL}",
                t.as_str()
            ))
        ),
    )
    .await?;
    for (name, rb) in &desired {
        let same = existing.iter().any(|e| {
            e["metadata"]["name"].as_str() == Some(name)
                && e["roleRef"] == rb["roleRef"]
                && e["subjects"] == rb["subjects"]
        });
        if same {
            continue;
        }
        // roleRef is immutable: a changed one needs a new object.
        if existing
            .iter()
            .any(|e| e["metadata"]["name"].as_str() == Some(name) && e["roleRef"] != rb["roleRef"])
        {
            upjson::delete(up, &format!("{base}/{}", pct(name))).await?;
        }
        upjson::apply(up, &format!("{base}/{}", pct(name)), rb).await?;
    }
    for e in &existing {
        if let Some(name) = e["metadata"]["name"].as_str()
            && name.starts_with(MIRROR_PREFIX)
            && !desired.contains_key(name)
        {
            upjson::delete(up, &format!("{base}/{}", pct(name))).await?;
        }
    }
    Ok(())
}

fn pct(s: &str) -> String {
    s.replace('%', "%25").replace(':', "%3A")
}

/// Brings the mirrors in one (new) namespace of the tenant in step.
pub async fn sync_namespace(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
) -> Result<(), ServerError> {
    let crbs = tenant_crbs(up, t).await?;
    sync_namespace_with(up, t, upstream_ns, &crbs).await
}

/// Brings everything derived from the tenant's RBAC and CRDs in step: the mirrors in every
/// namespace, and the tenant's custom-resources role.
pub async fn sync_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    let crbs = tenant_crbs(up, t).await?;
    let items = upjson::list(
        up,
        &format!(
            "/api/v1/namespaces?labelSelector={}",
            crate::upjson::query_escape(&t.tenant_label_selector())
        ),
    )
    .await?;
    for n in items
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
    {
        let Some(ns) = n["metadata"]["name"]
            .as_str()
            .filter(|x| t.strip(x).is_some())
        else {
            continue;
        };
        // A namespace that missed its setup (created while paddock was down, or by a request
        // paddock did not recognise): the whole setup, mirrors included.
        if n["metadata"]["labels"][crate::provision::PSA_ENFORCE_LABEL].as_str()
            != Some(crate::provision::POD_SECURITY_LEVEL)
        {
            crate::provision::ensure_namespace_binding(up, t, ns).await?;
            continue;
        }
        sync_namespace_with(up, t, ns, &crbs).await?;
    }
    sync_custom_resource_role(up, t).await
}

/// The per-tenant ClusterRole over the tenant's own CRD groups, bound to its admins' shadow.
pub async fn sync_custom_resource_role(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    let crds = upjson::list(
        up,
        &format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector={}",
            crate::upjson::query_escape(&t.tenant_label_selector())
        ),
    )
    .await?;
    let groups: BTreeSet<String> = crds
        .iter()
        .filter_map(|c| c["spec"]["group"].as_str())
        .filter(|g| t.strip(g).is_some())
        .map(str::to_owned)
        .collect();
    let name = tenant_cluster_role_name(t);
    let binding_path = format!(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
        pct(&name)
    );
    let role_path = format!(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/{}",
        pct(&name)
    );
    if groups.is_empty() {
        // No binding at all rather than a binding to an empty role: every ClusterRoleBinding
        // costs every non-admin request in the cluster a match (CLUSTER_SCOPE_GROUP's note).
        // One GET on the usual path (the 30 s resync comes here for every tenant); the role
        // goes first, so that a binding left by an interrupted removal is found next time.
        let present = upjson::call(up, http::Method::GET, &binding_path, None, None).await?;
        if present.status != http::StatusCode::NOT_FOUND {
            upjson::delete(up, &role_path).await?;
            upjson::delete(up, &binding_path).await?;
        }
        return Ok(());
    }
    let rules = json!([{"apiGroups": groups, "resources": ["*"], "verbs": ["*"]}]);
    let labels = json!({MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"});
    upjson::apply(
        up,
        &role_path,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels}, "rules": rules}),
    )
    .await?;
    upjson::apply(
        up,
        &binding_path,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": shadow_admin_group(t)}]}),
    )
    .await
}

/// Repairs every active tenant's upstream grants at start (so an upgrade moves old grants to
/// the current model), then resyncs the mirrors every 30 s (changes paddock did not see: a
/// ClusterRoleBinding removed by garbage collection, another replica's writes, drift).
pub async fn resync_loop(state: std::sync::Arc<crate::state::AppState>) {
    let mut first = true;
    loop {
        for rec in state.cache.tenants() {
            if rec.phase != paddock_store::TenantPhase::Active {
                continue;
            }
            let r = if first {
                crate::provision::provision_tenant(&state.upstream, &rec.id).await
            } else {
                sync_tenant(&state.upstream, &rec.id).await
            };
            if let Err(e) = r {
                tracing::warn!(tenant = %rec.id, error = %e, "tenant RBAC resync failed");
            }
        }
        first = false;
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(30)) => {}
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// Does a successful request change what [`sync_tenant`] derives (a ClusterRoleBinding or a
/// CRD written)?
pub fn needs_sync(plan: &Plan) -> bool {
    use paddock_core::Verb;
    let Some(info) = &plan.resource else {
        return false;
    };
    let write = !matches!(
        plan.request.verb,
        Verb::Get | Verb::List | Verb::Watch | Verb::Connect
    );
    write
        && ((info.upstream_group == "rbac.authorization.k8s.io"
            && info.resource == "clusterrolebindings")
            || info.is_crd())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn shadow_identity_is_never_a_real_one() {
        let real = impersonation(&t(), "alice", &["dev".into()], As::Real);
        let sh = impersonation(&t(), "alice", &["dev".into()], As::Shadow);
        assert_eq!(real.user, "paddock:foofoo:alice");
        assert_eq!(sh.user, "paddock:cluster:foofoo:paddock:foofoo:alice");
        assert!(
            sh.groups
                .contains(&"paddock:cluster:foofoo:paddock:foofoo:dev".to_owned())
        );
        assert!(sh.groups.contains(&"paddock:tenant:foofoo".to_owned()));
        assert!(!sh.groups.contains(&"paddock:foofoo:dev".to_owned()));
        // Only an admin's shadow carries the shared cluster-scope group; never a real identity.
        assert!(!sh.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        let admin = impersonation(&t(), "root", &["tenant-admins".into()], As::Shadow);
        assert!(admin.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        assert!(
            admin
                .groups
                .contains(&"paddock:cluster:foofoo:paddock:foofoo:tenant-admins".to_owned())
        );
        let admin_real = impersonation(&t(), "root", &["tenant-admins".into()], As::Real);
        assert!(!admin_real.groups.contains(&CLUSTER_SCOPE_GROUP.to_owned()));
        let sa = impersonation(&t(), "system:serviceaccount:ci:builder", &[], As::Real);
        assert_eq!(sa.user, "system:serviceaccount:foofoo-ci:builder");
        assert!(
            sa.groups
                .contains(&"system:serviceaccounts:foofoo-ci".to_owned())
        );
        assert!(sa.groups.contains(&"paddock:tenant:foofoo".to_owned()));
    }

    #[test]
    fn mirrors_only_name_the_tenant() {
        let crb = json!({"metadata": {"name": "foofoo-b", "labels": {TENANT_LABEL: "foofoo"}},
        "roleRef": {"kind": "ClusterRole", "name": "foofoo-reader"},
        "subjects": [
            {"kind": "User", "name": "paddock:cluster:foofoo:paddock:foofoo:alice"},
            {"kind": "User", "name": "paddock:cluster:foofoo:system:serviceaccount:foofoo-ci:b"},
            {"kind": "Group", "name": "paddock:cluster:foofoo:system:serviceaccounts:foofoo-ci"},
            {"kind": "User", "name": "paddock:cluster:foofoo:paddock:barbar:bob"},
            {"kind": "User", "name": "paddock:cluster:foofoo:system:serviceaccount:kube-system:x"},
            {"kind": "Group", "name": "system:masters"},
            {"kind": "User", "name": "paddock:foofoo:alice"}
        ]});
        let (name, rb) = mirror_binding(&t(), &crb, "foofoo-web").unwrap();
        assert_eq!(name, "paddock:crb:foofoo-b");
        assert_eq!(
            rb["subjects"],
            json!([
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "paddock:foofoo:alice"},
                {"kind": "ServiceAccount", "name": "b", "namespace": "foofoo-ci"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts:foofoo-ci"}
            ])
        );
        // Bindings to roles that are not the tenant's are never mirrored.
        let mut bad = crb.clone();
        bad["roleRef"]["name"] = json!("cluster-admin");
        assert!(mirror_binding(&t(), &bad, "foofoo-web").is_none());
        let mut other = crb;
        other["metadata"]["name"] = json!("barbar-b");
        assert!(mirror_binding(&t(), &other, "foofoo-web").is_none());
    }
}
