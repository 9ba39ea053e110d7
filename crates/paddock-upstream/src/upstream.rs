//! The upstream side: paddock's own credential from a kubeconfig, and four connection pools
//! ([`Route`]).
//!
//! Lists use a pool of HTTP/1.1 keep-alive connections: kube-apiserver's Go HTTP/2 server
//! spends markedly more CPU on a big LIST than its HTTP/1.1 server (it writes the body as
//! thousands of 4 KiB DATA frames), and a big list then never shares a flow-control window
//! with other requests. Other short requests go over a few HTTP/2 connections
//! ([`crate::short_set`]): for small requests one multiplexed connection costs paddock less
//! CPU than one HTTP/1.1 connection per request in flight, and they are driven by paddock's
//! own HTTP/2 client, without hyper's ([`crate::h2_conn`]). Watches use HTTP/2 connections of
//! their own ([`WatchPool`]), each carrying at most [`WATCH_STREAMS_PER_CONN`] watches: hyper's
//! pool never opens a second connection to a host and kube-apiserver caps the streams of a
//! connection, so watches on the shared connection would eventually stall every other
//! request; one HTTP/1.1 connection per watch would cost paddock several times the memory per
//! idle watch (TLS and read buffers) and a socket on both sides. The other long-running
//! requests (`logs -f`, exec/attach/port-forward upgrades, proxies) use an HTTP/1.1 pool:
//! upgrades need HTTP/1.1. docs/performance/sessions-01-06.md has the figures behind the list
//! and watch pools.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

use crate::answer_body::AnswerBody;
use crate::body::UpBody;
use crate::error::ServerError;
pub use crate::watch_pool::{StreamSlot, WATCH_STREAMS_PER_CONN, WatchPool};

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
    /// The file `token` was read from, re-read as it rotates (the kubeconfig's `tokenFile`).
    pub token_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for UpstreamCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print keys or tokens.
        f.debug_struct("UpstreamCredential")
            .field("server", &self.server)
            .finish_non_exhaustive()
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

fn data_or_file(
    data: &Option<String>,
    file: &Option<String>,
    base: &Path,
    what: &str,
) -> Result<Option<Vec<u8>>, ServerError> {
    if let Some(d) = data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map_err(|e| {
                ServerError::Config(format!(
                    "upstream kubeconfig: {what} is not valid base64: {e}"
                ))
            })?;
        return Ok(Some(bytes));
    }
    if let Some(f) = file {
        let p = base.join(f);
        let bytes = std::fs::read(&p).map_err(|e| {
            ServerError::Config(format!(
                "upstream kubeconfig: cannot read {what} {}: {e}",
                p.display()
            ))
        })?;
        return Ok(Some(bytes));
    }
    Ok(None)
}

impl UpstreamCredential {
    /// Reads the current context of a kubeconfig.
    pub fn from_kubeconfig(path: &Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!(
                "upstream_kubeconfig: cannot read {}: {e}",
                path.display()
            ))
        })?;
        let kc: Kubeconfig = serde_norway::from_str(&text).map_err(|e| {
            ServerError::Config(format!(
                "upstream_kubeconfig: {} is not a kubeconfig: {e}",
                path.display()
            ))
        })?;
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
            .ok_or_else(|| {
                ServerError::Config(format!(
                    "upstream_kubeconfig: context {ctx_name:?} not found"
                ))
            })?;
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == ctx.value.cluster)
            .ok_or_else(|| {
                ServerError::Config(format!(
                    "upstream_kubeconfig: cluster {:?} not found",
                    ctx.value.cluster
                ))
            })?;
        let default_user = Named {
            name: String::new(),
            value: UserSpec::default(),
        };
        let user = kc
            .users
            .iter()
            .find(|u| u.name == ctx.value.user)
            .unwrap_or(&default_user);
        let ca_pem = data_or_file(&cluster.value.ca_data, &cluster.value.ca_file, base, "certificate-authority")?
            .ok_or_else(|| ServerError::Config("upstream_kubeconfig: the cluster has no certificate-authority; paddock never talks to an unverified upstream".into()))?;
        let (token, token_file) = match (&user.value.token, &user.value.token_file) {
            (Some(t), _) => (Some(t.clone()), None),
            (None, Some(f)) => {
                let file = base.join(f);
                let token = std::fs::read_to_string(&file).map_err(|e| {
                    ServerError::Config(format!(
                        "upstream_kubeconfig: cannot read tokenFile {f}: {e}"
                    ))
                })?;
                (Some(token.trim().to_string()), Some(file))
            }
            _ => (None, None),
        };
        let server = cluster.value.server.trim_end_matches('/').to_string();
        if !server.starts_with("https://") {
            return Err(ServerError::Config(format!(
                "upstream_kubeconfig: server {server:?} must be https"
            )));
        }
        Ok(UpstreamCredential {
            server,
            ca_pem,
            client_cert_pem: data_or_file(
                &user.value.cert_data,
                &user.value.cert_file,
                base,
                "client-certificate",
            )?,
            client_key_pem: data_or_file(
                &user.value.key_data,
                &user.value.key_file,
                base,
                "client-key",
            )?,
            token,
            token_file,
        })
    }
}

