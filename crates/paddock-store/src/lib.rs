//! paddock's tenant store: tenant records, issued-certificate records and revocations, kept
//! in a backend (etcd in production, an embedded file store by default) and mirrored into an
//! in-memory [`StoreCache`] in every replica. Request handling reads only the cache.
//!
//! See docs/store.md for records, key layout, the cache and watch, and failure behaviour.
//!
//! # API notes (differences from / additions to the agreed surface)
//!
//! - Everything in the agreed surface exists with the agreed names and signatures.
//! - `put_tenant` on a tenant that does not exist returns [`StoreError::NotFound`] (it never
//!   re-creates a deleted tenant); `delete_tenant` of a missing tenant returns `NotFound` too.
//! - `list_certs(None)` lists every certificate (tenant and admin ones); `Some(tid)` only
//!   that tenant's. Sorted by serial.
//! - `revoke_cert` of an already revoked certificate succeeds and returns the record
//!   unchanged (`revoked_at` stays the first revocation time).
//! - `TenantRecord::generation` is stored as given; the store does not bump it.
//! - Serials are normalized (lowercase, no `:`, no leading `00`); a non-hex serial, or a
//!   tenant id that is not valid in `get_tenant`/`delete_tenant`, gives
//!   [`StoreError::Invalid`] (map it to 400).
//! - `open_etcd` takes plain endpoints; [`Store::open_etcd_with`] takes [`EtcdOptions`]: TLS
//!   (CA bundle, client certificate and key, re-read when they change), user and password,
//!   several endpoints. The key prefix must be non-empty (a trailing `/` is ignored). A
//!   refusal at open (wrong CA, rejected or expired client certificate, bad credentials) is
//!   [`StoreError::Refused`] or [`StoreError::Invalid`] naming the endpoint or file and the
//!   cause.
//! - [`Store::prune`] deletes certificate records that expired more than a grace period ago.
//! - Etcd writes wait (up to 1 s) until this replica's cache has seen the write through the
//!   watch, so a replica reads its own writes from its cache; the embedded store updates the
//!   cache synchronously.
//! - Additions: [`StoreCache::from_snapshot`] (for tests of code that only needs a cache),
//!   [`StoreCache::snapshot`], [`StoreCache::is_connected`] (etcd watch healthy),
//!   [`StoreCache::revision`], [`TenantRecord::new`], [`CertRecord::is_expired`],
//!   [`now_rfc3339`], [`Store::backend_name`], and [`StoreError::Io`], [`StoreError::Backend`],
//!   [`StoreError::Invalid`].

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod cache;
mod clusters;
mod embedded;
mod etcd;
mod etcd_activity;
mod etcd_claims;
mod etcd_clusters;
mod etcd_conn;
mod etcd_error;
mod etcd_templates;
mod etcd_txn;
mod etcd_users;
mod life;
mod nsmap;
mod seen_users;

use std::collections::BTreeMap;
use std::path::Path;

use paddock_core::TenantId;
use paddock_core::templates::NamespaceTemplate;
use serde::{Deserialize, Serialize};

pub use cache::{Snapshot, StoreCache};
pub use clusters::ClusterRecord;
pub use embedded::EmbeddedStore;
pub use etcd::EtcdStore;
pub use etcd_conn::{EtcdOptions, EtcdTlsFiles};
pub use life::{Expiry, Sleep, SleepPhase, Suspension, unix_of};
pub use seen_users::SeenUser;

/// Lifecycle phase of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TenantPhase {
    Active,
    Suspended,
    Terminating,
}

