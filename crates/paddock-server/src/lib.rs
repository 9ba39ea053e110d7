//! paddock-server: the I/O shell around `paddock-core`. It terminates TLS, authenticates
//! tenants by client certificate, runs each request through the translation core, talks to
//! the upstream apiserver as the impersonated tenant user, and serves the admin API.

pub mod absent;
pub mod access_log;
pub mod admin;
pub mod admin_metering;
pub mod admission;
pub mod answer;
pub mod audit;
pub mod audit_answer;
pub mod auth;
pub mod caller;
pub mod claims_gc;
pub mod clusters;
pub mod config;
pub mod conn;
pub mod discovery;
pub mod fair_gate;
pub mod fair_queue;
pub mod fanout;
pub mod front;
pub mod health;
pub mod impersonate;
pub mod limits;
pub mod metering;
#[cfg(test)]
mod metering_tests;
pub mod metrics;
pub mod outbound;
pub mod policy_admin;
pub mod proxy;
pub mod quota;
pub mod quota_api;
pub mod reviews;
pub mod rewrite;
pub mod router;
pub mod stack;
pub mod state;
pub mod tasks;
pub mod templates_api;
pub mod templates_sync;
pub mod usage;

// The upstream client and the reconciler are crates of their own; their modules keep the
// paths they had here (`crate::upstream`, `crate::provision`, ...).
pub use paddock_reconciler::{billing, lifecycle, provision, prune, rbac_sync, resync, rights};
pub use paddock_upstream::{body, error, limit, upjson, upstream};

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use paddock_store::{Store, TenantPhase};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::{LogFormat, ServerConfig, StoreKind};
pub use error::ServerError;

use crate::discovery::CatalogCache;
use crate::front::ReloadingTls;
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::upstream::{Upstream, UpstreamCredential};

/// How long the start-up self-check waits for an apiserver that does not answer.
const SELF_CHECK_PATIENCE: Duration = Duration::from_secs(60);

/// Opens the configured store.
pub async fn open_store(config: &ServerConfig) -> Result<Store, ServerError> {
    Ok(match config.store {
        StoreKind::Embedded => Store::open_embedded(&config.data_dir).await?,
        StoreKind::Etcd => Store::open_etcd_with(config.etcd_options()).await?,
    })
}