/// The pools plus the credential, and the pools of the front-proxy connection when tenant
/// identities are asserted as an authenticating front proxy ([`crate::front_proxy`]).
#[derive(Clone)]
pub struct Upstream {
    cred: UpstreamCredential,
    /// The `Authorization` header, when the credential is a token.
    bearer: Option<Arc<crate::bearer::Bearer>>,
    /// Bound on short requests, from sending to the end of the answer (`upstream_timeout`).
    timeout: Duration,
    /// paddock's own credential: its own requests, and tenants' under impersonation.
    own: Pools,
    /// The front-proxy client certificate's connections: every request that asserts a tenant
    /// identity, its headers renamed to `X-Remote-*`. None: impersonation.
    front_proxy: Option<Pools>,
}

/// The connection pools of one client credential.
#[derive(Clone)]
pub(crate) struct Pools {
    /// Short requests: a few HTTP/2 connections, one tenant always on the same one.
    short: Arc<crate::short_set::ShortSet>,
    bulk: Client<HttpsConnector<HttpConnector>, UpBody>,
    long: Client<HttpsConnector<HttpConnector>, UpBody>,
    watches: Arc<WatchPool>,
}

impl Pools {
    /// The pools of `cred`'s client certificate; short requests are bounded by `timeout`.
    pub(crate) fn new(cred: &UpstreamCredential, timeout: Duration) -> Result<Self, ServerError> {
        let bulk = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(BULK_POOL_MAX_IDLE)
            .timer(hyper_util::rt::TokioTimer::new())
            .build(connector(cred, Versions::H1)?);
        let watches = Arc::new(WatchPool::new(connector(cred, Versions::H2)?));
        let short = Arc::new(crate::short_set::ShortSet::new(
            crate::h2_conn::Dialer::new(&cred.server, upstream_tls(cred)?)?,
            Client::builder(TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(90))
                .timer(hyper_util::rt::TokioTimer::new())
                .build(connector(cred, Versions::H1)?),
            timeout,
        ));
        let long = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_preserve_header_case(false)
            .build(connector(cred, Versions::H1)?);
        Ok(Pools {
            short,
            bulk,
            long,
            watches,
        })
    }
}

/// Which pool a (non-watch) request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Small requests: one object, a write, discovery, reviews (HTTP/2).
    Short,
    /// Lists, whose answers can be large (HTTP/1.1 keep-alive pool).
    Bulk,
    /// `logs -f`, proxies and upgrades (exec, attach, port-forward): HTTP/1.1, long-lived.
    Stream,
}

/// Idle connections the list pool keeps (one per list in flight).
const BULK_POOL_MAX_IDLE: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Versions {
    H1,
    H2,
}

/// The TLS client configuration for the upstream, with no ALPN: hyper-rustls sets it from the
/// enabled HTTP versions, and the h2 dialer sets its own.
fn upstream_tls(cred: &UpstreamCredential) -> Result<rustls::ClientConfig, ServerError> {
    paddock_pki::upstream_client_config(
        &cred.ca_pem,
        cred.client_cert_pem.as_deref(),
        cred.client_key_pem.as_deref(),
        Vec::new(),
    )
    .map_err(|e| ServerError::Config(format!("upstream TLS: {e}")))
}

fn connector(
    cred: &UpstreamCredential,
    versions: Versions,
) -> Result<HttpsConnector<HttpConnector>, ServerError> {
    let tls = upstream_tls(cred)?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(5)));
    let b = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    Ok(match versions {
        Versions::H1 => b.enable_http1().wrap_connector(http),
        Versions::H2 => b.enable_http2().wrap_connector(http),
    })
}

impl Upstream {
    /// Builds the pools; short requests are bounded by `timeout` (see [`Upstream::send`]).
    pub fn new(cred: UpstreamCredential, timeout: Duration) -> Result<Self, ServerError> {
        let own = Pools::new(&cred, timeout)?;
        let bearer = match &cred.token {
            Some(t) => Some(Arc::new(crate::bearer::Bearer::new(
                t,
                cred.token_file.clone(),
            )?)),
            None => None,
        };
        Ok(Upstream {
            cred,
            bearer,
            timeout,
            own,
            front_proxy: None,
        })
    }

