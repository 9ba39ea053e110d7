//! `paddock serve`: flags beat environment variables beat the TOML file beat defaults.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_api::duration::parse_duration;
use paddock_core::fair::share::Limits;
use paddock_server::config::FairQueueConfig;
use paddock_server::config::{AuditConfig, ConnectionConfig, Secret};
use paddock_server::{LogFormat, ServerConfig, StoreKind};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// Flags of `paddock serve`; each also reads `PADDOCK_<NAME>`.
#[derive(clap::Args, Default)]
pub struct ServeArgs {
    /// TOML config file (see config/paddock.toml).
    #[arg(long, env = "PADDOCK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Listen address.
    #[arg(long, env = "PADDOCK_LISTEN")]
    pub listen: Option<String>,
    /// Directory with ca.crt, ca.key, serving.crt, serving.key.
    #[arg(long, env = "PADDOCK_CERTS_DIR")]
    pub certs_dir: Option<PathBuf>,
    /// Kubeconfig of paddock's own upstream credential.
    #[arg(long, env = "PADDOCK_UPSTREAM_KUBECONFIG")]
    pub upstream_kubeconfig: Option<PathBuf>,
    /// Tenant store: embedded or etcd.
    #[arg(long, env = "PADDOCK_STORE")]
    pub store: Option<String>,
    /// Data directory of the embedded store.
    #[arg(long, env = "PADDOCK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// etcd endpoints, comma-separated.
    #[arg(long, env = "PADDOCK_ETCD_ENDPOINTS", value_delimiter = ',')]
    pub etcd_endpoints: Option<Vec<String>>,
    /// Key prefix in etcd.
    #[arg(long, env = "PADDOCK_ETCD_PREFIX")]
    pub etcd_prefix: Option<String>,
    /// CA bundle of etcd's serving certificates (for https:// endpoints).
    #[arg(long, env = "PADDOCK_ETCD_CA_FILE")]
    pub etcd_ca_file: Option<PathBuf>,
    /// Client certificate presented to etcd (re-read when it changes).
    #[arg(long, env = "PADDOCK_ETCD_CERT_FILE")]
    pub etcd_cert_file: Option<PathBuf>,
    /// Private key of the etcd client certificate.
    #[arg(long, env = "PADDOCK_ETCD_KEY_FILE")]
    pub etcd_key_file: Option<PathBuf>,
    /// etcd user name (etcd's own authentication).
    #[arg(long, env = "PADDOCK_ETCD_USERNAME")]
    pub etcd_username: Option<String>,
    /// File holding the etcd user's password (the variable PADDOCK_ETCD_PASSWORD holds it
    /// directly; there is no flag, so that it never shows in a process list).
    #[arg(long, env = "PADDOCK_ETCD_PASSWORD_FILE")]
    pub etcd_password_file: Option<PathBuf>,
    /// How long after expiry certificate records are kept before pruning, e.g. 7d.
    #[arg(long, env = "PADDOCK_PRUNE_GRACE")]
    pub prune_grace: Option<String>,
    /// Server URL written into kubeconfigs.
    #[arg(long, env = "PADDOCK_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Validity of issued certificates, e.g. 24h (default: short-lived; renew with `paddock user issue`).
    #[arg(long, env = "PADDOCK_CERT_VALIDITY")]
    pub cert_validity: Option<String>,
    /// Largest request body, bytes.
    #[arg(long, env = "PADDOCK_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Log format: json or text.
    #[arg(long, env = "PADDOCK_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// Grace period for in-flight requests at shutdown, e.g. 10s.
    #[arg(long, env = "PADDOCK_SHUTDOWN_GRACE")]
    pub shutdown_grace: Option<String>,
    /// Concurrency shares of the upstream APF priority level of tenants' requests
    /// (`paddock-tenants`; default 100, as `workload-low`); 0 = leave APF alone.
    #[arg(long, env = "PADDOCK_TENANT_PRIORITY_SHARES")]
    pub tenant_priority_shares: Option<u32>,
    /// One log line per request (`paddock::access`; default true).
    #[arg(long, env = "PADDOCK_ACCESS_LOG")]
    pub access_log: Option<bool>,
    /// TLS handshake timeout, e.g. 10s.
    #[arg(long, env = "PADDOCK_TLS_HANDSHAKE_TIMEOUT")]
    pub tls_handshake_timeout: Option<String>,
    /// Time a client has to send a request's headers, and a new connection its first
    /// request, e.g. 30s.
    #[arg(long, env = "PADDOCK_HEADER_READ_TIMEOUT")]
    pub header_read_timeout: Option<String>,
    /// Time a request's whole body may take to arrive, from the request's start, e.g. 60s.
    #[arg(long, env = "PADDOCK_BODY_READ_TIMEOUT")]
    pub body_read_timeout: Option<String>,
    /// A connection with no request in progress is closed after this, e.g. 90s.
    #[arg(long, env = "PADDOCK_IDLE_TIMEOUT")]
    pub idle_timeout: Option<String>,
    /// HTTP/2 keep-alive ping interval (and the time a ping may take), e.g. 30s.
    #[arg(long, env = "PADDOCK_HTTP2_KEEPALIVE")]
    pub http2_keepalive: Option<String>,
    /// Largest request header block; a larger one gets a 431 Status.
    #[arg(long, env = "PADDOCK_MAX_HEADER_BYTES")]
    pub max_header_bytes: Option<usize>,
    /// Connections without a client certificate open at once (0: no bound; default 4096).
    #[arg(long, env = "PADDOCK_MAX_UNAUTHENTICATED_CONNECTIONS")]
    pub max_unauthenticated_connections: Option<usize>,
    /// The same, from one source address (0: no bound; default 256).
    #[arg(long, env = "PADDOCK_MAX_UNAUTHENTICATED_CONNECTIONS_PER_SOURCE")]
    pub max_unauthenticated_connections_per_source: Option<usize>,
    /// TokenReviews a second sent upstream for bearer tokens not seen lately (0: no bound;
    /// default 50).
    #[arg(long, env = "PADDOCK_TOKEN_REVIEW_QPS")]
    pub token_review_qps: Option<u32>,
    /// TokenReviews banked for a burst of new tokens (default 100).
    #[arg(long, env = "PADDOCK_TOKEN_REVIEW_BURST")]
    pub token_review_burst: Option<u32>,
    /// Work seats of this replica shared fairly among tenants (default 8 per core; 0 turns
    /// the queue off; docs/fairshare.md).
    #[arg(long, env = "PADDOCK_FAIR_QUEUE_SEATS")]
    pub fair_queue_seats: Option<u32>,
    /// Longest wait for work seats before a 429, e.g. 15s.
    #[arg(long, env = "PADDOCK_FAIR_QUEUE_TIMEOUT")]
    pub fair_queue_timeout: Option<String>,
    /// How long a request holds its work seats before they may be taken back for a waiting
    /// request (it goes on without them), e.g. 1s.
    #[arg(long, env = "PADDOCK_FAIR_QUEUE_LEASE")]
    pub fair_queue_lease: Option<String>,
    /// Work seats kept for light tenants (holding no more than this many), so their
    /// requests do not wait behind a flood (default 0: off).
    #[arg(long, env = "PADDOCK_FAIR_QUEUE_RESERVE")]
    pub fair_queue_reserve: Option<u32>,
    /// While a light tenant is active, heavy tenants are paced to this percent of one work
    /// seat's time (seats x time held); 0 turns pacing off (docs/fairshare.md "Pacing").
    #[arg(long, env = "PADDOCK_FAIR_QUEUE_PACE")]
    pub fair_queue_pace: Option<u32>,
    /// Per-tenant default: reads and watch opens per second, per replica (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_READ_QPS")]
    pub tenant_read_qps: Option<u32>,
    /// Per-tenant default: read burst.
    #[arg(long, env = "PADDOCK_TENANT_READ_BURST")]
    pub tenant_read_burst: Option<u32>,
    /// Per-tenant default: writes per second, per replica (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_WRITE_QPS")]
    pub tenant_write_qps: Option<u32>,
    /// Per-tenant default: write burst.
    #[arg(long, env = "PADDOCK_TENANT_WRITE_BURST")]
    pub tenant_write_burst: Option<u32>,
    /// Per-tenant default: requests in flight, watches excluded (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_MAX_INFLIGHT")]
    pub tenant_max_inflight: Option<u32>,
    /// Per-tenant default: open watches (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_MAX_WATCHES")]
    pub tenant_max_watches: Option<u32>,
    /// Per-tenant default: largest LIST `limit`; larger ones are lowered to it (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_MAX_LIST")]
    pub tenant_max_list: Option<u32>,
    /// Per-tenant default: open TLS connections (0 = no limit).
    #[arg(long, env = "PADDOCK_TENANT_MAX_CONNECTIONS")]
    pub tenant_max_connections: Option<u32>,
    /// Tenant audit trail: kube-apiserver audit Policy file (audit.k8s.io/v1); unset = no audit trail.
    #[arg(long, env = "PADDOCK_AUDIT_POLICY_FILE")]
    pub audit_policy_file: Option<PathBuf>,
    /// Tenant audit trail: JSON-lines file of audit.k8s.io/v1 Events (- = stdout).
    #[arg(long, env = "PADDOCK_AUDIT_LOG_PATH")]
    pub audit_log_path: Option<PathBuf>,
    /// Tenant audit trail: rotate the file at this many MiB (default 100; 0 = never).
    #[arg(long, env = "PADDOCK_AUDIT_LOG_MAX_SIZE_MB")]
    pub audit_log_max_size_mb: Option<u64>,
    /// Tenant audit trail: rotated files kept (default 10).
    #[arg(long, env = "PADDOCK_AUDIT_LOG_MAX_BACKUPS")]
    pub audit_log_max_backups: Option<u32>,
    /// Tenant audit trail: URL receiving audit.k8s.io/v1 EventLists (POST).
    #[arg(long, env = "PADDOCK_AUDIT_WEBHOOK_URL")]
    pub audit_webhook_url: Option<String>,
    /// Tenant audit trail: CA bundle of an https webhook.
    #[arg(long, env = "PADDOCK_AUDIT_WEBHOOK_CA")]
    pub audit_webhook_ca: Option<PathBuf>,
    /// Platform audit stream (refusals of callers of no known tenant): JSON-lines file;
    /// default: next to the audit log (audit.log -> audit-platform.log).
    #[arg(long, env = "PADDOCK_AUDIT_PLATFORM_LOG_PATH")]
    pub audit_platform_log_path: Option<PathBuf>,
    /// Admission webhook listener (only the apiserver may call it; docs/operations.md
    /// "Admission webhook"); unset = no webhook.
    #[arg(long, env = "PADDOCK_ADMISSION_LISTEN")]
    pub admission_listen: Option<SocketAddr>,
    /// URL the apiserver calls for admission (default https://<admission listen address>).
    #[arg(long, env = "PADDOCK_ADMISSION_URL")]
    pub admission_url: Option<String>,
    /// CA of the client certificate the apiserver presents to the admission webhook.
    #[arg(long, env = "PADDOCK_ADMISSION_CLIENT_CA")]
    pub admission_client_ca: Option<PathBuf>,
    /// Common name accepted on the admission client certificate (repeatable; none = any).
    #[arg(
        long = "admission-client-name",
        env = "PADDOCK_ADMISSION_CLIENT_NAMES",
        value_delimiter = ','
    )]
    pub admission_client_names: Option<Vec<String>>,
    /// The cluster's DNS domain (default cluster.local).
    #[arg(long, env = "PADDOCK_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,
    /// How often unused Ingress-host claims are looked for, e.g. 30s (a claim unused in two
    /// passes in a row is returned; docs/security.md "Ingress hosts").
    #[arg(long, env = "PADDOCK_ADMISSION_CLAIMS_GC_INTERVAL")]
    pub admission_claims_gc_interval: Option<String>,
    /// Policy of tenants without their own, as JSON (docs/security.md "Tenant policy").
    #[arg(long, env = "PADDOCK_DEFAULT_POLICY")]
    pub default_policy: Option<String>,
    /// Threads serving requests (default: one per CPU). Read before the config file, so a
    /// flag or variable only. Where paddock shares its cores with the apiserver, 1 costs
    /// about a quarter less CPU per request (docs/performance.md).
    #[arg(long, env = "PADDOCK_WORKER_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    /// Per-core serving (default: one thread per CPU; 0 turns it off): this many threads,
    /// each with a single-threaded runtime, serve the client connections (round robin) and
    /// their own upstream HTTP/2 connections for short requests, so that a small request is
    /// handled in one thread end to end; lists, watches and background work stay on the
    /// worker threads (docs/architecture.md "Per-core serving").
    #[arg(long, env = "PADDOCK_SERVE_THREADS", value_parser = clap::value_parser!(u16).range(0..=paddock_upstream::serving::MAX_SERVING_THREADS as i64))]
    pub serve_threads: Option<u16>,

    // ---- Upstream faults and draining ----
    /// Longest wait for the upstream's answer to a short request, e.g. 60s (then 504).
    #[arg(long, env = "PADDOCK_UPSTREAM_TIMEOUT")]
    pub upstream_timeout: Option<String>,
    /// At SIGTERM, how long /readyz answers 503 before the listener closes, e.g. 5s.
    #[arg(long, env = "PADDOCK_SHUTDOWN_DELAY")]
    pub shutdown_delay: Option<String>,

    // ---- Metering ----
    /// How old usage figures may get before they are read upstream again, e.g. 30s.
    #[arg(long, env = "PADDOCK_USAGE_REFRESH")]
    pub usage_refresh: Option<String>,
    // ---- Tenant quota (docs/quota.md) ----
    /// Quota given to tenants created without one, e.g. `namespaces=10,pods=100,requests.cpu=20`.
    #[arg(long, env = "PADDOCK_TENANT_DEFAULT_QUOTA")]
    pub tenant_default_quota: Option<String>,
    /// How often each replica recounts tenants' usage upstream, e.g. 2s.
    #[arg(long, env = "PADDOCK_QUOTA_RECOUNT_INTERVAL")]
    pub quota_recount_interval: Option<String>,
    // ---- Namespace templates (docs/templates.md) ----
    /// Built-in mandatory templates: `default` (paddock-default; the default) or `pl1`
    /// (paddock-default and paddock-pl1).
    #[arg(long, env = "PADDOCK_DEFAULT_TEMPLATES")]
    pub default_templates: Option<String>,
    /// How often each replica brings tenant namespaces in step with the templates, e.g. 2s.
    #[arg(long, env = "PADDOCK_TEMPLATE_SYNC_INTERVAL")]
    pub template_sync_interval: Option<String>,
}