/// Runs the server until `shutdown` is cancelled, then drains as a load balancer expects
/// (docs/operations.md "Shutdown"): `/readyz` answers 503 for `shutdown_delay` while
/// everything is still served, then the listener closes, open watches end cleanly, in-flight
/// requests get `shutdown_grace` to finish, and it returns.
pub async fn run(config: ServerConfig, shutdown: CancellationToken) -> Result<(), ServerError> {
    config.validate().map_err(ServerError::Config)?;
    let cred = UpstreamCredential::from_kubeconfig(&config.upstream_kubeconfig)?;
    let upstream = Upstream::new(cred, config.upstream_timeout)?;
    let ca = paddock_pki::Ca::load(&config.ca_cert(), &config.ca_key())
        .map_err(|e| ServerError::Config(format!("certs_dir: tenant CA: {e}")))?;
    let tls = Arc::new(ReloadingTls::load(
        config.serving_cert(),
        config.serving_key(),
        config.ca_cert(),
    )?);
    let store = Arc::new(open_store(&config).await?);
    // Before anything is written: refuse to start without the upstream rights paddock needs.
    rights::self_check(
        &upstream,
        config.tenant_priority_shares > 0,
        SELF_CHECK_PATIENCE,
    )
    .await?;
    record_admin_certificate(&config, &store).await;
    let admission = admission::AdmissionServer::bind(&config).await?;
    provision::set_admission_webhook(admission.is_some());
    if admission.is_none() {
        tracing::warn!(
            "admission webhook OFF (no admission_listen): tenant policies are NOT enforced upstream: \
             priority classes, node pools, nodeName, tolerations, Endpoints, ExternalName, Ingress hosts, \
             per-tenant pod security and NodePort/LoadBalancer settings (docs/security.md \"Tenant policy\")"
        );
    }
    let admission_url = admission.as_ref().map(|a| a.url.clone());
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError::Config(format!("listen: cannot bind {}: {e}", config.listen)))?;
    tracing::info!(listen = %config.listen, upstream = upstream.server(), store = ?config.store, "paddock serving");

    let metrics = Arc::new(Metrics::new());
    // paddock's own stop: cancelled after the drain delay, not at the signal itself (see
    // `drain_on`), so the audit trail records what is served while draining.
    let stop = CancellationToken::new();
    let audit = audit::Audit::start(&config.audit, metrics.audit_dropped.clone(), stop.clone())?;
    let reconciler = Arc::new(paddock_reconciler::Reconciler {
        upstream: upstream.clone(),
        store: store.clone(),
        cache: store.cache(),
        shutdown: stop.clone(),
        tenant_priority_shares: config.tenant_priority_shares,
        prune_grace: config.prune_grace,
        cluster: paddock_core::cluster::DEFAULT_CLUSTER.to_string(),
    });
    let work_queue = (config.fair_queue.seats > 0)
        .then(|| fair_queue::WorkQueue::new(config.fair_queue, metrics.fair_queue.clone()));
    let state = Arc::new(AppState {
        reconciler,
        cache: store.cache(),
        store,
        upstream,
        catalogs: CatalogCache::new(),
        ca: ArcSwap::from_pointee(ca),
        metrics,
        audit,
        shutdown: stop,
        bootstrapped: std::sync::atomic::AtomicBool::new(false),
        health: health::UpstreamHealth::new(),
        draining: std::sync::atomic::AtomicBool::new(false),
        limiter: limits::Limiter::default(),
        work_queue,
        quota_locks: quota::QuotaLocks::default(),
        access_log: access_log::AccessLog::new(config.log_format, config.access_log),
        clusters: Default::default(),
        config,
    });
    // Namespace templates: where the reconciler's set-up finds them, and their sync loop.
    paddock_reconciler::templates::set_template_source(Arc::new(templates_sync::StoreTemplates(
        state.clone(),
    )));
    tokio::spawn(templates_sync::sync_loop(state.clone()));
    tokio::spawn(clusters::sync_loop(state.clone()));
    tokio::spawn(drain_on(state.clone(), shutdown));
    if let Some(a) = admission {
        tokio::spawn(a.serve(state.clone()));
        tokio::spawn(claims_gc::sweep_loop(state.clone()));
    }
    tokio::spawn(tasks::probe_loop(state.clone()));
    // The access log's batches leave at least this often.
    {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(access_log::FLUSH_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => state.access_log.flush(),
                    _ = state.shutdown.cancelled() => break,
                }
            }
        });
    }

    // Bootstrap and discovery retry in the background until they succeed; /readyz reports
    // when they have.
    {
        let state = state.clone();
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(200);
            loop {
                let boot =
                    provision::bootstrap(&state.upstream, state.config.tenant_priority_shares)
                        .await;
                let boot = match (boot, &admission_url) {
                    (Ok(()), Some(url)) => admission::install(&state, url).await,
                    (b, _) => b,
                };
                let disc = state.catalogs.refresh(&state.upstream).await;
                match (boot, disc) {
                    (Ok(()), Ok(_)) => {
                        state
                            .bootstrapped
                            .store(true, std::sync::atomic::Ordering::Release);
                        break;
                    }
                    (b, d) => {
                        tracing::warn!(bootstrap = ?b.err(), discovery = ?d.err(), "upstream not ready; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(delay) => {}
                            _ = state.shutdown.cancelled() => return,
                        }
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                }
            }
            // Finish deletions a crash interrupted; give tenants created by an older paddock
            // their own APF FlowSchema.
            for t in state.cache.tenants() {
                if !state.reconciler.owns(&t) {
                    // Another cluster's tenant: its cluster's member does this (clusters/).
                } else if t.phase == TenantPhase::Terminating {
                    tokio::spawn(lifecycle::finish_tenant_deletion(
                        state.reconciler.clone(),
                        t.id.clone(),
                    ));
                } else if let Err(e) = provision::ensure_tenant_flow_schema(
                    &state.upstream,
                    &t.id,
                    state.config.tenant_priority_shares,
                )
                .await
                {
                    tracing::warn!(tenant = %t.id, error = %e, "could not put the tenant's FlowSchema in place");
                }
            }
            // Least-privilege grants and RBAC mirrors: repaired at start, resynced periodically.
            tokio::spawn(resync::resync_loop(state.reconciler.clone()));
        });
    }
    tokio::spawn(prune::prune_loop(state.reconciler.clone()));
    tokio::spawn(usage::refresh_loop(state.clone()));
    tokio::spawn(quota::recount_loop(state.clone()));
    // Keep the catalog's list of tenant ids in step with the store.
    {
        let state = state.clone();
        tokio::spawn(async move {
            let mut changes = state.cache.subscribe();
            loop {
                let ids: Vec<String> = state
                    .cache
                    .tenants()
                    .iter()
                    .map(|t| t.id.as_str().to_string())
                    .collect();
                let known: std::collections::HashSet<&str> =
                    ids.iter().map(String::as_str).collect();
                state.limiter.retain(|t| known.contains(t.as_str()));
                state.catalogs.set_known_tenants(ids);
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    _ = state.shutdown.cancelled() => return,
                }
            }
        });
    }
    // Periodic work: certificate reload, discovery refresh.
    {
        let state = state.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(state.config.cert_reload_interval);
            let mut n: u64 = 0;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = state.shutdown.cancelled() => return,
                }
                if tls.reload_if_changed() {
                    match paddock_pki::Ca::load(&state.config.ca_cert(), &state.config.ca_key()) {
                        Ok(ca) => state.ca.store(Arc::new(ca)),
                        Err(e) => {
                            tracing::warn!(error = %e, "tenant CA changed but could not be loaded")
                        }
                    }
                }
                n += 1;
                if n.is_multiple_of(6)
                    && let Err(e) = state.catalogs.refresh(&state.upstream).await
                {
                    tracing::warn!(error = %e, "discovery refresh failed");
                }
            }
        });
    }
    front::serve(state, listener, tls).await
}

