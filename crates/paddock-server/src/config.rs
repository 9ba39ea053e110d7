//! Server configuration: one typed, validated struct. The binary fills it from flags, the
//! environment and an optional TOML file; this crate only validates it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use paddock_upstream::lease::LeaseSettings;
use serde::Deserialize;

/// Which backend keeps tenant records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// A local file store for one replica (the zero-setup default).
    Embedded,
    /// etcd, shared by every replica.
    Etcd,
}

impl std::str::FromStr for StoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "embedded" => Ok(StoreKind::Embedded),
            "etcd" => Ok(StoreKind::Etcd),
            other => Err(format!(
                "unknown store {other:?}: expected \"embedded\" or \"etcd\""
            )),
        }
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line (production).
    Json,
    /// Human-readable.
    Text,
}

/// A value that is never printed (passwords).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Everything `paddock serve` needs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address of the tenant-facing TLS listener (loopback in tests).
    pub listen: SocketAddr,
    /// Directory with ca.crt, ca.key, serving.crt, serving.key.
    pub certs_dir: PathBuf,
    /// Kubeconfig of paddock's own upstream credential.
    pub upstream_kubeconfig: PathBuf,
    /// How tenant identities are asserted upstream: impersonation or front proxy.
    pub upstream_identity: UpstreamIdentityConfig,
    /// Tenant store backend.
    pub store: StoreKind,
    /// Data directory of the embedded store.
    pub data_dir: PathBuf,
    /// etcd endpoints (store = etcd).
    pub etcd_endpoints: Vec<String>,
    /// Key prefix in etcd.
    pub etcd_prefix: String,
    /// CA bundle that signed etcd's serving certificates (needed for `https://` endpoints).
    pub etcd_ca_file: Option<PathBuf>,
    /// Client certificate paddock presents to etcd.
    pub etcd_cert_file: Option<PathBuf>,
    /// Its private key.
    pub etcd_key_file: Option<PathBuf>,
    /// etcd user (etcd's own authentication).
    pub etcd_username: Option<String>,
    /// The etcd user's password.
    pub etcd_password: Option<Secret>,
    /// How long after it expired a certificate's record (and revocation) is kept before it is
    /// pruned from the store.
    pub prune_grace: Duration,
    /// Server URL written into the kubeconfigs paddock hands out.
    pub public_url: String,
    /// Validity of issued tenant-user certificates.
    pub cert_validity: Duration,
    /// Largest request body accepted from a tenant.
    pub max_body_bytes: usize,
    /// How often serving/CA certificates are re-read from disk.
    pub cert_reload_interval: Duration,
    /// How long in-flight requests may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Per-core serving: threads, each with a single-threaded runtime of its own, that serve
    /// the client connections (round robin) and their own upstream connections for short
    /// requests (`serve_threads`); 0 serves on the main runtime (`paddock serve` defaults to
    /// one per CPU).
    pub serve_threads: usize,
    /// API Priority and Fairness: the concurrency shares of the `paddock-tenants` priority
    /// level paddock keeps upstream for its tenants' requests; 0 leaves APF alone (tenants then
    /// fall into `global-default` like any other user).
    pub tenant_priority_shares: u32,
    /// Log format (also of the access log).
    pub log_format: LogFormat,
    /// Whether every request gets an access-log line (`paddock::access`).
    pub access_log: bool,

    // ---- Upstream faults and draining (docs/operations.md "Upstream faults", "Shutdown") ----
    /// Longest paddock waits for the upstream's answer to a short request (everything but
    /// watches, `logs -f`, proxies and upgrades), as kube-apiserver's 60 s: then 504.
    pub upstream_timeout: Duration,
    /// At SIGTERM, how long `/readyz` answers 503 while everything is still served, so that a
    /// load balancer takes the replica out before it stops accepting connections.
    pub shutdown_delay: Duration,
    /// Bounds on client connections (docs/fairshare.md).
    pub connections: ConnectionConfig,
    /// Default per-tenant fair-share limits of one replica; a tenant record may override them.
    pub limits: paddock_core::fair::share::Limits,
    /// The replica's tenant-fair work queue (docs/fairshare.md "Fair queue").
    pub fair_queue: FairQueueConfig,
    /// The tenant audit trail (docs/audit.md); off without a policy file.
    pub audit: AuditConfig,
    /// How old the usage figures may get before they are read upstream again
    /// (docs/metering.md): the background refresh period and a usage report's freshness.
    pub usage_refresh: Duration,
    /// Tenant-wide quota: the default for new tenants, the recount interval (docs/quota.md).
    pub quota: QuotaConfig,
    /// paddock's admission webhook (docs/operations.md "Admission webhook"); off unless
    /// `admission.listen` is set.
    pub admission: AdmissionConfig,
    /// The policy of a tenant that has none of its own (docs/security.md "Tenant policy").
    pub default_policy: paddock_core::admission::TenantPolicy,
    /// Namespace templates (docs/templates.md).
    pub templates: TemplatesConfig,
    /// Leader election among the replicas (docs/operations.md "Leadership").
    pub leader: LeaderConfig,
}