/// Shares of the tenants' APF priority level: as many as `workload-low` (service accounts).
const DEFAULT_TENANT_PRIORITY_SHARES: u32 = 100;

/// The TOML file. Unknown keys are an error that names the key.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    certs_dir: Option<PathBuf>,
    upstream_kubeconfig: Option<PathBuf>,
    store: Option<String>,
    data_dir: Option<PathBuf>,
    etcd_endpoints: Option<Vec<String>>,
    etcd_prefix: Option<String>,
    etcd_ca_file: Option<PathBuf>,
    etcd_cert_file: Option<PathBuf>,
    etcd_key_file: Option<PathBuf>,
    etcd_username: Option<String>,
    etcd_password_file: Option<PathBuf>,
    prune_grace: Option<String>,
    public_url: Option<String>,
    cert_validity: Option<String>,
    max_body_bytes: Option<usize>,
    log_format: Option<String>,
    shutdown_grace: Option<String>,
    serve_threads: Option<u16>,
    tenant_priority_shares: Option<u32>,
    access_log: Option<bool>,

    // ---- Upstream faults and draining ----
    upstream_timeout: Option<String>,
    shutdown_delay: Option<String>,
    usage_refresh: Option<String>,
    tls_handshake_timeout: Option<String>,
    header_read_timeout: Option<String>,
    body_read_timeout: Option<String>,
    idle_timeout: Option<String>,
    http2_keepalive: Option<String>,
    max_header_bytes: Option<usize>,
    max_unauthenticated_connections: Option<usize>,
    max_unauthenticated_connections_per_source: Option<usize>,
    token_review_qps: Option<u32>,
    token_review_burst: Option<u32>,
    fair_queue_seats: Option<u32>,
    fair_queue_timeout: Option<String>,
    fair_queue_lease: Option<String>,
    fair_queue_reserve: Option<u32>,
    fair_queue_pace: Option<u32>,
    tenant_read_qps: Option<u32>,
    tenant_read_burst: Option<u32>,
    tenant_write_qps: Option<u32>,
    tenant_write_burst: Option<u32>,
    tenant_max_inflight: Option<u32>,
    tenant_max_watches: Option<u32>,
    tenant_max_list: Option<u32>,
    tenant_max_connections: Option<u32>,
    audit_policy_file: Option<PathBuf>,
    audit_log_path: Option<PathBuf>,
    audit_log_max_size_mb: Option<u64>,
    audit_log_max_backups: Option<u32>,
    audit_webhook_url: Option<String>,
    audit_webhook_ca: Option<PathBuf>,
    audit_platform_log_path: Option<PathBuf>,
    tenant_default_quota: Option<std::collections::BTreeMap<String, String>>,
    quota_recount_interval: Option<String>,
    default_templates: Option<String>,
    template_sync_interval: Option<String>,
    admission_listen: Option<SocketAddr>,
    admission_url: Option<String>,
    admission_client_ca: Option<PathBuf>,
    admission_client_names: Option<Vec<String>>,
    cluster_domain: Option<String>,
    admission_claims_gc_interval: Option<String>,
    default_policy: Option<paddock_core::admission::TenantPolicy>,
}

