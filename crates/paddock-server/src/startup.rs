//! What `run` starts besides the listener: the replica's state and its background loops
//! (access-log flushing, bootstrap and discovery until ready, the catalog's tenant list,
//! certificate reload and discovery refresh).

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use paddock_store::{Store, TenantPhase};
use tokio_util::sync::CancellationToken;

use crate::front::ReloadingTls;
use crate::observe::metrics::Metrics;
use crate::state::AppState;
use crate::state::discovery::CatalogCache;
use crate::{
    ServerConfig, fair::limits, fair::queue, observe::access_log, observe::audit, observe::health,
    webhook::admission,
};
use paddock_reconciler::{provision, resync};
use paddock_upstream::error::ServerError;
use paddock_upstream::lease::Leadership;
use paddock_upstream::upstream::Upstream;

/// The replica's state, with the reconciler it shares the store and upstream with.
pub fn new_state(
    config: ServerConfig,
    store: Arc<Store>,
    upstream: Upstream,
    ca: paddock_pki::Ca,
    leadership: Leadership,
) -> Result<Arc<AppState>, ServerError> {
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
        apf_flow: config.limits.apf_flow,
        namespaces: Default::default(),
        prune_grace: config.prune_grace,
        cluster: paddock_core::clusters::cluster::DEFAULT_CLUSTER.to_string(),
        leadership: leadership.clone(),
    });
    let work_queue = (config.fair_queue.seats > 0)
        .then(|| queue::WorkQueue::new(config.fair_queue, metrics.fair_queue.clone()));
    Ok(Arc::new(AppState {
        reconciler,
        cache: store.cache(),
        store,
        upstream,
        catalogs: CatalogCache::new(),
        ca: ArcSwap::from_pointee(ca),
        usage: {
            let usage = Arc::default();
            metrics.tenant.clusters.set(vec![Arc::clone(&usage)]);
            usage
        },
        metrics,
        audit,
        shutdown: stop,
        bootstrapped: std::sync::atomic::AtomicBool::new(false),
        health: health::UpstreamHealth::new(),
        draining: std::sync::atomic::AtomicBool::new(false),
        limiter: limits::Limiter::default(),
        work_queue,
        quota_locks: crate::state::QuotaLocks::default(),
        access_log: access_log::AccessLog::new(config.log_format, config.access_log),
        clusters: Default::default(),
        leadership,
        activity: Default::default(),
        views: Default::default(),
        config,
    }))
}

/// The access log's batches leave at least this often.
pub async fn flush_access_log_loop(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(access_log::FLUSH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => state.access_log.flush(),
            _ = state.shutdown.cancelled() => break,
        }
    }
}