    /// The same upstream, tenant identities asserted as its authenticating front proxy: with
    /// the front-proxy client certificate `cert_pem` and key `key_pem` (PEM), which the
    /// upstream's request-header CA signed ([`crate::front_proxy`]).
    pub fn with_front_proxy(
        mut self,
        cert_pem: &[u8],
        key_pem: &[u8],
    ) -> Result<Self, ServerError> {
        let cred = UpstreamCredential {
            client_cert_pem: Some(cert_pem.to_vec()),
            client_key_pem: Some(key_pem.to_vec()),
            // Never paddock's own token on the connection that asserts others' identities.
            token: None,
            token_file: None,
            ..self.cred.clone()
        };
        self.front_proxy = Some(
            Pools::new(&cred, self.timeout)
                .map_err(|e| ServerError::Config(format!("front proxy: {e}")))?,
        );
        Ok(self)
    }

    /// Whether tenant identities go as front-proxy headers.
    pub fn is_front_proxy(&self) -> bool {
        self.front_proxy.is_some()
    }

    /// The pools `req` goes through, its headers made ready for them: a request asserting an
    /// identity goes through the front-proxy connection if there is one, its identity headers
    /// renamed there (the one place that picks the connection decides the names too, so the
    /// two never disagree); everything else (paddock's own requests) with paddock's own
    /// credential.
    fn pools_for(&self, req: &mut Request<UpBody>) -> Result<&Pools, ServerError> {
        if let Some(fp) = &self.front_proxy
            && crate::front_proxy::assert_as_front_proxy(req.headers_mut())?
        {
            return Ok(fp);
        }
        if let Some(bearer) = &self.bearer {
            req.headers_mut()
                .insert(http::header::AUTHORIZATION, bearer.value());
        }
        Ok(&self.own)
    }

    /// The upstream base URL.
    pub fn server(&self) -> &str {
        &self.cred.server
    }

    /// Builds an absolute upstream URI for a path-and-query.
    pub fn uri(&self, path_and_query: &str) -> Result<Uri, ServerError> {
        // Exactly sized, so that the URI takes the string's buffer as it is (no copy).
        let mut uri = String::with_capacity(self.cred.server.len() + path_and_query.len());
        uri.push_str(&self.cred.server);
        uri.push_str(path_and_query);
        Uri::try_from(uri)
            .map_err(|e| ServerError::Internal(format!("bad upstream uri {path_and_query:?}: {e}")))
    }

