//! The admin API's metering endpoints: `PATCH tenants/<id>/billing` (the billing key, a JSON
//! merge patch) and `GET tenants/<id>/usage` (the usage report). docs/metering.md.

use std::sync::Arc;

use crate::body::ReqBody;
use http::Request;
use paddock_api::usage::TenantUsage;
use paddock_core::observe::billing::BillingKey;
use paddock_store::{TenantPhase, TenantRecord};
use serde_json::Value;

use crate::state::AppState;
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;

/// `GET tenants/<id>/usage`: the usage report.
pub async fn usage(state: &Arc<AppState>, id: &str) -> Result<TenantUsage, ServerError> {
    let rec = tenant(state, id).await?;
    crate::admin::usage::report(state, &rec).await
}

/// `PATCH tenants/<id>/billing`: a JSON merge patch of the billing key; the tenant after it.
pub async fn patch_billing(
    state: &Arc<AppState>,
    caller: &Caller,
    req: Request<ReqBody>,
    id: &str,
) -> Result<TenantRecord, ServerError> {
    let rec = tenant(state, id).await?;
    let body = collect_limited(req.into_body(), 1 << 20).await?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    let key = rec
        .billing
        .merge_patch(&patch)
        .map_err(|e| ServerError::BadRequest(e.to_string()))?;
    let rec = set_billing(state, rec, key).await?;
    tracing::info!(admin = caller.user(), tenant = id, billing = ?rec.billing, "tenant billing key changed");
    Ok(rec)
}

async fn tenant(state: &AppState, id: &str) -> Result<TenantRecord, ServerError> {
    state
        .store
        .get_tenant(id)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found")))
}

/// Stores a tenant's new billing key, then stamps it on every upstream namespace of the
/// tenant before answering (so "within seconds" is "before the admin API answers"; the resync
/// catches what a failure here leaves behind).
pub async fn set_billing(
    state: &Arc<AppState>,
    mut rec: TenantRecord,
    key: BillingKey,
) -> Result<TenantRecord, ServerError> {
    if rec.phase == TenantPhase::Terminating {
        return Err(ServerError::Conflict(format!(
            "tenant {} is being deleted",
            rec.id
        )));
    }
    if rec.billing != key {
        rec.billing = key;
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    // On the tenant's own cluster (docs/clusters.md).
    let home = crate::clusters::route(state, &rec.id)?;
    let stamped =
        paddock_reconciler::billing::restamp_tenant(&home.upstream, &rec.id, &rec.billing).await?;
    tracing::debug!(tenant = %rec.id, stamped, "billing key stamped");
    Ok(rec)
}
