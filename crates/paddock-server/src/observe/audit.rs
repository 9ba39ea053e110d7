//! The tenant audit trail (docs/audit.md): one `audit.k8s.io/v1` Event per tenant request, in
//! the tenant's view, at the level the policy file gives it, written off the request path by
//! a background task to a log file (rotated) and/or a webhook (batches as an `EventList`).
//!
//! The request path only formats the event and hands the line to a bounded channel; a full
//! channel drops the event and counts it (`paddock_audit_dropped_total`) rather than slowing
//! the tenant down (kube-apiserver's batching backend does the same with its buffer).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use paddock_core::observe::audit::{Attributes, Finished, Level, Policy, ResourceRef};
use paddock_core::{ApiPath, TenantId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::AuditConfig;
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;

/// Events waiting to be written; beyond this they are dropped (and counted).
const QUEUE: usize = 16_384;
/// A batch leaves when it has this many events, or every [`FLUSH_INTERVAL`].
const BATCH: usize = 400;
const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// The audit trail of one replica.
pub struct Audit {
    policy: Policy,
    tx: mpsc::Sender<Vec<u8>>,
    /// The platform stream: refusals of callers whose tenant is not known (audit_answer.rs).
    platform: Option<mpsc::Sender<Vec<u8>>>,
    dropped: prometheus_client::metrics::counter::Counter,
}

impl Audit {
    /// Reads the policy and starts the writer; None when no policy file is configured.
    pub fn start(
        cfg: &AuditConfig,
        dropped: prometheus_client::metrics::counter::Counter,
        shutdown: CancellationToken,
    ) -> Result<Option<Arc<Audit>>, ServerError> {
        let Some(pf) = &cfg.policy_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(pf).map_err(|e| {
            ServerError::Config(format!("audit_policy_file: {}: {e}", pf.display()))
        })?;
        let policy = Policy::parse(&text).map_err(|e| {
            ServerError::Config(format!("audit_policy_file: {}: {e}", pf.display()))
        })?;
        if cfg.log_path.is_none() && cfg.webhook_url.is_none() {
            return Err(ServerError::Config(
                "audit_policy_file is set but neither audit_log_path nor audit_webhook_url".into(),
            ));
        }
        let webhook = match &cfg.webhook_url {
            Some(url) => Some(Webhook::new(url, cfg.webhook_ca.as_deref())?),
            None => None,
        };
        let file = cfg.log_path.clone().map(|path| RotatingFile {
            path,
            max_bytes: cfg.log_max_size_mb * 1024 * 1024,
            backups: cfg.log_max_backups,
        });
        let platform = platform_log_path(cfg).map(|path| {
            let (tx, rx) = mpsc::channel(QUEUE);
            let file = RotatingFile {
                path,
                max_bytes: cfg.log_max_size_mb * 1024 * 1024,
                backups: cfg.log_max_backups,
            };
            tokio::spawn(writer(rx, Some(file), None, shutdown.clone()));
            tx
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(rx, file, webhook, shutdown));
        Ok(Some(Arc::new(Audit {
            policy,
            tx,
            platform,
            dropped,
        })))
    }

    /// Queues an event of the platform stream (no tenant's), if there is one.
    pub fn record_platform(&self, ev: &paddock_core::observe::audit::Event) {
        let Some(tx) = &self.platform else { return };
        let Ok(mut line) = serde_json::to_vec(ev) else {
            return;
        };
        line.push(b'\n');
        if tx.try_send(line).is_err() {
            self.dropped.inc();
        }
    }

    /// The level of a request (the policy's; never above Metadata for secrets).
    pub fn level(&self, a: &Attributes) -> Level {
        paddock_core::observe::audit::effective_level(&self.policy, a)
    }

    /// Queues the event of a finished request.
    pub fn record(&self, level: Level, f: &Finished) {
        if level == Level::None {
            return;
        }
        let mut line = match serde_json::to_vec(&paddock_core::observe::audit::event(level, f)) {
            Ok(l) => l,
            Err(_) => return,
        };
        line.push(b'\n');
        if self.tx.try_send(line).is_err() {
            self.dropped.inc();
        }
    }
}

/// The tenant's request body, kept (by the proxy, which reads it) for an event at level
/// `Request` or above; carried in the request's extensions.
#[derive(Clone, Default)]
pub struct AuditBody(pub Arc<std::sync::OnceLock<Bytes>>);

/// What the router keeps of a request for its audit event (taken only when auditing is on).
pub struct RequestInfo {
    /// Filled by the proxy with the request body it read.
    pub body: AuditBody,
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Option<String>,
    pub(crate) user_agent: String,
    pub(crate) received: SystemTime,
    pub(crate) start: std::time::Instant,
}

impl RequestInfo {
    /// Takes what the event needs before the request is consumed.
    pub fn of<B>(req: &Request<B>, start: std::time::Instant) -> RequestInfo {
        RequestInfo {
            body: AuditBody::default(),
            method: req.method().as_str().to_string(),
            path: req.uri().path().to_string(),
            query: req.uri().query().map(str::to_string),
            user_agent: req
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string(),
            received: SystemTime::now(),
            start,
        }
    }
}

/// Records a finished request of a tenant caller (platform admins' requests are not tenant
/// requests: the admin API logs its own changes).
pub fn record_request(audit: &Audit, caller: &Caller, info: &RequestInfo, code: u16) {
    if let Some((level, f)) = prepare(audit, caller, info, code) {
        audit.record(level, &f);
    }
}

/// The level and event of a finished request of a tenant caller; None when it is not
/// recorded (not a tenant, or level None).
pub fn prepare(
    audit: &Audit,
    caller: &Caller,
    info: &RequestInfo,
    code: u16,
) -> Option<(Level, Finished)> {
    let Caller::Tenant {
        tenant,
        user,
        groups,
        ..
    } = caller
    else {
        return None;
    };
    let attrs = attributes(
        user,
        groups,
        &info.method,
        &info.path,
        info.query.as_deref(),
    );
    let level = audit.level(&attrs);
    if level == Level::None {
        return None;
    }
    let request_uri = match &info.query {
        Some(q) => format!("{}?{q}", info.path),
        None => info.path.clone(),
    };
    let f = Finished {
        tenant: tenant.as_str().to_string(),
        attrs,
        request_uri,
        source_ip: String::new(),
        user_agent: info.user_agent.clone(),
        code,
        audit_id: audit_id(tenant),
        received: micro_time(info.received),
        completed: micro_time(SystemTime::now()),
        latency_ms: info.start.elapsed().as_secs_f64() * 1e3,
        // Parsed only when the level keeps it (core decides about secrets); a body that is not
        // JSON (protobuf, YAML) is left out.
        request_object: matches!(level, Level::Request | Level::RequestResponse)
            .then(|| info.body.0.get())
            .flatten()
            .and_then(|b| serde_json::from_slice(b).ok()),
        response_object: None,
    };
    Some((level, f))
}

/// The tenant's view of a request for the policy and the event: the path parsed as the tenant
/// wrote it (names without prefix), never the translated upstream one.
pub fn attributes(
    tenant_user: &str,
    groups: &[String],
    method: &str,
    path: &str,
    query: Option<&str>,
) -> Attributes {
    let parsed = paddock_core::parse_request(method, path, query).ok();
    let verb = parsed
        .as_ref()
        .map(|p| p.verb.as_str().to_string())
        .unwrap_or_else(|| method.to_ascii_lowercase());
    let resource = parsed.and_then(|p| match p.path {
        ApiPath::Resource(r) => Some(ResourceRef {
            group: r.group.into(),
            version: r.version.into(),
            resource: r.resource.into(),
            subresource: r.subresource.unwrap_or_default().into(),
            namespace: r.namespace.unwrap_or_default().into(),
            name: r.name.unwrap_or_default().into(),
        }),
        _ => None,
    });
    Attributes {
        user: tenant_user.to_string(),
        groups: groups.to_vec(),
        verb,
        resource,
        path: path.to_string(),
    }
}

/// RFC 3339 with microseconds, UTC (audit timestamps are `MicroTime`).
pub fn micro_time(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    let mut out = Vec::with_capacity(27);
    crate::observe::access_log::push_seconds(&mut out, t);
    out.push(b'.');
    crate::observe::access_log::push_padded(&mut out, t.microsecond(), 6);
    out.push(b'Z');
    String::from_utf8_lossy(&out).into_owned()
}

/// A new audit id (a random-looking UUID v4 form from the clock and a counter: unique per
/// replica and process, which is what an audit id needs).
pub fn audit_id(tenant: &TenantId) -> String {
    audit_id_for(tenant.as_str())
}

/// [`audit_id`] seeded by any string (the platform stream has no tenant).
pub fn audit_id_for(tenant: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let h = Sha256::digest(format!("{now}/{n}/{}/{}", std::process::id(), tenant));
    let x = hex::encode(&h[..16]);
    format!(
        "{}-{}-4{}-a{}-{}",
        &x[0..8],
        &x[8..12],
        &x[13..16],
        &x[17..20],
        &x[20..32]
    )
}

struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    backups: u32,
}

impl RotatingFile {
    fn write(&self, data: &[u8]) -> std::io::Result<()> {
        if self.path == Path::new("-") {
            return std::io::stdout().lock().write_all(data);
        }
        if self.max_bytes > 0 {
            let size = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
            if size > 0 && size + data.len() as u64 > self.max_bytes {
                self.rotate()?;
            }
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(data)
    }

    /// `<file>` -> `<file>.1` -> ... -> `<file>.<backups>` (the oldest is dropped).
    fn rotate(&self) -> std::io::Result<()> {
        let name = |i: u32| PathBuf::from(format!("{}.{i}", self.path.display()));
        if self.backups == 0 {
            return std::fs::remove_file(&self.path);
        }
        let _ = std::fs::remove_file(name(self.backups));
        for i in (1..self.backups).rev() {
            let _ = std::fs::rename(name(i), name(i + 1));
        }
        std::fs::rename(&self.path, name(1))
    }
}

struct Webhook {
    url: http::Uri,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Webhook {
    fn new(url: &str, ca: Option<&Path>) -> Result<Webhook, ServerError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| ServerError::Config(format!("audit_webhook_url: {e}")))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(5)));
        let builder = match ca {
            Some(ca) => {
                let pem = std::fs::read(ca).map_err(|e| {
                    ServerError::Config(format!("audit_webhook_ca: {}: {e}", ca.display()))
                })?;
                let tls = paddock_pki::upstream_client_config(&pem, None, None, Vec::new())
                    .map_err(|e| ServerError::Config(format!("audit_webhook_ca: {e}")))?;
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls)
            }
            None if uri.scheme_str() == Some("https") => {
                return Err(ServerError::Config(
                    "audit_webhook_url is https: audit_webhook_ca is required".into(),
                ));
            }
            None => {
                let tls = rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls)
            }
        };
        let conn = builder.https_or_http().enable_http1().wrap_connector(http);
        Ok(Webhook {
            url: uri,
            client: Client::builder(TokioExecutor::new()).build(conn),
        })
    }

    async fn send(&self, lines: &[u8]) -> Result<(), String> {
        let mut body =
            br#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#
                .to_vec();
        let mut first = true;
        for l in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if !first {
                body.push(b',');
            }
            first = false;
            body.extend_from_slice(l);
        }
        body.extend_from_slice(b"]}");
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let resp = tokio::time::timeout(Duration::from_secs(10), self.client.request(req))
            .await
            .map_err(|_| "timed out".to_string())?
            .map_err(|e| e.to_string())?;
        let status = resp.status();
        let _ = resp.into_body().collect().await;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("answered {status}"))
        }
    }
}

