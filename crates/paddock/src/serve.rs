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
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// The settings of `paddock serve`, each declared once: its flag (`--<name>`), its variable
/// (`PADDOCK_<NAME>`), its key in the TOML file (`<name>`), its help (the doc comment). Its
/// default is where [`resolve`] turns it into the server's configuration. Flags beat
/// variables (clap), which beat the file ([`merged`]), which beats the default.
#[derive(clap::Args, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeArgs {
    /// TOML config file (see config/paddock.toml).
    #[arg(long, env = "PADDOCK_CONFIG")]
    #[serde(skip)]
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
    /// How tenant identities are asserted upstream: `impersonate` (the default; Impersonate-*
    /// headers with paddock's credential) or `front-proxy` (X-Remote-* headers with the
    /// front-proxy client certificate; docs/security.md "Upstream identity").
    #[arg(long, env = "PADDOCK_UPSTREAM_IDENTITY_MODE")]
    pub upstream_identity_mode: Option<String>,
    /// Front-proxy mode: client certificate signed by the apiserver's request-header CA, its
    /// CN among --requestheader-allowed-names.
    #[arg(long, env = "PADDOCK_FRONT_PROXY_CLIENT_CERT")]
    pub front_proxy_client_cert: Option<PathBuf>,
    /// Front-proxy mode: that certificate's key (it can assert any identity: guard it like
    /// cluster-admin's).
    #[arg(long, env = "PADDOCK_FRONT_PROXY_CLIENT_KEY")]
    pub front_proxy_client_key: Option<PathBuf>,
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
    /// Per-tenant default: how upstream APF groups a tenant's requests: `user` (the shared
    /// FlowSchema, one flow per user) or `tenant` (a FlowSchema of the tenant's own, one flow).
    #[arg(long, env = "PADDOCK_TENANT_APF_FLOW")]
    pub tenant_apf_flow: Option<String>,
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
    /// An HTTP CONNECT proxy on a unix socket to the cluster's network (the apiserver's egress
    /// selector), for calls to tenants' webhooks when paddock runs outside it (docs/webhooks.md).
    #[arg(long, env = "PADDOCK_CLUSTER_EGRESS_UDS")]
    pub cluster_egress_uds: Option<PathBuf>,
    // ---- The tenant's cluster from the inside (docs/inside.md; needs the admission webhook) ----
    /// KUBERNETES_SERVICE_HOST of every new tenant pod: a name or address of paddock that its
    /// serving certificate holds (kubernetes.default.svc.cluster.local with a tenant DNS);
    /// unset: tenant pods keep the upstream's.
    #[arg(long, env = "PADDOCK_IN_CLUSTER_HOST")]
    pub in_cluster_host: Option<String>,
    /// KUBERNETES_SERVICE_PORT of tenant pods (default 443).
    #[arg(long, env = "PADDOCK_IN_CLUSTER_PORT")]
    pub in_cluster_port: Option<u16>,
    /// PEM bundle tenant pods trust for paddock (default: ca.crt of the certs directory).
    #[arg(long, env = "PADDOCK_IN_CLUSTER_CA")]
    pub in_cluster_ca: Option<PathBuf>,
    /// Where paddock is, ip:port, for the `kubernetes` Endpoints of each tenant's `default`
    /// namespace (repeatable; default: the in-cluster host and port if the host is an address).
    #[arg(
        long = "in-cluster-endpoint",
        env = "PADDOCK_IN_CLUSTER_ENDPOINTS",
        value_delimiter = ','
    )]
    pub in_cluster_endpoints: Option<Vec<String>>,
    /// paddock's own Service, `<namespace>/<name>`: the leader keeps every tenant's
    /// `kubernetes` endpoints on its ready addresses (the chart's replicas); instead of
    /// in_cluster_endpoints.
    #[arg(long, env = "PADDOCK_IN_CLUSTER_SERVICE")]
    pub in_cluster_service: Option<String>,
    /// Address of the tenant DNS (docs/dns.md) tenant pods resolve with; unset: the cluster's.
    #[arg(long, env = "PADDOCK_TENANT_DNS")]
    pub tenant_dns: Option<String>,
    /// Policy of tenants without their own, as JSON (docs/security.md "Tenant policy").
    /// (In the file, a table.)
    #[arg(long, env = "PADDOCK_DEFAULT_POLICY")]
    #[serde(deserialize_with = "json_text")]
    pub default_policy: Option<String>,
    /// Threads serving requests (default: one per CPU). Read before the config file, so a
    /// flag or variable only. Where paddock shares its cores with the apiserver, 1 costs
    /// about a quarter less CPU per request (docs/performance.md).
    #[arg(long, env = "PADDOCK_WORKER_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    #[serde(skip)]
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
    /// (In the file, a table.)
    #[arg(long, env = "PADDOCK_TENANT_DEFAULT_QUOTA")]
    #[serde(deserialize_with = "quota_pairs_text")]
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
    // ---- Leader election (docs/operations.md "Leadership") ----
    /// Leader election among the replicas (default true); false: every replica does the
    /// once-per-fleet work (one replica).
    #[arg(long, env = "PADDOCK_LEADER_ENABLED")]
    pub leader_enabled: Option<bool>,
    /// Namespace of the leader Lease (default paddock-system; the chart: its release's).
    #[arg(long, env = "PADDOCK_LEADER_NAMESPACE")]
    pub leader_namespace: Option<String>,
    /// Name of the leader Lease (default paddock-leader).
    #[arg(long, env = "PADDOCK_LEADER_NAME")]
    pub leader_name: Option<String>,
    /// This replica's identity in the Lease (default: hostname and a random suffix).
    #[arg(long, env = "PADDOCK_LEADER_IDENTITY")]
    pub leader_identity: Option<String>,
    /// How long a Lease nobody renews stays held, e.g. 15s.
    #[arg(long, env = "PADDOCK_LEADER_LEASE_DURATION")]
    pub leader_lease_duration: Option<String>,
    /// How long the leader keeps leading when it cannot renew, e.g. 10s.
    #[arg(long, env = "PADDOCK_LEADER_RENEW_DEADLINE")]
    pub leader_renew_deadline: Option<String>,
    /// How soon a failed read or write of the Lease is tried again, e.g. 2s.
    #[arg(long, env = "PADDOCK_LEADER_RETRY_PERIOD")]
    pub leader_retry_period: Option<String>,
}