/// A tenant's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRecord {
    pub id: TenantId,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub phase: TenantPhase,
    /// RFC 3339.
    pub created: String,
    /// Deletion progress text, while `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    #[serde(default)]
    pub generation: u64,
    /// The tenant's overrides of the configured fair-share limits (absent in records written
    /// before they existed, and when nothing is overridden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<paddock_core::fair::share::LimitOverrides>,
    /// The billing key stamped on every upstream namespace of the tenant (empty in records
    /// written before it existed).
    #[serde(
        default,
        skip_serializing_if = "paddock_core::observe::billing::BillingKey::is_empty"
    )]
    pub billing: paddock_core::observe::billing::BillingKey,
    /// The tenant's quota: hard limits by resource name, summed over all its namespaces
    /// (docs/quota.md); absent = no tenant-wide quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<BTreeMap<String, String>>,
    /// The tenant quota's scoped entries by name (docs/quota.md "Scopes"); empty in records
    /// written before they existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scoped_quota: BTreeMap<String, paddock_core::quota::ScopedSpec>,
    /// The tenant's policy (docs/security.md "Tenant policy"); absent: the configured default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<paddock_core::admission::TenantPolicy>,
    /// The upstream clusters the tenant lives on (docs/clusters.md); empty in records written
    /// before clusters existed, which means the `default` cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// A span selector: clusters whose labels match join the tenant, now or when they are
    /// registered (docs/clusters.md "Clusters joining by label").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<paddock_core::clusters::join::SpanJoin>,
    /// While `Suspended`: since when, and whether its workloads were stopped
    /// (docs/operations.md "Suspend, protection and TTL").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<life::Suspension>,
    /// `tenant delete` and the TTL are refused while true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deletion_protection: bool,
    /// The tenant's time-to-live: when it runs out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<life::Expiry>,
    /// While the tenant sleeps, falls asleep or wakes (docs/operations.md "Sleep and wake");
    /// absent while it is awake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<life::Sleep>,
    /// While the tenant's objects are carried to this cluster (docs/operations.md "Export,
    /// import and move"): its writes are answered 503 with `Retry-After` by every replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moving: Option<String>,
}

impl TenantRecord {
    /// The clusters the tenant lives on (`default` when the record names none); the first is
    /// its home.
    pub fn cluster_names(&self) -> Vec<&str> {
        paddock_core::clusters::cluster::tenant_clusters(&self.clusters)
    }

    /// The tenant's home cluster: the first of [`Self::cluster_names`] (asked on every
    /// request, so without making the list).
    pub fn home_cluster(&self) -> &str {
        self.clusters.first().map_or(
            paddock_core::clusters::cluster::DEFAULT_CLUSTER,
            String::as_str,
        )
    }

    /// Whether the tenant lives on `cluster`.
    pub fn lives_on(&self, cluster: &str) -> bool {
        self.cluster_names().contains(&cluster)
    }
}

impl TenantRecord {
    /// An `Active` tenant created now, with no labels, generation 1.
    pub fn new(id: TenantId, display_name: impl Into<String>) -> TenantRecord {
        TenantRecord {
            id,
            display_name: display_name.into(),
            labels: BTreeMap::new(),
            phase: TenantPhase::Active,
            created: now_rfc3339(),
            progress: None,
            generation: 1,
            limits: None,
            billing: Default::default(),
            quota: None,
            scoped_quota: BTreeMap::new(),
            policy: None,
            clusters: Vec::new(),
            span: None,
            suspension: None,
            deletion_protection: false,
            expiry: None,
            sleep: None,
            moving: None,
        }
    }
}

use paddock_core::quota::Ledger;

/// A tenant's quota ledger as read, with the version a compare-and-swap must name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionedLedger {
    pub ledger: Ledger,
    /// etcd: the key's mod revision; embedded: a counter. 0 = no ledger yet.
    pub version: i64,
}

/// A certificate paddock issued (never the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertRecord {
    /// Lowercase hex, as `paddock_pki` reports it.
    pub serial_hex: String,
    /// `None` for platform admins.
    #[serde(default)]
    pub tenant: Option<TenantId>,
    pub user: String,
    #[serde(default)]
    pub groups: Vec<String>,
    /// RFC 3339.
    pub not_after: String,
    #[serde(default)]
    pub revoked: bool,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl CertRecord {
    /// Whether `not_after` is before `now` (an unparsable date counts as expired).
    pub fn is_expired(&self, now: std::time::SystemTime) -> bool {
        match time::OffsetDateTime::parse(
            &self.not_after,
            &time::format_description::well_known::Rfc3339,
        ) {
            Ok(t) => t < time::OffsetDateTime::from(now),
            Err(_) => true,
        }
    }
}

/// The current time, RFC 3339 in UTC with second precision (`2026-01-02T03:04:05Z`).
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}

/// Errors of the store. `Unavailable` means the backend cannot be reached: the message says
/// which and why; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Locked(String),
    #[error("store data is corrupt: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Io(String),
    #[error("store backend error: {0}")]
    Backend(String),
    #[error("invalid: {0}")]
    Invalid(String),
    /// The backend answered and refused us (TLS, certificate, credentials, permissions).
    #[error("{0}")]
    Refused(String),
}