/// At `requested`: `/readyz` turns 503 at once, so that load balancers stop sending new
/// connections here; everything is still served for `shutdown_delay` (connections already
/// open keep arriving until the balancer has noticed); then the server's shutdown starts
/// (listener closed, watches ended cleanly, in-flight requests finish).
async fn drain_on(state: Arc<AppState>, requested: CancellationToken) {
    requested.cancelled().await;
    state
        .draining
        .store(true, std::sync::atomic::Ordering::Release);
    let delay = state.config.shutdown_delay;
    tracing::info!(
        delay_ms = delay.as_millis() as u64,
        "shutdown requested: /readyz answers 503; serving on until the delay is over"
    );
    tokio::time::sleep(delay).await;
    state.shutdown.cancel();
}

/// Records the platform-admin certificate written by `paddock ca init` (offline, so it could
/// not be recorded then), so that `paddock cert revoke` works on it like on any other.
async fn record_admin_certificate(config: &ServerConfig, store: &Store) {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let path = config.certs_dir.join("admin.crt");
    let Ok(der) = CertificateDer::from_pem_file(&path) else {
        return;
    };
    let Ok(peer) = paddock_pki::parse_peer_cert(der.as_ref()) else {
        return;
    };
    match store.list_certs(None).await {
        Ok(certs) if certs.iter().any(|c| c.serial_hex == peer.serial_hex) => {}
        Ok(_) => {
            let not_after = time::OffsetDateTime::from(peer.not_after)
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            let rec = paddock_store::CertRecord {
                serial_hex: peer.serial_hex.clone(),
                tenant: None,
                user: peer.user.clone(),
                groups: peer.groups.clone(),
                not_after,
                revoked: false,
                revoked_at: None,
            };
            if let Err(e) = store.record_cert(&rec).await {
                tracing::warn!(error = %e, "could not record the platform-admin certificate");
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not list certificates at startup"),
    }
}