/// Shares of the tenants' APF priority level: as many as `workload-low` (service accounts).
const DEFAULT_TENANT_PRIORITY_SHARES: u32 = 100;

/// A table in the file (the default policy) as the JSON text its flag takes.
fn json_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

/// A table in the file (the default quota) as the `k=v,...` its flag takes.
fn quota_pairs_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Pairs {
        Text(String),
        Table(std::collections::BTreeMap<String, String>),
    }
    Ok(match Option::<Pairs>::deserialize(d)? {
        None => None,
        Some(Pairs::Text(s)) => Some(s),
        Some(Pairs::Table(t)) => Some(
            t.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
    })
}

/// The file's settings over `args`' unset ones (flags and variables win), the file's
/// relative paths taken relative to the file. One merge for every setting: both sides are
/// [`ServeArgs`], merged as JSON objects key by key.
fn merged(args: &ServeArgs) -> Result<ServeArgs> {
    let Some(path) = &args.config else {
        return Ok(args.clone());
    };
    let file = load_file(path)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let paths = path_settings();
    let (serde_json::Value::Object(mut over), serde_json::Value::Object(under)) =
        (serde_json::to_value(args)?, serde_json::to_value(&file)?)
    else {
        bail!("settings are not objects");
    };
    for (key, value) in under {
        if value.is_null() || over.get(&key).is_some_and(|v| !v.is_null()) {
            continue;
        }
        let value = match value {
            serde_json::Value::String(p) if paths.contains(&key) => {
                let p = PathBuf::from(p);
                serde_json::Value::String(
                    if p.is_absolute() { p } else { base.join(p) }
                        .to_string_lossy()
                        .into_owned(),
                )
            }
            v => v,
        };
        over.insert(key, value);
    }
    // Unset is absent, not null: a setting's own reader never sees a null.
    over.retain(|_, v| !v.is_null());
    let mut m: ServeArgs = serde_json::from_value(serde_json::Value::Object(over))?;
    m.config = args.config.clone();
    m.worker_threads = args.worker_threads;
    Ok(m)
}

