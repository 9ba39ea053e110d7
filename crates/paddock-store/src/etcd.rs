//! The etcd backend. Keys: `<prefix>/tenants/<id>` and `<prefix>/certs/<serial>`, JSON
//! values. Open: one range read of `<prefix>/` fills the cache, then a watch from the next
//! revision keeps it current. When etcd goes away the cache keeps serving; the watch task
//! reconnects with backoff, re-lists (replacing the whole cache) and re-watches from the
//! new revision, so nothing is missed. Writes are single requests or transactions (all or
//! nothing) with a deadline, so they fail fast with `Unavailable` when etcd is down.
//! Connection settings (TLS, credentials, the start-up probe) are in `etcd_conn`; when the
//! TLS files change, a new client is built and swapped in for new requests.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use etcd_client::{Client, ConnectOptions, EventType, GetOptions, KeyValue, Txn, WatchOptions};
use tokio::task::JoinHandle;

use crate::cache::{Snapshot, StoreCache};
use crate::etcd_conn::{Conn, EtcdOptions, TlsMaterial};
use crate::etcd_error::{error_chain, map_error, never_sent, token_expired, unavailable};
use crate::etcd_txn::{Expect, delete_if, put_if};
use crate::{CertRecord, StoreError, TenantRecord, check_serial, check_tenant_id};

/// Deadline of every unary request (reads and writes).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// TCP connect deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// HTTP/2 keep-alive: detects a dead connection under an idle watch.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a write waits for the local cache to see it through the watch.
const READ_YOUR_WRITES: Duration = Duration::from_secs(1);
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Keys per range request when listing.
const PAGE: i64 = 500;
/// Attempts of the compare-and-swap in `revoke_cert` under concurrent writers.
const CAS_ATTEMPTS: usize = 5;

/// Pause between attempts of a request that never reached etcd (a member is down and the
/// balanced channel picked it): the next attempt goes to another member.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Shared state of one etcd-backed store handle.
pub(crate) struct Shared {
    /// Swapped when the TLS files change.
    client: ArcSwap<Client>,
    conn: parking_lot::Mutex<Conn>,
    pub(crate) prefix: String,
    endpoints: String,
    cache: StoreCache,
}

/// The etcd-backed store.
pub struct EtcdStore {
    pub(crate) shared: Arc<Shared>,
    watch_task: JoinHandle<()>,
    reload_task: JoinHandle<()>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("endpoints", &self.shared.endpoints)
            .field("prefix", &self.shared.prefix)
            .finish_non_exhaustive()
    }
}

impl Drop for EtcdStore {
    fn drop(&mut self) {
        self.watch_task.abort();
        self.reload_task.abort();
    }
}

enum KeyKind {
    Tenant(String),
    Cert(String),
}

impl Shared {
    fn tenants_prefix(&self) -> String {
        format!("{}/tenants/", self.prefix)
    }
    fn certs_prefix(&self) -> String {
        format!("{}/certs/", self.prefix)
    }
    fn all_prefix(&self) -> String {
        format!("{}/", self.prefix)
    }
    fn tenant_key(&self, id: &str) -> String {
        format!("{}/tenants/{id}", self.prefix)
    }
    pub(crate) fn activity_key(&self, id: &str) -> String {
        format!("{}/activity/{id}", self.prefix)
    }
    fn quota_key(&self, id: &str) -> String {
        format!("{}/quota/{id}", self.prefix)
    }
    fn cert_key(&self, serial: &str) -> String {
        format!("{}/certs/{serial}", self.prefix)
    }

    fn classify(&self, key: &[u8]) -> Option<KeyKind> {
        let key = std::str::from_utf8(key).ok()?;
        if let Some(id) = key.strip_prefix(&self.tenants_prefix()) {
            return Some(KeyKind::Tenant(id.to_string()));
        }
        if let Some(serial) = key.strip_prefix(&self.certs_prefix()) {
            return Some(KeyKind::Cert(serial.to_string()));
        }
        None
    }

    fn unavailable(&self, detail: impl std::fmt::Display) -> StoreError {
        unavailable(&self.endpoints, detail)
    }

    fn map_err(&self, e: etcd_client::Error) -> StoreError {
        map_error(&self.endpoints, e)
    }

    /// The client in force (cheap: a few channel handles).
    fn client(&self) -> Client {
        Client::clone(&self.client.load())
    }