/// The store: enum dispatch over the two backends.
#[derive(Debug)]
pub enum Store {
    Embedded(EmbeddedStore),
    Etcd(EtcdStore),
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Embedded($s) => $e,
            Store::Etcd($s) => $e,
        }
    };
}

impl Store {
    /// Opens (creating if needed) the embedded store in `data_dir`. A second process (or a
    /// second open in this process) on the same directory is refused with
    /// [`StoreError::Locked`].
    pub async fn open_embedded(data_dir: &Path) -> Result<Store, StoreError> {
        Ok(Store::Embedded(EmbeddedStore::open(data_dir).await?))
    }

    /// Connects to etcd, loads every record under `key_prefix` into the cache, and starts the
    /// watch that keeps the cache current. Fails with [`StoreError::Unavailable`] if etcd
    /// cannot be reached within a few seconds.
    pub async fn open_etcd(endpoints: &[String], key_prefix: &str) -> Result<Store, StoreError> {
        Self::open_etcd_with(EtcdOptions::plain(endpoints, key_prefix)).await
    }

    /// Like [`Store::open_etcd`], with TLS, credentials and several endpoints. Every endpoint
    /// is probed first: a refusal anywhere is an error naming that endpoint and the cause.
    pub async fn open_etcd_with(opts: EtcdOptions) -> Result<Store, StoreError> {
        Ok(Store::Etcd(EtcdStore::open(opts).await?))
    }

