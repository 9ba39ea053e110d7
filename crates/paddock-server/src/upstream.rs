//! The upstream side: paddock's own credential from a kubeconfig, and two connection pools.
//!
//! Short requests share an HTTP/2 pool. Long-running requests (watches, `logs -f`, exec/attach/
//! port-forward upgrades, proxies) use a separate HTTP/1.1 pool: kube-apiserver allows 100
//! concurrent streams per HTTP/2 connection and hyper's pool never opens a second one, so
//! watches on the shared connection would eventually stall every other request.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

use crate::error::{BoxError, ServerError};

/// Request body type sent upstream.
pub type UpBody = UnsyncBoxBody<Bytes, BoxError>;

/// paddock's credential for the upstream apiserver, read from a kubeconfig.
#[derive(Clone)]
pub struct UpstreamCredential {
    /// Base URL, e.g. `https://127.0.0.1:6443` (no trailing slash).
    pub server: String,
    /// PEM CA bundle for the server certificate.
    pub ca_pem: Vec<u8>,
    /// PEM client certificate (mTLS), if any.
    pub client_cert_pem: Option<Vec<u8>>,
    /// PEM client key, if any.
    pub client_key_pem: Option<Vec<u8>>,
    /// Bearer token, if any.
    pub token: Option<String>,
}

impl std::fmt::Debug for UpstreamCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print keys or tokens.
        f.debug_struct("UpstreamCredential").field("server", &self.server).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(rename = "current-context")]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Vec<Named<ContextSpec>>,
    #[serde(default)]
    clusters: Vec<Named<ClusterSpec>>,
    #[serde(default)]
    users: Vec<Named<UserSpec>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "context", alias = "cluster", alias = "user")]
    value: T,
}

#[derive(Deserialize)]
struct ContextSpec {
    cluster: String,
    user: String,
}

#[derive(Deserialize)]
struct ClusterSpec {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    ca_data: Option<String>,
    #[serde(rename = "certificate-authority")]
    ca_file: Option<String>,
}

#[derive(Deserialize, Default)]
struct UserSpec {
    #[serde(rename = "client-certificate-data")]
    cert_data: Option<String>,
    #[serde(rename = "client-certificate")]
    cert_file: Option<String>,
    #[serde(rename = "client-key-data")]
    key_data: Option<String>,
    #[serde(rename = "client-key")]
    key_file: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
}

fn data_or_file(data: &Option<String>, file: &Option<String>, base: &Path, what: &str) -> Result<Option<Vec<u8>>, ServerError> {
    if let Some(d) = data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map_err(|e| ServerError::Config(format!("upstream kubeconfig: {what} is not valid base64: {e}")))?;
        return Ok(Some(bytes));
    }
    if let Some(f) = file {
        let p = base.join(f);
        let bytes = std::fs::read(&p)
            .map_err(|e| ServerError::Config(format!("upstream kubeconfig: cannot read {what} {}: {e}", p.display())))?;
        return Ok(Some(bytes));
    }
    Ok(None)
}

