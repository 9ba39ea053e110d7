//! The embedded store: one JSON file (`<dir>/store.json`) holding every record, rewritten
//! atomically (temp file, fsync, rename, fsync of the directory) on each change, loaded at
//! open. One process at a time: `<dir>/LOCK` is held with an exclusive `flock`.
//!
//! Writes run on tokio's blocking pool under a mutex, and the cache is updated in the same
//! step, so a write that returned `Ok` is in the file and in the cache, and a write whose
//! caller was cancelled still completes consistently.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

#[path = "embedded_activity.rs"]
mod activity;
#[path = "embedded_cas.rs"]
mod cas;
#[path = "embedded_templates.rs"]
mod templates;
#[path = "embedded_users.rs"]
mod users;

use crate::cache::{Snapshot, StoreCache};
use crate::{CertRecord, StoreError, TenantRecord, check_serial, check_tenant_id};
use cas::swap_versioned;

const FILE: &str = "store.json";
const LOCK: &str = "LOCK";
const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct State {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    tenants: BTreeMap<String, TenantRecord>,
    #[serde(default)]
    certs: BTreeMap<String, CertRecord>,
    /// Quota ledgers by tenant id, with their version (docs/quota.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    quota: BTreeMap<String, (i64, paddock_core::quota::Ledger)>,
    /// Cluster-wide claims: `<kind>/<key>` to the owning tenant.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    claims: BTreeMap<String, String>,
    /// Namespace templates by name, with their version (docs/templates.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    templates: BTreeMap<String, (i64, paddock_core::templates::NamespaceTemplate)>,
    /// Registered upstream clusters by name (clusters.rs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) clusters: BTreeMap<String, crate::ClusterRecord>,
    /// Namespaces of spanning tenants: `<tenant>/<namespace>` to its cluster (nsmap.rs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) nsmap: BTreeMap<String, String>,
    /// The users seen acting in tenants (seen_users.rs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) users: BTreeMap<String, crate::SeenUser>,
    /// Tenants' last activity, in memory only (embedded_activity.rs).
    #[serde(skip)]
    pub(crate) activity: BTreeMap<String, i64>,
}

impl State {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            tenants: self
                .tenants
                .iter()
                .map(|(k, v)| (k.clone(), Arc::new(v.clone())))
                .collect(),
            revoked: self
                .certs
                .iter()
                .filter(|(_, c)| c.revoked)
                .map(|(k, _)| k.clone())
                .collect(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    dir: PathBuf,
    pub(crate) state: Mutex<State>,
    cache: StoreCache,
    /// Held for the life of the store: the exclusive lock on `<dir>/LOCK`.
    _lock: fs::File,
}

/// The single-replica store in a local directory.
#[derive(Debug)]
pub struct EmbeddedStore {
    pub(crate) inner: Arc<Inner>,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

fn open_blocking(dir: PathBuf) -> Result<Inner, StoreError> {
    fs::create_dir_all(&dir).map_err(|e| io(&dir, "cannot create store directory", e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // best effort: the records are not secret, but nobody else needs to write them
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
    }
    let lock_path = dir.join(LOCK);
    let mut lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|e| io(&lock_path, "cannot open lock file", e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = lock.read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                String::new()
            } else {
                format!(" (pid {holder})")
            };
            return Err(StoreError::Locked(format!(
                "the embedded store in {} is in use by another paddock process{who}; the embedded store serves a single replica (use etcd to run several)",
                dir.display()
            )));
        }
        Err(fs::TryLockError::Error(e)) => return Err(io(&lock_path, "cannot lock", e)),
    }
    // record our pid for the message above (best effort)
    let _ = lock.set_len(0);
    let _ = lock.rewind();
    let _ = write!(lock, "{}", std::process::id());
    let _ = lock.sync_all();

