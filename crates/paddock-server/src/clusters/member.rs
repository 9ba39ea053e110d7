//! A registered cluster's per-cluster state: an `AppState` of its own (its upstream pools,
//! discovery catalog, health, bootstrap flag and reconciler) sharing the replica's store,
//! cache, metrics, audit and configuration, and the background work that keeps it current
//! (probe, bootstrap, discovery refresh, RBAC resync). Removing the cluster cancels `stop`,
//! which ends all of it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use arc_swap::ArcSwap;
use paddock_store::ClusterRecord;

use crate::observe::health::UpstreamHealth;
use crate::state::discovery::CatalogCache;
use crate::state::{AppState, ClusterMember};
use paddock_upstream::error::ServerError;
use paddock_upstream::upstream::{Upstream, UpstreamCredential};

/// How often a non-default cluster's discovery is read again (the default cluster's is read
/// by the replica's own periodic task).
const DISCOVERY_REFRESH: Duration = Duration::from_secs(60);

/// paddock's credential for a registered cluster.
pub fn credential(rec: &ClusterRecord) -> UpstreamCredential {
    UpstreamCredential {
        server: rec.server.trim_end_matches('/').to_string(),
        ca_pem: rec.ca_pem.clone().into_bytes(),
        client_cert_pem: rec.client_cert_pem.clone().map(String::into_bytes),
        client_key_pem: rec.client_key_pem.clone().map(String::into_bytes),
        token: rec.token.clone(),
        token_file: None,
    }
}

/// Whether two records would connect the same way (otherwise the member is rebuilt).
pub fn same_connection(a: &ClusterRecord, b: &ClusterRecord) -> bool {
    a.server == b.server
        && a.ca_pem == b.ca_pem
        && a.client_cert_pem == b.client_cert_pem
        && a.client_key_pem == b.client_key_pem
        && a.token == b.token
}

/// Builds a cluster's state from the replica's and starts its background work.
pub fn start(main: &Arc<AppState>, record: ClusterRecord) -> Result<ClusterMember, ServerError> {
    let upstream = Upstream::new(credential(&record), main.config.upstream_timeout)?;
    let stop = main.shutdown.child_token();
    let reconciler = Arc::new(paddock_reconciler::Reconciler {
        upstream: upstream.clone(),
        store: main.store.clone(),
        cache: main.cache.clone(),
        shutdown: stop.clone(),
        tenant_priority_shares: main.config.tenant_priority_shares,
        apf_flow: main.config.limits.apf_flow,
        // Not kept for a registered cluster: its prefix check lists (creations there are few).
        namespaces: Default::default(),
        prune_grace: main.config.prune_grace,
        cluster: record.name.clone(),
        leadership: main.leadership.clone(),
    });
    let state = Arc::new(AppState {
        reconciler,
        config: main.config.clone(),
        upstream,
        store: main.store.clone(),
        cache: main.cache.clone(),
        catalogs: CatalogCache::new(),
        ca: ArcSwap::new(main.ca.load_full()),
        metrics: main.metrics.clone(),
        usage: Arc::default(),
        shutdown: stop.clone(),
        // The replica's router logs and meters every request; nothing is logged twice.
        access_log: crate::observe::access_log::AccessLog::new(main.config.log_format, false),
        audit: main.audit.clone(),
        limiter: crate::fair::limits::Limiter::default(),
        // The replica's queue is taken before a cluster is routed to; shared all the same.
        work_queue: main.work_queue.clone(),
        bootstrapped: std::sync::atomic::AtomicBool::new(false),
        health: UpstreamHealth::new(),
        draining: std::sync::atomic::AtomicBool::new(false),
        quota_locks: crate::state::QuotaLocks::default(),
        clusters: main.clusters.clone(),
        leadership: main.leadership.clone(),
        activity: main.activity.clone(),
        views: Default::default(),
    });
    tokio::spawn(crate::tasks::probe_loop(
        state.clone(),
        record.name.clone(),
        false,
    ));
    // The cluster's usage figures, kept from its own watches (ended with `stop`).
    tokio::spawn(crate::state::usage::refresh_loop(state.clone()));
    // paddock's webhook on this cluster too, when its apiserver's client CA is registered and
    // the webhook is served: the same URL (it must reach every replica from that cluster).
    let webhook_url = record
        .admission_client_ca_pem
        .as_ref()
        .and(paddock_reconciler::provision::admission_url());
    // The namespace templates kept in step there too (drift repaired, template changes
    // stamped): the sync waits for the bootstrap and ends with `stop`.
    tokio::spawn(crate::tasks::template_sync::sync_loop(
        state.clone(),
        record.name.clone(),
    ));
    tokio::spawn(bootstrap_then_resync(
        state.clone(),
        record.name.clone(),
        webhook_url,
    ));
    Ok(ClusterMember {
        record,
        state,
        stop: Arc::new(crate::state::StopOnDrop(stop)),
    })
}