/// The settings that name files: their arguments parse as paths.
fn path_settings() -> std::collections::BTreeSet<String> {
    use clap::Args as _;
    let cmd = ServeArgs::augment_args(clap::Command::new("serve"));
    cmd.get_arguments()
        .filter(|a| a.get_value_parser().type_id() == std::any::TypeId::of::<PathBuf>())
        .map(|a| a.get_id().to_string())
        .collect()
}

fn load_file(path: &Path) -> Result<ServeArgs> {
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
    let m = merged(args)?;
    let connections = connections(&m)?;
    let limits = limits(&m)?;
    let fair_queue = fair_queue(&m)?;
    let quota = quota_config(&m)?;
    let templates = templates_config(&m)?;
    let leader = leader_config(&m)?;
    let audit = AuditConfig {
        policy_file: m.audit_policy_file.clone(),
        log_path: m.audit_log_path.clone(),
        log_max_size_mb: m.audit_log_max_size_mb.unwrap_or(100),
        log_max_backups: m.audit_log_max_backups.unwrap_or(10),
        webhook_url: m.audit_webhook_url.clone(),
        webhook_ca: m.audit_webhook_ca.clone(),
        platform_log_path: m.audit_platform_log_path.clone(),
    };

    let listen_s = m.listen.clone().unwrap_or_else(|| "127.0.0.1:8443".into());
    let listen: SocketAddr = listen_s
        .parse()
        .with_context(|| format!("listen: {listen_s:?} is not an address:port"))?;
    let store_s = m.store.clone().unwrap_or_else(|| "embedded".into());
    let store: StoreKind = store_s
        .parse()
        .map_err(|e: String| anyhow::anyhow!("store: {e}"))?;
    let log_s = m.log_format.clone().unwrap_or_else(|| "json".into());
    let log_format = match log_s.as_str() {
        "json" => LogFormat::Json,
        "text" => LogFormat::Text,
        other => bail!("log_format: {other:?} is not json or text"),
    };
    let dur = |key: &str, v: Option<String>, d: &str| -> Result<Duration> {
        let s = v.unwrap_or_else(|| d.to_string());
        parse_duration(&s).map_err(|e| anyhow::anyhow!("{key}: {e}"))
    };
    let etcd_password = etcd_password(m.etcd_password_file.clone())?;
    let config = ServerConfig {
        listen,
        certs_dir: m.certs_dir.clone().unwrap_or_else(|| "certs".into()),
        upstream_kubeconfig: m.upstream_kubeconfig.clone()
            .context("upstream_kubeconfig: required (flag --upstream-kubeconfig, env PADDOCK_UPSTREAM_KUBECONFIG, or the config file)")?,
        upstream_identity: paddock_server::config::UpstreamIdentityConfig {
            mode: m.upstream_identity_mode.as_deref().unwrap_or("impersonate").parse()
                .map_err(|e: String| anyhow::anyhow!("upstream_identity_mode: {e}"))?,
            client_cert: m.front_proxy_client_cert.clone(),
            client_key: m.front_proxy_client_key.clone(),
        },
        store,
        data_dir: m.data_dir.clone().unwrap_or_else(|| ".paddock/data".into()),
        etcd_endpoints: m.etcd_endpoints.clone().unwrap_or_default(),
        etcd_prefix: m.etcd_prefix.clone().unwrap_or_else(|| "/paddock".into()),
        etcd_ca_file: m.etcd_ca_file.clone(),
        etcd_cert_file: m.etcd_cert_file.clone(),
        etcd_key_file: m.etcd_key_file.clone(),
        etcd_username: m.etcd_username.clone(),
        etcd_password,
        prune_grace: dur("prune_grace", m.prune_grace.clone(), "7d")?,
        public_url: m.public_url.clone().unwrap_or_else(|| format!("https://{listen}")),
        cert_validity: dur("cert_validity", m.cert_validity.clone(), "24h")?,
        max_body_bytes: m.max_body_bytes.unwrap_or(3 * 1024 * 1024),
        cert_reload_interval: Duration::from_secs(5),
        shutdown_grace: dur("shutdown_grace", m.shutdown_grace.clone(), "10s")?,
        serve_threads: m.serve_threads
            .map_or_else(default_serve_threads, usize::from),
        tenant_priority_shares: m.tenant_priority_shares
            .unwrap_or(DEFAULT_TENANT_PRIORITY_SHARES),
        log_format,
        access_log: m.access_log.unwrap_or(true),

        // ---- Upstream faults and draining ----
        upstream_timeout: dur(
            "upstream_timeout",
            m.upstream_timeout.clone(),
            "60s",
        )?,
        shutdown_delay: dur(
            "shutdown_delay",
            m.shutdown_delay.clone(),
            "5s",
        )?,
        connections,
        limits,
        fair_queue,
        audit,
        usage_refresh: dur(
            "usage_refresh",
            m.usage_refresh.clone(),
            "30s",
        )?,
        quota,
        templates,
        leader,
        admission: paddock_server::config::AdmissionConfig {
            listen: m.admission_listen,
            url: m.admission_url.clone(),
            client_ca: m.admission_client_ca.clone(),
            client_names: m.admission_client_names.clone().unwrap_or_default(),
            cluster_domain: m.cluster_domain.clone().unwrap_or_else(|| "cluster.local".into()),
            claims_gc_interval: Some(dur(
                "admission_claims_gc_interval",
                m.admission_claims_gc_interval.clone(),
                "30s",
            )?),
            cluster_egress_uds: m.cluster_egress_uds.clone(),
            in_cluster: crate::serve_in_cluster::in_cluster(&crate::serve_in_cluster::Settings {
                in_cluster_host: m.in_cluster_host.clone(),
                in_cluster_port: m.in_cluster_port,
                in_cluster_ca: m.in_cluster_ca.clone(),
                certs_dir: m.certs_dir.clone(),
                in_cluster_endpoints: m.in_cluster_endpoints.clone(),
                in_cluster_service: m.in_cluster_service.clone(),
                tenant_dns: m.tenant_dns.clone(),
            })?,
        },
        default_policy: match &m.default_policy {
            Some(j) => {
                let v: serde_json::Value = serde_json::from_str(j).context("default_policy: not JSON")?;
                paddock_core::admission::TenantPolicy::from_json(&v).map_err(|e| anyhow::anyhow!("default_policy: {e}"))?
            }
            None => Default::default(),
        },
    };
    config.validate().map_err(anyhow::Error::msg)?;
    Ok((config, log_format))
}

