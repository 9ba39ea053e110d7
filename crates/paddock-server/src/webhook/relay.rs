//! The relay to a tenant's own admission webhooks, the I/O around
//! `paddock_core::admission::relay_review` (docs/webhooks.md): the apiserver calls paddock's
//! admission listener on the path `catalog::webhook_relay` wrote into the tenant's webhook
//! configuration; paddock translates the review into the tenant's names, calls the tenant's
//! Service as a cluster of its own would (its ClusterIP and port, the tenant's CA, TLS name
//! `<name>.<ns>.svc`), and translates the answer back.
//!
//! A call paddock cannot make (no such Service, a refused handshake, no answer in time, an
//! answer that is not an AdmissionReview) fails the apiserver's call with the reason, so the
//! webhook's own `failurePolicy` decides, as it would in a cluster of one's own.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use paddock_core::TenantContext;
use paddock_core::admission::relay_review::{self, Relayed};
use paddock_core::catalog::webhook_relay::RelayTarget;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::state::AppState;
use paddock_upstream::body::full;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upjson;

/// Largest AdmissionReview (an object and its old version), either way.
const MAX_REVIEW_BYTES: usize = 16 << 20;
/// The apiserver's own default wait for a webhook.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Kept from the apiserver's wait for paddock's own work, so that a slow tenant webhook is
/// reported as such rather than as paddock not answering.
const MARGIN: Duration = Duration::from_millis(500);

/// Serves one relayed call (`POST <admission URL>/tenant-webhook/v1/...`).
pub(crate) async fn serve(
    state: &Arc<AppState>,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, ServerError> {
    if req.method() != Method::POST {
        return Err(ServerError::NotFound(format!(
            "{} {}: a tenant webhook is called with POST",
            req.method(),
            req.uri().path()
        )));
    }
    let target = RelayTarget::parse(req.uri().path())?;
    let budget = timeout_of(req.uri().query()).saturating_sub(MARGIN);
    if state.cache.tenant(target.tenant.as_str()).is_none() {
        return Err(ServerError::Forbidden(format!(
            "tenant webhook {}: tenant {} does not exist",
            target.server_name(),
            target.tenant
        )));
    }
    let body = collect_limited(req.into_body(), MAX_REVIEW_BYTES).await?;
    let review: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("AdmissionReview: {e}")))?;
    let mut ctx = TenantContext {
        tenant: target.tenant.clone(),
        catalog: state.catalog().await?,
    };
    // A custom resource of a CRD created a moment ago (cert-manager's chart creates its CRDs
    // and its first objects together): discovery is read again once, at most once a second.
    let kind = &review["request"]["kind"];
    let api_version = paddock_core::catalog::join_api_version(
        kind["group"].as_str().unwrap_or_default(),
        kind["version"].as_str().unwrap_or_default(),
    );
    let kind_name = kind["kind"].as_str().unwrap_or_default();
    let tenant_group = ctx
        .tenant
        .strip(kind["group"].as_str().unwrap_or_default())
        .is_some();
    if tenant_group
        && ctx
            .catalog
            .resolve_upstream_kind(&ctx.tenant, &api_version, kind_name)
            .is_none()
    {
        ctx.catalog = state.catalogs.refresh(&state.upstream).await?;
    }
    let answer = match relay_review::review_down(&ctx, &review)? {
        Relayed::NotTheTenants => {
            count(state, "skipped");
            relay_review::allowed(&review)
        }
        Relayed::Review(sent) => {
            let started = std::time::Instant::now();
            let called = tokio::time::timeout(budget, call(state, &target, &sent, budget))
                .await
                .unwrap_or_else(|_| {
                    Err(failed(
                        &target,
                        format!("no answer within {} ms", budget.as_millis()),
                    ))
                })
                .and_then(|raw| {
                    relay_review::answer_up(&ctx, &sent, &raw)
                        .map_err(|e| failed(&target, e.to_string()))
                });
            let answer = called.inspect_err(|_| count(state, "failed"))?;
            let allowed = answer["response"]["allowed"] == true;
            count(state, if allowed { "allowed" } else { "denied" });
            tracing::debug!(tenant = %target.tenant, webhook = %target.server_name(), allowed,
                ms = started.elapsed().as_millis() as u64, "tenant webhook relayed");
            answer
        }
    };
    let bytes = serde_json::to_vec(&answer).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(bytes));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}