/// Installs the platform objects and reads discovery (retrying until both succeed), then
/// repairs and resyncs the tenants that live on the cluster and refreshes discovery.
async fn bootstrap_then_resync(state: Arc<AppState>, name: String, webhook_url: Option<String>) {
    let mut delay = Duration::from_millis(200);
    loop {
        let boot = paddock_reconciler::provision::bootstrap_with(
            &state.upstream,
            state.config.tenant_priority_shares,
            webhook_url.is_some(),
        )
        .await;
        let boot = match (boot, &webhook_url) {
            (Ok(()), Some(url)) => crate::webhook::admission::install(&state, url).await,
            (b, _) => b,
        };
        let disc = state.catalogs.refresh(&state.upstream).await;
        match (boot, disc) {
            (Ok(()), Ok(_)) => break,
            (b, d) => {
                tracing::warn!(cluster = %name, bootstrap = ?b.err(), discovery = ?d.err(), "cluster not ready; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = state.shutdown.cancelled() => return,
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
    state.bootstrapped.store(true, Ordering::Release);
    tracing::info!(cluster = %name, "cluster bootstrapped");
    // Finish the deletions of this cluster's tenants that a crash interrupted.
    for t in state.cache.tenants() {
        if state.reconciler.owns(&t) && t.phase == paddock_store::TenantPhase::Terminating {
            super::span_tenant::resume_deletion(&state, (*t).clone());
        }
    }
    tokio::spawn(paddock_reconciler::resync::resync_loop(
        state.reconciler.clone(),
    ));
    // The shared objects (guard policies, APF level and FlowSchema, cluster-scope role) kept
    // from watches there too, as bootstrapped (with or without paddock's webhook).
    tokio::spawn(paddock_reconciler::kept::keep_loop_with(
        state.reconciler.clone(),
        webhook_url.is_some(),
    ));
    // Keep the catalog's list of tenant ids in step with the store (messages are scrubbed of
    // other tenants' names), and discovery fresh.
    let mut changes = state.cache.subscribe();
    let mut refresh = tokio::time::interval(DISCOVERY_REFRESH);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    refresh.tick().await;
    loop {
        state.catalogs.set_known_tenants(state.known_tenant_ids());
        crate::tasks::platform_grant::refresh_catalog(&state);
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = refresh.tick() => {
                if let Err(e) = state.catalogs.refresh(&state.upstream).await {
                    tracing::warn!(cluster = %name, error = %e, "discovery refresh failed");
                }
            }
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// Removes paddock's webhook configurations from a cluster that was unregistered (best effort,
/// bounded: the cluster may be gone already).
pub async fn uninstall_webhook(state: Arc<AppState>, name: String) {
    let base = "/apis/admissionregistration.k8s.io/v1";
    for resource in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ] {
        let path = format!(
            "{base}/{resource}/{}",
            crate::webhook::admission::WEBHOOK_CONFIGURATION
        );
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            paddock_upstream::upjson::delete(&state.upstream, &path),
        )
        .await;
        if !matches!(r, Ok(Ok(()))) {
            tracing::warn!(cluster = %name, resource, "could not remove paddock's webhook from the removed cluster");
        }
    }
}