fn load_file(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("config: cannot read {}", path.display()))?;
    toml::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "config {}: {}",
            path.display(),
            e.message().to_string() + &span_hint(&text, e.span())
        )
    })
}

fn span_hint(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].lines().count().max(1);
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// Merges flags/env over the file over defaults, and validates.
pub fn resolve(args: &ServeArgs) -> Result<(ServerConfig, LogFormat)> {
    let file = match &args.config {
        Some(p) => load_file(p)?,
        None => FileConfig::default(),
    };
    // Relative paths in the file are relative to the file.
    let base = args
        .config
        .as_ref()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let rel = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
    let connections = connections(args, &file)?;
    let limits = limits(args, &file);
    let fair_queue = fair_queue(args, &file)?;
    let quota = quota_config(args, &file)?;
    let templates = templates_config(args, &file)?;
    let audit = AuditConfig {
        policy_file: args
            .audit_policy_file
            .clone()
            .or(file.audit_policy_file.clone().map(&rel)),
        log_path: args
            .audit_log_path
            .clone()
            .or(file.audit_log_path.clone().map(&rel)),
        log_max_size_mb: args
            .audit_log_max_size_mb
            .or(file.audit_log_max_size_mb)
            .unwrap_or(100),
        log_max_backups: args
            .audit_log_max_backups
            .or(file.audit_log_max_backups)
            .unwrap_or(10),
        webhook_url: args
            .audit_webhook_url
            .clone()
            .or(file.audit_webhook_url.clone()),
        webhook_ca: args
            .audit_webhook_ca
            .clone()
            .or(file.audit_webhook_ca.clone().map(&rel)),
        platform_log_path: args
            .audit_platform_log_path
            .clone()
            .or(file.audit_platform_log_path.clone().map(&rel)),
    };

    let listen_s = args
        .listen
        .clone()
        .or(file.listen)
        .unwrap_or_else(|| "127.0.0.1:8443".into());
    let listen: SocketAddr = listen_s
        .parse()
        .with_context(|| format!("listen: {listen_s:?} is not an address:port"))?;
    let store_s = args
        .store
        .clone()
        .or(file.store)
        .unwrap_or_else(|| "embedded".into());
    let store: StoreKind = store_s
        .parse()
        .map_err(|e: String| anyhow::anyhow!("store: {e}"))?;
    let log_s = args
        .log_format
        .clone()
        .or(file.log_format)
        .unwrap_or_else(|| "json".into());
    let log_format = match log_s.as_str() {
        "json" => LogFormat::Json,
        "text" => LogFormat::Text,
        other => bail!("log_format: {other:?} is not json or text"),
    };
    let dur = |key: &str, v: Option<String>, d: &str| -> Result<Duration> {
        let s = v.unwrap_or_else(|| d.to_string());
        parse_duration(&s).map_err(|e| anyhow::anyhow!("{key}: {e}"))
    };
    let etcd_password = etcd_password(
        args.etcd_password_file
            .clone()
            .or(file.etcd_password_file.map(&rel)),
    )?;
    let config = ServerConfig {
        listen,
        certs_dir: args.certs_dir.clone().or(file.certs_dir.map(&rel)).unwrap_or_else(|| "certs".into()),
        upstream_kubeconfig: args
            .upstream_kubeconfig
            .clone()
            .or(file.upstream_kubeconfig.map(&rel))
            .context("upstream_kubeconfig: required (flag --upstream-kubeconfig, env PADDOCK_UPSTREAM_KUBECONFIG, or the config file)")?,
        store,
        data_dir: args.data_dir.clone().or(file.data_dir.map(&rel)).unwrap_or_else(|| ".paddock/data".into()),
        etcd_endpoints: args.etcd_endpoints.clone().or(file.etcd_endpoints).unwrap_or_default(),
        etcd_prefix: args.etcd_prefix.clone().or(file.etcd_prefix).unwrap_or_else(|| "/paddock".into()),
        etcd_ca_file: args.etcd_ca_file.clone().or(file.etcd_ca_file.map(&rel)),
        etcd_cert_file: args.etcd_cert_file.clone().or(file.etcd_cert_file.map(&rel)),
        etcd_key_file: args.etcd_key_file.clone().or(file.etcd_key_file.map(&rel)),
        etcd_username: args.etcd_username.clone().or(file.etcd_username),
        etcd_password,
        prune_grace: dur("prune_grace", args.prune_grace.clone().or(file.prune_grace), "7d")?,
        public_url: args.public_url.clone().or(file.public_url).unwrap_or_else(|| format!("https://{listen}")),
        cert_validity: dur("cert_validity", args.cert_validity.clone().or(file.cert_validity), "24h")?,
        max_body_bytes: args.max_body_bytes.or(file.max_body_bytes).unwrap_or(3 * 1024 * 1024),
        cert_reload_interval: Duration::from_secs(5),
        shutdown_grace: dur("shutdown_grace", args.shutdown_grace.clone().or(file.shutdown_grace), "10s")?,
        serve_threads: args
            .serve_threads
            .or(file.serve_threads)
            .map_or_else(default_serve_threads, usize::from),
        tenant_priority_shares: args
            .tenant_priority_shares
            .or(file.tenant_priority_shares)
            .unwrap_or(DEFAULT_TENANT_PRIORITY_SHARES),
        log_format,
        access_log: args.access_log.or(file.access_log).unwrap_or(true),

        // ---- Upstream faults and draining ----
        upstream_timeout: dur(
            "upstream_timeout",
            args.upstream_timeout.clone().or(file.upstream_timeout),
            "60s",
        )?,
        shutdown_delay: dur(
            "shutdown_delay",
            args.shutdown_delay.clone().or(file.shutdown_delay),
            "5s",
        )?,
        connections,
        limits,
        fair_queue,
        audit,
        usage_refresh: dur(
            "usage_refresh",
            args.usage_refresh.clone().or(file.usage_refresh),
            "30s",
        )?,
        quota,
        templates,
        admission: paddock_server::config::AdmissionConfig {
            listen: args.admission_listen.or(file.admission_listen),
            url: args.admission_url.clone().or(file.admission_url),
            client_ca: args.admission_client_ca.clone().or(file.admission_client_ca.map(&rel)),
            client_names: args.admission_client_names.clone().or(file.admission_client_names).unwrap_or_default(),
            cluster_domain: args.cluster_domain.clone().or(file.cluster_domain).unwrap_or_else(|| "cluster.local".into()),
            claims_gc_interval: Some(dur(
                "admission_claims_gc_interval",
                args.admission_claims_gc_interval.clone().or(file.admission_claims_gc_interval),
                "30s",
            )?),
        },
        default_policy: match &args.default_policy {
            Some(j) => {
                let v: serde_json::Value = serde_json::from_str(j).context("default_policy: not JSON")?;
                paddock_core::admission::TenantPolicy::from_json(&v).map_err(|e| anyhow::anyhow!("default_policy: {e}"))?
            }
            None => file.default_policy.unwrap_or_default(),
        },
    };
    config.validate().map_err(anyhow::Error::msg)?;
    Ok((config, log_format))
}

