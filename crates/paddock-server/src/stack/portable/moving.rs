//! `POST tenants/<id>/move`: a tenant carried to another cluster, driven by the admin's
//! request on the replica that receives it (docs/operations.md "Export, import and move"):
//!
//! 1. its record says `moving: <to>`: every replica answers its writes 503 with
//!    `Retry-After` (kubectl and client-go retry them); its reads are still served from the
//!    source; then a grace for writes already on their way upstream;
//! 2. the tenant provisioned on the target (namespaces, bindings, roles), its objects
//!    exported from the source and imported on the target through its own stack (every check
//!    of an import, the whole archive first);
//! 3. its record names the target and no longer says `moving` (one write: every replica
//!    routes its next request to the target, writes flow again);
//! 4. the source cleaned of everything the tenant owned there.
//!
//! A failure before 3 removes what the target got and leaves the tenant on the source.

use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_api::portable::{MOVE_KIND, MoveSummary};
use paddock_core::TenantId;
use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_reconciler::Reconciler;
use paddock_reconciler::lifecycle::DELETE_TIMEOUT;
use paddock_reconciler::provision;
use paddock_store::{TenantPhase, TenantRecord};

use super::TenantCall;
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// After the writes are held, how long a write admitted just before may still take to land
/// on the source (docs: a write answered by the apiserver later than this could be missed).
const GRACE: Duration = Duration::from_secs(2);

/// Moves `tenant` to cluster `to`.
pub async fn move_tenant(
    state: &Arc<AppState>,
    tenant: &TenantId,
    to: &str,
) -> Result<MoveSummary, ServerError> {
    let rec = movable(state, tenant, to).await?;
    let from = rec.home_cluster().to_owned();
    let source = crate::clusters::reconciler_for(state, &from)?;
    let target = crate::clusters::reconciler_for(state, to)?;
    let target_state = cluster_state(state, to)?;
    provision::check_prefix_unused(&target.upstream, &target.namespaces, tenant).await?;

    let paused = Instant::now();
    set_moving(state, tenant, Some(to)).await?;
    tokio::time::sleep(GRACE).await;
    let carried = carry(state, &target, &target_state, tenant).await;
    let objects = match carried {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(%tenant, to, error = %e, "tenant move failed; removing the target's copy");
            let cleaned = clean(&target, tenant).await;
            set_moving(state, tenant, None).await?;
            if let Err(c) = cleaned {
                tracing::warn!(%tenant, to, error = %c, "the target's partial copy was not all removed");
            }
            return Err(e);
        }
    };
    switch(state, tenant, to).await?;
    let writes_paused = paused.elapsed();
    tracing::info!(%tenant, from, to, objects, paused_ms = writes_paused.as_millis() as u64,
        "tenant switched to its new cluster; cleaning the source");
    clean(&source, tenant).await.map_err(|e| {
        ServerError::Unavailable(format!(
            "tenant {tenant} moved to {to}, but cleaning cluster {from:?} failed (its leftovers there carry its label): {e}"
        ))
    })?;
    Ok(MoveSummary {
        api_version: paddock_api::GROUP_VERSION.into(),
        kind: MOVE_KIND.into(),
        tenant: tenant.as_str().into(),
        from,
        to: to.into(),
        objects,
        writes_paused_seconds: writes_paused.as_secs_f64(),
    })
}

/// The tenant's record, if it can be moved to `to`: active, awake, on one cluster, not there
/// already, and `to` ready.
async fn movable(
    state: &Arc<AppState>,
    tenant: &TenantId,
    to: &str,
) -> Result<TenantRecord, ServerError> {
    let rec = state
        .store
        .get_tenant(tenant.as_str())
        .await?
        .ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found"))
        })?;
    let refuse = |why: String| {
        Err(ServerError::Conflict(format!(
            "cannot move tenant {tenant}: {why}"
        )))
    };
    if rec.phase != TenantPhase::Active {
        return refuse("it is not active".into());
    }
    if rec.sleep.is_some() {
        return refuse("it is asleep; wake it first (paddock tenant wake)".into());
    }
    if let Some(other) = &rec.moving {
        return refuse(format!("it is being moved to {other:?} already"));
    }
    if rec.cluster_names().len() > 1 || rec.span.is_some() {
        return refuse("it spans several clusters; a move carries a one-cluster tenant".into());
    }
    if rec.home_cluster() == to {
        return refuse(format!("it lives on {to:?} already"));
    }
    Ok(rec)
}

/// The serving state of cluster `name`, if it answers.
fn cluster_state(state: &Arc<AppState>, name: &str) -> Result<Arc<AppState>, ServerError> {
    let s = if name == DEFAULT_CLUSTER {
        state.clone()
    } else {
        state
            .clusters
            .member(name)
            .map(|m| m.state.clone())
            .ok_or_else(|| ServerError::BadRequest(format!("cluster {name:?} is not registered")))?
    };
    let ready = s.bootstrapped.load(std::sync::atomic::Ordering::Acquire)
        && s.catalogs.is_synced()
        && s.health.is_healthy();
    if !ready {
        return Err(ServerError::Unavailable(format!(
            "cluster {name:?} is not ready (bootstrap, discovery, its apiserver answering); try again later"
        )));
    }
    Ok(s)
}

/// Provisions the tenant on the target and copies its objects there; answers how many.
async fn carry(
    state: &Arc<AppState>,
    target: &Reconciler,
    target_state: &Arc<AppState>,
    tenant: &TenantId,
) -> Result<usize, ServerError> {
    paddock_reconciler::lifecycle::provision_tenant(&target.upstream, tenant).await?;
    if target.tenant_priority_shares > 0
        && let Some(rec) = state.cache.tenant(tenant.as_str())
    {
        provision::sync_tenant_flow_schema(&target.upstream, tenant, target.own_flow_schema(&rec))
            .await?;
    }
    let tar = super::export::export(state, tenant, true).await?;
    let call = TenantCall::new(state, tenant).routed_to(target_state.clone());
    let summary =
        super::import::import_with(state, target_state, call, tenant, &tar, false).await?;
    Ok(summary.objects)
}

/// Sets or clears the record's `moving` (and its progress text), from the store's copy.
async fn set_moving(
    state: &AppState,
    tenant: &TenantId,
    to: Option<&str>,
) -> Result<(), ServerError> {
    let mut rec = record(state, tenant).await?;
    rec.moving = to.map(str::to_owned);
    rec.progress = to.map(|c| format!("moving to cluster {c}"));
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    Ok(())
}

/// The record names `to` as the tenant's one cluster and no longer says `moving`.
async fn switch(state: &AppState, tenant: &TenantId, to: &str) -> Result<(), ServerError> {
    let mut rec = record(state, tenant).await?;
    // A record that names no cluster lives on `default` (docs/clusters.md).
    rec.clusters = if to == DEFAULT_CLUSTER {
        Vec::new()
    } else {
        vec![to.to_owned()]
    };
    rec.moving = None;
    rec.progress = None;
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    Ok(())
}

async fn record(state: &AppState, tenant: &TenantId) -> Result<TenantRecord, ServerError> {
    state
        .store
        .get_tenant(tenant.as_str())
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found")))
}

/// Everything the tenant owns on `r`'s cluster, removed (as a deletion does there).
async fn clean(r: &Reconciler, tenant: &TenantId) -> Result<(), ServerError> {
    provision::delete_tenant_objects(
        &r.upstream,
        tenant,
        r.tenant_priority_shares > 0,
        DELETE_TIMEOUT,
        |_| {},
    )
    .await
}