    /// "embedded" or "etcd".
    pub fn backend_name(&self) -> &'static str {
        match self {
            Store::Embedded(_) => "embedded",
            Store::Etcd(_) => "etcd",
        }
    }

    /// The in-memory cache (cheap to clone, no I/O).
    pub fn cache(&self) -> StoreCache {
        dispatch!(self, s => s.cache())
    }

    /// Creates a tenant; [`StoreError::AlreadyExists`] if its id is taken.
    pub async fn create_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        dispatch!(self, s => s.create_tenant(rec).await)
    }

    /// Replaces an existing tenant's record; [`StoreError::NotFound`] if it does not exist.
    pub async fn put_tenant(&self, rec: &TenantRecord) -> Result<(), StoreError> {
        dispatch!(self, s => s.put_tenant(rec).await)
    }

    /// Deletes a tenant's record; [`StoreError::NotFound`] if it does not exist.
    pub async fn delete_tenant(&self, id: &str) -> Result<(), StoreError> {
        dispatch!(self, s => s.delete_tenant(id).await)
    }

    /// Reads a tenant from the backend (not the cache).
    pub async fn get_tenant(&self, id: &str) -> Result<Option<TenantRecord>, StoreError> {
        dispatch!(self, s => s.get_tenant(id).await)
    }

    /// Records that tenant `tid` was active at `unix` (seconds since the epoch), for the
    /// leader's sleep decisions (docs/operations.md "Sleep and wake"); callers write at most
    /// once per share interval. Not in the cache.
    pub async fn put_activity(&self, tid: &TenantId, unix: i64) -> Result<(), StoreError> {
        dispatch!(self, s => s.put_activity(tid.as_str(), unix).await)
    }

    /// The last activity any replica recorded for tenant `tid`.
    pub async fn get_activity(&self, tid: &TenantId) -> Result<Option<i64>, StoreError> {
        dispatch!(self, s => s.get_activity(tid.as_str()).await)
    }

    /// Records that a user acted in a tenant (overwrites its previous record); callers write
    /// at most once per interval per user. Not in the cache.
    pub async fn note_user(&self, seen: &SeenUser) -> Result<(), StoreError> {
        dispatch!(self, s => s.note_user(seen).await)
    }

    /// The users seen acting in tenant `tenant`, in no particular order.
    pub async fn list_users(&self, tenant: &str) -> Result<Vec<SeenUser>, StoreError> {
        dispatch!(self, s => s.list_users(tenant).await)
    }

    /// Forgets the users seen in tenant `tenant` (done with the tenant's deletion).
    pub async fn forget_users(&self, tenant: &str) -> Result<(), StoreError> {
        dispatch!(self, s => s.forget_users(tenant).await)
    }

    /// Records an issued certificate (overwrites a record with the same serial).
    pub async fn record_cert(&self, rec: &CertRecord) -> Result<(), StoreError> {
        dispatch!(self, s => s.record_cert(rec).await)
    }

    /// Marks a certificate revoked; [`StoreError::NotFound`] if it was never recorded.
    pub async fn revoke_cert(&self, serial_hex: &str) -> Result<CertRecord, StoreError> {
        dispatch!(self, s => s.revoke_cert(serial_hex).await)
    }

    /// Certificates of one tenant, or all of them (`None`), sorted by serial.
    pub async fn list_certs(&self, tenant: Option<&str>) -> Result<Vec<CertRecord>, StoreError> {
        dispatch!(self, s => s.list_certs(tenant).await)
    }

    /// Deletes the records that can no longer matter: certificates (revoked or not) whose
    /// `not_after` is more than `grace` before `now`. An expired certificate fails the TLS
    /// handshake whatever its record says, so neither its record nor its revocation is needed
    /// any more; this is also what is left of a deleted tenant (its certificates are revoked
    /// when it is deleted). Returns how many were deleted.
    /// A tenant's quota ledger and its version (0 when there is none yet).
    pub async fn get_quota_ledger(&self, tid: &TenantId) -> Result<VersionedLedger, StoreError> {
        dispatch!(self, s => s.get_quota_ledger(tid.as_str()).await)
    }

    /// Replaces a tenant's quota ledger if its version is still `expected` (0: none yet).
    /// `Ok(false)`: another writer (this or another replica) got there first; read it again.
    pub async fn swap_quota_ledger(
        &self,
        tid: &TenantId,
        ledger: &Ledger,
        expected: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, s => s.swap_quota_ledger(tid.as_str(), ledger, expected).await)
    }

    /// Removes a tenant's quota ledger (tenant deleted). Missing is fine.
    pub async fn delete_quota_ledger(&self, tid: &TenantId) -> Result<(), StoreError> {
        dispatch!(self, s => s.delete_quota_ledger(tid.as_str()).await)
    }

    /// Every namespace template, with the version a compare-and-swap must name.
    pub async fn list_templates(&self) -> Result<Vec<(NamespaceTemplate, i64)>, StoreError> {
        dispatch!(self, s => s.list_templates().await)
    }

    /// One namespace template and its version.
    pub async fn get_template(
        &self,
        name: &str,
    ) -> Result<Option<(NamespaceTemplate, i64)>, StoreError> {
        dispatch!(self, s => s.get_template(name).await)
    }

    /// Writes a template if its version is still `expected` (0: create, only if absent).
    /// `Ok(false)`: someone else wrote it first; read it again.
    pub async fn swap_template(
        &self,
        t: &NamespaceTemplate,
        expected: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, s => s.swap_template(t, expected).await)
    }

    /// Deletes a template if its version is still `expected`.
    pub async fn delete_template(&self, name: &str, expected: i64) -> Result<bool, StoreError> {
        dispatch!(self, s => s.delete_template(name, expected).await)
    }

    pub async fn prune(
        &self,
        now: std::time::SystemTime,
        grace: std::time::Duration,
    ) -> Result<usize, StoreError> {
        let cutoff = now.checked_sub(grace).unwrap_or(std::time::UNIX_EPOCH);
        dispatch!(self, s => s.prune_expired_before(cutoff).await)
    }
}

/// Claims: cluster-wide names a tenant holds exclusively (Ingress hosts).
impl Store {
    /// Takes `kind`/`key` for `tenant` unless some tenant already holds it; returns the holder
    /// (`tenant` itself when it won or already held it). Atomic across replicas.
    pub async fn claim(&self, kind: &str, key: &str, tenant: &str) -> Result<String, StoreError> {
        dispatch!(self, s => s.claim(kind, key, tenant).await)
    }

    /// Drops every claim of `tenant` (when it is deleted); returns how many.
    pub async fn release_claims(&self, tenant: &str) -> Result<usize, StoreError> {
        dispatch!(self, s => s.release_claims(tenant).await)
    }

    /// Every claim of `kind`, with the version each was read at.
    pub async fn list_claims(&self, kind: &str) -> Result<Vec<ClaimEntry>, StoreError> {
        dispatch!(self, s => s.list_claims(kind).await)
    }

    /// Drops one claim if it is still the one `entry` read (same holder, not re-taken since);
    /// `Ok(false)` when it changed or is gone.
    pub async fn release_claim(&self, kind: &str, entry: &ClaimEntry) -> Result<bool, StoreError> {
        dispatch!(self, s => s.release_claim(kind, entry).await)
    }
}