    /// Runs one etcd request with the request deadline. A request that never left (no
    /// connection to the member the balanced channel picked) is tried again on the next, and
    /// an expired auth token is renewed once; both within the same deadline.
    async fn call<T, F, Fut>(&self, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let attempts = async {
            let mut renewed = false;
            loop {
                let client = self.client();
                match op(client.clone()).await {
                    Ok(v) => return Ok(v),
                    Err(e) if never_sent(&e) => {
                        tracing::debug!(error = %error_chain(&e), "etcd request not sent; trying another member");
                        tokio::time::sleep(RETRY_PAUSE).await;
                    }
                    Err(e) if !renewed && token_expired(&e) => {
                        renewed = true;
                        client.refresh_token().await?;
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, attempts).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.map_err(e)),
            Err(_) => {
                Err(self.unavailable(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())))
            }
        }
    }

    /// After a successful write at `revision`, wait (bounded) until our cache has it.
    async fn settle(&self, revision: i64) {
        if !self
            .cache
            .wait_for_revision(revision, READ_YOUR_WRITES)
            .await
        {
            tracing::debug!(
                revision,
                "etcd write not yet seen by the local watch; continuing"
            );
        }
    }

    /// Every key-value under `prefix`, read in pages of [`PAGE`] at one revision (so a large
    /// store never hits the gRPC message size limit and the result is consistent).
    pub(crate) async fn range_all(&self, prefix: &str) -> Result<(Vec<KeyValue>, i64), StoreError> {
        let end = prefix_end(prefix.as_bytes());
        let mut start = prefix.as_bytes().to_vec();
        let mut revision = 0;
        let mut out = Vec::new();
        loop {
            let mut opts = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
            if revision > 0 {
                opts = opts.with_revision(revision);
            }
            let mut resp = self
                .call(|c| {
                    let (start, opts) = (start.clone(), opts.clone());
                    async move { c.kv_client().get(start, Some(opts)).await }
                })
                .await?;
            if revision == 0 {
                revision = resp.header().map(|h| h.revision()).unwrap_or(0);
            }
            let more = resp.more();
            let kvs = resp.take_kvs();
            let last = kvs.last().map(|k| k.key().to_vec());
            out.extend(kvs);
            match (more, last) {
                (true, Some(mut k)) => {
                    k.push(0);
                    start = k;
                }
                _ => break,
            }
        }
        Ok((out, revision))
    }

    /// Reads everything under the prefix: (snapshot, revision).
    async fn list(&self) -> Result<(Snapshot, i64), StoreError> {
        let (kvs, revision) = self.range_all(&self.all_prefix()).await?;
        let mut snap = Snapshot {
            tenants: HashMap::new(),
            revoked: HashSet::new(),
        };
        for kv in &kvs {
            self.apply_put(&mut snap, kv);
        }
        Ok((snap, revision))
    }

    fn apply_put(&self, snap: &mut Snapshot, kv: &KeyValue) {
        match self.classify(kv.key()) {
            Some(KeyKind::Tenant(id)) => match serde_json::from_slice::<TenantRecord>(kv.value()) {
                Ok(rec) if rec.id.as_str() == id => {
                    snap.tenants.insert(id, Arc::new(rec));
                }
                Ok(rec) => tracing::warn!(
                    key = %String::from_utf8_lossy(kv.key()),
                    record_id = %rec.id,
                    "ignoring tenant record whose id does not match its key"
                ),
                Err(e) => tracing::warn!(
                    key = %String::from_utf8_lossy(kv.key()),
                    error = %e,
                    "ignoring unreadable tenant record"
                ),
            },
            Some(KeyKind::Cert(serial)) => match serde_json::from_slice::<CertRecord>(kv.value()) {
                Ok(rec) => {
                    if rec.revoked {
                        snap.revoked.insert(serial);
                    } else {
                        snap.revoked.remove(&serial);
                    }
                }
                Err(e) => tracing::warn!(
                    key = %String::from_utf8_lossy(kv.key()),
                    error = %e,
                    "ignoring unreadable certificate record"
                ),
            },
            None => {}
        }
    }

    fn apply_delete(&self, snap: &mut Snapshot, key: &[u8]) {
        match self.classify(key) {
            Some(KeyKind::Tenant(id)) => {
                snap.tenants.remove(&id);
            }
            Some(KeyKind::Cert(serial)) => {
                snap.revoked.remove(&serial);
            }
            None => {}
        }
    }