fn count(state: &AppState, outcome: &'static str) {
    state
        .metrics
        .tenant_webhook_calls
        .get_or_create(&crate::observe::metrics::RelayLabels { outcome })
        .inc();
}

/// The apiserver's `?timeout=10s`.
fn timeout_of(query: Option<&str>) -> Duration {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|kv| kv.strip_prefix("timeout="))
        .and_then(|v| v.strip_suffix('s').and_then(|s| s.parse::<u64>().ok()))
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT)
}

fn failed(target: &RelayTarget, why: impl std::fmt::Display) -> ServerError {
    let e = ServerError::Upstream(format!(
        "failed to call the tenant's webhook at https://{}:{}{}: {why}",
        target.server_name(),
        target.port,
        target.path.as_deref().unwrap_or("")
    ));
    tracing::info!(tenant = %target.tenant, error = %e, "tenant webhook call failed");
    e
}

/// One call of the tenant's webhook; the answer's body.
async fn call(
    state: &Arc<AppState>,
    target: &RelayTarget,
    sent: &Value,
    budget: Duration,
) -> Result<Bytes, ServerError> {
    let addr = service_address(state, target).await?;
    let io = connect(state.config.admission.cluster_egress_uds.as_deref(), &addr)
        .await
        .map_err(|e| failed(target, format!("dial {addr}: {e}")))?;
    let tls = paddock_pki::upstream_client_config(
        &target.ca_bundle,
        None,
        None,
        vec![b"http/1.1".to_vec()],
    )
    .map_err(|e| failed(target, format!("caBundle: {e}")))?;
    let name = rustls_pki_types::ServerName::try_from(target.server_name())
        .map_err(|e| failed(target, e))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, io)
        .await
        .map_err(|e| failed(target, format!("tls: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| failed(target, e))?;
    tokio::spawn(conn);
    let body = serde_json::to_vec(sent).map_err(|e| ServerError::Internal(e.to_string()))?;
    let path = format!(
        "{}?timeout={}s",
        target.path.as_deref().unwrap_or("/"),
        budget.as_secs().max(1)
    );
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::HOST, target.server_name())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| failed(target, e))?;
    let status = resp.status();
    let raw = collect_limited(resp.into_body(), MAX_REVIEW_BYTES)
        .await
        .map_err(|e| failed(target, e))?;
    if status != StatusCode::OK {
        let excerpt = String::from_utf8_lossy(&raw[..raw.len().min(512)]).into_owned();
        return Err(failed(target, format!("HTTP {status}: {excerpt}")));
    }
    Ok(raw)
}