/// How tenant identities are asserted upstream (config `upstream_identity_mode`,
/// `front_proxy_client_cert`, `front_proxy_client_key`; docs/security.md "Upstream identity").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamIdentityConfig {
    pub mode: paddock_core::identity::headers::UpstreamIdentityMode,
    /// Client certificate signed by the upstream's request-header CA, with a CN among its
    /// `--requestheader-allowed-names` (front-proxy mode only).
    pub client_cert: Option<PathBuf>,
    /// Its private key: whoever holds it can be anyone to the apiserver.
    pub client_key: Option<PathBuf>,
}

/// A front-proxy client certificate and its key, PEM.
pub type FrontProxyPems = (Vec<u8>, Vec<u8>);

impl UpstreamIdentityConfig {
    /// The front-proxy certificate and key (PEM) in front-proxy mode, None under
    /// impersonation; an error names the setting that is missing or unreadable.
    pub fn load(&self) -> Result<Option<FrontProxyPems>, String> {
        use paddock_core::identity::headers::UpstreamIdentityMode as Mode;
        let files = [
            ("front_proxy_client_cert", &self.client_cert),
            ("front_proxy_client_key", &self.client_key),
        ];
        if self.mode == Mode::Impersonate {
            return match files.iter().find(|(_, p)| p.is_some()) {
                // A key that does nothing is a key lying about: say so rather than ignore it.
                Some((key, _)) => Err(format!(
                    "{key}: set, but upstream_identity_mode is \"impersonate\" (set upstream_identity_mode = \"front-proxy\" to use it)"
                )),
                None => Ok(None),
            };
        }
        let mut pems = Vec::new();
        for (key, path) in files {
            let path = path.as_ref().ok_or_else(|| {
                format!("{key}: required when upstream_identity_mode is \"front-proxy\"")
            })?;
            let pem = std::fs::read(path)
                .map_err(|e| format!("{key}: cannot read {}: {e}", path.display()))?;
            if pem.is_empty() {
                return Err(format!("{key}: {} is empty", path.display()));
            }
            pems.push(pem);
        }
        let key = pems.pop().unwrap_or_default();
        let cert = pems.pop().unwrap_or_default();
        Ok(Some((cert, key)))
    }
}

/// The admission webhook the apiserver calls (config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Address of the webhook listener (its own TLS listener: only the apiserver may call it);
    /// None: no webhook, and no webhook configuration is installed upstream.
    pub listen: Option<SocketAddr>,
    /// URL the apiserver calls (a load balancer in front of every replica); default
    /// `https://<listen address>` (one replica).
    pub url: Option<String>,
    /// CA of the client certificate the apiserver presents (its AdmissionConfiguration
    /// kubeConfigFile); required with `listen`.
    pub client_ca: Option<PathBuf>,
    /// Common names accepted among the certificates `client_ca` signed; empty: any.
    pub client_names: Vec<String>,
    /// The cluster's DNS domain (ExternalName policy).
    pub cluster_domain: String,
    /// How often the Ingress-host claims are compared with the Ingresses upstream (a claim no
    /// Ingress of its holder names in two passes in a row is returned); None: 30 s.
    pub claims_gc_interval: Option<Duration>,
    /// The tenant's cluster from the inside (docs/inside.md); None: pods are left alone.
    pub in_cluster: Option<InClusterConfig>,
    /// The cluster's egress proxy (HTTP CONNECT on a unix socket) through which the relay calls
    /// tenants' webhooks (docs/webhooks.md); None: dialled directly.
    pub cluster_egress_uds: Option<PathBuf>,
}

