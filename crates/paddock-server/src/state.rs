//! Shared state of one replica.

use std::sync::Arc;

use arc_swap::ArcSwap;
use paddock_core::Catalog;
use paddock_pki::Ca;
use paddock_store::{Store, StoreCache};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::discovery::CatalogCache;
use crate::error::ServerError;
use crate::metrics::Metrics;
use crate::upstream::Upstream;

/// Everything a request handler needs.
pub struct AppState {
    /// What the reconciling tasks share (the same upstream pools, store and shutdown).
    pub reconciler: Arc<paddock_reconciler::Reconciler>,
    /// Validated configuration.
    pub config: ServerConfig,
    /// Upstream pools and credential.
    pub upstream: Upstream,
    /// Tenant store (writes go here).
    pub store: Arc<Store>,
    /// Its in-memory cache (every read on the request path goes here).
    pub cache: StoreCache,
    /// Discovery catalog.
    pub catalogs: CatalogCache,
    /// The tenant CA, reloaded from disk with the serving certificate.
    pub ca: ArcSwap<Ca>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Cancelled at shutdown: open watches end cleanly.
    pub shutdown: CancellationToken,
    /// The access log.
    pub access_log: crate::access_log::AccessLog,
    /// The tenant audit trail, when a policy is configured.
    pub audit: Option<Arc<crate::audit::Audit>>,
    /// Per-tenant fair-share counters of this replica.
    pub limiter: crate::limits::Limiter,
    /// Set once the platform-wide upstream objects (guard, roles) are installed.
    pub bootstrapped: std::sync::atomic::AtomicBool,
    /// Whether the upstream answers (probed; `/readyz`), and the signal that ends watches.
    pub health: crate::health::UpstreamHealth,
    /// Set at SIGTERM: `/readyz` answers 503 while requests are still served.
    pub draining: std::sync::atomic::AtomicBool,
    /// This replica's per-tenant serialisation of quota ledger writes.
    pub quota_locks: QuotaLocks,
}

impl AppState {
    /// The current catalog, reading discovery if it never was.
    pub async fn catalog(&self) -> Result<Arc<Catalog>, ServerError> {
        match self.catalogs.get() {
            Some(c) => Ok(c),
            None => self.catalogs.refresh(&self.upstream).await,
        }
    }
}

/// This replica's serialisation of ledger writes per tenant: swaps of one replica queue
/// here instead of losing to each other in the store; replicas still race in the store.
#[derive(Default)]
pub struct QuotaLocks {
    locks: parking_lot::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl QuotaLocks {
    pub(crate) fn of(&self, tid: &paddock_core::TenantId) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .entry(tid.as_str().to_string())
            .or_default()
            .clone()
    }
}