/// Where the tenant's Service answers: its cluster IP and the port the configuration names,
/// as the apiserver resolves a webhook Service. An ExternalName Service is refused: it would
/// let a tenant send paddock anywhere.
async fn service_address(
    state: &Arc<AppState>,
    target: &RelayTarget,
) -> Result<String, ServerError> {
    // A list by name, from the apiserver's watch cache (resourceVersion=0): paddock's rights on
    // Services are list and watch, and the cache spares etcd a read per call.
    let path = format!(
        "/api/v1/namespaces/{}/services?fieldSelector=metadata.name%3D{}&resourceVersion=0",
        target.upstream_namespace(),
        target.name
    );
    let got = upjson::call(&state.upstream, Method::GET, &path, None, None).await?;
    if !got.status.is_success() {
        return Err(failed(target, got.message()));
    }
    let Some(service) = got.body["items"].as_array().and_then(|i| i.first()) else {
        return Err(failed(
            target,
            format!("service {:?} not found", target.name),
        ));
    };
    let spec = &service["spec"];
    if spec["type"] == "ExternalName" {
        return Err(failed(
            target,
            "an ExternalName Service cannot serve a webhook in this cluster",
        ));
    }
    let ip = spec["clusterIP"].as_str().unwrap_or_default();
    if ip.is_empty() || ip == "None" {
        return Err(failed(
            target,
            format!("cannot route to service with ClusterIP {ip:?}"),
        ));
    }
    let has_port = spec["ports"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["port"] == u64::from(target.port)));
    if !has_port {
        return Err(failed(
            target,
            format!(
                "no service port {} found for service {:?}",
                target.port, target.name
            ),
        ));
    }
    Ok(if ip.contains(':') {
        format!("[{ip}]:{}", target.port)
    } else {
        format!("{ip}:{}", target.port)
    })
}

/// A byte stream to a cluster address.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection to `addr` (`ip:port`): straight, or through the cluster's egress proxy, an
/// HTTP CONNECT proxy on a unix socket (kube-apiserver's egress selector, `cluster` over
/// `uds`), for a paddock that runs outside the cluster's network.
async fn connect(egress: Option<&std::path::Path>, addr: &str) -> std::io::Result<Box<dyn Io>> {
    let Some(sock) = egress else {
        return Ok(Box::new(tokio::net::TcpStream::connect(addr).await?));
    };
    let mut s = tokio::net::UnixStream::connect(sock).await?;
    s.write_all(format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    // The proxy's header block, a byte at a time: what follows it is the tunnel's.
    let mut head = Vec::with_capacity(128);
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8 << 10 {
            return Err(std::io::Error::other("egress proxy: header block too long"));
        }
        head.push(s.read_u8().await?);
    }
    let status = String::from_utf8_lossy(&head);
    let status = status.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(std::io::Error::other(format!(
            "egress proxy refused CONNECT {addr}: {status}"
        )));
    }
    Ok(Box::new(s))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_apiservers_timeout_is_read() {
        assert_eq!(timeout_of(Some("timeout=5s")), Duration::from_secs(5));
        assert_eq!(timeout_of(Some("a=b&timeout=30s")), Duration::from_secs(30));
        assert_eq!(timeout_of(None), DEFAULT_TIMEOUT);
        assert_eq!(timeout_of(Some("timeout=x")), DEFAULT_TIMEOUT);
    }

    #[tokio::test]
    async fn a_tunnel_opens_through_the_egress_proxy() {
        let dir = std::env::temp_dir().join(format!("paddock-relay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("egress.sock");
        let _ = std::fs::remove_file(&sock);
        let l = tokio::net::UnixListener::bind(&sock).unwrap();
        tokio::spawn(async move {
            for answer in [
                "HTTP/1.1 200 Connection established\r\n\r\n",
                "HTTP/1.1 403 Forbidden\r\n\r\n",
            ] {
                let (mut c, _) = l.accept().await.unwrap();
                let mut buf = vec![0; 256];
                let n = tokio::io::AsyncReadExt::read(&mut c, &mut buf)
                    .await
                    .unwrap();
                assert!(
                    String::from_utf8_lossy(&buf[..n])
                        .starts_with("CONNECT 10.96.0.7:443 HTTP/1.1\r\n")
                );
                c.write_all(answer.as_bytes()).await.unwrap();
                c.write_all(b"hello").await.unwrap();
            }
        });
        let mut io = connect(Some(&sock), "10.96.0.7:443").await.unwrap();
        let mut got = [0u8; 5];
        tokio::io::AsyncReadExt::read_exact(&mut io, &mut got)
            .await
            .unwrap();
        assert_eq!(&got, b"hello");
        let e = connect(Some(&sock), "10.96.0.7:443").await.err().unwrap();
        assert!(e.to_string().contains("403"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