/// Where tenant pods find paddock (config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClusterConfig {
    /// What the admission webhook gives every new tenant pod.
    pub pods: std::sync::Arc<paddock_core::admission::inside::InCluster>,
    /// The addresses of the `kubernetes` Endpoints in each tenant's `default` namespace
    /// (none: the Service has no endpoints, unless `service` gives them).
    pub endpoints: Vec<SocketAddr>,
    /// paddock's own Service (namespace, name): its ready addresses become every tenant's
    /// `kubernetes` endpoints, kept by the leader (paddock_reconciler::api_endpoints).
    pub service: Option<(String, String)>,
}

impl AdmissionConfig {
    /// The URL the webhook configurations name, once the listener is bound at `bound`.
    pub fn url_for(&self, bound: SocketAddr) -> String {
        self.url
            .clone()
            .unwrap_or_else(|| format!("https://{bound}"))
    }
}

/// Where audit events go (config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditConfig {
    /// kube-apiserver's audit Policy file; no file = no audit trail.
    pub policy_file: Option<PathBuf>,
    /// JSON-lines log file (`-` = stdout).
    pub log_path: Option<PathBuf>,
    /// Rotate when the file reaches this many MiB (0 = never).
    pub log_max_size_mb: u64,
    /// Rotated files kept (`<file>.1` newest).
    pub log_max_backups: u32,
    /// Webhook URL receiving `audit.k8s.io/v1` `EventList`s (POST, JSON).
    pub webhook_url: Option<String>,
    /// CA bundle verifying an https webhook.
    pub webhook_ca: Option<PathBuf>,
    /// The platform stream (refusals of callers of no known tenant); unset = next to
    /// `log_path` (audit_answer.rs).
    pub platform_log_path: Option<PathBuf>,
}

/// Bounds on what one client connection may hold (docs/fairshare.md), after kube-apiserver's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// A TLS handshake not done by then is dropped.
    pub tls_handshake_timeout: Duration,
    /// A request's header block must arrive within this (HTTP/1.1, from its first byte), and
    /// a connection's first request must have begun within this of its handshake (both
    /// protocols: slow or no headers).
    pub header_read_timeout: Duration,
    /// A request's whole body must have arrived within this of its start (a trickling body is
    /// cut); kube-apiserver's own request timeout.
    pub body_read_timeout: Duration,
    /// A connection with no request in progress for this long is closed (HTTP/1.1 and
    /// HTTP/2; a watch or a streamed response counts as in progress).
    pub idle_timeout: Duration,
    /// HTTP/2 keep-alive ping interval; a peer that does not answer within the same time is
    /// dropped.
    pub http2_keepalive: Duration,
    /// Largest header block (names and values, after decoding) answered with anything but a
    /// 431 (HTTP/2 advertises it as SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_bytes: usize,
    /// Connections without a client certificate (in their TLS handshake, or using bearer
    /// tokens) open at once, in all; beyond it a new connection is closed at once. 0: no bound.
    pub max_unauthenticated: usize,
    /// The same, from one source address (behind a load balancer that does not pass the
    /// client's address on, every connection has the balancer's). 0: no bound.
    pub max_unauthenticated_per_source: usize,
    /// TokenReviews a second this replica sends upstream for bearer tokens it has not seen
    /// lately (beyond it such a request gets a 429); 0: no bound.
    pub token_review_qps: u32,
    /// TokenReviews banked for a burst of new tokens.
    pub token_review_burst: u32,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(90),
            http2_keepalive: Duration::from_secs(30),
            max_header_bytes: 256 * 1024,
            max_unauthenticated: 4096,
            max_unauthenticated_per_source: 256,
            token_review_qps: 50,
            token_review_burst: 100,
        }
    }
}

