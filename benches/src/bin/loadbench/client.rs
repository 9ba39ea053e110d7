//! HTTP clients of the harness: hyper + rustls (the ring provider, through paddock-pki), one
//! client per endpoint and protocol. HTTP/2 multiplexes every request of a client on one
//! connection (as client-go does); HTTP/1.1 opens one connection per concurrent request.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// `kubectl get` asks for a Table (what kubectl 1.33 sends).
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::H1 => "HTTP/1.1",
            Proto::H2 => "HTTP/2",
        }
    }
}

/// Server URL, CA, client certificate and key of a kubeconfig's current context.
#[derive(Clone)]
pub struct Cred {
    pub server: String,
    pub ca: Vec<u8>,
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

impl Cred {
    /// The Impersonate-* headers paddock sends upstream for the holder of this (tenant)
    /// certificate: sent directly with the admin's certificate, they give the apiserver the
    /// same identity and work as a request through paddock.
    pub fn impersonation_headers(&self) -> Result<http::HeaderMap> {
        use base64::Engine as _;
        let pem = String::from_utf8_lossy(&self.cert);
        let b64: String = pem
            .lines()
            .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
            .skip(1)
            .take_while(|l| !l.starts_with("-----END"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .context("the client certificate is not PEM")?;
        let peer = paddock_pki::parse_peer_cert(&der).context("parsing the client certificate")?;
        let tenant = paddock_core::TenantId::parse(peer.tenant.as_deref().unwrap_or_default())
            .context("the certificate names no tenant")?;
        let mut h = http::HeaderMap::new();
        paddock_server::proxy::outbound::add_impersonation(
            &mut h,
            &tenant,
            &peer.user,
            &peer.groups,
        )
        .context("impersonation headers")?;
        Ok(h)
    }

    pub fn from_kubeconfig(path: &Path) -> Result<Self> {
        let c = paddock_upstream::upstream::UpstreamCredential::from_kubeconfig(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let (Some(cert), Some(key)) = (c.client_cert_pem, c.client_key_pem) else {
            bail!("{}: no client certificate and key", path.display());
        };
        if !c.server.starts_with("https://127.0.0.1:") {
            bail!(
                "{}: server {} is not on 127.0.0.1",
                path.display(),
                c.server
            );
        }
        Ok(Cred {
            server: c.server,
            ca: c.ca_pem,
            cert,
            key,
        })
    }
}

type Inner = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One endpoint, one identity, one protocol.
#[derive(Clone)]
pub struct Api {
    client: Inner,
    base: String,
    /// Headers added to every request (the impersonation baseline).
    extra: std::sync::Arc<http::HeaderMap>,
}

impl Api {
    pub fn new(cred: &Cred, proto: Proto) -> Result<Self> {
        // No certificate: a bearer-token client (`Api::bearer`).
        let (cert, key) = if cred.cert.is_empty() {
            (None, None)
        } else {
            (Some(&cred.cert[..]), Some(&cred.key[..]))
        };
        let tls = paddock_pki::upstream_client_config(&cred.ca, cert, key, Vec::new())
            .context("client TLS config")?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(5)));
        let b = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only();
        let conn = match proto {
            Proto::H1 => b.enable_http1().wrap_connector(http),
            Proto::H2 => b.enable_http2().wrap_connector(http),
        };
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(Duration::from_secs(300))
            .timer(hyper_util::rt::TokioTimer::new())
            .pool_timer(hyper_util::rt::TokioTimer::new());
        if proto == Proto::H2 {
            builder
                .http2_only(true)
                .http2_initial_stream_window_size(4 << 20)
                .http2_initial_connection_window_size(16 << 20);
        }
        Ok(Api {
            client: builder.build(conn),
            base: cred.server.clone(),
            extra: std::sync::Arc::new(http::HeaderMap::new()),
        })
    }

    /// A client of `server`'s endpoint (its CA) presenting `token` and no client certificate:
    /// a ServiceAccount as a platform workload calls the apiserver.
    pub fn bearer(server: &Cred, token: &str, proto: Proto) -> Result<Self> {
        let cred = Cred {
            cert: Vec::new(),
            key: Vec::new(),
            ..server.clone()
        };
        let mut h = http::HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().context("the token")?,
        );
        Ok(Api::new(&cred, proto)?.with_headers(h))
    }

    /// The headers added to every request.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.extra
    }

    /// The same client, adding `headers` to every request.
    pub fn with_headers(mut self, headers: http::HeaderMap) -> Self {
        self.extra = std::sync::Arc::new(headers);
        self
    }

    /// Sends a request; the response body is left to the caller.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        accept: &str,
    ) -> Result<Response<Incoming>> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header(header::ACCEPT, accept)
            .header(header::USER_AGENT, "paddock-loadbench");
        if body.is_some() {
            b = b.header(header::CONTENT_TYPE, content_type);
        }
        if let Some(h) = b.headers_mut() {
            for (k, v) in self.extra.iter() {
                h.append(k.clone(), v.clone());
            }
        }
        let req = b
            .body(Full::new(body.unwrap_or_default()))
            .context("building a request")?;
        self.client
            .request(req)
            .await
            .with_context(|| format!("request to {}{path}", self.base))
    }

    /// A request with a JSON body (or none); returns status and the whole body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<(StatusCode, Bytes)> {
        let resp = self
            .send(method, path, body, "application/json", "application/json")
            .await?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .context("reading a response body")?
            .to_bytes();
        Ok((status, bytes))
    }

    /// Like [`Api::call`], failing unless the status is 2xx.
    pub async fn ok(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<Bytes> {
        let (status, bytes) = self.call(method.clone(), path, body).await?;
        if !status.is_success() {
            bail!(
                "{method} {path}: {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
            );
        }
        Ok(bytes)
    }

    /// GETs `path` and reads the body to its end without keeping it; returns its size.
    pub async fn get_drain(&self, path: &str, accept: &str) -> Result<usize> {
        let resp = self
            .send(Method::GET, path, None, "application/json", accept)
            .await?;
        let status = resp.status();
        let mut body = resp.into_body();
        let mut n = 0usize;
        let mut head = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.context("reading a response body")?;
            if let Ok(data) = frame.into_data() {
                if head.len() < 400 {
                    head.extend_from_slice(&data[..data.len().min(400 - head.len())]);
                }
                n += data.len();
            }
        }
        if !status.is_success() {
            bail!("GET {path}: {status}: {}", String::from_utf8_lossy(&head));
        }
        Ok(n)
    }
}

/// Polls `f` until it returns true or `timeout` passes.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut f: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    loop {
        match f().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what} (last error: {last})");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