    /// One watch session from `start_revision` until the stream fails, ends or is cancelled.
    /// Returns a description of why it ended.
    async fn watch_once(&self, start_revision: i64) -> String {
        let mut wc = self.client().watch_client();
        let opts = WatchOptions::new()
            .with_prefix()
            .with_start_revision(start_revision);
        let mut stream =
            match tokio::time::timeout(REQUEST_TIMEOUT, wc.watch(self.all_prefix(), Some(opts)))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return format!("cannot start watch: {e}"),
                Err(_) => return "cannot start watch: no answer".into(),
            };
        self.cache.set_connected(true);
        loop {
            match stream.message().await {
                Ok(Some(resp)) => {
                    if resp.canceled() {
                        return format!(
                            "watch cancelled by etcd (compact revision {}): {}",
                            resp.compact_revision(),
                            resp.cancel_reason()
                        );
                    }
                    let revision = resp.header().map(|h| h.revision()).unwrap_or(0);
                    let events = resp.events();
                    // Keys the cache does not hold (quota ledgers, tenants' activity): no
                    // copy of the snapshot.
                    if events
                        .iter()
                        .all(|ev| ev.kv().is_none_or(|kv| self.classify(kv.key()).is_none()))
                    {
                        self.cache.observe_revision(revision);
                        continue;
                    }
                    self.cache.update(revision, |snap| {
                        for ev in events {
                            let Some(kv) = ev.kv() else { continue };
                            match ev.event_type() {
                                EventType::Put => self.apply_put(snap, kv),
                                EventType::Delete => self.apply_delete(snap, kv.key()),
                            }
                        }
                    });
                }
                Ok(None) => return "watch stream ended".into(),
                Err(e) => return format!("watch failed: {e}"),
            }
        }
    }

    /// The watch task: watch; on failure, back off, re-list, re-watch. Forever.
    async fn run(self: Arc<Self>, mut start_revision: i64) {
        let mut backoff = BACKOFF_MIN;
        loop {
            let why = self.watch_once(start_revision).await;
            self.cache.set_connected(false);
            tracing::warn!(endpoints = %self.endpoints, reason = %why, "etcd watch lost; serving from cache, reconnecting");
            let mut attempts = 0u32;
            loop {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                match self.list().await {
                    Ok((snap, revision)) => {
                        tracing::info!(
                            endpoints = %self.endpoints,
                            revision,
                            tenants = snap.tenants.len(),
                            "etcd reachable again; cache re-listed"
                        );
                        self.cache.replace(snap, revision);
                        start_revision = revision + 1;
                        backoff = BACKOFF_MIN;
                        break;
                    }
                    Err(e) => {
                        attempts += 1;
                        // log the first failure and then every ~30 attempts
                        if attempts == 1 || attempts.is_multiple_of(30) {
                            tracing::warn!(error = %e, attempts, "etcd still unreachable");
                        }
                    }
                }
            }
        }
    }
}

/// The end of the key range of all keys starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // all 0xff (or empty): to the end of the keyspace
    vec![0]
}

/// A client for `conn` with `tls` (lazy: it connects on first use, except that with a user
/// it authenticates at once).
async fn connect(conn: &Conn, tls: Option<&TlsMaterial>) -> Result<Client, StoreError> {
    let endpoints = conn.opts.endpoints.join(",");
    let base = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_keep_alive(KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT)
        .with_keep_alive_while_idle(true);
    let opts = conn.connect_options(base, tls);
    match tokio::time::timeout(
        REQUEST_TIMEOUT,
        Client::connect(&conn.opts.endpoints, Some(opts)),
    )
    .await
    {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(map_error(&endpoints, e)),
        Err(_) => Err(unavailable(
            &endpoints,
            format!("no answer within {}s", REQUEST_TIMEOUT.as_secs()),
        )),
    }
}

impl Shared {
    pub(crate) async fn txn(&self, txn: Txn) -> Result<etcd_client::TxnResponse, StoreError> {
        self.call(|c| {
            let txn = txn.clone();
            async move { c.kv_client().txn(txn).await }
        })
        .await
    }

    pub(crate) async fn get(&self, key: &str) -> Result<etcd_client::GetResponse, StoreError> {
        self.call(|c| {
            let key = key.to_string();
            async move { c.kv_client().get(key, None).await }
        })
        .await
    }

