//! A tenant's suspension, deletion protection and time-to-live (docs/operations.md "Suspend,
//! protection and TTL"; the decisions are paddock-core's `lifecycle`, the upstream writes
//! paddock-reconciler's `suspend.rs`):
//!
//! - the door: a suspended tenant's writes refused before they are planned ([`refused`]);
//! - the admin actions: [`suspend`], [`resume`], [`protect`] (the record first, then the
//!   tenant's clusters), and the start of a deletion, refused while the tenant is protected
//!   ([`start_deletion`], for `tenant delete` and the TTL alike);
//! - [`expiry`]: the leader's loop that deletes tenants whose TTL has run out;
//! - [`sleep`]: a tenant's activity noted at the door, its sleep and wake (the leader's).
//!
//! Every replica sees a suspension through its store cache; the leader's tenant resync keeps
//! the namespaces' mark in step with the record.

pub mod expiry;
pub mod sleep;

use std::sync::Arc;
use std::time::SystemTime;

use paddock_core::TenantId;
use paddock_store::{Expiry, Suspension, TenantPhase, TenantRecord};
use paddock_upstream::error::ServerError;

use crate::state::AppState;

/// The policy a refused deletion names.
pub const PROTECTION_POLICY: &str = "deletion-protection";

/// Seconds since the epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Whether a tenant's request is refused because its tenant is suspended: a write (core
/// `lifecycle::door`) of a tenant whose record, in this replica's cache, is `Suspended`. The
/// cache is read only for writes.
pub fn refused(state: &AppState, tenant: &TenantId, method: &http::Method, path: &str) -> bool {
    if !paddock_core::lifecycle::door::writes(method.as_str(), path) {
        return false;
    }
    let suspended = state
        .cache
        .tenant(tenant.as_str())
        .is_some_and(|r| r.is_suspended());
    if suspended {
        state.metrics.suspension_refusals.inc();
    }
    suspended
}

/// The tenant's record from the store (not the cache: an admin action reads what it changes).
async fn record(state: &AppState, id: &str) -> Result<TenantRecord, ServerError> {
    state
        .store
        .get_tenant(id)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found")))
}

fn refuse_terminating(rec: &TenantRecord, what: &str) -> Result<(), ServerError> {
    if rec.phase.is_live() {
        Ok(())
    } else {
        Err(ServerError::Conflict(format!(
            "tenant {} is being deleted: it cannot be {what}",
            rec.id
        )))
    }
}

/// The reconcilers of every cluster the tenant lives on.
fn reconcilers(
    state: &Arc<AppState>,
    rec: &TenantRecord,
) -> Result<Vec<Arc<paddock_reconciler::Reconciler>>, ServerError> {
    rec.cluster_names()
        .iter()
        .map(|c| crate::clusters::reconciler_for(state, c))
        .collect()
}