impl UpstreamCredential {
    /// Reads the current context of a kubeconfig.
    pub fn from_kubeconfig(path: &Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ServerError::Config(format!("upstream_kubeconfig: cannot read {}: {e}", path.display())))?;
        let kc: Kubeconfig = serde_norway::from_str(&text)
            .map_err(|e| ServerError::Config(format!("upstream_kubeconfig: {} is not a kubeconfig: {e}", path.display())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let ctx_name = kc
            .current_context
            .clone()
            .or_else(|| kc.contexts.first().map(|c| c.name.clone()))
            .ok_or_else(|| ServerError::Config("upstream_kubeconfig: no context".into()))?;
        let ctx = kc
            .contexts
            .iter()
            .find(|c| c.name == ctx_name)
            .ok_or_else(|| ServerError::Config(format!("upstream_kubeconfig: context {ctx_name:?} not found")))?;
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == ctx.value.cluster)
            .ok_or_else(|| ServerError::Config(format!("upstream_kubeconfig: cluster {:?} not found", ctx.value.cluster)))?;
        let default_user = Named { name: String::new(), value: UserSpec::default() };
        let user = kc.users.iter().find(|u| u.name == ctx.value.user).unwrap_or(&default_user);
        let ca_pem = data_or_file(&cluster.value.ca_data, &cluster.value.ca_file, base, "certificate-authority")?
            .ok_or_else(|| ServerError::Config("upstream_kubeconfig: the cluster has no certificate-authority; paddock never talks to an unverified upstream".into()))?;
        let token = match (&user.value.token, &user.value.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(base.join(f))
                    .map_err(|e| ServerError::Config(format!("upstream_kubeconfig: cannot read tokenFile {f}: {e}")))?
                    .trim()
                    .to_string(),
            ),
            _ => None,
        };
        let server = cluster.value.server.trim_end_matches('/').to_string();
        if !server.starts_with("https://") {
            return Err(ServerError::Config(format!("upstream_kubeconfig: server {server:?} must be https")));
        }
        Ok(UpstreamCredential {
            server,
            ca_pem,
            client_cert_pem: data_or_file(&user.value.cert_data, &user.value.cert_file, base, "client-certificate")?,
            client_key_pem: data_or_file(&user.value.key_data, &user.value.key_file, base, "client-key")?,
            token,
        })
    }
}

/// The two pools plus the credential.
#[derive(Clone)]
pub struct Upstream {
    cred: UpstreamCredential,
    short: Client<HttpsConnector<HttpConnector>, UpBody>,
    long: Client<HttpsConnector<HttpConnector>, UpBody>,
}

fn connector(cred: &UpstreamCredential, h2: bool) -> Result<HttpsConnector<HttpConnector>, ServerError> {
    let tls = paddock_pki::upstream_client_config(
        &cred.ca_pem,
        cred.client_cert_pem.as_deref(),
        cred.client_key_pem.as_deref(),
        // hyper-rustls sets ALPN itself from the enabled HTTP versions.
        Vec::new(),
    )
    .map_err(|e| ServerError::Config(format!("upstream TLS: {e}")))?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(5)));
    let b = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only();
    Ok(if h2 { b.enable_all_versions().wrap_connector(http) } else { b.enable_http1().wrap_connector(http) })
}

impl Upstream {
    /// Builds both pools.
    pub fn new(cred: UpstreamCredential) -> Result<Self, ServerError> {
        let short_conn = connector(&cred, true)?;
        let long_conn = connector(&cred, false)?;
        let short = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .http2_keep_alive_interval(Some(Duration::from_secs(30)))
            .timer(hyper_util::rt::TokioTimer::new())
            .build(short_conn);
        let long = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_preserve_header_case(false)
            .build(long_conn);
        Ok(Upstream { cred, short, long })
    }

    /// The upstream base URL.
    pub fn server(&self) -> &str {
        &self.cred.server
    }

    /// Builds an absolute upstream URI for a path-and-query.
    pub fn uri(&self, path_and_query: &str) -> Result<Uri, ServerError> {
        format!("{}{}", self.cred.server, path_and_query)
            .parse()
            .map_err(|e| ServerError::Internal(format!("bad upstream uri {path_and_query:?}: {e}")))
    }

    /// Sends a request. `long_running` picks the HTTP/1.1 pool.
    pub async fn send(&self, mut req: Request<UpBody>, long_running: bool) -> Result<Response<Incoming>, ServerError> {
        if let Some(token) = &self.cred.token {
            let v = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| ServerError::Config("upstream token has invalid characters".into()))?;
            req.headers_mut().insert(http::header::AUTHORIZATION, v);
        }
        let client = if long_running { &self.long } else { &self.short };
        client.request(req).await.map_err(|e| ServerError::Upstream(format!("upstream {}: {e}", self.cred.server)))
    }
}
