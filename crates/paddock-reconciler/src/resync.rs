//! The periodic repair and resync of every active tenant.

use std::sync::Arc;

use paddock_core::TenantId;

use crate::{Reconciler, billing, lifecycle, rbac_sync};

/// While this replica leads (docs/operations.md "Leadership"): repairs every active tenant's
/// upstream grants when it gains the leadership (at start, so an upgrade moves old grants to
/// the current model), then resyncs the mirrors every 30 s (changes paddock did not see: a
/// ClusterRoleBinding removed by garbage collection, another replica's writes, drift).
///
/// A resync pass reads the cluster with six lists, whatever the number of tenants, and writes
/// only differences: a pass that asked a dozen questions per tenant (one list per namespace)
/// was a steady background load on the apiserver that grew with the cluster
/// (docs/performance.md).
pub async fn resync_loop(state: Arc<Reconciler>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("tenant resync", &state.shutdown, || {
            resync_leading(state.clone())
        })
        .await;
}

async fn resync_leading(state: Arc<Reconciler>) {
    let mut first = true;
    loop {
        let active: Vec<TenantId> = state
            .cache
            .tenants()
            .into_iter()
            .filter(|rec| rec.phase == paddock_store::TenantPhase::Active && state.owns(rec))
            .map(|rec| rec.id.clone())
            .collect();
        if first {
            for t in &active {
                if let Err(e) = lifecycle::repair_tenant(&state.upstream, t).await {
                    tracing::warn!(tenant = %t, error = %e, "tenant repair failed");
                }
                if let Some(rec) = state.cache.tenant(t.as_str())
                    && let Err(e) = billing::restamp_tenant(&state.upstream, t, &rec.billing).await
                {
                    tracing::warn!(tenant = %t, error = %e, "billing key restamp failed");
                }
            }
        } else {
            match rbac_sync::ViewLists::fetch(&state.upstream, None).await {
                Ok(lists) => {
                    let mut views = lists.by_tenant();
                    for t in &active {
                        let view = views.remove(t).unwrap_or_default();
                        if let Err(e) = rbac_sync::reconcile_tenant(&state.upstream, t, &view).await
                        {
                            tracing::warn!(tenant = %t, error = %e, "tenant RBAC resync failed");
                        }
                        let key = state.cache.tenant(t.as_str()).map(|r| r.billing.clone());
                        if let Some(key) = key
                            && let Err(e) =
                                billing::restamp_listed(&state.upstream, t, &key, view.namespaces())
                                    .await
                        {
                            tracing::warn!(tenant = %t, error = %e, "billing key restamp failed");
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "tenant RBAC resync: reading the cluster failed")
                }
            }
        }
        first = false;
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(30)) => {}
            _ = state.shutdown.cancelled() => return,
        }
    }
}
