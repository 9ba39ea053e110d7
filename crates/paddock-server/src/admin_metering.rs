//! The admin API's metering endpoints: `PATCH tenants/<id>/billing` (the billing key, a JSON
//! merge patch) and `GET tenants/<id>/usage` (the usage report). docs/metering.md.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use paddock_core::billing::BillingKey;
use paddock_store::{TenantPhase, TenantRecord};
use serde_json::Value;

use crate::auth::Caller;
use crate::body::{ResBody, full};
use crate::limit::collect_limited;
use crate::error::ServerError;
use crate::state::AppState;

/// Serves `PATCH tenants/<id>/billing` and `GET tenants/<id>/usage`.
pub async fn serve(
    state: &Arc<AppState>,
    caller: &Caller,
    req: Request<Incoming>,
    id: &str,
) -> Result<Response<ResBody>, ServerError> {
    let rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    if req.method() == Method::GET {
        let report = crate::usage::report(state, &rec).await?;
        return json(&report);
    }
    let body = collect_limited(req.into_body(), 1 << 20).await?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    let key = rec
        .billing
        .merge_patch(&patch)
        .map_err(|e| ServerError::BadRequest(e.to_string()))?;
    let rec = set_billing(state, rec, key).await?;
    tracing::info!(admin = caller.user(), tenant = id, billing = ?rec.billing, "tenant billing key changed");
    json(&crate::admin::tenant_object(&rec))
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
    let stamped = crate::billing::restamp_tenant(&state.upstream, &rec.id, &rec.billing).await?;
    tracing::debug!(tenant = %rec.id, stamped, "billing key stamped");
    Ok(rec)
}

fn json(v: &Value) -> Result<Response<ResBody>, ServerError> {
    let body = serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}
