//! Shared state of one replica.

pub mod activity;
pub mod discovery;
pub mod nsmap;
pub mod usage;
pub mod views;

use std::sync::Arc;

use arc_swap::ArcSwap;
use paddock_core::Catalog;
use paddock_pki::Ca;
use paddock_store::{Store, StoreCache};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::observe::metrics::Metrics;
use crate::state::discovery::CatalogCache;
use paddock_upstream::error::ServerError;
use paddock_upstream::upstream::Upstream;

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
    /// This cluster's usage figures (docs/metering.md; every cluster's are added up on
    /// `/metrics` and in a spanning tenant's report).
    pub usage: Arc<crate::observe::metering::UsageFigures>,
    /// Cancelled at shutdown: open watches end cleanly.
    pub shutdown: CancellationToken,
    /// The access log.
    pub access_log: crate::observe::access_log::AccessLog,
    /// The tenant audit trail, when a policy is configured.
    pub audit: Option<Arc<crate::observe::audit::Audit>>,
    /// Per-tenant fair-share counters of this replica.
    pub limiter: crate::fair::limits::Limiter,
    /// The replica's tenant-fair work queue (`fair_queue_seats`; none when 0).
    pub work_queue: Option<Arc<crate::fair::queue::WorkQueue>>,
    /// Set once the platform-wide upstream objects (guard, roles) are installed.
    pub bootstrapped: std::sync::atomic::AtomicBool,
    /// Whether the upstream answers (probed; `/readyz`), and the signal that ends watches.
    pub health: crate::observe::health::UpstreamHealth,
    /// Set at SIGTERM: `/readyz` answers 503 while requests are still served.
    pub draining: std::sync::atomic::AtomicBool,
    /// This replica's per-tenant serialisation of quota ledger writes.
    pub quota_locks: QuotaLocks,
    /// The registered upstream clusters besides the configured one (docs/clusters.md).
    pub clusters: Arc<ClusterRegistry>,
    /// Whether this replica is the one that does the once-per-fleet background work (the
    /// leader election; always with `leader_enabled = false`). A member cluster's state
    /// shares the replica's.
    pub leadership: paddock_upstream::lease::Leadership,
    /// The tenants' activity this replica saw, and the wakes it asked (docs/operations.md
    /// "Sleep and wake"); a member cluster's state shares the replica's.
    pub activity: Arc<activity::Activity>,
    /// Each user's own view: which namespaces upstream said a moment ago are a user's
    /// (proxy/views). Per cluster state: the answers are that cluster's.
    pub views: views::UserViews,
}

impl AppState {
    /// The current catalog, reading discovery if it never was.
    pub async fn catalog(&self) -> Result<Arc<Catalog>, ServerError> {
        match self.catalogs.get() {
            Some(c) => Ok(c),
            None => self.catalogs.refresh(&self.upstream).await,
        }
    }

    /// Every tenant id in the store cache: the catalog scrubs them from upstream's messages.
    pub fn known_tenant_ids(&self) -> Vec<String> {
        self.cache
            .tenants()
            .iter()
            .map(|t| t.id.as_str().to_string())
            .collect()
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

/// The registered upstream clusters of this replica besides the configured one
/// (docs/clusters.md), kept in line with the store by `clusters::sync`.
#[derive(Default)]
pub struct ClusterRegistry {
    pub(crate) members: ArcSwap<std::collections::BTreeMap<String, Arc<ClusterMember>>>,
    /// Serialises syncs: two at once would start a member twice.
    pub(crate) syncing: tokio::sync::Mutex<()>,
    /// Where each namespace of a spanning tenant lives (`clusters::span`).
    pub namespaces: crate::state::nsmap::NamespaceMap,
    /// The default cluster's state (the replica's own), for requests served from a member's.
    pub(crate) main: std::sync::OnceLock<std::sync::Weak<AppState>>,
    /// The admission listener's callers, when it is served: each registered cluster with an
    /// admission client CA is added as it is registered (`clusters::sync`).
    pub admission_callers: std::sync::OnceLock<Arc<paddock_pki::callers::AdmissionCallers>>,
}

impl ClusterRegistry {
    /// The member named `name`, if registered and known here.
    pub fn member(&self, name: &str) -> Option<Arc<ClusterMember>> {
        self.members.load().get(name).cloned()
    }

    /// Every member, by name.
    pub fn members(&self) -> Arc<std::collections::BTreeMap<String, Arc<ClusterMember>>> {
        self.members.load_full()
    }
}

/// A registered cluster as this replica holds it: its record and the gateway's state with
/// its upstream (what a request of a tenant living there is served with). Dropping it (the
/// cluster was removed) stops its background work.
pub struct ClusterMember {
    pub record: paddock_store::ClusterRecord,
    pub state: Arc<AppState>,
    /// Shared with the member that replaces this one when only the record's labels or
    /// capacity changed (the same state goes on): the work stops when the last one goes.
    pub(crate) stop: Arc<StopOnDrop>,
}

/// Cancels its token when dropped.
pub struct StopOnDrop(pub CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