impl ServerConfig {
    /// Files the server reads from the certs directory.
    pub fn ca_cert(&self) -> PathBuf {
        self.certs_dir.join("ca.crt")
    }
    /// The tenant CA's private key.
    pub fn ca_key(&self) -> PathBuf {
        self.certs_dir.join("ca.key")
    }
    /// Serving certificate of the TLS front end.
    pub fn serving_cert(&self) -> PathBuf {
        self.certs_dir.join("serving.crt")
    }
    /// Serving key of the TLS front end.
    pub fn serving_key(&self) -> PathBuf {
        self.certs_dir.join("serving.key")
    }

    /// Checks what can be checked before starting; errors name the offending setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.serve_threads > paddock_upstream::serving::MAX_SERVING_THREADS {
            return Err(format!(
                "serve_threads: at most {} (got {})",
                paddock_upstream::serving::MAX_SERVING_THREADS,
                self.serve_threads
            ));
        }
        for (key, path) in [
            ("certs_dir (ca.crt)", self.ca_cert()),
            ("certs_dir (ca.key)", self.ca_key()),
            ("certs_dir (serving.crt)", self.serving_cert()),
            ("certs_dir (serving.key)", self.serving_key()),
            ("upstream_kubeconfig", self.upstream_kubeconfig.clone()),
        ] {
            if !path.is_file() {
                return Err(format!(
                    "{key}: {} does not exist or is not a file",
                    path.display()
                ));
            }
        }
        self.upstream_identity.load()?;
        if self.store == StoreKind::Etcd {
            self.validate_etcd()?;
        }
        self.validate_admission()?;
        if !self.public_url.starts_with("https://") {
            return Err(format!(
                "public_url: {:?} must start with https://",
                self.public_url
            ));
        }
        if self.cert_validity < Duration::from_secs(60) {
            return Err("cert_validity: must be at least 1m".into());
        }
        if self.upstream_timeout < Duration::from_secs(1) {
            return Err("upstream_timeout: must be at least 1s".into());
        }
        if self.usage_refresh < Duration::from_secs(1) {
            return Err("usage_refresh: must be at least 1s".into());
        }
        let c = &self.connections;
        for (key, d) in [
            ("tls_handshake_timeout", c.tls_handshake_timeout),
            ("header_read_timeout", c.header_read_timeout),
            ("body_read_timeout", c.body_read_timeout),
            ("idle_timeout", c.idle_timeout),
            ("http2_keepalive", c.http2_keepalive),
        ] {
            if d.is_zero() {
                return Err(format!("{key}: must be at least 1s"));
            }
        }
        self.leader.validate()?;
        if !(4096..=MAX_HEADER_BYTES_CEILING).contains(&c.max_header_bytes) {
            return Err(format!(
                "max_header_bytes: must be between 4096 and {MAX_HEADER_BYTES_CEILING}"
            ));
        }
        Ok(())
    }
}

impl ServerConfig {
    fn validate_admission(&self) -> Result<(), String> {
        let a = &self.admission;
        if a.listen.is_none() {
            if a.in_cluster.is_some() {
                return Err("in_cluster_host: tenant pods are pointed at paddock by its admission webhook; set admission_listen too".into());
            }
            return Ok(());
        }
        match &a.client_ca {
            None => return Err("admission_client_ca: the admission webhook needs the CA of the apiserver's client certificate (only the apiserver may call it)".into()),
            Some(p) if !p.is_file() => {
                return Err(format!("admission_client_ca: {} does not exist or is not a file", p.display()));
            }
            Some(_) => {}
        }
        if let Some(u) = &a.url
            && !u.starts_with("https://")
        {
            return Err(format!("admission_url: {u:?} must start with https://"));
        }
        self.default_policy
            .validate()
            .map_err(|e| format!("default policy: {e}"))
    }

