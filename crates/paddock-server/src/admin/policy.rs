//! The admin API of tenant policies: `GET`, `PATCH` (JSON merge patch over the policy in
//! force) and `DELETE` (back to the configured default) of `/apis/paddock.io/v1alpha1/
//! tenants/<id>/policy`. The policy is enforced by the admission webhook (`admission`).

use std::sync::Arc;

use crate::body::ReqBody;
use http::{Method, Response, StatusCode};
use paddock_api::policy::{self as api, PolicySource};
use paddock_core::admission::TenantPolicy;
use paddock_store::TenantRecord;
use serde_json::{Value, json};

use crate::admin::answer::json_response;
use crate::state::AppState;
use paddock_core::identity::Caller;
use paddock_core::provision::PSA_ENFORCE_LABEL;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upjson;

/// `spec.policy` of a request: absent or null means none of its own.
pub fn parse_policy(v: &Value) -> Result<Option<TenantPolicy>, ServerError> {
    if v.is_null() {
        return Ok(None);
    }
    TenantPolicy::from_json(v)
        .map(Some)
        .map_err(|e| ServerError::BadRequest(e.to_string()))
}

/// The policy object shown by the admin API.
fn policy_object(
    rec: &TenantRecord,
    default: &TenantPolicy,
) -> Result<api::TenantPolicy, ServerError> {
    let (policy, source) = match &rec.policy {
        Some(p) => (p, PolicySource::Tenant),
        None => (default, PolicySource::Default),
    };
    let spec = serde_json::to_value(policy).map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(api::TenantPolicy::new(rec.id.as_str(), spec, source))
}

/// Serves `/tenants/<id>/policy`.
pub async fn serve_policy(
    state: &Arc<AppState>,
    caller: &Caller,
    method: Method,
    id: &str,
    body: ReqBody,
) -> Result<Response<ResBody>, ServerError> {
    let rec = match method {
        Method::GET => get(state, id).await?,
        Method::PATCH => {
            let raw = collect_limited(body, 1 << 20).await?;
            let patch: Value = serde_json::from_slice(&raw).map_err(|e| {
                ServerError::BadRequest(format!("the request body is not valid JSON: {e}"))
            })?;
            if !patch.is_object() {
                return Err(ServerError::BadRequest(
                    "the body must be a JSON merge patch of the policy, e.g. {\"services\": {\"allowNodePort\": true}}".into(),
                ));
            }
            let current = get(state, id).await?;
            let mut doc = serde_json::to_value(
                current
                    .policy
                    .clone()
                    .unwrap_or_else(|| state.config.default_policy.clone()),
            )
            .map_err(|e| ServerError::Internal(e.to_string()))?;
            merge_patch(&mut doc, &patch);
            let policy = parse_policy(&doc)?;
            let rec = set_policy(state, id, policy).await?;
            tracing::info!(admin = caller.user(), tenant = id, policy = %doc, "tenant policy changed");
            rec
        }
        Method::DELETE => {
            let rec = set_policy(state, id, None).await?;
            tracing::info!(
                admin = caller.user(),
                tenant = id,
                "tenant policy reset to the default"
            );
            rec
        }
        m => {
            return Err(ServerError::NotFound(format!(
                "{m} is not served on a tenant's policy (GET, PATCH, DELETE)"
            )));
        }
    };
    json_response(
        StatusCode::OK,
        &policy_object(&rec, &state.config.default_policy)?,
    )
}

async fn get(state: &Arc<AppState>, id: &str) -> Result<TenantRecord, ServerError> {
    state
        .store
        .get_tenant(id)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found")))
}

/// Stores a tenant's policy (None: the default) and raises its namespaces' pod-security label
/// to the new level (the webhook holds every later write to it).
pub async fn set_policy(
    state: &Arc<AppState>,
    id: &str,
    policy: Option<TenantPolicy>,
) -> Result<TenantRecord, ServerError> {
    let mut rec = get(state, id).await?;
    rec.policy = policy;
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    let level = rec
        .policy
        .as_ref()
        .unwrap_or(&state.config.default_policy)
        .pod_security;
    let selector = upjson::query_escape(&rec.id.tenant_label_selector());
    // The tenant's own cluster (docs/clusters.md).
    let home = crate::clusters::route(state, &rec.id)?;
    // Platform grants: the upstream rights first, then the catalog (the store's change
    // notification refreshes the other replicas' catalogs).
    let policy = rec.policy.as_ref().unwrap_or(&state.config.default_policy);
    crate::tasks::platform_grant::sync(&home.upstream, &rec.id, policy).await?;
    crate::tasks::platform_grant::refresh_catalog_with(state, &rec.id, policy);
    for ns in upjson::list(
        &home.upstream,
        &format!("/api/v1/namespaces?labelSelector={selector}"),
    )
    .await?
    {
        let name = ns["metadata"]["name"].as_str().unwrap_or_default();
        let current = ns["metadata"]["labels"][PSA_ENFORCE_LABEL]
            .as_str()
            .and_then(paddock_core::admission::policy::PodSecurityLevel::parse);
        if current.is_some_and(|c| c >= level) || name.is_empty() {
            continue;
        }
        // Raised to the level a namespace gets unasked: a `privileged` policy lowers nothing,
        // and a policy that no longer allows `privileged` raises such namespaces to baseline.
        let patch = json!({"metadata": {"labels": {PSA_ENFORCE_LABEL: level.stamped().as_str()}}});
        let a = upjson::call(
            &home.upstream,
            Method::PATCH,
            &format!("/api/v1/namespaces/{name}"),
            Some("application/merge-patch+json"),
            Some(&patch),
        )
        .await?;
        if !a.status.is_success() {
            return Err(ServerError::Upstream(format!(
                "raising the pod-security level of namespace {name}: {}",
                a.message()
            )));
        }
    }
    Ok(rec)
}

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Some(t) = target.as_object_mut() {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn merge_patch_sets_and_removes() {
        let mut doc = json!({"services": {"allowNodePort": false, "externalName": "Refused"}, "ingress": {"allowedDomains": ["a"]}});
        merge_patch(
            &mut doc,
            &json!({"services": {"allowNodePort": true}, "ingress": null}),
        );
        assert_eq!(
            doc,
            json!({"services": {"allowNodePort": true, "externalName": "Refused"}})
        );
        assert!(
            parse_policy(&doc)
                .unwrap()
                .unwrap()
                .services
                .allow_node_port
        );
        assert!(parse_policy(&json!({"bogus": 1})).is_err());
        assert_eq!(parse_policy(&Value::Null).unwrap(), None);
    }
}