/// `[quota]` settings: the default tenant quota (flag `k=v,...` or a TOML table), checked
/// here so that a bad default stops the start rather than every tenant creation.
fn quota_config(
    args: &ServeArgs,
    file: &FileConfig,
) -> Result<paddock_server::config::QuotaConfig> {
    let d = paddock_server::config::QuotaConfig::default();
    let default_hard = match &args.tenant_default_quota {
        Some(s) => crate::output::parse_quota_pairs(s).context("tenant_default_quota")?,
        None => file.tenant_default_quota.clone().unwrap_or_default(),
    };
    paddock_server::webhook::quota::validate_hard(&default_hard)
        .map_err(|e| anyhow::anyhow!("tenant_default_quota: {e}"))?;
    let recount_interval = match args
        .quota_recount_interval
        .clone()
        .or(file.quota_recount_interval.clone())
    {
        Some(s) => {
            parse_duration(&s).map_err(|e| anyhow::anyhow!("quota_recount_interval: {e}"))?
        }
        None => d.recount_interval,
    };
    Ok(paddock_server::config::QuotaConfig {
        default_hard,
        recount_interval,
    })
}

/// Namespace template settings.
fn templates_config(
    args: &ServeArgs,
    file: &FileConfig,
) -> Result<paddock_server::config::TemplatesConfig> {
    let d = paddock_server::config::TemplatesConfig::default();
    let pl1 = match args
        .default_templates
        .clone()
        .or(file.default_templates.clone())
        .as_deref()
    {
        Some("pl1") => true,
        None | Some("default") => false,
        Some(o) => anyhow::bail!("default_templates: {o:?} is neither \"pl1\" nor \"default\""),
    };
    let sync_interval = match args
        .template_sync_interval
        .clone()
        .or(file.template_sync_interval.clone())
    {
        Some(s) => {
            parse_duration(&s).map_err(|e| anyhow::anyhow!("template_sync_interval: {e}"))?
        }
        None => d.sync_interval,
    };
    Ok(paddock_server::config::TemplatesConfig { pl1, sync_interval })
}

