//! paddock-server: the I/O shell around `paddock-core`. It terminates TLS, authenticates
//! tenants by client certificate, runs each request through the translation core, talks to
//! the upstream apiserver as the impersonated tenant user, and serves the admin API.

pub mod admin;
pub mod auth;
pub mod body;
pub mod clusters;
pub mod config;
pub mod fair;
pub mod front;
pub mod lifecycle;
pub mod observe;
pub mod proxy;
pub mod stack;
pub mod startup;
pub mod state;
pub mod tasks;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use paddock_reconciler::{provision, prune, rights};
use paddock_store::Store;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::{LogFormat, ServerConfig, StoreKind};
use paddock_upstream::error::ServerError;
use paddock_upstream::lease::{self, Leadership};

use crate::front::ReloadingTls;
use crate::state::AppState;

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
    let upstream = startup::upstream(&config)?;
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
        config
            .leader
            .enabled
            .then_some(config.leader.lease.namespace.as_str()),
        SELF_CHECK_PATIENCE,
    )
    .await?;
    startup::check_front_proxy(&upstream).await?;
    record_admin_certificate(&config, &store).await;
    let admission = webhook::admission::AdmissionServer::bind(&config).await?;
    provision::set_admission_webhook(admission.is_some());
    provision::set_in_cluster_endpoints(
        config
            .admission
            .in_cluster
            .as_ref()
            .map(|c| c.endpoints.clone())
            .unwrap_or_default(),
    );
    if admission.is_none() {
        tracing::warn!(
            "admission webhook OFF (no admission_listen): tenant policies are NOT enforced upstream: \
             priority classes, node pools, nodeName, tolerations, Endpoints, ExternalName, Ingress hosts, \
             per-tenant pod security and NodePort/LoadBalancer settings (docs/security.md \"Tenant policy\")"
        );
    }
    let admission_url = admission.as_ref().map(|a| a.url.clone());
    if let Some(url) = &admission_url {
        provision::set_webhook_relay_url(url.clone());
    }
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError::Config(format!("listen: cannot bind {}: {e}", config.listen)))?;
    tracing::info!(listen = %config.listen, upstream = upstream.server(), store = ?config.store, "paddock serving");

    let (leadership, election) = if config.leader.enabled {
        let (tx, l) = Leadership::new();
        (l, Some(tx))
    } else {
        tracing::info!(
            "leader election off (leader_enabled = false): this replica does the once-per-fleet work"
        );
        (Leadership::always(), None)
    };
    let release_bound = config.leader.lease.renew_deadline + Duration::from_secs(1);
    let state = startup::new_state(config, store, upstream, ca, leadership)?;
    if let Some(a) = &admission {
        // Before the first cluster sync, which adds the registered clusters' CAs.
        let _ = state.clusters.admission_callers.set(a.callers.clone());
    }
    if let Some(url) = &admission_url {
        // The tenants' own webhooks are called through paddock (docs/webhooks.md).
        let ca_pem = std::fs::read_to_string(state.config.ca_cert()).map_err(|e| {
            ServerError::Config(format!("reading {}: {e}", state.config.ca_cert().display()))
        })?;
        state.catalogs.set_webhook_relay(Some(Arc::new(
            paddock_core::catalog::webhook_relay::WebhookRelay {
                url: url.clone(),
                ca_pem,
            },
        )));
    }
    // Stopped at the signal, not after the drain delay: the Lease is handed over at once.
    let election = election.map(|tx| {
        let s = state.config.leader.lease.clone();
        tokio::spawn(lease::run(state.upstream.clone(), s, tx, shutdown.clone()))
    });
    tokio::spawn(startup::leadership_metrics_loop(state.clone()));
    // Namespace templates: where the reconciler's set-up finds them, and their sync loop.
    paddock_reconciler::templates::set_template_source(Arc::new(tasks::templates::StoreTemplates(
        state.clone(),
    )));
    tokio::spawn(tasks::template_sync::sync_loop(
        state.clone(),
        paddock_core::clusters::cluster::DEFAULT_CLUSTER.to_string(),
    ));
    tokio::spawn(clusters::sync_loop(state.clone()));
    tokio::spawn(clusters::span_resync::resync_loop(state.clone()));
    tokio::spawn(clusters::span_join::join_loop(state.clone()));
    tokio::spawn(drain_on(state.clone(), shutdown));
    if let Some(a) = admission {
        tokio::spawn(a.serve(state.clone()));
        tokio::spawn(tasks::claims_gc::sweep_loop(state.clone()));
    }
    tokio::spawn(tasks::probe_loop(
        state.clone(),
        paddock_core::clusters::cluster::DEFAULT_CLUSTER.to_string(),
        true,
    ));
    tokio::spawn(startup::flush_access_log_loop(state.clone()));
    // Bootstrap and discovery retry in the background until they succeed; /readyz reports
    // when they have.
    tokio::spawn(startup::bootstrap_loop(state.clone(), admission_url));
    tokio::spawn(prune::prune_loop(state.reconciler.clone()));
    tokio::spawn(state::usage::refresh_loop(state.clone()));
    tokio::spawn(webhook::recount::recount_loop(state.clone()));
    tokio::spawn(startup::known_tenants_loop(state.clone()));
    tokio::spawn(startup::reload_loop(state.clone(), tls.clone()));
    let served = front::serve(state, listener, tls).await;
    // The release of the Lease, before the process ends.
    if let Some(e) = election
        && tokio::time::timeout(release_bound, e).await.is_err()
    {
        tracing::warn!("leader election did not end in time");
    }
    served
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
