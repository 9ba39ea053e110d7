//! One client connection: the TLS handshake (bounded in time), the tenant's connection limit
//! (the tenant is known from the client certificate once the handshake is done), HTTP/1.1 or
//! HTTP/2 by ALPN with a header-read timeout, HTTP/2 keep-alive pings, an idle timeout, and a
//! 431 `Status` for an oversized header block. docs/fairshare.md has the numbers and why.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::coalesce::Coalescing;
use http::{HeaderMap, Request};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use paddock_core::TenantId;
use paddock_pki::PeerCert;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::config::MAX_HEADER_BYTES_CEILING;
use crate::error::ServerError;
use crate::front_streams::{StreamExec, Streams};
use crate::state::AppState;

/// What the connection is doing: requests whose response is still being sent, and when the
/// last one ended.
struct Activity {
    busy: AtomicUsize,
    last: Mutex<Instant>,
    /// Rung when the connection must close after its current response (refused connections).
    close: Notify,
}

/// One request in progress; dropped when its response body has been sent.
struct Busy(Arc<Activity>);

impl Activity {
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// When the connection will have been idle for `idle`, as far as is known now.
    fn idle_deadline(&self, idle: Duration) -> Instant {
        if self.busy.load(Ordering::Acquire) > 0 {
            Instant::now() + idle
        } else {
            *self.last.lock() + idle
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.last.lock() = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Size of a header block as HTTP/2 counts it (name + value + 32 per field), which bounds the
/// HTTP/1.1 form from above too.
fn header_bytes(h: &HeaderMap) -> usize {
    h.iter().map(|(k, v)| k.as_str().len() + v.len() + 32).sum()
}

/// hyper's own bounds sit above the configured one, so that a block between the two gets
/// paddock's 431 `Status`; beyond them hyper answers a bare 431 (HTTP/1.1) or h2 refuses the
/// stream.
const HYPER_HEADER_SLACK: usize = 64 * 1024;
/// Time an idle or refused connection gets to close after it was told to.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Header fields per request hyper parses (its default is 100, whose overflow is a bare 431).
const MAX_HEADER_FIELDS: usize = 1024;

/// The tenant of a certificate-authenticated connection, and its connection permit (or the
/// refusal that every request on it gets).
fn tenant_permit(
    state: &AppState,
    peer: Option<&Arc<PeerCert>>,
) -> (Option<crate::limits::Permit>, Option<(String, u64)>) {
    let Some(tid) = peer
        .and_then(|p| p.tenant.as_deref())
        .and_then(|t| TenantId::parse(t).ok())
    else {
        return (None, None);
    };
    let record = state.cache.tenant(tid.as_str());
    let limits = state
        .config
        .limits
        .with(record.as_ref().and_then(|r| r.limits.as_ref()));
    match state.limiter.connect(&tid, &limits) {
        Ok(p) => (Some(p), None),
        Err(ServerError::TooManyRequests {
            message,
            retry_after,
            limit,
        }) => {
            state.metrics.limit_refused(limit);
            (None, Some((message, retry_after)))
        }
        Err(_) => (None, None),
    }
}

/// HTTP/1.1 and HTTP/2 with the connection limits of `cfg` (keep-alive off for a refused
/// connection); HTTP/2 streams go to `exec`, served in the connection's task (`front_streams`).
fn http_builder(
    cfg: &crate::config::ConnectionConfig,
    keep_alive: bool,
    exec: StreamExec,
) -> auto::Builder<StreamExec> {
    let mut builder = auto::Builder::new(exec);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(cfg.header_read_timeout)
        .max_buf_size(MAX_HEADER_BYTES_CEILING + HYPER_HEADER_SLACK)
        .max_headers(MAX_HEADER_FIELDS)
        .keep_alive(keep_alive);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(cfg.http2_keepalive)
        .keep_alive_timeout(cfg.http2_keepalive)
        .max_header_list_size(
            u32::try_from(MAX_HEADER_BYTES_CEILING + HYPER_HEADER_SLACK).unwrap_or(u32::MAX),
        );
    builder
}

/// Serves one accepted TCP connection to its end.
pub async fn serve_connection(
    state: Arc<AppState>,
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    remote: SocketAddr,
) {
    let cfg = state.config.connections;
    let tls_stream =
        match tokio::time::timeout(cfg.tls_handshake_timeout, acceptor.accept(tcp)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(%remote, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%remote, "TLS handshake timed out");
                return;
            }
        };
    let peer: Option<Arc<PeerCert>> = tls_stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|der| paddock_pki::parse_peer_cert(der.as_ref()).ok())
        .map(Arc::new);
    let h2 = tls_stream.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let (permit, refused) = tenant_permit(&state, peer.as_ref());
    let activity = Arc::new(Activity {
        busy: AtomicUsize::new(0),
        last: Mutex::new(Instant::now()),
        close: Notify::new(),
    });
    let max_header_bytes = cfg.max_header_bytes;
    let (mut streams, exec) = Streams::new();
    let svc = {
        let exec = exec.clone();
        let state = state.clone();
        let activity = activity.clone();
        let refused = refused.clone();
        service_fn(move |req: Request<Incoming>| {
            let state = state.clone();
            let peer = peer.clone();
            let activity = activity.clone();
            let refused = refused.clone();
            if !crate::front_streams::answers_small(
                req.method(),
                req.uri().path(),
                req.uri().query(),
            ) {
                exec.spawn_next();
            }
            // Boxed once, here: the request's state machine is otherwise copied each time hyper
            // and tokio move it into the stream's task (docs/performance.md, session 9); a box
            // is moved as a pointer. (The tenant pipeline's own state, about 12 KB, is boxed
            // apart where it starts: `stack::serve`.)
            Box::pin(async move {
                let busy = activity.begin();
                let resp = if let Some((message, retry_after)) = refused {
                    // One answer saying why, then the connection closes.
                    activity.close.notify_one();
                    ServerError::TooManyRequests {
                        message,
                        retry_after,
                        limit: "maxConnections",
                    }
                    .into_response()
                } else if header_bytes(req.headers()) > max_header_bytes {
                    ServerError::HeadersTooLarge(format!(
                        "the request's header block ({} bytes) is larger than the limit of {max_header_bytes} bytes",
                        header_bytes(req.headers())
                    ))
                    .into_response()
                } else {
                    crate::router::handle(state, peer, req).await
                };
                Ok::<_, Infallible>(resp.map(|b| crate::limits::hold(b, busy)))
            })
        })
    };
    let builder = http_builder(&cfg, refused.is_none(), exec);
    let conn =
        builder.serve_connection_with_upgrades(TokioIo::new(Coalescing::new(tls_stream, h2)), svc);
    // Boxed so that it can be dropped (closing the connection) before its streams are let go.
    let mut conn = Box::pin(conn);
    // Once closing, the connection gets until `stop_by` to finish what it is sending: the
    // shutdown grace at shutdown; [`CLOSE_GRACE`] when idle or refused (nothing is in flight;
    // an HTTP/2 graceful close waits for the peer to answer a PING, which a silent client
    // never does).
    let mut stop_by: Option<Instant> = None;
    loop {
        let idle_at = activity.idle_deadline(cfg.idle_timeout);
        let hard_stop = stop_by.unwrap_or_else(|| Instant::now() + cfg.idle_timeout);
        tokio::select! {
            r = streams.serve(conn.as_mut()) => {
                if let Err(e) = r {
                    tracing::debug!(%remote, error = %e, "connection ended with an error");
                }
                break;
            }
            _ = state.shutdown.cancelled(), if stop_by.is_none() => {
                conn.as_mut().graceful_shutdown();
                stop_by = Some(Instant::now() + state.config.shutdown_grace);
            }
            _ = activity.close.notified(), if stop_by.is_none() => {
                conn.as_mut().graceful_shutdown();
                stop_by = Some(Instant::now() + CLOSE_GRACE);
            }
            _ = tokio::time::sleep_until(idle_at), if stop_by.is_none() => {
                if activity.idle_deadline(cfg.idle_timeout) <= Instant::now() {
                    tracing::debug!(%remote, "closing an idle connection");
                    conn.as_mut().graceful_shutdown();
                    stop_by = Some(Instant::now() + CLOSE_GRACE);
                }
            }
            _ = tokio::time::sleep_until(hard_stop), if stop_by.is_some() => {
                tracing::debug!(%remote, "connection did not close in time; dropping it");
                break;
            }
        }
    }
    drop(conn);
    streams.finish(CLOSE_GRACE).await;
    drop(permit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_counts_like_http2() {
        let mut h = HeaderMap::new();
        h.insert("x-a", http::HeaderValue::from_static("12345"));
        assert_eq!(header_bytes(&h), 3 + 5 + 32);
    }
}
