//! The in-memory cache every replica answers from: an `ArcSwap<Snapshot>`, replaced as a whole
//! on every change (copy on write), plus a `watch` channel that bumps on each change.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::TenantRecord;

/// What the cache holds at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// By tenant id.
    pub tenants: HashMap<String, Arc<TenantRecord>>,
    /// Serial hex (normalized, lowercase) of every revoked certificate.
    pub revoked: HashSet<String>,
}

#[derive(Debug)]
struct Inner {
    snap: ArcSwap<Snapshot>,
    synced: AtomicBool,
    connected: AtomicBool,
    /// Backend revision the cache reflects (etcd); a change counter for the embedded store.
    revision: AtomicI64,
    tx: watch::Sender<u64>,
}

/// The cache of one replica. Cheap to clone; every method is lock-free and does no I/O.
#[derive(Debug, Clone)]
pub struct StoreCache {
    inner: Arc<Inner>,
}

impl Default for StoreCache {
    fn default() -> Self {
        Self::new()
    }
}

impl StoreCache {
    /// An empty cache, not synced.
    pub(crate) fn new() -> StoreCache {
        let (tx, _rx) = watch::channel(0u64);
        StoreCache {
            inner: Arc::new(Inner {
                snap: ArcSwap::from_pointee(Snapshot::default()),
                synced: AtomicBool::new(false),
                connected: AtomicBool::new(false),
                revision: AtomicI64::new(0),
                tx,
            }),
        }
    }

    /// A synced, connected cache holding `snap` and attached to no backend (for tests of
    /// code that only reads the cache).
    pub fn from_snapshot(snap: Snapshot) -> StoreCache {
        let c = StoreCache::new();
        c.replace(snap, 0);
        c.set_synced();
        c.set_connected(true);
        c
    }

    /// The tenant with this id, if any.
    pub fn tenant(&self, id: &str) -> Option<Arc<TenantRecord>> {
        self.inner.snap.load().tenants.get(id).cloned()
    }

    /// Whether the certificate with this serial (hex, any case, `:` separators allowed) is
    /// revoked.
    pub fn is_revoked(&self, serial_hex: &str) -> bool {
        let snap = self.inner.snap.load();
        if snap.revoked.is_empty() {
            return false;
        }
        if snap.revoked.contains(serial_hex) {
            return true;
        }
        snap.revoked.contains(&crate::normalize_serial(serial_hex))
    }

    /// Every tenant, sorted by id.
    pub fn tenants(&self) -> Vec<Arc<TenantRecord>> {
        let snap = self.inner.snap.load();
        let mut v: Vec<_> = snap.tenants.values().cloned().collect();
        v.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        v
    }

    /// The whole current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snap.load_full()
    }

    /// True once the cache has been loaded from the backend. It stays true while an etcd
    /// backend is unreachable (the cache keeps serving its last state); see
    /// [`StoreCache::is_connected`] for that.
    pub fn is_synced(&self) -> bool {
        self.inner.synced.load(Ordering::Acquire)
    }

    /// Whether the cache is currently being kept up to date (always true for the embedded
    /// store; for etcd, false while the watch is down and reconnecting).
    pub fn is_connected(&self) -> bool {
        self.inner.connected.load(Ordering::Acquire)
    }

    /// The backend revision the cache reflects (etcd), or a change counter (embedded).
    pub fn revision(&self) -> i64 {
        self.inner.revision.load(Ordering::Acquire)
    }

    /// A receiver whose value bumps on every change of the cache.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.tx.subscribe()
    }

    // ---- crate-internal updates (one writer at a time per backend) ----

    pub(crate) fn replace(&self, snap: Snapshot, revision: i64) {
        self.inner.snap.store(Arc::new(snap));
        self.inner.revision.store(revision, Ordering::Release);
        self.bump();
    }

    /// Applies `f` to a copy of the current snapshot and publishes it.
    pub(crate) fn update(&self, revision: i64, f: impl FnOnce(&mut Snapshot)) {
        let mut next = Snapshot::clone(&self.inner.snap.load());
        f(&mut next);
        self.inner.snap.store(Arc::new(next));
        self.inner.revision.fetch_max(revision, Ordering::AcqRel);
        self.bump();
    }

    /// Records that the backend is at `revision` without a change to the data.
    pub(crate) fn observe_revision(&self, revision: i64) {
        let prev = self.inner.revision.fetch_max(revision, Ordering::AcqRel);
        if revision > prev {
            self.bump();
        }
    }

    pub(crate) fn set_synced(&self) {
        self.inner.synced.store(true, Ordering::Release);
        self.bump();
    }

    pub(crate) fn set_connected(&self, connected: bool) {
        let prev = self.inner.connected.swap(connected, Ordering::AcqRel);
        if prev != connected {
            self.bump();
        }
    }

    fn bump(&self) {
        self.inner.tx.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Waits until the cache reflects `revision` or `timeout` passes; true if it does.
    pub(crate) async fn wait_for_revision(&self, revision: i64, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        let wait = async {
            loop {
                if self.revision() >= revision {
                    return;
                }
                if rx.changed().await.is_err() {
                    // sender lives in self: cannot happen
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
        self.revision() >= revision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TenantPhase, TenantRecord};
    use paddock_core::TenantId;

    #[tokio::test]
    async fn cache_basics() {
        let c = StoreCache::new();
        assert!(!c.is_synced());
        let mut rx = c.subscribe();
        let v0 = *rx.borrow_and_update();
        let rec = TenantRecord::new(TenantId::parse("abcdef").unwrap(), "x");
        c.update(5, |s| {
            s.tenants.insert("abcdef".into(), Arc::new(rec.clone()));
            s.revoked.insert("0abc".into());
        });
        assert!(rx.has_changed().unwrap());
        assert_ne!(*rx.borrow_and_update(), v0);
        assert_eq!(c.tenant("abcdef").unwrap().phase, TenantPhase::Active);
        assert!(c.is_revoked("0abc"));
        assert!(c.is_revoked("0ABC"));
        assert!(c.is_revoked("00:0a:bc"));
        assert!(!c.is_revoked("0abd"));
        assert_eq!(c.tenants().len(), 1);
        assert_eq!(c.revision(), 5);
        assert!(c.wait_for_revision(5, Duration::from_millis(1)).await);
        assert!(!c.wait_for_revision(6, Duration::from_millis(20)).await);
        let c2 = StoreCache::from_snapshot(Snapshot::default());
        assert!(c2.is_synced() && c2.is_connected());
        assert!(c2.tenant("abcdef").is_none());
    }
}
