//! The replica's index of every upstream namespace's name and tenant label, kept by a
//! metadata-only watch, for the check that a new tenant's prefix is unused
//! (`provision::check_prefix_unused`). Without it every tenant creation listed every
//! namespace of the cluster in full: four thousand at a thousand tenants, a few megabytes
//! the apiserver encoded and paddock parsed per creation (docs/performance.md, issue 37).
//!
//! The check reads the index once its first list is in; before that (or on a cluster whose
//! index does not run) it lists as before. A namespace created upstream in the milliseconds
//! before the check may not be in the index yet: the same race a LIST has with a creation
//! that follows it.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::provision::reflect::Cache;
use paddock_core::provision::{namespace_owner_shape, prefix_taken};
use paddock_upstream::reflector::{self, Source};
use paddock_upstream::upstream::Upstream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The longest time between two real re-lists (the watch carries every change meanwhile).
const RELIST_AFTER: Duration = Duration::from_secs(3600);

/// Every namespace's name and tenant label, shared by the watch that fills it and the checks
/// that read it.
#[derive(Clone, Default)]
pub struct NamespaceIndex(Arc<parking_lot::Mutex<Cache>>);

impl NamespaceIndex {
    /// [`paddock_core::provision::prefix_taken`] over the namespaces as last seen, once the
    /// first list is in; `None` before.
    pub fn prefix_taken(&self, t: &TenantId) -> Option<Option<String>> {
        let cache = self.0.lock();
        cache.synced.then(|| prefix_taken(t, cache.values()))
    }

    /// Keeps the index until `stop`: LIST then WATCH of `/api/v1/namespaces`, metadata only,
    /// each namespace shaped to its name and tenant label.
    pub async fn run(self, up: Upstream, stop: CancellationToken) {
        let mut source = Source::new("/api/v1/namespaces", "", RELIST_AFTER);
        source.metadata_only = true;
        source.shape = namespace_owner_shape;
        let (tx, mut rx) = mpsc::channel(64);
        let feed_stop = stop.clone();
        tokio::spawn(async move { reflector::run(&up, &source, 0, tx, feed_stop).await });
        while let Some((_, feed)) = rx.recv().await {
            feed.into_cache(&mut self.0.lock());
        }
    }
}
