//! The quota's API surfaces: the admin's (`tenants/<id>/quota`: read with usage, change by
//! merge patch; `spec.quota.hard` at tenant creation) and the tenant's read-only
//! `tenantquotas.paddock.io` (cluster-scoped, one object, `kubectl get` and `describe`).

use std::collections::BTreeMap;

use paddock_core::TenantId;
use paddock_core::quota::QUOTA_NAME;
use serde_json::{Value, json};

use crate::state::AppState;
use crate::webhook::quota;
use paddock_api::List;
use paddock_api::quota::{self as api, QuotaPatch, TenantQuota};
use paddock_upstream::error::ServerError;

/// The resource a tenant sees in `paddock.io/v1alpha1` (legacy discovery form).
pub fn tenant_discovery_resource() -> Value {
    json!({"name": api::RESOURCE, "singularName": "tenantquota", "namespaced": false,
           "kind": api::KIND, "verbs": ["get", "list"], "shortNames": ["tquota"]})
}

/// The same, aggregated discovery form.
pub fn tenant_aggregated_resource() -> Value {
    json!({"resource": api::RESOURCE, "singularResource": "tenantquota", "scope": "Cluster",
           "shortNames": ["tquota"],
           "responseKind": {"group": paddock_api::GROUP, "version": paddock_api::VERSION, "kind": api::KIND},
           "verbs": ["get", "list"]})
}

/// `spec.quota.hard` of a tenant creation; without one, the configured default.
pub fn hard_at_creation(
    state: &AppState,
    spec_quota: &Value,
) -> Result<Option<BTreeMap<String, String>>, ServerError> {
    let hard: BTreeMap<String, String> = match &spec_quota["hard"] {
        Value::Null => state.config.quota.default_hard.clone(),
        v => serde_json::from_value(v.clone()).map_err(|e| {
            ServerError::BadRequest(format!("spec.quota.hard: {e} (resource: \"quantity\")"))
        })?,
    };
    quota::validate_hard(&hard)?;
    Ok((!hard.is_empty()).then_some(hard))
}

/// The tenant's quota object with its usage; a tenant without a quota has an empty one.
pub async fn quota_object(state: &AppState, tid: &TenantId) -> Result<TenantQuota, ServerError> {
    let rec = state
        .cache
        .tenant(tid.as_str())
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{tid}\" not found")))?;
    let (hard, used) = quota::status(state, tid).await?.unwrap_or_default();
    Ok(quota::tenant_quota_object(&rec.created, &hard, &used))
}

/// Admin: applies a merge patch `{"hard": {"pods": "10", "services": null}}`.
pub async fn patch_quota(
    state: &AppState,
    id: &str,
    patch: &Value,
) -> Result<TenantQuota, ServerError> {
    let patch: QuotaPatch = serde_json::from_value(patch.clone()).map_err(|e| {
        ServerError::BadRequest(format!(
            "the body must be {{\"hard\": {{\"<resource>\": \"<quantity>\" | null, ...}}}}: {e}"
        ))
    })?;
    let mut rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    let mut hard = rec.quota.clone().unwrap_or_default();
    for (k, v) in patch.hard {
        match v {
            None => hard.remove(&k),
            Some(q) => hard.insert(k, q),
        };
    }
    quota::validate_hard(&hard)?;
    rec.quota = (!hard.is_empty()).then_some(hard);
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    quota_object(state, &rec.id).await
}

/// A tenant reading `tenantquotas`: its own one object (any other name is NotFound, as in a
/// cluster where it does not exist). `None`: not a tenantquotas path.
pub async fn serve_tenant(
    state: &AppState,
    tid: &TenantId,
    rest: &[&str],
    table: bool,
) -> Option<Result<Value, ServerError>> {
    let answer = match rest {
        [api::RESOURCE] => quota_object(state, tid).await.and_then(|o| {
            if table {
                Ok(quota::tenant_quota_table(&[o]))
            } else {
                answer_value(&List::new(api::LIST_KIND, vec![o]))
            }
        }),
        [api::RESOURCE, name] if *name == QUOTA_NAME => {
            quota_object(state, tid).await.and_then(|o| {
                if table {
                    Ok(quota::tenant_quota_table(&[o]))
                } else {
                    answer_value(&o)
                }
            })
        }
        [api::RESOURCE, name] => Err(ServerError::NotFound(format!(
            "tenantquotas.paddock.io \"{name}\" not found"
        ))),
        _ => return None,
    };
    Some(answer)
}

fn answer_value<T: serde::Serialize>(v: &T) -> Result<Value, ServerError> {
    serde_json::to_value(v).map_err(|e| ServerError::Internal(e.to_string()))
}
