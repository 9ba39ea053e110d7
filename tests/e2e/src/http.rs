//! A small HTTPS client with a client certificate (hyper + rustls, HTTP/2 by ALPN), for the
//! load generator and for polling replicas: what client-go does on the wire, with the
//! failure classes a test needs to tell apart.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use paddock_upstream::upstream::UpstreamCredential;

/// How a request failed without an HTTP answer.
#[derive(Debug)]
pub enum Failure {
    /// Provably never processed by the server: the connection could not be made, or the
    /// server refused the stream (HTTP/2 GOAWAY with a lower last-stream-id, REFUSED_STREAM).
    /// Go's HTTP/2 transport (client-go) retries these transparently; so does [`Tls::send`].
    NotProcessed(String),
    /// The connection broke after the request was sent: it may or may not have been applied.
    Broken(String),
    /// No answer in time.
    Timeout,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NotProcessed(e) => write!(f, "not processed: {e}"),
            Failure::Broken(e) => write!(f, "connection broken: {e}"),
            Failure::Timeout => write!(f, "timed out"),
        }
    }
}

/// How a [`Failure::Broken`] starts when the answer's head (its status) had arrived and its
/// body then broke: no `Status` can follow a head already sent.
pub const CUT_MID_BODY: &str = "the answer broke after its head";

/// A client for one server URL with one client certificate.
#[derive(Clone)]
pub struct Tls {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: String,
    /// Transparent retries of requests the server never processed.
    pub retries: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Tls {
    /// From a kubeconfig's current context; `server` replaces its URL when given.
    pub fn from_kubeconfig(kubeconfig: &Path, server: Option<&str>) -> Result<Self> {
        let cred = UpstreamCredential::from_kubeconfig(kubeconfig)
            .with_context(|| format!("reading {}", kubeconfig.display()))?;
        let base = server.map(str::to_owned).unwrap_or(cred.server.clone());
        let tls = paddock_pki::upstream_client_config(
            &cred.ca_pem,
            cred.client_cert_pem.as_deref(),
            cred.client_key_pem.as_deref(),
            Vec::new(),
        )
        .context("client TLS config")?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(3)));
        let conn = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .http2_only(true)
            .pool_idle_timeout(Duration::from_secs(90))
            .timer(hyper_util::rt::TokioTimer::new())
            .build(conn);
        Ok(Tls {
            client,
            base: base.trim_end_matches('/').to_owned(),
            retries: Default::default(),
        })
    }

    /// The server URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends a request and reads the whole answer within `timeout`. Requests the server never
    /// processed are retried (at most 5 times, 100 ms apart), as client-go's transport does.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes), Failure> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut attempt = 0;
        loop {
            let r = tokio::time::timeout_at(deadline, self.once(&method, path, body.clone())).await;
            match r {
                Err(_) => return Err(Failure::Timeout),
                Ok(Err(Failure::NotProcessed(e))) if attempt < 5 => {
                    attempt += 1;
                    self.retries
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing_free_log(&format!("retrying a request never processed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(r) => return r,
            }
        }
    }

    async fn once(
        &self,
        method: &Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<(StatusCode, Bytes), Failure> {
        let resp = self.start(method.clone(), path, body).await?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| Failure::Broken(format!("{CUT_MID_BODY} ({status}): {}", chain(&e))))?
            .to_bytes();
        Ok((status, bytes))
    }

    /// Sends a request and returns the answer's head with its body still streaming (watches).
    pub async fn start(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Response<Incoming>, Failure> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header("accept", "application/json");
        let payload = match body {
            Some((ct, bytes)) => {
                b = b.header("content-type", ct);
                Bytes::from(bytes)
            }
            None => Bytes::new(),
        };
        let req = b
            .body(Full::new(payload))
            .map_err(|e| Failure::NotProcessed(e.to_string()))?;
        self.client.request(req).await.map_err(classify)
    }
}

/// No tracing subscriber in the tests: failures worth seeing go to stderr when asked for.
fn tracing_free_log(msg: &str) {
    if std::env::var_os("PADDOCK_E2E_VERBOSE").is_some() {
        eprintln!("  [http] {msg}");
    }
}

/// The error and its sources, one line.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn classify(e: hyper_util::client::legacy::Error) -> Failure {
    let text = chain(&e);
    if e.is_connect() {
        return Failure::NotProcessed(text);
    }
    // An HTTP/2 stream the server refused (GOAWAY naming a lower stream, REFUSED_STREAM) was
    // never handed to the application.
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(c) = cur {
        if let Some(h2e) = c.downcast_ref::<h2::Error>() {
            if h2e.reason() == Some(h2::Reason::REFUSED_STREAM)
                || (h2e.is_go_away() && h2e.is_remote())
            {
                return Failure::NotProcessed(text);
            }
            break;
        }
        cur = c.source();
    }
    Failure::Broken(text)
}

impl Tls {
    /// A GET with request headers of the caller's choosing (Accept, If-None-Match); answers the
    /// status, the response headers and the whole body.
    pub async fn get_with_headers(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<(StatusCode, http::HeaderMap, Bytes)> {
        let mut b = Request::builder()
            .method(Method::GET)
            .uri(format!("{}{}", self.base, path));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(Full::new(Bytes::new()))?;
        let resp = tokio::time::timeout(timeout, self.client.request(req))
            .await
            .context("timed out")??;
        let (parts, body) = resp.into_parts();
        let bytes = tokio::time::timeout(timeout, body.collect())
            .await
            .context("timed out reading the body")??
            .to_bytes();
        Ok((parts.status, parts.headers, bytes))
    }
}