    let path = dir.join(FILE);
    let _ = fs::remove_file(dir.join(format!("{FILE}.tmp")));
    let state = match fs::read(&path) {
        Ok(bytes) => {
            let st: State = serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
            if st.version > FORMAT_VERSION {
                return Err(StoreError::Corrupt(format!(
                    "{}: format version {} is newer than this paddock understands ({FORMAT_VERSION})",
                    path.display(),
                    st.version
                )));
            }
            st
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => State {
            version: FORMAT_VERSION,
            ..State::default()
        },
        Err(e) => return Err(io(&path, "cannot read", e)),
    };
    let cache = StoreCache::new();
    cache.replace(state.snapshot(), 0);
    cache.set_connected(true);
    cache.set_synced();
    tracing::info!(
        dir = %dir.display(),
        tenants = state.tenants.len(),
        certs = state.certs.len(),
        "embedded store opened"
    );
    Ok(Inner {
        dir,
        state: Mutex::new(state),
        cache,
        _lock: lock,
    })
}

fn write_atomic(dir: &Path, state: &State) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(state)
        .map_err(|e| StoreError::Invalid(format!("cannot serialize the store: {e}")))?;
    let path = dir.join(FILE);
    let tmp = dir.join(format!("{FILE}.tmp"));
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp).map_err(|e| io(&tmp, "cannot write", e))?;
    f.write_all(&bytes)
        .map_err(|e| io(&tmp, "cannot write", e))?;
    f.sync_all().map_err(|e| io(&tmp, "cannot fsync", e))?;
    drop(f);
    if let Err(e) = fs::rename(&tmp, &path) {
        let _ = fs::remove_file(&tmp);
        return Err(io(&path, "cannot replace", e));
    }
    // make the rename durable
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

impl EmbeddedStore {
    pub(crate) async fn open(data_dir: &Path) -> Result<EmbeddedStore, StoreError> {
        let dir = data_dir.to_path_buf();
        let inner = tokio::task::spawn_blocking(move || open_blocking(dir))
            .await
            .map_err(|e| StoreError::Io(format!("store open task failed: {e}")))??;
        Ok(EmbeddedStore {
            inner: Arc::new(inner),
        })
    }

    /// The directory of the store.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub(crate) fn cache(&self) -> StoreCache {
        self.inner.cache.clone()
    }

    /// Applies `f` to a copy of the state; if it succeeds, writes the file, then publishes the
    /// new state to memory and the cache. Runs on the blocking pool to completion even if the
    /// caller goes away.
    pub(crate) async fn mutate<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut State) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = inner.state.lock();
            let mut next = guard.clone();
            let out = f(&mut next)?;
            next.version = FORMAT_VERSION;
            write_atomic(&inner.dir, &next)?;
            *guard = next;
            let rev = inner.cache.revision() + 1;
            inner.cache.replace(guard.snapshot(), rev);
            Ok(out)
        })
        .await
        .map_err(|e| StoreError::Io(format!("store write task failed: {e}")))?
    }

    pub(crate) async fn create_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        let rec = rec.clone();
        self.mutate(move |st| {
            let id = rec.id.as_str().to_string();
            if st.tenants.contains_key(&id) {
                return Err(StoreError::AlreadyExists(format!("tenant {id}")));
            }
            st.tenants.insert(id, rec);
            Ok(())
        })
        .await
    }

    pub(crate) async fn put_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        let rec = rec.clone();
        self.mutate(move |st| {
            let id = rec.id.as_str().to_string();
            match st.tenants.get_mut(&id) {
                Some(slot) => {
                    *slot = rec;
                    Ok(())
                }
                None => Err(StoreError::NotFound(format!("tenant {id}"))),
            }
        })
        .await
    }

    pub(crate) async fn delete_tenant(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let id = id.to_string();
        self.mutate(move |st| match st.tenants.remove(&id) {
            Some(_) => {
                st.activity.remove(&id);
                users::forget_embedded(&mut st.users, &id);
                Ok(())
            }
            None => Err(StoreError::NotFound(format!("tenant {id}"))),
        })
        .await
    }

    pub(crate) async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        check_tenant_id(id)?;
        Ok(self.inner.state.lock().tenants.get(id).cloned())
    }

    pub(crate) async fn record_cert(&self, rec: &CertRecord) -> Result<(), StoreError> {
        let serial = check_serial(&rec.serial_hex)?;
        let mut rec = rec.clone();
        rec.serial_hex = serial.clone();
        self.mutate(move |st| {
            st.certs.insert(serial, rec);
            Ok(())
        })
        .await
    }

    pub(crate) async fn revoke_cert(&self, serial_hex: &str) -> Result<CertRecord, StoreError> {
        let serial = check_serial(serial_hex)?;
        {
            // already revoked: no write
            let st = self.inner.state.lock();
            match st.certs.get(&serial) {
                None => return Err(StoreError::NotFound(format!("certificate {serial}"))),
                Some(c) if c.revoked => return Ok(c.clone()),
                Some(_) => {}
            }
        }
        self.mutate(move |st| {
            let c = st
                .certs
                .get_mut(&serial)
                .ok_or_else(|| StoreError::NotFound(format!("certificate {serial}")))?;
            if !c.revoked {
                c.revoked = true;
                c.revoked_at = Some(crate::now_rfc3339());
            }
            Ok(c.clone())
        })
        .await
    }

    pub(crate) async fn list_certs(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<CertRecord>, StoreError> {
        let st = self.inner.state.lock();
        Ok(st
            .certs
            .values()
            .filter(|c| match tenant {
                None => true,
                Some(t) => c.tenant.as_ref().is_some_and(|ct| ct.as_str() == t),
            })
            .cloned()
            .collect())
    }

    pub(crate) async fn prune_expired_before(
        &self,
        cutoff: std::time::SystemTime,
    ) -> Result<usize, StoreError> {
        {
            // nothing to prune: no write
            let st = self.inner.state.lock();
            if !st.certs.values().any(|c| c.is_expired(cutoff)) {
                return Ok(0);
            }
        }
        self.mutate(move |st| {
            let before = st.certs.len();
            st.certs.retain(|_, c| !c.is_expired(cutoff));
            Ok(before - st.certs.len())
        })
        .await
    }
}