    fn validate_etcd(&self) -> Result<(), String> {
        if self.etcd_endpoints.is_empty() {
            return Err("etcd_endpoints: store = \"etcd\" needs at least one endpoint".into());
        }
        for (key, path) in [
            ("etcd_ca_file", &self.etcd_ca_file),
            ("etcd_cert_file", &self.etcd_cert_file),
            ("etcd_key_file", &self.etcd_key_file),
        ] {
            if let Some(p) = path
                && !p.is_file()
            {
                return Err(format!(
                    "{key}: {} does not exist or is not a file",
                    p.display()
                ));
            }
        }
        if self.etcd_cert_file.is_some() != self.etcd_key_file.is_some() {
            return Err("etcd_cert_file and etcd_key_file go together: set both or neither".into());
        }
        if self.etcd_cert_file.is_some() && self.etcd_ca_file.is_none() {
            return Err("etcd_cert_file: a client certificate needs etcd_ca_file too".into());
        }
        for ep in &self.etcd_endpoints {
            let https = ep.starts_with("https://");
            if !https && !ep.starts_with("http://") {
                return Err(format!(
                    "etcd_endpoints: {ep:?} must start with https:// or http://"
                ));
            }
            if https != self.etcd_ca_file.is_some() {
                return Err(if https {
                    format!("etcd_endpoints: {ep} is https: set etcd_ca_file")
                } else {
                    format!("etcd_endpoints: {ep} is plain http but etcd_ca_file is set")
                });
            }
        }
        if self.etcd_username.is_some() != self.etcd_password.is_some() {
            return Err(
                "etcd_username and the etcd password (etcd_password_file or PADDOCK_ETCD_PASSWORD) go together".into(),
            );
        }
        Ok(())
    }

    /// The store's connection options for etcd.
    pub fn etcd_options(&self) -> paddock_store::EtcdOptions {
        paddock_store::EtcdOptions {
            endpoints: self.etcd_endpoints.clone(),
            prefix: self.etcd_prefix.clone(),
            tls: self
                .etcd_ca_file
                .clone()
                .map(|ca| paddock_store::EtcdTlsFiles {
                    ca,
                    cert: self.etcd_cert_file.clone(),
                    key: self.etcd_key_file.clone(),
                }),
            user: match (&self.etcd_username, &self.etcd_password) {
                (Some(u), Some(p)) => Some((u.clone(), p.0.clone())),
                _ => None,
            },
            reload_interval: self.cert_reload_interval,
        }
    }
}

/// The largest `max_header_bytes`: the HTTP/1.1 read buffer is sized above it (a header
/// block beyond the buffer gets hyper's own bare 431), so it bounds memory per connection.
pub const MAX_HEADER_BYTES_CEILING: usize = 1 << 20;

