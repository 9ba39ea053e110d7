//! Keeps a spanning tenant's cluster-scoped objects (CRDs, ClusterRoles,
//! ClusterRoleBindings) the same on every cluster it spans: the home's are the truth; each
//! other cluster gets what is missing or different and loses what the home no longer has
//! (a write replayed while that cluster was down, or that it refused). Decisions:
//! `paddock_core::clusters::span::sync_steps`.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_core::clusters::span::{SyncStep, sync_steps};
use paddock_core::tenant::TENANT_LABEL;

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;

/// How often the spanning tenants' cluster-scoped objects are compared.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(30);

/// While this replica leads, resyncs every spanning tenant every [`RESYNC_INTERVAL`], until
/// shutdown.
pub async fn resync_loop(main: Arc<AppState>) {
    let leadership = main.leadership.clone();
    leadership
        .while_leader("spanning tenant resync", &main.shutdown, || {
            resync_leading(main.clone())
        })
        .await;
}

async fn resync_leading(main: Arc<AppState>) {
    let mut tick = tokio::time::interval(RESYNC_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = main.shutdown.cancelled() => return,
        }
        for rec in main.cache.tenants() {
            if rec.clusters.len() < 2 || !rec.phase.is_live() {
                continue;
            }
            match resync_tenant(&main, &rec.id, &rec.clusters).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(tenant = %rec.id, repaired = n, "spanning tenant's cluster-scoped objects brought in line")
                }
                Err(e) => {
                    tracing::warn!(tenant = %rec.id, error = %e, "spanning tenant resync incomplete; retried next round")
                }
            }
        }
    }
}

/// Brings the tenant's other clusters in line with its home; answers how many objects it
/// wrote or deleted. A cluster that does not answer is skipped (the next round repairs it).
pub async fn resync_tenant(
    main: &Arc<AppState>,
    tenant: &TenantId,
    clusters: &[String],
) -> Result<usize, ServerError> {
    let home = super::span::state_of(main, tenant, &clusters[0])?;
    let selector = format!("labelSelector={TENANT_LABEL}%3D{}", tenant.as_str());
    let mut repaired = 0;
    // The replicated kinds, in the kind table's order: CRDs first (their CRs need them), what
    // others name before them.
    for k in paddock_core::catalog::kinds::replicated() {
        let (path, api_version, kind) = (k.list_path(), k.api_version(), k.kind);
        let want = upjson::list(&home.upstream, &format!("{path}?{selector}")).await?;
        for name in &clusters[1..] {
            let Ok(other) = super::span::state_of(main, tenant, name) else {
                continue;
            };
            let have = upjson::list(&other.upstream, &format!("{path}?{selector}")).await?;
            // On a cluster without the relay, webhook configurations name the tenant's
            // Service (span_write::body_for).
            let mut wanted = want.clone();
            if name != DEFAULT_CLUSTER {
                for o in &mut wanted {
                    paddock_core::catalog::webhook_relay::unrelay_configuration(o);
                }
            }
            for step in sync_steps(&api_version, kind, &wanted, &have) {
                match step {
                    SyncStep::Apply(n, obj) => {
                        upjson::apply(&other.upstream, &format!("{path}/{n}"), &obj).await?
                    }
                    SyncStep::Delete(n) => {
                        upjson::delete(&other.upstream, &format!("{path}/{n}")).await?
                    }
                }
                repaired += 1;
            }
            if repaired > 0 && kind.starts_with("ClusterRole") {
                // The mirrors of its ClusterRoleBindings in its namespaces there.
                paddock_reconciler::rbac_sync::sync_tenant(&other.upstream, tenant).await?;
            }
        }
    }
    Ok(repaired)
}