/// Drains the queue in batches to the backends, until shutdown (then once more).
async fn writer(
    mut rx: mpsc::Receiver<Vec<u8>>,
    file: Option<RotatingFile>,
    webhook: Option<Webhook>,
    shutdown: CancellationToken,
) {
    let file = file.map(Arc::new);
    let mut batch: Vec<u8> = Vec::new();
    let mut n = 0usize;
    let mut tick = tokio::time::interval(FLUSH_INTERVAL);
    loop {
        let mut last = false;
        tokio::select! {
            m = rx.recv() => match m {
                Some(line) => {
                    batch.extend_from_slice(&line);
                    n += 1;
                    if n < BATCH {
                        continue;
                    }
                }
                None => last = true,
            },
            _ = tick.tick() => {}
            _ = shutdown.cancelled() => {
                while let Ok(line) = rx.try_recv() {
                    batch.extend_from_slice(&line);
                }
                last = true;
            }
        }
        if !batch.is_empty() {
            let data = std::mem::take(&mut batch);
            n = 0;
            if let Some(f) = &file {
                let f = f.clone();
                let d = data.clone();
                let r = tokio::task::spawn_blocking(move || f.write(&d)).await;
                if let Ok(Err(e)) = r {
                    tracing::warn!(error = %e, "audit log file: write failed");
                }
            }
            if let Some(w) = &webhook
                && let Err(e) = w.send(&data).await
            {
                tracing::warn!(error = %e, url = %w.url, "audit webhook: batch not delivered");
            }
        }
        if last {
            return;
        }
    }
}