/// Bootstrap (and the admission webhook's installation) and discovery, retried with backoff
/// until both succeed; then the work a crash interrupted, and the tenant resync (the leader's,
/// driven by watches).
pub async fn bootstrap_loop(state: Arc<AppState>, admission_url: Option<String>) {
    let mut delay = Duration::from_millis(200);
    loop {
        let boot = provision::bootstrap(&state.upstream, state.config.tenant_priority_shares).await;
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
    finish_interrupted_work(&state).await;
    // Grants, RBAC mirrors, billing stamps and FlowSchemas: repaired at each gain of the
    // leadership, then kept in step from watches (docs/operations.md "Leadership").
    tokio::spawn(resync::resync_loop(state.reconciler.clone()));
    tokio::spawn(paddock_reconciler::kept::keep_loop(
        state.reconciler.clone(),
    ));
    // Tenants whose time-to-live has run out, deleted by the leader.
    tokio::spawn(crate::lifecycle::expiry::expiry_loop(state.clone()));
    // Idle tenants put to sleep, and sleeping ones woken, by the leader.
    tokio::spawn(crate::lifecycle::sleep::sleep_loop(state.clone()));
    // The in-cluster path with paddock in the cluster: tenants' `kubernetes` endpoints follow
    // paddock's own Service (docs/inside.md).
    if let Some((ns, name)) = state
        .config
        .admission
        .in_cluster
        .as_ref()
        .and_then(|c| c.service.clone())
    {
        tokio::spawn(paddock_reconciler::api_endpoints::mirror_loop(
            state.reconciler.clone(),
            ns,
            name,
        ));
    }
    // Every replica: the namespace names a new tenant's prefix is checked against.
    let r = &state.reconciler;
    tokio::spawn(
        r.namespaces
            .clone()
            .run(r.upstream.clone(), r.shutdown.clone()),
    );
}

/// Finishes deletions a crash interrupted and puts platform grants in step. (Tenants'
/// FlowSchemas are the leader's resync's: applying each at every replica start was a thousand
/// requests at a thousand tenants.)
async fn finish_interrupted_work(state: &Arc<AppState>) {
    for t in state.cache.tenants() {
        // Another cluster's tenant: its cluster's member does this (clusters/).
        if state.reconciler.owns(&t) && t.phase == TenantPhase::Terminating {
            crate::clusters::span_tenant::resume_deletion(state, (*t).clone());
        }
    }
    crate::tasks::platform_grant::sync_all(state).await;
}

/// Follows the replica's leadership into `paddock_leader` and the transitions counter (the
/// election itself logs each gain and loss).
pub async fn leadership_metrics_loop(state: Arc<AppState>) {
    let mut rx = state.leadership.subscribe();
    let mut was = *rx.borrow_and_update();
    state.metrics.leader.set(i64::from(was));
    loop {
        tokio::select! {
            r = rx.changed() => if r.is_err() { return },
            _ = state.shutdown.cancelled() => return,
        }
        let now = *rx.borrow_and_update();
        state.metrics.leader.set(i64::from(now));
        if now != was {
            state.metrics.leader_transitions.inc();
            was = now;
        }
    }
}

/// Keeps the catalog's list of tenant ids (and the limiter's) in step with the store.
pub async fn known_tenants_loop(state: Arc<AppState>) {
    let mut changes = state.cache.subscribe();
    loop {
        let ids = state.known_tenant_ids();
        let known: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        state.limiter.retain(|t| known.contains(t.as_str()));
        state.catalogs.set_known_tenants(ids);
        crate::tasks::platform_grant::refresh_catalog(&state);
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// Periodic work: certificate reload (serving certificate and tenant CA), and a discovery
/// refresh every sixth tick.
pub async fn reload_loop(state: Arc<AppState>, tls: Arc<ReloadingTls>) {
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
}

/// The user the front-proxy start-up check asserts: no tenant's, and granted nothing.
const FRONT_PROXY_PROBE_USER: &str = "paddock:front-proxy-check";

/// Builds paddock's upstream: its own credential, plus the front-proxy connection in
/// front-proxy mode (`upstream_identity_mode`).
pub fn upstream(config: &ServerConfig) -> Result<Upstream, ServerError> {
    let cred = paddock_upstream::upstream::UpstreamCredential::from_kubeconfig(
        &config.upstream_kubeconfig,
    )?;
    let up = Upstream::new(cred, config.upstream_timeout)?;
    match config
        .upstream_identity
        .load()
        .map_err(ServerError::Config)?
    {
        Some((cert, key)) => up.with_front_proxy(&cert, &key),
        None => Ok(up),
    }
}

/// In front-proxy mode, that the apiserver takes paddock's front-proxy assertions: a
/// SelfSubjectReview asserting [`FRONT_PROXY_PROBE_USER`] must come back as that user. A
/// certificate the apiserver does not trust (another CA, a CN outside
/// `--requestheader-allowed-names`) makes it someone else, and paddock refuses to start rather
/// than serve every tenant request as that someone.
pub async fn check_front_proxy(up: &Upstream) -> Result<(), ServerError> {
    if !up.is_front_proxy() {
        return Ok(());
    }
    let body =
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let req = http::Request::post(up.uri("/apis/authentication.k8s.io/v1/selfsubjectreviews")?)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .header("impersonate-user", FRONT_PROXY_PROBE_USER)
        .body(paddock_upstream::body::full_up(bytes::Bytes::from(
            body.to_string(),
        )))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let deadline = up.deadline();
    let resp = up
        .send_until(req, paddock_upstream::upstream::Route::Short, deadline)
        .await?;
    let status = resp.status();
    let raw = up
        .collect_until(resp.into_body(), 64 * 1024, deadline)
        .await?;
    let answer: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_default();
    let got = answer["status"]["userInfo"]["username"].as_str();
    if status.is_success() && got == Some(FRONT_PROXY_PROBE_USER) {
        tracing::info!("front proxy: the apiserver takes paddock's X-Remote-* identities");
        return Ok(());
    }
    Err(ServerError::Config(format!(
        "front_proxy_client_cert: the apiserver at {} does not take paddock as its front proxy (asserted {FRONT_PROXY_PROBE_USER:?}, answer {status} as {}): the certificate must be signed by its --requestheader-client-ca-file and its CN be in --requestheader-allowed-names",
        up.server(),
        got.unwrap_or("nobody")
    )))
}
