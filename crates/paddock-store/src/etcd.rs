//! The etcd backend. Keys: `<prefix>/tenants/<id>` and `<prefix>/certs/<serial>`, JSON
//! values. Open: one range read of `<prefix>/` fills the cache, then a watch from the next
//! revision keeps it current. When etcd goes away the cache keeps serving; the watch task
//! reconnects with backoff, re-lists (replacing the whole cache) and re-watches from the
//! new revision, so nothing is missed. Writes are single requests or transactions (all or
//! nothing) with a deadline, so they fail fast with `Unavailable` when etcd is down.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, KeyValue, Txn, TxnOp,
    WatchOptions,
};
use tokio::task::JoinHandle;

use crate::cache::{Snapshot, StoreCache};
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

/// Shared state of one etcd-backed store handle.
struct Shared {
    client: Client,
    prefix: String,
    endpoints: String,
    cache: StoreCache,
}

/// The etcd-backed store.
pub struct EtcdStore {
    shared: Arc<Shared>,
    watch_task: JoinHandle<()>,
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
        StoreError::Unavailable(format!(
            "etcd at {} is unreachable: {detail}",
            self.endpoints
        ))
    }

    fn map_err(&self, e: etcd_client::Error) -> StoreError {
        use etcd_client::Error as E;
        match e {
            E::GRpcStatus(ref s) => match s.code() as i32 {
                GRPC_CANCELLED | GRPC_UNKNOWN | GRPC_DEADLINE_EXCEEDED | GRPC_UNAVAILABLE => {
                    self.unavailable(status_chain(&e))
                }
                _ => {
                    StoreError::Backend(format!("etcd at {}: {}", self.endpoints, status_chain(&e)))
                }
            },
            E::TransportError(_) | E::IoError(_) => self.unavailable(error_chain(&e)),
            other => StoreError::Backend(format!(
                "etcd at {}: {}",
                self.endpoints,
                error_chain(&other)
            )),
        }
    }

    /// Runs one etcd request with the request deadline.
    async fn call<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
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
    async fn range_all(&self, prefix: &str) -> Result<(Vec<KeyValue>, i64), StoreError> {
        let end = prefix_end(prefix.as_bytes());
        let mut kv = self.client.kv_client();
        let mut start = prefix.as_bytes().to_vec();
        let mut revision = 0;
        let mut out = Vec::new();
        loop {
            let mut opts = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
            if revision > 0 {
                opts = opts.with_revision(revision);
            }
            let mut resp = self.call(kv.get(start.clone(), Some(opts))).await?;
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
        let mut wc = self.client.watch_client();
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
                    if events.is_empty() {
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

/// `e: source: source ...` without repeating a message its source already says, and
/// without tonic's generic wrappers.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    chain_from(e.to_string(), e.source())
}

/// A gRPC status: its message, then its sources (its Display is a Debug dump).
fn status_chain(s: &etcd_client::Error) -> String {
    match s {
        etcd_client::Error::GRpcStatus(st) => {
            chain_from(st.message().to_string(), std::error::Error::source(st))
        }
        other => error_chain(other),
    }
}

fn chain_from(first: String, mut cur: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !first.is_empty() {
        parts.push(first);
    }
    while let Some(err) = cur {
        let msg = err.to_string();
        if !msg.is_empty() && msg != "transport error" && !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// gRPC status codes (tonic is not a direct dependency, so match on the numeric code).
const GRPC_CANCELLED: i32 = 1;
const GRPC_UNKNOWN: i32 = 2;
const GRPC_DEADLINE_EXCEEDED: i32 = 4;
const GRPC_UNAVAILABLE: i32 = 14;

impl EtcdStore {
    pub(crate) async fn open(
        endpoints: &[String],
        key_prefix: &str,
    ) -> Result<EtcdStore, StoreError> {
        if endpoints.is_empty() {
            return Err(StoreError::Invalid("no etcd endpoints given".into()));
        }
        let prefix = key_prefix.trim_end_matches('/').to_string();
        if prefix.is_empty() {
            return Err(StoreError::Invalid(
                "the etcd key prefix must not be empty (e.g. /paddock)".into(),
            ));
        }
        let endpoints_text = endpoints.join(",");
        let opts = ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT)
            .with_keep_alive_while_idle(true);
        let client =
            match tokio::time::timeout(REQUEST_TIMEOUT, Client::connect(endpoints, Some(opts)))
                .await
            {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    return Err(StoreError::Unavailable(format!(
                        "etcd at {endpoints_text} is unreachable: {e}"
                    )));
                }
                Err(_) => {
                    return Err(StoreError::Unavailable(format!(
                        "etcd at {endpoints_text} is unreachable: no answer within {}s",
                        REQUEST_TIMEOUT.as_secs()
                    )));
                }
            };
        let shared = Arc::new(Shared {
            client,
            prefix,
            endpoints: endpoints_text,
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
        Ok(EtcdStore { shared, watch_task })
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
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, Self::encode(rec)?, None)]);
        let mut kv = s.client.kv_client();
        let resp = s.call(kv.txn(txn)).await?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists(format!("tenant {}", rec.id)));
        }
        s.settle(resp.header().map(|h| h.revision()).unwrap_or(0))
            .await;
        Ok(())
    }

    pub(crate) async fn put_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        let s = &self.shared;
        let key = s.tenant_key(rec.id.as_str());
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Greater, 0)])
            .and_then([TxnOp::put(key, Self::encode(rec)?, None)]);
        let mut kv = s.client.kv_client();
        let resp = s.call(kv.txn(txn)).await?;
        if !resp.succeeded() {
            return Err(StoreError::NotFound(format!("tenant {}", rec.id)));
        }
        s.settle(resp.header().map(|h| h.revision()).unwrap_or(0))
            .await;
        Ok(())
    }

    pub(crate) async fn delete_tenant(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let mut kv = s.client.kv_client();
        let resp = s.call(kv.delete(s.tenant_key(id), None)).await?;
        if resp.deleted() == 0 {
            return Err(StoreError::NotFound(format!("tenant {id}")));
        }
        s.settle(resp.header().map(|h| h.revision()).unwrap_or(0))
            .await;
        Ok(())
    }

    pub(crate) async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        check_tenant_id(id)?;
        let s = &self.shared;
        let mut kv = s.client.kv_client();
        let resp = s.call(kv.get(s.tenant_key(id), None)).await?;
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
        let mut kv = s.client.kv_client();
        let resp = s
            .call(kv.put(s.cert_key(&serial), Self::encode(&rec)?, None))
            .await?;
        s.settle(resp.header().map(|h| h.revision()).unwrap_or(0))
            .await;
        Ok(())
    }

    pub(crate) async fn revoke_cert(&self, serial_hex: &str) -> Result<CertRecord, StoreError> {
        let serial = check_serial(serial_hex)?;
        let s = &self.shared;
        let key = s.cert_key(&serial);
        let mut kv = s.client.kv_client();
        for _ in 0..CAS_ATTEMPTS {
            let resp = s.call(kv.get(key.clone(), None)).await?;
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
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    key.clone(),
                    CompareOp::Equal,
                    cur.mod_revision(),
                )])
                .and_then([TxnOp::put(key.clone(), Self::encode(&rec)?, None)]);
            let resp = s.call(kv.txn(txn)).await?;
            if resp.succeeded() {
                s.settle(resp.header().map(|h| h.revision()).unwrap_or(0))
                    .await;
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
