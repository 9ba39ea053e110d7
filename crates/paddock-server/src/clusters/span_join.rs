//! Clusters joining and leaving tenants by label (issue 39; docs/clusters.md "Clusters
//! joining by label"): while this replica leads, every [`super::SYNC_INTERVAL`] each tenant
//! with a span selector is compared with the registered clusters
//! (`paddock_core::clusters::join::join_steps`, the rule and its reasons) and the steps are
//! applied: a joining cluster gets the tenant's set-up (roles, RBAC, FlowSchema, then its
//! replicated cluster-scoped objects at once) before the record names it, so a namespace
//! placed there finds everything in place; a drained cluster with none of the tenant's
//! namespaces left loses the tenant's objects before the record stops naming it.
//!
//! Cost when nothing changes: a fold over the store cache and the cluster registry, no
//! request upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use paddock_core::TenantId;
use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_core::clusters::join::{Candidate, JoinStep, join_steps};
use paddock_store::{TenantPhase, TenantRecord};
use paddock_upstream::error::ServerError;

use crate::state::AppState;

/// While this replica leads, applies the span selectors until shutdown.
pub async fn join_loop(main: Arc<AppState>) {
    let leadership = main.leadership.clone();
    leadership
        .while_leader("clusters joining by label", &main.shutdown, || {
            join_leading(main.clone())
        })
        .await;
}

async fn join_leading(main: Arc<AppState>) {
    let mut tick = tokio::time::interval(super::SYNC_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = main.shutdown.cancelled() => return,
        }
        for rec in main.cache.tenants() {
            if rec.span.is_none() || rec.phase != TenantPhase::Active {
                continue;
            }
            if let Err(e) = join_tenant(&main, &rec).await {
                tracing::warn!(tenant = %rec.id, error = %e, "applying the span selector failed; retried next round");
            }
        }
    }
}

/// Decides and applies one tenant's steps.
async fn join_tenant(main: &Arc<AppState>, rec: &TenantRecord) -> Result<(), ServerError> {
    let Some(span) = &rec.span else {
        return Ok(());
    };
    let clusters: Vec<String> = rec.cluster_names().iter().map(|s| s.to_string()).collect();
    let loads = super::loads(main);
    let room = |name: &str| loads.iter().any(|l| l.name == name && l.has_room());
    let members = main.clusters.members();
    let no_labels = BTreeMap::new();
    let mut registered = vec![Candidate {
        name: DEFAULT_CLUSTER,
        // The configured upstream carries no labels, as for placement.
        labels: &no_labels,
        ready: super::ready(main),
        has_room: room(DEFAULT_CLUSTER),
    }];
    registered.extend(members.iter().map(|(name, m)| Candidate {
        name,
        labels: &m.record.labels,
        ready: super::ready(&m.state),
        has_room: room(name),
    }));
    let held = main.clusters.namespaces.counts(rec.id.as_str());
    let steps = join_steps(span, &clusters, &registered, &held)
        .map_err(|e| ServerError::Internal(format!("the span selector: {e}")))?;
    for step in steps {
        apply(main, &rec.id, step).await?;
    }
    Ok(())
}

async fn apply(main: &Arc<AppState>, tid: &TenantId, step: JoinStep) -> Result<(), ServerError> {
    match step {
        JoinStep::Join(name) => {
            let r = super::reconciler_for(main, &name)?;
            super::span_tenant::provision_on(&r, tid).await?;
            let rec = update(main, tid, |rec| {
                let mut all: Vec<String> =
                    rec.cluster_names().iter().map(|s| s.to_string()).collect();
                if !all.contains(&name) {
                    all.push(name.clone());
                }
                rec.clusters = all;
                if let Some(s) = &mut rec.span {
                    s.joined.insert(name.clone());
                }
            })
            .await?;
            tracing::info!(tenant = %tid, cluster = %name, "cluster joined the tenant by label");
            // Its CRDs, ClusterRoles and the rest now, not at the next resync round.
            if let Some(rec) = rec {
                super::span_resync::resync_tenant(main, tid, &rec.clusters).await?;
            }
        }
        JoinStep::Drain(name) => {
            update(main, tid, |rec| {
                if let Some(s) = &mut rec.span {
                    s.draining.insert(name.clone());
                }
            })
            .await?;
            tracing::info!(tenant = %tid, cluster = %name, "cluster no longer matches the tenant's span selector: draining");
        }
        JoinStep::Undrain(name) => {
            update(main, tid, |rec| {
                if let Some(s) = &mut rec.span {
                    s.draining.remove(&name);
                }
            })
            .await?;
        }
        JoinStep::Leave(name) => {
            let r = super::reconciler_for(main, &name)?;
            paddock_reconciler::provision::delete_tenant_objects(
                &r.upstream,
                tid,
                r.tenant_priority_shares > 0,
                paddock_reconciler::lifecycle::DELETE_TIMEOUT,
                |_| {},
            )
            .await?;
            update(main, tid, |rec| {
                rec.clusters.retain(|c| *c != name);
                if let Some(s) = &mut rec.span {
                    s.joined.remove(&name);
                    s.draining.remove(&name);
                }
            })
            .await?;
            tracing::info!(tenant = %tid, cluster = %name, "drained cluster left the tenant");
        }
    }
    Ok(())
}

/// Reads the tenant's record from the store (not the cache: an admin's change a moment ago
/// is kept), changes it and writes it when it changed; the record written, `None` when the
/// tenant is gone or no longer active.
async fn update(
    main: &AppState,
    tid: &TenantId,
    change: impl FnOnce(&mut TenantRecord),
) -> Result<Option<TenantRecord>, ServerError> {
    let Some(mut rec) = main.store.get_tenant(tid.as_str()).await? else {
        return Ok(None);
    };
    if rec.phase != TenantPhase::Active {
        return Ok(None);
    }
    let before = rec.clone();
    change(&mut rec);
    if rec != before {
        rec.generation += 1;
        main.store.put_tenant(&rec).await?;
    }
    Ok(Some(rec))
}