/// `[quota]` settings: the default tenant quota (flag `k=v,...` or a TOML table), checked
/// here so that a bad default stops the start rather than every tenant creation.
fn quota_config(m: &ServeArgs) -> Result<paddock_server::config::QuotaConfig> {
    let d = paddock_server::config::QuotaConfig::default();
    let default_hard = match &m.tenant_default_quota {
        Some(s) => crate::output::parse_quota_pairs(s).context("tenant_default_quota")?,
        None => Default::default(),
    };
    paddock_server::webhook::quota::validate_hard(&default_hard)
        .map_err(|e| anyhow::anyhow!("tenant_default_quota: {e}"))?;
    let recount_interval = match m.quota_recount_interval.clone() {
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
fn templates_config(m: &ServeArgs) -> Result<paddock_server::config::TemplatesConfig> {
    let d = paddock_server::config::TemplatesConfig::default();
    let pl1 = match m.default_templates.clone().as_deref() {
        Some("pl1") => true,
        None | Some("default") => false,
        Some(o) => anyhow::bail!("default_templates: {o:?} is neither \"pl1\" nor \"default\""),
    };
    let sync_interval = match m.template_sync_interval.clone() {
        Some(s) => {
            parse_duration(&s).map_err(|e| anyhow::anyhow!("template_sync_interval: {e}"))?
        }
        None => d.sync_interval,
    };
    Ok(paddock_server::config::TemplatesConfig { pl1, sync_interval })
}

/// Leader election settings (`leader_*`), client-go's timings by default.
fn leader_config(m: &ServeArgs) -> Result<paddock_server::config::LeaderConfig> {
    let d = paddock_server::config::LeaderConfig::default();
    let dur = |key: &str, v: &Option<String>, d: Duration| -> Result<Duration> {
        v.as_deref().map_or(Ok(d), |s| {
            parse_duration(s).map_err(|e| anyhow::anyhow!("{key}: {e}"))
        })
    };
    let l = d.lease;
    Ok(paddock_server::config::LeaderConfig {
        enabled: m.leader_enabled.unwrap_or(d.enabled),
        lease: paddock_upstream::lease::LeaseSettings {
            namespace: m.leader_namespace.clone().unwrap_or(l.namespace),
            name: m.leader_name.clone().unwrap_or(l.name),
            identity: m.leader_identity.clone().unwrap_or(l.identity),
            lease_duration: dur(
                "leader_lease_duration",
                &m.leader_lease_duration,
                l.lease_duration,
            )?,
            renew_deadline: dur(
                "leader_renew_deadline",
                &m.leader_renew_deadline,
                l.renew_deadline,
            )?,
            retry_period: dur(
                "leader_retry_period",
                &m.leader_retry_period,
                l.retry_period,
            )?,
        },
    })
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

fn connections(m: &ServeArgs) -> Result<ConnectionConfig> {
    let d = ConnectionConfig::default();
    let dur = |key: &str, a: &Option<String>, default: Duration| -> Result<Duration> {
        match a.clone() {
            Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("{key}: {e}")),
            None => Ok(default),
        }
    };
    Ok(ConnectionConfig {
        tls_handshake_timeout: dur(
            "tls_handshake_timeout",
            &m.tls_handshake_timeout,
            d.tls_handshake_timeout,
        )?,
        header_read_timeout: dur(
            "header_read_timeout",
            &m.header_read_timeout,
            d.header_read_timeout,
        )?,
        body_read_timeout: dur(
            "body_read_timeout",
            &m.body_read_timeout,
            d.body_read_timeout,
        )?,
        idle_timeout: dur("idle_timeout", &m.idle_timeout, d.idle_timeout)?,
        http2_keepalive: dur("http2_keepalive", &m.http2_keepalive, d.http2_keepalive)?,
        max_header_bytes: m.max_header_bytes.unwrap_or(d.max_header_bytes),
        max_unauthenticated: m
            .max_unauthenticated_connections
            .unwrap_or(d.max_unauthenticated),
        max_unauthenticated_per_source: m
            .max_unauthenticated_connections_per_source
            .unwrap_or(d.max_unauthenticated_per_source),
        token_review_qps: m.token_review_qps.unwrap_or(d.token_review_qps),
        token_review_burst: m.token_review_burst.unwrap_or(d.token_review_burst),
    })
}

fn fair_queue(m: &ServeArgs) -> Result<FairQueueConfig> {
    let d = FairQueueConfig::default();
    let timeout = match m.fair_queue_timeout.clone() {
        Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("fair_queue_timeout: {e}"))?,
        None => d.timeout,
    };
    if timeout.is_zero() {
        anyhow::bail!("fair_queue_timeout: must be at least 1s");
    }
    let lease = match m.fair_queue_lease.clone() {
        Some(s) => parse_duration(&s).map_err(|e| anyhow::anyhow!("fair_queue_lease: {e}"))?,
        None => d.lease,
    };
    Ok(FairQueueConfig {
        seats: m.fair_queue_seats.unwrap_or(d.seats),
        timeout,
        lease,
        reserve: m.fair_queue_reserve.unwrap_or(d.reserve),
        pace: m.fair_queue_pace.unwrap_or(d.pace),
    })
}

fn limits(m: &ServeArgs) -> Result<Limits> {
    let d = Limits::default();
    let apf_flow = match m.tenant_apf_flow.as_deref() {
        None => d.apf_flow,
        Some(s) => serde_json::from_value(serde_json::Value::from(s)).map_err(|_| {
            anyhow::anyhow!("tenant_apf_flow: {s:?} is neither `user` nor `tenant`")
        })?,
    };
    Ok(Limits {
        read_qps: m.tenant_read_qps.unwrap_or(d.read_qps),
        read_burst: m.tenant_read_burst.unwrap_or(d.read_burst),
        write_qps: m.tenant_write_qps.unwrap_or(d.write_qps),
        write_burst: m.tenant_write_burst.unwrap_or(d.write_burst),
        max_inflight: m.tenant_max_inflight.unwrap_or(d.max_inflight),
        max_watches: m.tenant_max_watches.unwrap_or(d.max_watches),
        max_list: m.tenant_max_list.unwrap_or(d.max_list),
        max_connections: m.tenant_max_connections.unwrap_or(d.max_connections),
        apf_flow,
    })
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