/// Quota ledgers: swapped under the state mutex (one process holds the store).
impl EmbeddedStore {
    pub(crate) async fn get_quota_ledger(
        &self,
        id: &str,
    ) -> Result<crate::VersionedLedger, StoreError> {
        check_tenant_id(id)?;
        let st = self.inner.state.lock();
        Ok(st
            .quota
            .get(id)
            .map(|(version, ledger)| crate::VersionedLedger {
                ledger: ledger.clone(),
                version: *version,
            })
            .unwrap_or_default())
    }

    pub(crate) async fn swap_quota_ledger(
        &self,
        id: &str,
        ledger: &paddock_core::quota::Ledger,
        expected: i64,
    ) -> Result<bool, StoreError> {
        check_tenant_id(id)?;
        let (id, ledger) = (id.to_string(), ledger.clone());
        self.mutate(move |st| Ok(swap_versioned(&mut st.quota, id, expected, Some(ledger))))
            .await
    }

    pub(crate) async fn delete_quota_ledger(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let id = id.to_string();
        self.mutate(move |st| {
            st.quota.remove(&id);
            Ok(())
        })
        .await
    }
}

/// Cluster-wide claims (one process holds the store, so the mutex is the compare-and-swap).
impl EmbeddedStore {
    pub(crate) async fn claim(
        &self,
        kind: &str,
        key: &str,
        tenant: &str,
    ) -> Result<String, StoreError> {
        crate::check_claim(kind, key, tenant)?;
        self.first_writer(|st| &mut st.claims, format!("{kind}/{key}"), tenant)
            .await
    }

    pub(crate) async fn release_claims(&self, tenant: &str) -> Result<usize, StoreError> {
        let tenant = tenant.to_string();
        self.mutate(move |st| {
            let before = st.claims.len();
            st.claims.retain(|_, t| *t != tenant);
            Ok(before - st.claims.len())
        })
        .await
    }

    pub(crate) async fn list_claims(
        &self,
        kind: &str,
    ) -> Result<Vec<crate::ClaimEntry>, StoreError> {
        let prefix = format!("{kind}/");
        Ok(self
            .inner
            .state
            .lock()
            .claims
            .iter()
            .filter_map(|(k, t)| {
                k.strip_prefix(&prefix).map(|key| crate::ClaimEntry {
                    key: key.to_string(),
                    tenant: t.clone(),
                    version: 0,
                })
            })
            .collect())
    }