/// The etcd password: a file named by flag, variable or config file beats
/// `PADDOCK_ETCD_PASSWORD`. A trailing newline in the file is not part of it.
fn etcd_password(file: Option<PathBuf>) -> Result<Option<Secret>> {
    if let Some(p) = file {
        let text = std::fs::read_to_string(&p)
            .with_context(|| format!("etcd_password_file: cannot read {}", p.display()))?;
        return Ok(Some(Secret(
            text.trim_end_matches(['\r', '\n']).to_string(),
        )));
    }
    Ok(std::env::var("PADDOCK_ETCD_PASSWORD").ok().map(Secret))
}

fn connections(args: &ServeArgs, file: &FileConfig) -> Result<ConnectionConfig> {
    let d = ConnectionConfig::default();
    let dur = |key: &str,
               a: &Option<String>,
               f: &Option<String>,
               default: Duration|
     -> Result<Duration> {
        match a.clone().or_else(|| f.clone()) {
            Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("{key}: {e}")),
            None => Ok(default),
        }
    };
    Ok(ConnectionConfig {
        tls_handshake_timeout: dur(
            "tls_handshake_timeout",
            &args.tls_handshake_timeout,
            &file.tls_handshake_timeout,
            d.tls_handshake_timeout,
        )?,
        header_read_timeout: dur(
            "header_read_timeout",
            &args.header_read_timeout,
            &file.header_read_timeout,
            d.header_read_timeout,
        )?,
        body_read_timeout: dur(
            "body_read_timeout",
            &args.body_read_timeout,
            &file.body_read_timeout,
            d.body_read_timeout,
        )?,
        idle_timeout: dur(
            "idle_timeout",
            &args.idle_timeout,
            &file.idle_timeout,
            d.idle_timeout,
        )?,
        http2_keepalive: dur(
            "http2_keepalive",
            &args.http2_keepalive,
            &file.http2_keepalive,
            d.http2_keepalive,
        )?,
        max_header_bytes: args
            .max_header_bytes
            .or(file.max_header_bytes)
            .unwrap_or(d.max_header_bytes),
        max_unauthenticated: args
            .max_unauthenticated_connections
            .or(file.max_unauthenticated_connections)
            .unwrap_or(d.max_unauthenticated),
        max_unauthenticated_per_source: args
            .max_unauthenticated_connections_per_source
            .or(file.max_unauthenticated_connections_per_source)
            .unwrap_or(d.max_unauthenticated_per_source),
        token_review_qps: args
            .token_review_qps
            .or(file.token_review_qps)
            .unwrap_or(d.token_review_qps),
        token_review_burst: args
            .token_review_burst
            .or(file.token_review_burst)
            .unwrap_or(d.token_review_burst),
    })
}

