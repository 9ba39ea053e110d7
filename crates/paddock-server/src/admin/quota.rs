//! The quota's API surfaces: the admin's (`tenants/<id>/quota`: read with usage, change by
//! merge patch; `tenants/<id>/quotas`: every quota object, scoped entries included;
//! `spec.quota.hard` and `spec.quota.scoped` at tenant creation) and the tenant's read-only
//! `tenantquotas.paddock.io` (cluster-scoped: `tenant-quota` and one object per scoped
//! entry, `kubectl get` and `describe`).

use std::collections::BTreeMap;

use paddock_core::TenantId;
use paddock_core::quota::{QUOTA_NAME, ScopedSpec};
use paddock_store::TenantRecord;
use serde_json::{Value, json};

use crate::state::AppState;
use crate::webhook::quota;
use paddock_api::List;
use paddock_api::quota::{self as api, QuotaPatch, QuotaSpec, TenantQuota};
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

/// A tenant's quota as the admin wrote it: `tenant-quota`'s hard limits and the scoped
/// entries by name.
pub type Written = (
    Option<BTreeMap<String, String>>,
    BTreeMap<String, ScopedSpec>,
);

/// `spec.quota` of a tenant creation (`hard`, without one the configured default; `scoped`).
pub fn quota_at_creation(state: &AppState, spec_quota: &Value) -> Result<Written, ServerError> {
    let hard: BTreeMap<String, String> = match &spec_quota["hard"] {
        Value::Null => state.config.quota.default_hard.clone(),
        v => serde_json::from_value(v.clone()).map_err(|e| {
            ServerError::BadRequest(format!("spec.quota.hard: {e} (resource: \"quantity\")"))
        })?,
    };
    let scoped: BTreeMap<String, ScopedSpec> = match &spec_quota["scoped"] {
        Value::Null => BTreeMap::new(),
        v => serde_json::from_value(v.clone())
            .map_err(|e| ServerError::BadRequest(format!("spec.quota.scoped: {e}")))?,
    };
    quota::validate_quotas(&hard, &scoped)?;
    Ok(((!hard.is_empty()).then_some(hard), scoped))
}

/// `spec.quota` of a tenant object: `hard` and the scoped entries.
pub fn spec_of_record(rec: &TenantRecord) -> QuotaSpec {
    QuotaSpec {
        hard: rec.quota.clone().unwrap_or_default(),
        scoped: rec
            .scoped_quota
            .iter()
            .map(|(n, s)| (n.clone(), quota::api_spec(s)))
            .collect(),
        ..QuotaSpec::default()
    }
}

/// Stores the scoped entries of a tenant just created (`spec.quota.scoped`).
pub async fn set_scoped_at_creation(
    state: &AppState,
    mut rec: TenantRecord,
    scoped: BTreeMap<String, ScopedSpec>,
) -> Result<TenantRecord, ServerError> {
    if scoped.is_empty() || rec.scoped_quota == scoped {
        return Ok(rec);
    }
    rec.scoped_quota = scoped;
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    Ok(rec)
}

/// Every quota object of the tenant, `tenant-quota` first (an empty one without a quota).
pub async fn quota_objects(
    state: &AppState,
    tid: &TenantId,
) -> Result<Vec<TenantQuota>, ServerError> {
    let rec = state
        .cache
        .tenant(tid.as_str())
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{tid}\" not found")))?;
    let mut views = quota::status(state, tid).await?;
    if views.is_empty() {
        views.push(quota::QuotaView {
            name: QUOTA_NAME.into(),
            scoped: None,
            scopes: Vec::new(),
            hard: Default::default(),
            used: Default::default(),
        });
    }
    Ok(views
        .iter()
        .map(|v| quota::tenant_quota_object(&rec.created, v))
        .collect())
}

/// The tenant's `tenant-quota` object with its usage; a tenant without a quota has an empty
/// one.
pub async fn quota_object(state: &AppState, tid: &TenantId) -> Result<TenantQuota, ServerError> {
    quota_objects(state, tid)
        .await?
        .into_iter()
        .find(|o| o.metadata.name == QUOTA_NAME)
        .ok_or_else(|| ServerError::Internal("the tenant quota object is missing".into()))
}

/// Admin: applies a merge patch `{"hard": {"pods": "10", "services": null}, "scoped":
/// {"besteffort": {"hard": {"pods": "3"}, "scopes": ["BestEffort"]}, "old": null}}`.
pub async fn patch_quota(
    state: &AppState,
    id: &str,
    patch: &Value,
) -> Result<TenantQuota, ServerError> {
    let parsed: QuotaPatch = serde_json::from_value(patch.clone()).map_err(|e| {
        ServerError::BadRequest(format!(
            "the body must be {{\"hard\": {{\"<resource>\": \"<quantity>\" | null, ...}}, \"scoped\": {{\"<name>\": {{\"hard\": ..., \"scopes\": [...], \"scopeSelector\": ...}} | null}}}}: {e}"
        ))
    })?;
    let mut rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    let mut hard = rec.quota.clone().unwrap_or_default();
    for (k, v) in parsed.hard {
        match v {
            None => hard.remove(&k),
            Some(q) => hard.insert(k, q),
        };
    }
    let mut scoped = rec.scoped_quota.clone();
    for (name, entry_patch) in parsed.scoped {
        let Some(entry_patch) = entry_patch else {
            scoped.remove(&name);
            continue;
        };
        let mut doc = scoped
            .get(&name)
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({}));
        crate::admin::policy::merge_patch(&mut doc, &entry_patch);
        let spec: ScopedSpec = serde_json::from_value(doc)
            .map_err(|e| ServerError::BadRequest(format!("spec.scoped[{name}]: {e}")))?;
        if spec.hard.is_empty() {
            scoped.remove(&name);
        } else {
            scoped.insert(name, spec);
        }
    }
    quota::validate_quotas(&hard, &scoped)?;
    rec.quota = (!hard.is_empty()).then_some(hard);
    rec.scoped_quota = scoped;
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
        [api::RESOURCE] => quota_objects(state, tid).await.and_then(|all| {
            if table {
                Ok(quota::tenant_quota_table(&all))
            } else {
                answer_value(&List::new(api::LIST_KIND, all))
            }
        }),
        [api::RESOURCE, name] => quota_objects(state, tid).await.and_then(|all| {
            match all.into_iter().find(|o| o.metadata.name == *name) {
                Some(o) if table => Ok(quota::tenant_quota_table(&[o])),
                Some(o) => answer_value(&o),
                None => Err(ServerError::NotFound(format!(
                    "tenantquotas.paddock.io \"{name}\" not found"
                ))),
            }
        }),
        _ => return None,
    };
    Some(answer)
}

fn answer_value<T: serde::Serialize>(v: &T) -> Result<Value, ServerError> {
    serde_json::to_value(v).map_err(|e| ServerError::Internal(e.to_string()))
}