/// The platform stream's file: `audit_platform_log_path`, else next to the tenant log
/// (`audit.log` -> `audit-platform.log`; `-` stays stdout); none with only a webhook.
pub fn platform_log_path(cfg: &AuditConfig) -> Option<std::path::PathBuf> {
    if let Some(p) = &cfg.platform_log_path {
        return Some(p.clone());
    }
    let log = cfg.log_path.as_ref()?;
    if log == std::path::Path::new("-") {
        return Some(log.clone());
    }
    let stem = log.file_stem()?.to_string_lossy();
    let name = match log.extension() {
        Some(ext) => format!("{stem}-platform.{}", ext.to_string_lossy()),
        None => format!("{stem}-platform"),
    };
    Some(log.with_file_name(name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn micro_times_are_rfc3339_utc_with_microseconds() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_795_779_667_000_042);
        assert_eq!(micro_time(t), "2026-11-27T11:41:07.000042Z");
        assert_eq!(
            micro_time(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn attributes_are_the_tenants_view() {
        let a = attributes(
            "alice",
            &[],
            "GET",
            "/api/v1/namespaces/web/secrets/db",
            None,
        );
        assert_eq!(a.verb, "get");
        let r = a.resource.unwrap();
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("web", "db"));
        assert_eq!(r.resource, "secrets");
        let v = attributes("alice", &[], "GET", "/version", None);
        assert!(v.resource.is_none());
    }

    #[test]
    fn rotation_keeps_the_configured_backups() {
        let dir = tempfile::tempdir().unwrap();
        let f = RotatingFile {
            path: dir.path().join("audit.log"),
            max_bytes: 10,
            backups: 2,
        };
        for i in 0..5 {
            f.write(format!("line{i}\n").as_bytes()).unwrap();
        }
        let read = |s: &str| std::fs::read_to_string(dir.path().join(s)).unwrap_or_default();
        assert_eq!(read("audit.log"), "line4\n");
        assert_eq!(read("audit.log.1"), "line3\n");
        assert_eq!(read("audit.log.2"), "line2\n");
        assert!(!dir.path().join("audit.log.3").exists());
    }

    #[test]
    fn audit_ids_are_uuid_shaped_and_unique() {
        let t = TenantId::parse("acme01").unwrap();
        let (a, b) = (audit_id(&t), audit_id(&t));
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
    }
}
