//! `kubectl --as` inside the tenant (paddock_core::identity::impersonate maps and validates; this module
//! asks the tenant's RBAC whether the caller may).
//!
//! The caller needs `impersonate` on each identity, as in a cluster. Tenant admins hold it (they
//! are cluster-admin of the tenant's cluster); anyone else through the tenant's own RBAC: a
//! ClusterRoleBinding for `users`/`groups` (answered for the caller's shadow identity, which
//! that binding names upstream), a RoleBinding or ClusterRoleBinding in the service account's
//! namespace for `serviceaccounts` (answered for the real identity there).

use paddock_core::TenantId;
use paddock_core::identity::impersonate::{ImpersonateRight, rights_needed};
use serde_json::json;

use crate::state::AppState;
use paddock_core::identity::As;
use paddock_upstream::error::ServerError;

/// The identity the request acts as: the impersonated one when the request asks for one and
/// the caller may, else the caller's own. A refusal is a 403 naming the missing right.
pub async fn acting_identity(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    headers: &http::HeaderMap,
) -> Result<Option<(String, Vec<String>)>, ServerError> {
    let pairs: Vec<(String, String)> = headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("impersonate-"))
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    if pairs.is_empty() {
        return Ok(None);
    }
    let Some(req) = paddock_core::identity::impersonate::requested(t, &pairs)? else {
        return Ok(None);
    };
    let admin = groups
        .iter()
        .any(|g| g == paddock_core::provision::TENANT_ADMIN_GROUP);
    for right in rights_needed(&req) {
        if !admin && !holds(state, t, user, groups, &right).await? {
            return Err(ServerError::Forbidden(right.refusal(user)));
        }
    }
    Ok(Some((req.user, req.groups)))
}

async fn holds(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    right: &ImpersonateRight,
) -> Result<bool, ServerError> {
    let (who, ra) = match &right.namespace {
        Some(ns) => (
            As::Real,
            json!({"namespace": t.upstream_name(ns), "verb": "impersonate", "group": "",
                   "resource": right.resource, "name": right.name}),
        ),
        None => (
            As::Shadow,
            json!({"verb": "impersonate", "group": "", "resource": right.resource, "name": right.name}),
        ),
    };
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": ra}});
    let answer = crate::proxy::reviews::ask_as(state, t, user, groups, who, &review).await?;
    Ok(answer.is_some_and(|a| a["status"]["allowed"].as_bool() == Some(true)))
}