/// Quota settings (config `[quota]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaConfig {
    /// Hard limits given to a tenant created without a quota of its own (empty: none).
    pub default_hard: std::collections::BTreeMap<String, String>,
    /// How often each replica recounts the usage of every tenant with a quota.
    pub recount_interval: Duration,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            default_hard: std::collections::BTreeMap::new(),
            recount_interval: Duration::from_secs(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn etcd_config(endpoints: &[&str]) -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8443)),
            certs_dir: "certs".into(),
            upstream_kubeconfig: "k".into(),
            upstream_identity: UpstreamIdentityConfig::default(),
            store: StoreKind::Etcd,
            data_dir: "d".into(),
            etcd_endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            etcd_prefix: "/paddock".into(),
            etcd_ca_file: None,
            etcd_cert_file: None,
            etcd_key_file: None,
            etcd_username: None,
            etcd_password: None,
            prune_grace: Duration::from_secs(86400),
            public_url: "https://127.0.0.1:8443".into(),
            cert_validity: Duration::from_secs(3600),
            max_body_bytes: 1,
            cert_reload_interval: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(1),
            serve_threads: 0,
            upstream_timeout: Duration::from_secs(60),
            shutdown_delay: Duration::from_secs(0),
            tenant_priority_shares: 0,
            log_format: LogFormat::Text,
            access_log: false,
            connections: ConnectionConfig::default(),
            limits: paddock_core::fair::share::Limits::default(),
            fair_queue: Default::default(),
            audit: AuditConfig::default(),
            usage_refresh: Duration::from_secs(30),
            quota: QuotaConfig::default(),
            admission: AdmissionConfig::default(),
            default_policy: Default::default(),
            templates: TemplatesConfig::default(),
            leader: LeaderConfig::default(),
        }
    }

    #[test]
    fn etcd_settings_are_checked_together() {
        let err = |c: &ServerConfig| c.validate_etcd().err().unwrap_or_default();
        assert!(err(&etcd_config(&[])).contains("at least one endpoint"));
        assert!(err(&etcd_config(&["https://e:2379"])).contains("set etcd_ca_file"));
        assert!(err(&etcd_config(&["e:2379"])).contains("must start with"));
        assert_eq!(err(&etcd_config(&["http://e:2379"])), "");
        let ca = std::env::temp_dir().join(format!("paddock-config-test-{}", std::process::id()));
        std::fs::write(&ca, "x").ok();
        let mut c = etcd_config(&["https://e:2379", "https://f:2379"]);
        c.etcd_ca_file = Some(ca.clone());
        assert_eq!(err(&c), "");
        c.etcd_cert_file = Some(ca.clone());
        assert!(err(&c).contains("go together"), "{}", err(&c));
        c.etcd_key_file = Some(ca.clone());
        assert_eq!(err(&c), "");
        c.etcd_username = Some("paddock".into());
        assert!(err(&c).contains("etcd_username"), "{}", err(&c));
        c.etcd_password = Some(Secret("pw".into()));
        assert_eq!(err(&c), "");
        let opts = c.etcd_options();
        assert_eq!(opts.user, Some(("paddock".into(), "pw".into())));
        assert_eq!(opts.tls.map(|t| t.ca), Some(ca.clone()));
        assert!(
            !format!("{c:?}").contains("\"pw\""),
            "the password is never printed"
        );
        let mut mixed = etcd_config(&["http://e:2379"]);
        mixed.etcd_ca_file = Some(ca.clone());
        assert!(err(&mixed).contains("plain http"));
        std::fs::remove_file(&ca).ok();
    }

    #[test]
    fn front_proxy_needs_a_readable_certificate_and_key() {
        use paddock_core::identity::headers::UpstreamIdentityMode as Mode;
        let dir = std::env::temp_dir().join(format!("paddock-fp-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let (cert, key) = (dir.join("fp.crt"), dir.join("fp.key"));
        std::fs::write(&cert, "CERT").ok();
        std::fs::write(&key, "KEY").ok();
        let err = |c: &UpstreamIdentityConfig| c.load().err().unwrap_or_default();
        let mut c = UpstreamIdentityConfig::default();
        assert_eq!(c.load(), Ok(None));
        c.client_cert = Some(cert.clone());
        assert!(
            err(&c).contains("upstream_identity_mode is \"impersonate\""),
            "{}",
            err(&c)
        );
        c.mode = Mode::FrontProxy;
        assert!(
            err(&c).starts_with("front_proxy_client_key: required"),
            "{}",
            err(&c)
        );
        c.client_key = Some(dir.join("absent.key"));
        assert!(
            err(&c).contains("front_proxy_client_key: cannot read"),
            "{}",
            err(&c)
        );
        c.client_key = Some(key.clone());
        assert_eq!(c.load(), Ok(Some((b"CERT".to_vec(), b"KEY".to_vec()))));
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// Namespace templates (docs/templates.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplatesConfig {
    /// Whether the built-in `paddock-pl1` template (the multi-tenancy benchmark's profile
    /// level 1 set) is mandatory for every tenant (`default_templates = "pl1"`); `"default"`
    /// (the default) keeps only `paddock-default`, so a tenant's namespaces carry no
    /// LimitRange or compute quota it did not ask for, as in a plain cluster.
    pub pl1: bool,
    /// How often the template sync reads the templates from the store (a change made through
    /// another replica shows there only) and retries namespaces whose stamping failed; drift
    /// upstream is seen from the watches, not on this tick.
    pub sync_interval: Duration,
}

impl Default for TemplatesConfig {
    fn default() -> Self {
        TemplatesConfig {
            pl1: false,
            sync_interval: Duration::from_secs(2),
        }
    }
}

/// Leader election (config keys `leader_*`; docs/operations.md "Leadership"): which replica
/// does the once-per-fleet background work. Timings as client-go's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Off: every replica acts as the leader (one replica, or tests that want that).
    pub enabled: bool,
    /// The Lease (paddock's own namespace; the chart sets the release namespace), this
    /// replica's name in it (unique per process: hostname and a random suffix unless set),
    /// and the timings.
    pub lease: LeaseSettings,
}

impl Default for LeaderConfig {
    fn default() -> Self {
        LeaderConfig {
            enabled: true,
            lease: LeaseSettings {
                namespace: "paddock-system".into(),
                name: "paddock-leader".into(),
                identity: default_identity(),
                lease_duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            },
        }
    }
}

impl LeaderConfig {
    /// client-go's rules: lease duration > renew deadline > retry period > 0, whole seconds
    /// for the Lease's `leaseDurationSeconds`.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let l = &self.lease;
        if l.namespace.is_empty() || l.name.is_empty() || l.identity.is_empty() {
            return Err("leader_namespace, leader_name, leader_identity: must not be empty".into());
        }
        if l.retry_period < Duration::from_millis(100) {
            return Err("leader_retry_period: must be at least 100ms".into());
        }
        if l.lease_duration.subsec_nanos() != 0 {
            return Err("leader_lease_duration: whole seconds (the Lease counts seconds)".into());
        }
        if l.renew_deadline >= l.lease_duration {
            return Err("leader_renew_deadline: must be shorter than leader_lease_duration".into());
        }
        if l.retry_period >= l.renew_deadline {
            return Err("leader_retry_period: must be shorter than leader_renew_deadline".into());
        }
        Ok(())
    }
}