    pub(crate) async fn release_claim(
        &self,
        kind: &str,
        entry: &crate::ClaimEntry,
    ) -> Result<bool, StoreError> {
        let k = format!("{kind}/{}", entry.key);
        let tenant = entry.tenant.clone();
        self.mutate(move |st| {
            if st.claims.get(&k) == Some(&tenant) {
                st.claims.remove(&k);
                Ok(true)
            } else {
                Ok(false)
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, TenantPhase};
    use paddock_core::TenantId;

    fn tenant(id: &str) -> TenantRecord {
        TenantRecord::new(TenantId::parse(id).unwrap(), format!("Tenant {id}"))
    }

    fn cert(serial: &str, t: Option<&str>) -> CertRecord {
        CertRecord {
            serial_hex: serial.into(),
            tenant: t.map(|t| TenantId::parse(t).unwrap()),
            user: "alice".into(),
            groups: vec!["devs".into()],
            not_after: "2999-01-01T00:00:00Z".into(),
            revoked: false,
            revoked_at: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn quota_ledger_swaps_are_exact_and_persist() {
        use paddock_core::quota::{Admission, Milli, admit, parse_hard};
        let dir = tempfile::tempdir().unwrap();
        let s = std::sync::Arc::new(Store::open_embedded(dir.path()).await.unwrap());
        let tid = TenantId::parse("foofoo").unwrap();
        let hard = std::sync::Arc::new(parse_hard(&[("pods".into(), "20".into())].into()).unwrap());
        let mut tasks = Vec::new();
        for i in 0..50 {
            let (s, tid, hard) = (s.clone(), tid.clone(), hard.clone());
            tasks.push(tokio::spawn(async move {
                let charge = [("pods".to_string(), Milli::units(1))].into();
                loop {
                    let cur = s.get_quota_ledger(&tid).await.unwrap();
                    match admit(&hard, &cur.ledger, &format!("u{i}"), "x", &charge, 1) {
                        Admission::Reserve(n) => {
                            if s.swap_quota_ledger(&tid, &n, cur.version).await.unwrap() {
                                return true;
                            }
                        }
                        _ => return false,
                    }
                }
            }));
        }
        let mut admitted = 0;
        for t in tasks {
            admitted += usize::from(t.await.unwrap());
        }
        assert_eq!(admitted, 20);
        // every task has ended: close the store (its lock) and open it again
        drop(std::sync::Arc::try_unwrap(s).unwrap());
        let s = Store::open_embedded(dir.path()).await.unwrap();
        let l = s.get_quota_ledger(&tid).await.unwrap();
        assert_eq!(l.ledger.reservations.len(), 20);
        assert!(
            !s.swap_quota_ledger(&tid, &l.ledger, l.version + 1)
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn prune_deletes_only_long_expired_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_embedded(dir.path()).await.unwrap();
        let mut old = cert("0a", Some("foofoo"));
        old.not_after = "2020-01-01T00:00:00Z".into();
        old.revoked = true;
        let mut recent = cert("0b", None);
        // expired an hour ago: within a day's grace
        let hour_ago = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
        recent.not_after = hour_ago
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        recent.revoked = true;
        let valid = cert("0c", Some("foofoo"));
        for c in [&old, &recent, &valid] {
            s.record_cert(c).await.unwrap();
        }
        let day = std::time::Duration::from_secs(86400);
        let now = std::time::SystemTime::now();
        assert_eq!(s.prune(now, day).await.unwrap(), 1);
        let left: Vec<String> = s
            .list_certs(None)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.serial_hex)
            .collect();
        assert_eq!(left, vec!["0b".to_string(), "0c".to_string()]);
        assert!(s.cache().is_revoked("0b"));
        assert!(!s.cache().is_revoked("0a"));
        // again: nothing more; without grace the recent one goes too
        assert_eq!(s.prune(now, day).await.unwrap(), 0);
        assert_eq!(s.prune(now, std::time::Duration::ZERO).await.unwrap(), 1);
        drop(s);
        let s = Store::open_embedded(dir.path()).await.unwrap();
        assert_eq!(s.list_certs(None).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn claims_first_wins_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = EmbeddedStore::open(dir.path()).await.unwrap();
            assert_eq!(
                s.claim("ingress-host", "shop.example.com", "acme01")
                    .await
                    .unwrap(),
                "acme01"
            );
            assert_eq!(
                s.claim("ingress-host", "shop.example.com", "other1")
                    .await
                    .unwrap(),
                "acme01"
            );
            assert_eq!(
                s.claim("ingress-host", "shop.example.com", "acme01")
                    .await
                    .unwrap(),
                "acme01"
            );
            assert!(s.claim("ingress-host", "Bad/Key", "acme01").await.is_err());
        }
        let s = EmbeddedStore::open(dir.path()).await.unwrap();
        assert_eq!(
            s.claim("ingress-host", "shop.example.com", "other1")
                .await
                .unwrap(),
            "acme01"
        );
        assert_eq!(s.release_claims("acme01").await.unwrap(), 1);
        assert_eq!(
            s.claim("ingress-host", "shop.example.com", "other1")
                .await
                .unwrap(),
            "other1"
        );
    }

    #[tokio::test]
    async fn one_claim_released_only_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStore::open(dir.path()).await.unwrap();
        s.claim("ingress-host", "a.example.com", "acme01")
            .await
            .unwrap();
        s.claim("ingress-host", "b.example.com", "acme01")
            .await
            .unwrap();
        let mut seen = s.list_claims("ingress-host").await.unwrap();
        seen.sort_by(|x, y| x.key.cmp(&y.key));
        assert_eq!(seen.len(), 2);
        assert_eq!(
            (seen[0].key.as_str(), seen[0].tenant.as_str()),
            ("a.example.com", "acme01")
        );
        assert!(s.list_claims("other-kind").await.unwrap().is_empty());
        assert!(s.release_claim("ingress-host", &seen[0]).await.unwrap());
        // Released, then taken by another tenant: the stale entry must not release it again.
        s.claim("ingress-host", "a.example.com", "other1")
            .await
            .unwrap();
        assert!(!s.release_claim("ingress-host", &seen[0]).await.unwrap());
        assert_eq!(
            s.claim("ingress-host", "a.example.com", "acme01")
                .await
                .unwrap(),
            "other1"
        );
        assert_eq!(
            s.claim("ingress-host", "b.example.com", "other1")
                .await
                .unwrap(),
            "acme01"
        );
    }

    #[tokio::test]
    async fn tenants_crud() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_embedded(dir.path()).await.unwrap();
        assert_eq!(store.backend_name(), "embedded");
        let cache = store.cache();
        assert!(cache.is_synced());
        assert!(cache.is_connected());
        let mut rx = cache.subscribe();
        rx.borrow_and_update();

        let t = tenant("foofoo");
        store.create_tenant(&t).await.unwrap();
        // the cache is updated synchronously
        assert_eq!(
            cache.tenant("foofoo").unwrap().display_name,
            "Tenant foofoo"
        );
        assert!(rx.has_changed().unwrap());
        let err = store.create_tenant(&t).await.unwrap_err();
        assert!(matches!(err, StoreError::AlreadyExists(_)), "{err}");
        assert_eq!(err.to_string(), "tenant foofoo already exists");

        let mut t2 = t.clone();
        t2.phase = TenantPhase::Terminating;
        t2.progress = Some("deleting namespaces".into());
        store.put_tenant(&t2).await.unwrap();
        assert_eq!(
            cache.tenant("foofoo").unwrap().phase,
            TenantPhase::Terminating
        );
        assert_eq!(store.get_tenant("foofoo").await.unwrap(), Some(t2.clone()));

        let err = store.put_tenant(&tenant("barbar")).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err}");
        assert!(store.get_tenant("barbar").await.unwrap().is_none());

        store.create_tenant(&tenant("barbar")).await.unwrap();
        assert_eq!(
            cache
                .tenants()
                .iter()
                .map(|t| t.id.to_string())
                .collect::<Vec<_>>(),
            vec!["barbar", "foofoo"]
        );
        store.delete_tenant("foofoo").await.unwrap();
        assert!(cache.tenant("foofoo").is_none());
        assert!(store.get_tenant("foofoo").await.unwrap().is_none());
        let err = store.delete_tenant("foofoo").await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err}");
        let err = store.delete_tenant("../etc").await.unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    }

    #[tokio::test]
    async fn certs_and_revocation() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_embedded(dir.path()).await.unwrap();
        let cache = store.cache();
        store
            .record_cert(&cert("0A0B", Some("foofoo")))
            .await
            .unwrap();
        store
            .record_cert(&cert("0c0d", Some("barbar")))
            .await
            .unwrap();
        store.record_cert(&cert("0e0f", None)).await.unwrap();
        assert!(!cache.is_revoked("0a0b"));

        let err = store.revoke_cert("ffff").await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err}");
        let err = store.revoke_cert("zz").await.unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err}");

        let rec = store.revoke_cert("0a0b").await.unwrap();
        assert!(rec.revoked);
        let at = rec.revoked_at.clone().unwrap();
        assert!(cache.is_revoked("0a0b"));
        assert!(cache.is_revoked("0A0B"));
        assert!(!cache.is_revoked("0c0d"));
        // idempotent
        let again = store.revoke_cert("0a0b").await.unwrap();
        assert_eq!(again.revoked_at.as_deref(), Some(at.as_str()));

        let foo = store.list_certs(Some("foofoo")).await.unwrap();
        assert_eq!(foo.len(), 1);
        assert_eq!(foo[0].serial_hex, "0a0b");
        assert!(foo[0].revoked);
        assert_eq!(store.list_certs(None).await.unwrap().len(), 3);
        assert!(store.list_certs(Some("nobody")).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn reopen_keeps_data_and_second_open_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open_embedded(dir.path()).await.unwrap();
            store.create_tenant(&tenant("foofoo")).await.unwrap();
            store
                .record_cert(&cert("0a0b", Some("foofoo")))
                .await
                .unwrap();
            store.revoke_cert("0a0b").await.unwrap();

            let err = Store::open_embedded(dir.path()).await.unwrap_err();
            assert!(matches!(err, StoreError::Locked(_)), "{err}");
            let msg = err.to_string();
            assert!(msg.contains("another paddock process"), "{msg}");
            assert!(msg.contains(&std::process::id().to_string()), "{msg}");
        }
        // the lock is released with the store
        let store = Store::open_embedded(dir.path()).await.unwrap();
        let cache = store.cache();
        assert!(cache.tenant("foofoo").is_some());
        assert!(cache.is_revoked("0a0b"));
        assert_eq!(store.list_certs(None).await.unwrap().len(), 1);
        assert!(store.get_tenant("foofoo").await.unwrap().is_some());
        // no temp file left
        assert!(!dir.path().join("store.json.tmp").exists());
    }

    #[tokio::test]
    async fn corrupt_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(FILE), b"{ not json").unwrap();
        let err = Store::open_embedded(dir.path()).await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
        assert!(err.to_string().contains("store.json"), "{err}");
    }

    #[tokio::test]
    async fn failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_embedded(dir.path()).await.unwrap();
        store.create_tenant(&tenant("foofoo")).await.unwrap();
        // a directory where the temp file goes makes the write fail
        fs::create_dir(dir.path().join("store.json.tmp")).unwrap();
        let err = store.create_tenant(&tenant("barbar")).await.unwrap_err();
        assert!(matches!(err, StoreError::Io(_)), "{err}");
        assert!(store.cache().tenant("barbar").is_none());
        assert!(store.get_tenant("barbar").await.unwrap().is_none());
        fs::remove_dir(dir.path().join("store.json.tmp")).unwrap();
        store.create_tenant(&tenant("barbar")).await.unwrap();
        assert!(store.cache().tenant("barbar").is_some());
    }
}