    /// Re-reads the TLS files every `every`; when they changed and the new ones are accepted
    /// by etcd (the same probe as at start), new requests use a client built from them. The
    /// open watch keeps its connection until it ends (a TLS session is not re-checked).
    async fn reload_loop(self: Arc<Self>, every: Duration) {
        let mut last_error = String::new();
        loop {
            tokio::time::sleep(every).await;
            let current = self.conn.lock().clone();
            let Some(files) = current.opts.tls.clone() else {
                return;
            };
            let result = async {
                let fresh = TlsMaterial::load(&files)?;
                if current.tls.as_ref() == Some(&fresh) {
                    return Ok(None);
                }
                let next = Conn {
                    opts: current.opts.clone(),
                    tls: Some(fresh),
                };
                next.probe_all().await?;
                let client = connect(&next, next.tls.as_ref()).await?;
                Ok::<_, StoreError>(Some((next, client)))
            }
            .await;
            match result {
                Ok(None) => last_error.clear(),
                Ok(Some((next, client))) => {
                    self.client.store(Arc::new(client));
                    *self.conn.lock() = next;
                    last_error.clear();
                    tracing::info!(endpoints = %self.endpoints, "etcd TLS files changed; new requests use them");
                }
                Err(e) => {
                    let msg = e.to_string();
                    if msg != last_error {
                        tracing::warn!(endpoints = %self.endpoints, error = %msg, "etcd TLS files changed but cannot be used; keeping the previous ones");
                        last_error = msg;
                    }
                }
            }
        }
    }
}

impl EtcdStore {
    pub(crate) async fn open(opts: EtcdOptions) -> Result<EtcdStore, StoreError> {
        let prefix = opts.prefix.trim_end_matches('/').to_string();
        if prefix.is_empty() {
            return Err(StoreError::Invalid(
                "the etcd key prefix must not be empty (e.g. /paddock)".into(),
            ));
        }
        let conn = Conn::new(opts)?;
        conn.probe_all().await?;
        let client = connect(&conn, conn.tls.as_ref()).await?;
        let reload_interval = conn.opts.reload_interval;
        let shared = Arc::new(Shared {
            client: ArcSwap::from_pointee(client),
            endpoints: conn.opts.endpoints.join(","),
            conn: parking_lot::Mutex::new(conn),
            prefix,
            cache: StoreCache::new(),
        });
        let (snap, revision) = shared.list().await?;
        tracing::info!(
            endpoints = %shared.endpoints,
            prefix = %shared.prefix,
            revision,
            tenants = snap.tenants.len(),
            revoked = snap.revoked.len(),
            "etcd store opened"
        );
        shared.cache.replace(snap, revision);
        shared.cache.set_synced();
        let watch_task = tokio::spawn(shared.clone().run(revision + 1));
        let reload_task = tokio::spawn(shared.clone().reload_loop(reload_interval));
        Ok(EtcdStore {
            shared,
            watch_task,
            reload_task,
        })
    }

    pub(crate) fn cache(&self) -> StoreCache {
        self.shared.cache.clone()
    }

    fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(v).map_err(|e| StoreError::Invalid(format!("cannot serialize: {e}")))
    }

    pub(crate) async fn create_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        let s = &self.shared;
        let key = s.tenant_key(rec.id.as_str());
        let resp = s
            .txn(put_if(key, Self::encode(rec)?, Expect::Absent))
            .await?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists(format!("tenant {}", rec.id)));
        }
        s.settle(revision_of(resp.header())).await;
        Ok(())
    }

    pub(crate) async fn put_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        let s = &self.shared;
        let key = s.tenant_key(rec.id.as_str());
        let resp = s
            .txn(put_if(key, Self::encode(rec)?, Expect::Present))
            .await?;
        if !resp.succeeded() {
            return Err(StoreError::NotFound(format!("tenant {}", rec.id)));
        }
        s.settle(revision_of(resp.header())).await;
        Ok(())
    }

    pub(crate) async fn delete_tenant(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let key = s.tenant_key(id);
        let resp = s
            .call(|c| {
                let key = key.clone();
                async move { c.kv_client().delete(key, None).await }
            })
            .await?;
        if resp.deleted() == 0 {
            return Err(StoreError::NotFound(format!("tenant {id}")));
        }
        s.settle(revision_of(resp.header())).await;
        // Its activity (etcd_activity.rs) goes with it; a failure leaves a few bytes that
        // nothing reads.
        let _ = self.delete_activity(id).await;
        let _ = self.forget_users(id).await;
        Ok(())
    }

    pub(crate) async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let resp = s.get(&s.tenant_key(id)).await?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => serde_json::from_slice(kv.value())
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("{}: {e}", s.tenant_key(id)))),
        }
    }

    pub(crate) async fn record_cert(&self, rec: &CertRecord) -> Result<(), StoreError> {
        let serial = check_serial(&rec.serial_hex)?;
        let mut rec = rec.clone();
        rec.serial_hex = serial.clone();
        let s = &self.shared;
        let (key, value) = (s.cert_key(&serial), Self::encode(&rec)?);
        let resp = s
            .call(|c| {
                let (key, value) = (key.clone(), value.clone());
                async move { c.kv_client().put(key, value, None).await }
            })
            .await?;
        s.settle(revision_of(resp.header())).await;
        Ok(())
    }

    pub(crate) async fn revoke_cert(&self, serial_hex: &str) -> Result<CertRecord, StoreError> {
        let serial = check_serial(serial_hex)?;
        let s = &self.shared;
        let key = s.cert_key(&serial);
        for _ in 0..CAS_ATTEMPTS {
            let resp = s.get(&key).await?;
            let Some(cur) = resp.kvs().first() else {
                return Err(StoreError::NotFound(format!("certificate {serial}")));
            };
            let mut rec: CertRecord = serde_json::from_slice(cur.value())
                .map_err(|e| StoreError::Corrupt(format!("{key}: {e}")))?;
            if rec.revoked {
                // make sure our cache has it before answering
                s.settle(cur.mod_revision()).await;
                return Ok(rec);
            }
            rec.revoked = true;
            rec.revoked_at = Some(crate::now_rfc3339());
            let swap = put_if(
                key.clone(),
                Self::encode(&rec)?,
                Expect::Revision(cur.mod_revision()),
            );
            let resp = s.txn(swap).await?;
            if resp.succeeded() {
                s.settle(revision_of(resp.header())).await;
                return Ok(rec);
            }
        }
        Err(StoreError::Backend(format!(
            "certificate {serial} kept changing while being revoked; try again"
        )))
    }

    pub(crate) async fn list_certs(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<CertRecord>, StoreError> {
        let s = &self.shared;
        let (kvs, _) = s.range_all(&s.certs_prefix()).await?;
        let mut out = Vec::new();
        for kv in &kvs {
            let rec: CertRecord = match serde_json::from_slice(kv.value()) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(kv.key()), error = %e, "ignoring unreadable certificate record");
                    continue;
                }
            };
            let keep = match tenant {
                None => true,
                Some(t) => rec.tenant.as_ref().is_some_and(|ct| ct.as_str() == t),
            };
            if keep {
                out.push(rec);
            }
        }
        out.sort_by(|a, b| a.serial_hex.cmp(&b.serial_hex));
        Ok(out)
    }

    /// Deletes certificate records that expired before `cutoff`, each only if unchanged since
    /// it was read (several replicas may prune at once). Unreadable records are left for an
    /// operator to look at.
    pub(crate) async fn prune_expired_before(
        &self,
        cutoff: std::time::SystemTime,
    ) -> Result<usize, StoreError> {
        let s = &self.shared;
        let (kvs, _) = s.range_all(&s.certs_prefix()).await?;
        let mut pruned = 0;
        let mut revision = 0;
        for kv in &kvs {
            let expired = serde_json::from_slice::<CertRecord>(kv.value())
                .is_ok_and(|rec| rec.is_expired(cutoff));
            if !expired {
                continue;
            }
            let unchanged = Expect::Revision(kv.mod_revision());
            let resp = s.txn(delete_if(kv.key(), unchanged)).await?;
            if resp.succeeded() {
                pruned += 1;
                revision = revision_of(resp.header());
            }
        }
        if pruned > 0 {
            s.settle(revision).await;
        }
        Ok(pruned)
    }
}

/// Quota ledgers: `<prefix>/quota/<id>`, swapped on the key's mod revision (exact across
/// replicas: etcd orders every swap). Not in the cache: only admission reads them, fresh.
impl EtcdStore {
    pub(crate) async fn get_quota_ledger(
        &self,
        id: &str,
    ) -> Result<crate::VersionedLedger, StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let key = s.quota_key(id);
        let resp = s.get(&key).await?;
        match resp.kvs().first() {
            None => Ok(crate::VersionedLedger::default()),
            Some(kv) => Ok(crate::VersionedLedger {
                ledger: serde_json::from_slice(kv.value())
                    .map_err(|e| StoreError::Corrupt(format!("{key}: {e}")))?,
                version: kv.mod_revision(),
            }),
        }
    }

    pub(crate) async fn swap_quota_ledger(
        &self,
        id: &str,
        ledger: &paddock_core::quota::Ledger,
        expected: i64,
    ) -> Result<bool, StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let key = s.quota_key(id);
        let swap = put_if(key, Self::encode(ledger)?, Expect::Revision(expected));
        Ok(s.txn(swap).await?.succeeded())
    }

    pub(crate) async fn delete_quota_ledger(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let key = s.quota_key(id);
        s.call(|c| {
            let key = key.clone();
            async move { c.kv_client().delete(key, None).await }
        })
        .await?;
        Ok(())
    }
}

fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/paddock/"), b"/paddock0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn error_chains() {
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let outer = std::io::Error::other(inner);
        assert_eq!(error_chain(&outer), "refused");
    }
}