/// `<hostname>_<random>`: two processes on one host (a restarted container, the test bed's
/// replicas) never share an identity, as kube-controller-manager's.
pub fn default_identity() -> String {
    use std::hash::{BuildHasher, Hasher};
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "paddock".into());
    // std's hasher keys are random per process: no random-number crate needed.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{host}_{:012x}", h.finish() & 0xffff_ffff_ffff)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Work seats per core of the replica by default.
pub const SEATS_PER_CORE: u32 = 8;

/// Settings of the work queue (config keys `fair_queue_seats`, `fair_queue_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FairQueueConfig {
    /// Work seats of this replica shared among tenants; 0 turns the queue off.
    pub seats: u32,
    /// Longest wait for seats; past it the request is refused with a 429.
    pub timeout: Duration,
    /// How long a request holds its seats before they may be taken back for a waiting
    /// request (it goes on without them): what a slow client can hold seats for.
    pub lease: Duration,
    /// The last seats, kept for light tenants: those holding no more than this many
    /// (`fair_queue_reserve`; 0, the default, turns it off: docs/fairshare.md).
    pub reserve: u32,
    /// While a light tenant is active, heavy tenants are paced to this percent of one seat's
    /// time (`fair_queue_pace`; 0 turns pacing off; docs/fairshare.md "Pacing").
    pub pace: u32,
}

/// On, with 8 seats per core: the queue is work-conserving (a lone tenant may use every
/// seat) and a request waiting on its client loses its seats after the lease, so a budget
/// this small neither caps a lone busy tenant nor lets slow readers hold the replica.
impl Default for FairQueueConfig {
    fn default() -> Self {
        FairQueueConfig {
            seats: SEATS_PER_CORE.saturating_mul(u32::try_from(cores()).unwrap_or(u32::MAX)),
            timeout: Duration::from_secs(15),
            lease: Duration::from_secs(1),
            reserve: 0,
            pace: DEFAULT_PACE,
        }
    }
}

/// The default pace of a heavy tenant while a light one is active, in percent of one seat:
/// about a seventh of a seat (docs/performance/noisy-neighbour.md "Session 12": five
/// repetitions of the noisy neighbour pooled gave B's p99 with A over alone 1.20 at 25 and
/// 1.11 at 15, where the apiserver itself, sent A's admitted rate directly, gave 1.17 and
/// 1.10).
pub const DEFAULT_PACE: u32 = 15;
