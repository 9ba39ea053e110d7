//! Several upstream clusters (docs/clusters.md). The configured `upstream` is the cluster
//! named `default`, served by the replica's own [`AppState`]; every cluster registered
//! through the admin API gets a [`member::Member`]: an `AppState` of its own with that
//! cluster's pools, catalog, health and reconciler, built when the record appears in the
//! store (on this replica at once, on the others within [`SYNC_INTERVAL`]) and dropped when
//! it is removed, without a restart.
//!
//! A tenant request is served with the state of the tenant's home cluster: [`route`] is the
//! one place the request path picks it.

pub mod member;
pub mod span;
pub mod span_join;
pub mod span_resync;
pub mod span_tenant;
pub mod span_write;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::clusters::cluster::{ClusterLoad, DEFAULT_CLUSTER};

use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// How often each replica reads the cluster records again (a cluster added or removed through
/// another replica takes effect here within this period).
pub const SYNC_INTERVAL: Duration = Duration::from_secs(5);

/// Reads the cluster records and brings the members in line: new records start a member, a
/// record whose connection changed replaces it, a removed record drops it (its background
/// work stops; requests already under way finish).
pub async fn sync(main: &Arc<AppState>) -> Result<(), ServerError> {
    let reg = &main.clusters;
    let _one = reg.syncing.lock().await;
    let _ = reg.main.set(Arc::downgrade(main));
    let records = main.store.list_clusters().await?;
    let current = reg.members.load_full();
    let mut next = BTreeMap::new();
    for rec in records {
        if rec.name == DEFAULT_CLUSTER {
            continue;
        }
        match current.get(&rec.name) {
            Some(m) if m.record == rec => {
                next.insert(rec.name.clone(), m.clone());
            }
            // Relabelled, or a new capacity hint: the same connection and state go on (a
            // tenant joining by label must not see the cluster restart).
            Some(m)
                if member::same_connection(&m.record, &rec)
                    && m.record.admission_client_ca_pem == rec.admission_client_ca_pem =>
            {
                let kept = crate::state::ClusterMember {
                    record: rec.clone(),
                    state: m.state.clone(),
                    stop: m.stop.clone(),
                };
                next.insert(rec.name.clone(), Arc::new(kept));
            }
            _ => {
                let name = rec.name.clone();
                match member::start(main, rec) {
                    Ok(m) => {
                        tracing::info!(cluster = %name, server = m.record.server, "cluster registered");
                        next.insert(name, Arc::new(m));
                    }
                    Err(e) => {
                        tracing::warn!(cluster = %name, error = %e, "cluster record unusable")
                    }
                }
            }
        }
    }
    for (name, gone) in current.iter().filter(|(n, _)| !next.contains_key(*n)) {
        tracing::info!(cluster = %name, "cluster removed");
        main.metrics
            .cluster_up
            .remove(&crate::observe::metrics::ClusterLabel {
                cluster: name.clone(),
            });
        if gone.record.admission_client_ca_pem.is_some() {
            // Its apiserver would go on calling a webhook that no longer accepts it.
            tokio::spawn(member::uninstall_webhook(gone.state.clone(), name.clone()));
        }
    }
    if let Some(callers) = reg.admission_callers.get() {
        let cas: Vec<(String, String)> = next
            .values()
            .filter_map(|m| {
                let ca = m.record.admission_client_ca_pem.clone()?;
                Some((m.record.name.clone(), ca))
            })
            .collect();
        for e in callers.set_clusters(&cas) {
            tracing::warn!(error = %e, "a cluster's admission client CA is unusable; its apiserver cannot call the webhook");
        }
    }
    // /metrics adds up the usage figures of exactly the clusters served now.
    main.metrics.tenant.clusters.set(
        std::iter::once(main.usage.clone())
            .chain(next.values().map(|m| m.state.usage.clone()))
            .collect(),
    );
    reg.members.store(Arc::new(next));
    // The spanning tenants' namespace map; a failed read keeps the copy (a miss reads the
    // store anyway).
    match main.store.list_namespace_map().await {
        Ok(map) => reg.namespaces.replace(map),
        Err(e) => {
            tracing::warn!(error = %e, "reading the namespace map failed; keeping this replica's copy")
        }
    }
    Ok(())
}

/// Syncs at start and every [`SYNC_INTERVAL`] until shutdown.
pub async fn sync_loop(main: Arc<AppState>) {
    let mut tick = tokio::time::interval(SYNC_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = main.shutdown.cancelled() => return,
        }
        if let Err(e) = sync(&main).await {
            tracing::warn!(error = %e, "reading the cluster records failed; keeping the clusters as they are");
        }
    }
}