fn fair_queue(args: &ServeArgs, file: &FileConfig) -> Result<FairQueueConfig> {
    let d = FairQueueConfig::default();
    let timeout = match args
        .fair_queue_timeout
        .clone()
        .or(file.fair_queue_timeout.clone())
    {
        Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("fair_queue_timeout: {e}"))?,
        None => d.timeout,
    };
    if timeout.is_zero() {
        anyhow::bail!("fair_queue_timeout: must be at least 1s");
    }
    let lease = match args
        .fair_queue_lease
        .clone()
        .or(file.fair_queue_lease.clone())
    {
        Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("fair_queue_lease: {e}"))?,
        None => d.lease,
    };
    Ok(FairQueueConfig {
        seats: args
            .fair_queue_seats
            .or(file.fair_queue_seats)
            .unwrap_or(d.seats),
        timeout,
        lease,
        reserve: args
            .fair_queue_reserve
            .or(file.fair_queue_reserve)
            .unwrap_or(d.reserve),
        pace: args
            .fair_queue_pace
            .or(file.fair_queue_pace)
            .unwrap_or(d.pace),
    })
}

fn limits(args: &ServeArgs, file: &FileConfig) -> Limits {
    let d = Limits::default();
    Limits {
        read_qps: args
            .tenant_read_qps
            .or(file.tenant_read_qps)
            .unwrap_or(d.read_qps),
        read_burst: args
            .tenant_read_burst
            .or(file.tenant_read_burst)
            .unwrap_or(d.read_burst),
        write_qps: args
            .tenant_write_qps
            .or(file.tenant_write_qps)
            .unwrap_or(d.write_qps),
        write_burst: args
            .tenant_write_burst
            .or(file.tenant_write_burst)
            .unwrap_or(d.write_burst),
        max_inflight: args
            .tenant_max_inflight
            .or(file.tenant_max_inflight)
            .unwrap_or(d.max_inflight),
        max_watches: args
            .tenant_max_watches
            .or(file.tenant_max_watches)
            .unwrap_or(d.max_watches),
        max_list: args
            .tenant_max_list
            .or(file.tenant_max_list)
            .unwrap_or(d.max_list),
        max_connections: args
            .tenant_max_connections
            .or(file.tenant_max_connections)
            .unwrap_or(d.max_connections),
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,hyper=warn,h2=warn,rustls=warn,tonic=warn")
    });
    // The access log (one line per request) does not go through here: see
    // paddock_server::observe::access_log.
    // Colour codes only for a terminal: a log file or a collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
        LogFormat::Text => builder.init(),
    }
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> Result<()> {
    let (config, log_format) = resolve(&args)?;
    init_logging(log_format);
    let token = CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot install the SIGTERM handler");
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutdown requested");
        t2.cancel();
        // A second signal skips the drain (someone at a terminal pressing Ctrl-C again).
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::warn!("second shutdown signal: exiting without draining");
        std::process::exit(130);
    });
    paddock_server::run(config, token).await?;
    Ok(())
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;

/// Per-core serving's default: one serving thread per CPU paddock may run on (measured:
/// 3-7 % less CPU per small GET at 64 concurrent and 7-14 % at 1 than serving on the
/// multi-thread runtime, the same throughput; docs/performance/sessions-14-16.md "Session 16").
pub fn default_serve_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(paddock_upstream::serving::MAX_SERVING_THREADS)
}