/// Suspends tenant `id`: its record first (every replica's door closes as its cache sees it),
/// then on each of its clusters its namespaces marked for the guard and, with
/// `stop_workloads`, its workloads stopped. Suspending a suspended tenant again runs the
/// upstream part again (and may add `stop_workloads`).
pub async fn suspend(
    state: &Arc<AppState>,
    id: &str,
    stop_workloads: bool,
) -> Result<TenantRecord, ServerError> {
    let mut rec = record(state, id).await?;
    refuse_terminating(&rec, "suspended")?;
    let stop_workloads =
        stop_workloads || rec.suspension.as_ref().is_some_and(|s| s.stop_workloads);
    let since = match &rec.suspension {
        Some(s) if rec.is_suspended() => s.since.clone(),
        _ => paddock_store::now_rfc3339(),
    };
    let suspension = Some(Suspension {
        since,
        stop_workloads,
    });
    if !rec.is_suspended() || rec.suspension != suspension {
        rec.phase = TenantPhase::Suspended;
        rec.suspension = suspension;
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    for r in reconcilers(state, &rec)? {
        let up = &r.upstream;
        let marked = paddock_reconciler::suspend::mark_tenant(up, &rec.id, true).await?;
        let stopped = if stop_workloads {
            paddock_reconciler::suspend::stop_workloads(
                up,
                &rec.id,
                paddock_core::lifecycle::workloads::Mark::Suspension,
            )
            .await?
        } else {
            0
        };
        tracing::info!(tenant = %rec.id, cluster = %r.cluster, namespaces_marked = marked, workloads_stopped = stopped, "tenant suspended");
    }
    Ok(rec)
}

/// Resumes tenant `id`: its record first (writes allowed again), then on each of its clusters
/// the mark removed, the workloads the suspension stopped brought back, and every controller
/// short of pods touched so that it makes them at once. Resuming an active tenant runs the
/// upstream part again (a resume that failed halfway is finished so).
pub async fn resume(state: &Arc<AppState>, id: &str) -> Result<TenantRecord, ServerError> {
    let mut rec = record(state, id).await?;
    refuse_terminating(&rec, "resumed")?;
    if rec.is_suspended() || rec.suspension.is_some() {
        rec.phase = TenantPhase::Active;
        rec.suspension = None;
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    let now = paddock_store::now_rfc3339();
    for r in reconcilers(state, &rec)? {
        let up = &r.upstream;
        let unmarked = paddock_reconciler::suspend::mark_tenant(up, &rec.id, false).await?;
        let (restored, touched) =
            paddock_reconciler::suspend::resume_workloads(up, &rec.id, &now).await?;
        tracing::info!(tenant = %rec.id, cluster = %r.cluster, namespaces_unmarked = unmarked, workloads_restored = restored, controllers_touched = touched, "tenant resumed");
    }
    Ok(rec)
}

/// What `tenant protect` and `tenant ttl` change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Protection {
    /// Set or lift deletion protection.
    pub deletion_protection: Option<bool>,
    /// A TTL from now, in seconds (`Some(None)`: remove it).
    pub ttl: Option<Option<u64>>,
}

/// Changes a tenant's deletion protection and TTL (a TTL counts from now).
pub async fn protect(
    state: &Arc<AppState>,
    id: &str,
    change: Protection,
) -> Result<TenantRecord, ServerError> {
    let mut rec = record(state, id).await?;
    refuse_terminating(&rec, "changed")?;
    if let Some(p) = change.deletion_protection {
        rec.deletion_protection = p;
    }
    if let Some(ttl) = change.ttl {
        // Counted from the next whole second: whole seconds would otherwise let a TTL end up
        // to a second early (the e2e test once saw a 20 s TTL's deletion at 19.9x s).
        rec.expiry = ttl.map(|secs| Expiry::from_now(unix_now().saturating_add(1), secs));
    }
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    tracing::info!(tenant = %rec.id, deletion_protection = rec.deletion_protection, expires = ?rec.expiry.as_ref().map(|e| &e.at), "tenant protection changed");
    Ok(rec)
}

/// Starts deleting tenant `id` on its clusters (`tenant delete`, and the TTL); refused with a
/// 403 naming the policy while its deletion protection is on.
pub async fn start_deletion(state: &Arc<AppState>, id: &str) -> Result<TenantRecord, ServerError> {
    let rec = record(state, id).await?;
    if rec.deletion_protection && rec.phase.is_live() {
        return Err(ServerError::Forbidden(format!(
            "paddock policy {PROTECTION_POLICY}: tenant {id} is protected from deletion; lift the protection first (paddock tenant protect {id} --unprotect)"
        )));
    }
    if rec.clusters.len() > 1 {
        return crate::clusters::span_tenant::start_deletion(state, rec).await;
    }
    let reconciler = crate::clusters::reconciler_for(state, rec.home_cluster())?;
    paddock_reconciler::lifecycle::start_tenant_deletion(&reconciler, id).await
}