/// The state a tenant's request is served with: its home cluster's. A cluster this replica
/// does not know (yet) or that does not answer is a 503 naming it; the tenant's other
/// clusters, and every other tenant, are unaffected.
pub fn route(main: &Arc<AppState>, tenant: &TenantId) -> Result<Arc<AppState>, ServerError> {
    let Some(rec) = main.cache.tenant(tenant.as_str()) else {
        return Ok(main.clone());
    };
    let home = rec.home_cluster();
    if home == DEFAULT_CLUSTER {
        return Ok(main.clone());
    }
    let member = main.clusters.member(home).ok_or_else(|| {
        ServerError::Unavailable(format!(
            "cluster {home:?} of tenant {tenant} is not registered on this paddock replica"
        ))
    })?;
    if !member.state.health.is_healthy() {
        return Err(ServerError::Unavailable(format!(
            "cluster {home:?} of tenant {tenant} cannot be reached; try again later"
        )));
    }
    Ok(member.state.clone())
}

/// The reconciler acting on cluster `name`.
pub fn reconciler_for(
    main: &Arc<AppState>,
    name: &str,
) -> Result<Arc<paddock_reconciler::Reconciler>, ServerError> {
    if name == DEFAULT_CLUSTER {
        return Ok(main.reconciler.clone());
    }
    main.clusters
        .member(name)
        .map(|m| m.state.reconciler.clone())
        .ok_or_else(|| ServerError::NotFound(format!("clusters.paddock.io {name:?} not found")))
}

/// Whether a cluster's state counts as ready: platform objects installed, discovery read,
/// the apiserver answering.
fn ready(state: &AppState) -> bool {
    state.bootstrapped.load(Ordering::Acquire)
        && state.catalogs.is_synced()
        && state.health.is_healthy()
}

/// Every cluster with its readiness, the default first (`/readyz`: the replica is ready
/// while at least one cluster is, so that one cluster down never takes the replica, and with
/// it the other clusters' tenants, out of its load balancer).
pub fn readiness(main: &AppState) -> Vec<(String, bool)> {
    let mut out = vec![(DEFAULT_CLUSTER.to_string(), ready(main))];
    out.extend(
        main.clusters
            .members()
            .iter()
            .map(|(n, m)| (n.clone(), ready(&m.state))),
    );
    out
}

/// What placement weighs: every cluster ready to take a tenant, with its tenant count.
pub fn loads(main: &Arc<AppState>) -> Vec<ClusterLoad> {
    let tenants = main.cache.tenants();
    let count = |name: &str| tenants.iter().filter(|t| t.lives_on(name)).count() as u32;
    let mut out = Vec::new();
    if ready(main) {
        out.push(ClusterLoad {
            name: DEFAULT_CLUSTER.into(),
            // The configured upstream carries no labels or hint: a selector never picks it.
            labels: BTreeMap::new(),
            tenants: count(DEFAULT_CLUSTER),
            capacity: None,
        });
    }
    for (name, m) in main.clusters.members().iter() {
        if ready(&m.state) {
            out.push(ClusterLoad {
                name: name.clone(),
                labels: m.record.labels.clone(),
                tenants: count(name),
                capacity: m.record.capacity,
            });
        }
    }
    out
}

/// `/readyz` with registered clusters: 200 while the store is synced and at least one
/// cluster is ready; the body names every cluster's state either way.
pub fn readyz_answer(
    store: bool,
    clusters: &[(String, bool)],
) -> http::Response<paddock_upstream::res_body::ResBody> {
    let names: Vec<String> = clusters
        .iter()
        .map(|(n, ok)| format!("{n}={}", if *ok { "ready" } else { "unreachable" }))
        .collect();
    let any = clusters.iter().any(|(_, ok)| *ok);
    if store && any {
        plain(
            http::StatusCode::OK,
            &format!("ok: clusters {}", names.join(" ")),
        )
    } else {
        plain(
            http::StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "not ready: store cache synced={store}, clusters {}",
                names.join(" ")
            ),
        )
    }
}

fn plain(
    code: http::StatusCode,
    body: &str,
) -> http::Response<paddock_upstream::res_body::ResBody> {
    let mut r = http::Response::new(paddock_upstream::body::full(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readyz_is_ready_while_one_cluster_is_and_names_each() {
        let both = [("default".to_string(), true), ("east".to_string(), false)];
        let r = readyz_answer(true, &both);
        assert_eq!(r.status(), http::StatusCode::OK);
        let none = [("default".to_string(), false), ("east".to_string(), false)];
        assert_eq!(
            readyz_answer(true, &none).status(),
            http::StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            readyz_answer(false, &both).status(),
            http::StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
