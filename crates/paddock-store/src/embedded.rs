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
#[path = "embedded_tests.rs"]
mod tests;
