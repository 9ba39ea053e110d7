//! paddock-reconciler: what paddock keeps in place upstream, apart from the request path.
//!
//! - [`provision`]: the platform-wide bootstrap and each tenant namespace's objects (the
//!   objects themselves are data in `paddock_core::provision`);
//! - [`rbac_sync`]: the mirrors that give tenant ClusterRoleBindings their namespaced meaning;
//! - [`lifecycle`]: creating, repairing and deleting a tenant; [`namespaces`]: the replica's
//!   index of namespace names, for a new tenant's prefix check;
//! - [`resync`]: the watch-driven repair of every tenant (the leader's); [`kept`]: the shared
//!   objects of the bootstrap kept from watches (the leader's); [`prune`]: store upkeep;
//! - [`rights`]: the start-up check that paddock's own credential holds what it needs;
//! - [`billing`]: the tenant's billing key stamped on its namespaces (docs/metering.md);
//! - [`templates`]: namespace templates stamped into tenant namespaces (docs/templates.md);
//! - [`suspend`]: a suspended tenant's namespaces marked for the guard, its workloads stopped
//!   and brought back (docs/operations.md "Suspend, protection and TTL").
//!
//! Module layers (no cycles): `namespaces` <- `provision` <- `rbac_sync` <- `lifecycle` <-
//! `resync`; `provision` <- `kept`; `suspend` <- `resync`.
//! The gateway (`paddock-server`) calls in here; nothing here knows the gateway.

pub mod api_endpoints;
pub mod billing;
pub mod crd_grant;
pub mod kept;
pub mod lifecycle;
pub mod namespaces;
pub mod provision;
pub mod prune;
pub mod rbac_sync;
pub mod resync;
pub mod rights;
pub mod suspend;
pub mod templates;

use std::sync::Arc;
use std::time::Duration;

use paddock_store::{Store, StoreCache};
use paddock_upstream::upstream::Upstream;
use tokio_util::sync::CancellationToken;

/// What the reconciling tasks share with the gateway of the same replica (the same pools,
/// store and shutdown signal), and the settings they read.
pub struct Reconciler {
    /// Upstream pools and paddock's credential.
    pub upstream: Upstream,
    /// Tenant store.
    pub store: Arc<Store>,
    /// Its in-memory cache.
    pub cache: StoreCache,
    /// Cancelled at shutdown.
    pub shutdown: CancellationToken,
    /// `tenant_priority_shares`: > 0 when paddock manages API Priority and Fairness objects.
    pub tenant_priority_shares: u32,
    /// `tenant_apf_flow`: how APF groups the requests of a tenant that does not say
    /// (its record's `apfFlow`).
    pub apf_flow: paddock_core::fair::share::ApfFlow,
    /// How long expired certificate records are kept (`prune_grace`).
    pub prune_grace: Duration,
    /// Every upstream namespace's name and tenant label (kept by a watch where
    /// [`namespaces::NamespaceIndex::run`] was started; read by the prefix check).
    pub namespaces: namespaces::NamespaceIndex,
    /// The upstream cluster this reconciler acts on (docs/clusters.md); `default` for the
    /// configured upstream. It touches only the tenants that live there.
    pub cluster: String,
    /// Whether this replica does the once-per-fleet work (the resync, the pruning): the
    /// gateway's leader election (docs/operations.md "Leadership").
    pub leadership: paddock_upstream::lease::Leadership,
}

impl Reconciler {
    /// Whether `rec` lives on this reconciler's cluster.
    pub fn owns(&self, rec: &paddock_store::TenantRecord) -> bool {
        rec.lives_on(&self.cluster)
    }

    /// Whether tenant `rec` has a FlowSchema of its own upstream (docs/fairshare.md "API
    /// Priority and Fairness upstream"): paddock manages APF and the tenant's flow is `tenant`.
    pub fn own_flow_schema(&self, rec: &paddock_store::TenantRecord) -> bool {
        let flow = rec.limits.and_then(|l| l.apf_flow).unwrap_or(self.apf_flow);
        self.tenant_priority_shares > 0 && flow == paddock_core::fair::share::ApfFlow::Tenant
    }

    /// The `clusters` of a tenant record created here: none for the default cluster (the
    /// record reads as before clusters existed), else this cluster.
    pub fn placed_on(&self) -> Vec<String> {
        if self.cluster == paddock_core::clusters::cluster::DEFAULT_CLUSTER {
            Vec::new()
        } else {
            vec![self.cluster.clone()]
        }
    }
}