    /// The bound on short requests (`upstream_timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The deadline of a short request starting now.
    pub fn deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.timeout
    }

    /// Sends a request (not a watch: [`Upstream::send_watch`]) through the pool of `route`;
    /// the answer's headers must arrive within the timeout. Read a short answer's body with
    /// [`Upstream::collect_until`] and the same deadline ([`Upstream::send_until`]).
    pub async fn send(
        &self,
        req: Request<UpBody>,
        route: Route,
    ) -> Result<Response<AnswerBody>, ServerError> {
        self.send_until(req, route, self.deadline()).await
    }

    /// [`Upstream::send`] with the deadline given.
    pub async fn send_until(
        &self,
        mut req: Request<UpBody>,
        route: Route,
        deadline: tokio::time::Instant,
    ) -> Result<Response<AnswerBody>, ServerError> {
        let pools = self.pools_for(&mut req)?;
        let pooled = match route {
            // Bounded by the short set itself: on a live connection by the connection's one
            // timer rather than one per request; its errors name the request.
            Route::Short => return pools.short.send(req, deadline).await,
            Route::Bulk => &pools.bulk,
            Route::Stream => &pools.long,
        };
        // Named in an error only.
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let answer = async {
            match pooled.request(req).await {
                Ok(resp) => Ok(resp.map(AnswerBody::Hyper)),
                Err(e) => Err(ServerError::UpstreamUnreachable(e.to_string())),
            }
        };
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(ServerError::UpstreamUnreachable(e))) => Err(ServerError::UpstreamUnreachable(
                format!("{method} {uri}: {e}"),
            )),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ServerError::UpstreamTimeout(
                self.timeout,
                format!("{method} {uri}"),
            )),
        }
    }

    /// Reads an upstream answer's body whole (at most `limit` bytes) before `deadline`.
    pub async fn collect_until(
        &self,
        mut body: AnswerBody,
        limit: usize,
        deadline: tokio::time::Instant,
    ) -> Result<Bytes, ServerError> {
        let server = &self.cred.server;
        let read = read_whole(&mut body, limit, || format!("{server}: reading an answer"));
        match tokio::time::timeout_at(deadline, read).await {
            Ok(r) => r,
            Err(_) => Err(ServerError::UpstreamTimeout(
                self.timeout,
                format!("{}: reading an answer", self.cred.server),
            )),
        }
    }

    /// Sends a watch on the watch pool; the answer's headers (which kube-apiserver sends at
    /// once) must arrive within the timeout. Keep the [`StreamSlot`] as long as the response
    /// body: dropping it gives the stream back to the pool.
    pub async fn send_watch(
        &self,
        mut req: Request<UpBody>,
    ) -> Result<(Response<AnswerBody>, StreamSlot), ServerError> {
        let pools = self.pools_for(&mut req)?;
        let what = format!("WATCH {}", req.uri());
        match tokio::time::timeout(self.timeout, pools.watches.send(req)).await {
            Ok(r) => r,
            Err(_) => Err(ServerError::UpstreamTimeout(self.timeout, what)),
        }
    }

    /// One readiness probe: `GET /readyz` with paddock's own credential on the short pool (the
    /// path tenants' requests take), bounded by `timeout`. True on a 2xx answer.
    pub async fn probe(&self, timeout: Duration) -> bool {
        let Ok(uri) = self.uri("/readyz") else {
            return false;
        };
        let Ok(req) = Request::builder()
            .method(http::Method::GET)
            .uri(uri)
            .body(crate::body::empty_up())
        else {
            return false;
        };
        let deadline = tokio::time::Instant::now() + timeout;
        match self.send_until(req, Route::Short, deadline).await {
            Ok(resp) => {
                let ok = resp.status().is_success();
                // Read the small body so the stream is finished cleanly.
                let _ = self
                    .collect_until(resp.into_body(), 64 * 1024, deadline)
                    .await;
                ok
            }
            Err(e) => {
                tracing::debug!(error = %e, "upstream readiness probe failed");
                false
            }
        }
    }

    /// The watch pool's connections and open streams.
    pub fn watch_pool_stats(&self) -> (usize, usize) {
        let (mut conns, mut streams) = self.own.watches.stats();
        if let Some(fp) = &self.front_proxy {
            let (c, s) = fp.watches.stats();
            conns += c;
            streams += s;
        }
        (conns, streams)
    }
}

/// Reads a body whole, up to `limit` bytes. An answer in one frame (most small ones) is kept
/// as it came, not copied; `context` names the read in an error.
async fn read_whole<B>(
    body: &mut B,
    limit: usize,
    context: impl Fn() -> String,
) -> Result<Bytes, ServerError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt;
    let mut first: Option<Bytes> = None;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ServerError::UpstreamUnreachable(format!("{}: {e}", context())))?;
        let Ok(d) = frame.into_data() else {
            continue;
        };
        let held = first.as_ref().map_or(0, Bytes::len);
        if held + buf.len() + d.len() > limit {
            return Err(ServerError::Upstream(format!(
                "an upstream answer is larger than {limit} bytes"
            )));
        }
        if first.is_none() && buf.is_empty() {
            first = Some(d);
            continue;
        }
        if let Some(f) = first.take() {
            buf.extend_from_slice(&f);
        }
        buf.extend_from_slice(&d);
    }
    Ok(match first {
        Some(f) => f,
        None => buf.freeze(),
    })
}

#[cfg(test)]
mod read_whole_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http_body::Frame;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body of the given frames.
    struct Chunks(VecDeque<Bytes>);

    impl http_body::Body for Chunks {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    fn body(chunks: &[&'static str]) -> Chunks {
        Chunks(
            chunks
                .iter()
                .map(|c| Bytes::from_static(c.as_bytes()))
                .collect(),
        )
    }

    #[tokio::test]
    async fn one_frame_is_kept_and_several_are_joined() {
        let one = read_whole(&mut body(&["abc"]), 10, String::new)
            .await
            .unwrap();
        assert_eq!(&one[..], b"abc");
        let many = read_whole(&mut body(&["ab", "", "cd", "e"]), 10, String::new)
            .await
            .unwrap();
        assert_eq!(&many[..], b"abcde");
        let none = read_whole(&mut body(&[]), 10, String::new).await.unwrap();
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn over_the_limit_is_an_error_whichever_frame_crosses_it() {
        assert!(
            read_whole(&mut body(&["abcdef"]), 5, String::new)
                .await
                .is_err()
        );
        assert!(
            read_whole(&mut body(&["abc", "def"]), 5, String::new)
                .await
                .is_err()
        );
        assert!(
            read_whole(&mut body(&["abc", "de"]), 5, String::new)
                .await
                .is_ok()
        );
    }
}
