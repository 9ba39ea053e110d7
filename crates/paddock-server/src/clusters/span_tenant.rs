//! A spanning tenant's life on each of its clusters (docs/clusters.md "Spanning tenants"):
//! created on its home as any tenant, then its record names all its clusters and the others
//! are provisioned the same way (idempotent: creating it again repairs every one); deleted
//! on the other clusters first, then on the home, whose deletion removes the record.

use std::sync::Arc;

use paddock_core::TenantId;
use paddock_reconciler::Reconciler;
use paddock_store::{TenantPhase, TenantRecord};

use crate::state::AppState;
use paddock_reconciler::lifecycle;
use paddock_reconciler::provision;
use paddock_upstream::error::ServerError;

/// Provisions (or repairs) the tenant on each of `others`, after its home created it, and
/// makes its record name every cluster (home first).
pub async fn extend_tenant(
    state: &Arc<AppState>,
    mut rec: TenantRecord,
    home: &str,
    others: &[Arc<Reconciler>],
) -> Result<TenantRecord, ServerError> {
    let mut all = vec![home.to_string()];
    all.extend(others.iter().map(|r| r.cluster.clone()));
    if rec.clusters != all {
        rec.clusters = all;
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    for r in others {
        provision_on(r, &rec.id).await.map_err(|e| {
            ServerError::Unavailable(format!(
                "tenant {} created, but provisioning it on cluster {:?} failed (creating it again repairs it): {e}",
                rec.id, r.cluster
            ))
        })?;
    }
    Ok(rec)
}

/// What a tenant has on a cluster besides its home: its roles, its cluster-scoped RBAC and
/// its FlowSchema. Not the default namespaces: a namespace lives on one cluster, and those
/// live on the home (a namespace with no entry in the map is the home's).
pub(crate) async fn provision_on(r: &Reconciler, t: &TenantId) -> Result<(), ServerError> {
    provision::ensure_builtin_roles(&r.upstream, t).await?;
    paddock_reconciler::rbac_sync::sync_tenant(&r.upstream, t).await?;
    match r.cache.tenant(t.as_str()) {
        Some(rec) if r.own_flow_schema(&rec) => {
            provision::sync_tenant_flow_schema(&r.upstream, t, true).await
        }
        _ => Ok(()),
    }
}

/// Marks a spanning tenant Terminating and removes it in the background: its objects on the
/// other clusters first, then the home's deletion (objects, certificates, ledger, record).
/// A failure on another cluster leaves the record Terminating with the reason, and deleting
/// it again retries.
pub async fn start_deletion(
    state: &Arc<AppState>,
    rec: TenantRecord,
) -> Result<TenantRecord, ServerError> {
    let names: Vec<String> = rec.cluster_names().iter().map(|s| s.to_string()).collect();
    let home = super::reconciler_for(state, &names[0])?;
    let others = names[1..]
        .iter()
        .map(|c| super::reconciler_for(state, c))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rec = rec;
    if rec.phase != TenantPhase::Terminating {
        rec.phase = TenantPhase::Terminating;
        rec.progress = Some("deletion started".into());
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    let (tid, store) = (rec.id.clone(), state.store.clone());
    tokio::spawn(async move {
        for r in &others {
            let done = provision::delete_tenant_objects(
                &r.upstream,
                &tid,
                r.tenant_priority_shares > 0,
                lifecycle::DELETE_TIMEOUT,
                |_| {},
            )
            .await;
            if let Err(e) = done {
                tracing::warn!(tenant = %tid, cluster = r.cluster, error = %e, "tenant deletion incomplete on a cluster");
                if let Ok(Some(mut rec)) = store.get_tenant(tid.as_str()).await {
                    rec.progress = Some(format!(
                        "deletion incomplete on cluster {:?}, delete again to retry: {e}",
                        r.cluster
                    ));
                    let _ = store.put_tenant(&rec).await;
                }
                return;
            }
        }
        if let Err(e) = store.release_tenant_namespaces(tid.as_str()).await {
            tracing::warn!(tenant = %tid, error = %e, "the tenant's namespace map was not removed");
        }
        lifecycle::finish_tenant_deletion(home, tid).await;
    });
    Ok(rec)
}

/// Resumes, at start, the deletion of a tenant of `state`'s cluster that a crash interrupted.
/// A one-cluster tenant: that cluster's deletion. A spanning tenant: only its home's state
/// resumes it, the whole of it (the other clusters first, then the home, as
/// [`start_deletion`]), once this replica knows all its clusters (registered clusters join
/// the registry within seconds of start); the other clusters' states leave it alone, so the
/// home never removes the record while another cluster still holds its objects.
pub fn resume_deletion(state: &Arc<AppState>, rec: TenantRecord) {
    let names: Vec<String> = rec.cluster_names().iter().map(|s| s.to_string()).collect();
    if names.len() < 2 {
        tokio::spawn(lifecycle::finish_tenant_deletion(
            state.reconciler.clone(),
            rec.id.clone(),
        ));
        return;
    }
    if names[0] != state.reconciler.cluster {
        return;
    }
    let any = state.clone();
    tokio::spawn(async move {
        loop {
            let main = any.clusters.main.get().and_then(std::sync::Weak::upgrade);
            if let Some(main) = main {
                match start_deletion(&main, rec.clone()).await {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::info!(tenant = %rec.id, error = %e, "resuming a spanning tenant's deletion once all its clusters are known")
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
                _ = any.shutdown.cancelled() => return,
            }
        }
    });
}