/// One claim as read: the claimed key, its holder, and the store's version of it (etcd's
/// mod revision; 0 in the embedded store, whose mutex makes the holder the only check).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimEntry {
    pub key: String,
    pub tenant: String,
    pub version: i64,
}

pub(crate) fn check_claim(kind: &str, key: &str, tenant: &str) -> Result<(), StoreError> {
    check_tenant_id(tenant)?;
    let ok = |s: &str, extra: &[u8]| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || extra.contains(&b))
    };
    if !ok(kind, b"-") || !ok(key, b"-.*") {
        return Err(StoreError::Invalid(format!(
            "claim {kind}/{key}: not a DNS-style name"
        )));
    }
    Ok(())
}

/// Serial numbers are compared in normalized form: lowercase, no `:` separators, no leading
/// zero bytes (paddock-pki's form).
pub(crate) fn normalize_serial(serial: &str) -> String {
    let s: String = serial
        .chars()
        .filter(|c| *c != ':')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let mut t = s.as_str();
    while t.len() > 2 && t.starts_with("00") {
        t = &t[2..];
    }
    t.to_string()
}

pub(crate) fn check_serial(serial: &str) -> Result<String, StoreError> {
    let n = normalize_serial(serial);
    if n.is_empty() || n.len() > 128 || !n.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(StoreError::Invalid(format!(
            "certificate serial {serial:?} is not hex"
        )));
    }
    Ok(n)
}

pub(crate) fn check_template_name(name: &str) -> Result<(), StoreError> {
    if paddock_core::templates::valid_template_name(name) {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "invalid template name {name:?}"
        )))
    }
}

pub(crate) fn check_tenant_id(id: &str) -> Result<(), StoreError> {
    TenantId::parse(id)
        .map(|_| ())
        .map_err(|e| StoreError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_normalization() {
        assert_eq!(normalize_serial("00:AB:cd"), "abcd");
        assert_eq!(normalize_serial("7f00"), "7f00");
        assert!(check_serial("xyz").is_err());
        assert!(check_serial("").is_err());
        assert_eq!(check_serial("0A0B").unwrap(), "0a0b");
    }

    #[test]
    fn records_serde() {
        let t = TenantRecord::new(TenantId::parse("foofoo").unwrap(), "Foo");
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.contains("\"displayName\":\"Foo\""), "{json}");
        assert!(json.contains("\"phase\":\"Active\""), "{json}");
        let back: TenantRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let bad = json.replace("foofoo", "FOO");
        assert!(serde_json::from_str::<TenantRecord>(&bad).is_err());
        for (p, s) in [
            (TenantPhase::Active, "\"Active\""),
            (TenantPhase::Suspended, "\"Suspended\""),
            (TenantPhase::Terminating, "\"Terminating\""),
        ] {
            assert_eq!(serde_json::to_string(&p).unwrap(), s);
        }
    }

    #[test]
    fn cert_expiry() {
        let mut c = CertRecord {
            serial_hex: "01".into(),
            tenant: None,
            user: "admin".into(),
            groups: vec![],
            not_after: "2000-01-01T00:00:00Z".into(),
            revoked: false,
            revoked_at: None,
        };
        assert!(c.is_expired(std::time::SystemTime::now()));
        c.not_after = "2999-01-01T00:00:00Z".into();
        assert!(!c.is_expired(std::time::SystemTime::now()));
        assert!(now_rfc3339().ends_with('Z'));
    }

    #[test]
    fn tenant_record_limits_are_backward_compatible() {
        // A record written before fair-share limits existed still reads, with none set.
        let old = r#"{"id":"acme01","displayName":"A","labels":{},"phase":"Active","created":"2026-01-01T00:00:00Z","generation":3}"#;
        let rec: TenantRecord = serde_json::from_str(old).unwrap();
        assert_eq!(rec.limits, None);
        // No overrides: the record serializes exactly as before (no `limits` key).
        assert!(!serde_json::to_string(&rec).unwrap().contains("limits"));
        let mut rec2 = rec.clone();
        rec2.limits = Some(paddock_core::fair::share::LimitOverrides {
            write_qps: Some(7),
            ..Default::default()
        });
        let s = serde_json::to_string(&rec2).unwrap();
        assert!(s.contains(r#""limits":{"writeQPS":7}"#), "{s}");
        assert_eq!(serde_json::from_str::<TenantRecord>(&s).unwrap(), rec2);
    }
}
