//! One client connection: the TLS handshake (bounded in time), the tenant's connection limit
//! (the tenant is known from the client certificate once the handshake is done), HTTP/1.1 or
//! HTTP/2 by ALPN (both hyper's), a header-read timeout, a first request due within the same
//! time, HTTP/2 keep-alive pings and abuse limits, an idle timeout, and a 431 `Status` for an
//! oversized header block. docs/fairshare.md and docs/security.md "Front door" have the
//! numbers and why.

use paddock_core::fair::refusal::Refusal;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use std::future::Future;
use std::pin::Pin;

use crate::auth::Peer;
use crate::front::coalesce::Coalescing;
use http::{HeaderMap, Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use paddock_core::TenantId;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::body::ReqBody;
use crate::front::preauth::PreAuthSlot;
use crate::front::streams::{StreamExec, Streams, answers_small};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::tap::{self, Guard};

/// What the connection is doing: requests whose response is still being sent, and when the
/// last one ended.
struct Activity {
    busy: AtomicUsize,
    last: Mutex<Instant>,
    /// Whether a request has begun on the connection: until one has, the connection is held
    /// to the header-read timeout instead of the idle timeout (slow or no headers).
    started: std::sync::atomic::AtomicBool,
    /// Rung when the connection must close after its current response (refused connections).
    close: Notify,
}

/// One request in progress; dropped when its response body has been sent.
struct Busy(Arc<Activity>);

impl Activity {
    fn begin(self: &Arc<Self>) -> Busy {
        self.started.store(true, Ordering::Release);
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// When the connection will have been idle for too long, as far as is known now: `idle`
    /// after its last request ended, or `first` after it opened if no request has begun.
    fn idle_deadline(&self, idle: Duration, first: Duration) -> Instant {
        if self.busy.load(Ordering::Acquire) > 0 {
            Instant::now() + idle
        } else if !self.started.load(Ordering::Acquire) {
            *self.last.lock() + first
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

/// HTTP/1.1: hyper's read buffer sits above the configured header bound, so that a block
/// between the two gets paddock's 431 `Status`; beyond it hyper answers a bare 431. HTTP/2
/// advertises the configured bound itself (SETTINGS_MAX_HEADER_LIST_SIZE): the h2 crate stops
/// decoding a larger block and answers a bare 431.
const HYPER_HEADER_SLACK: usize = 64 * 1024;
/// HTTP/2 streams a client may have open at once (hyper's default, stated).
const MAX_CONCURRENT_STREAMS: u32 = 200;
/// Streams a client may open and reset before paddock has accepted them, before the
/// connection gets GOAWAY ENHANCE_YOUR_CALM (rapid reset, CVE-2023-44487; the h2 crate's
/// default, stated).
const MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;
/// Streams paddock may have to reset because of the client's errors, before GOAWAY
/// ENHANCE_YOUR_CALM (MadeYouReset; the h2 crate's default, stated).
const MAX_LOCAL_ERROR_RESET_STREAMS: usize = 1024;
/// Time an idle or refused connection gets to close after it was told to.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Header fields per request hyper parses (its default is 100, whose overflow is a bare 431).
const MAX_HEADER_FIELDS: usize = 1024;

/// The tenant of a certificate-authenticated connection, and its connection permit (or the
/// refusal that every request on it gets).
fn tenant_permit(
    state: &AppState,
    peer: Option<&Peer>,
) -> (Option<crate::fair::limits::Permit>, Option<Refusal>) {
    let Some(tid) = peer
        .and_then(|p| p.cert().tenant.as_deref())
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
        Err(ServerError::TooManyRequests(refusal)) => {
            state.metrics.limit_refused(refusal.limit);
            (None, Some(refusal))
        }
        Err(_) => (None, None),
    }
}

/// HTTP/1.1 and HTTP/2 with the connection limits of `cfg` (keep-alive off for a refused
/// connection); HTTP/2 streams go to `exec`, served in the connection's task (`front_streams`).
/// A connection whose ALPN chose `h2` speaks HTTP/2 only: a missing or wrong preface is a
/// connection error (RFC 9113 §3.4), not an HTTP/1.1 request (hyper-util's auto-detection
/// is for connections without ALPN).
fn http_builder(
    cfg: &crate::config::ConnectionConfig,
    keep_alive: bool,
    exec: StreamExec,
    alpn_h2: bool,
) -> auto::Builder<StreamExec> {
    let mut builder = auto::Builder::new(exec);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(cfg.header_read_timeout)
        .max_buf_size(cfg.max_header_bytes + HYPER_HEADER_SLACK)
        .max_headers(MAX_HEADER_FIELDS)
        .keep_alive(keep_alive);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(cfg.http2_keepalive)
        .keep_alive_timeout(cfg.http2_keepalive)
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESET_STREAMS)
        .max_header_list_size(u32::try_from(cfg.max_header_bytes).unwrap_or(u32::MAX));
    if alpn_h2 {
        builder.http2_only()
    } else {
        builder
    }
}

/// What serves a connection's requests: the refusal of a connection over its tenant's limit,
/// the 431 of an oversized header block, or the router.
#[derive(Clone)]
struct Front {
    state: Arc<AppState>,
    peer: Option<Arc<Peer>>,
    /// The tenant the connection's server name chose (bearer tokens act only there).
    context: crate::auth::Context,
    activity: Arc<Activity>,
    refused: Option<Refusal>,
}

impl Front {
    fn answer(
        &self,
        req: Request<ReqBody>,
    ) -> impl Future<Output = Response<ResBody>> + Send + use<> {
        let Front {
            state,
            peer,
            context,
            activity,
            refused,
        } = self.clone();
        async move {
            let busy = activity.begin();
            let max_header_bytes = state.config.connections.max_header_bytes;
            let resp = if let Some(refusal) = refused {
                // One answer saying why, then the connection closes.
                activity.close.notify_one();
                ServerError::TooManyRequests(refusal).into_response()
            } else if header_bytes(req.headers()) > max_header_bytes {
                ServerError::HeadersTooLarge(format!(
                    "the request's header block ({} bytes) is larger than the limit of {max_header_bytes} bytes",
                    header_bytes(req.headers())
                ))
                .into_response()
            } else {
                crate::stack::router::handle(state, peer, context, req).await
            };
            resp.map(|b| tap::hold(b, Guard(busy)))
        }
    }
}

/// What a connection's owner does next.
enum Next {
    /// Close gracefully (GOAWAY, or no keep-alive), and stop by the deadline now set.
    Close,
    /// The deadline passed: drop the connection.
    Stop,
}

/// When a connection closes: at shutdown, when refused, when idle. Once closing, it gets
/// until `stop_by` to finish what it is sending: the shutdown grace at shutdown; [`CLOSE_GRACE`]
/// when idle or refused (nothing is in flight; an HTTP/2 graceful close waits for the peer to
/// answer a PING, which a silent client never does).
struct Lifetime {
    stop_by: Option<Instant>,
}

impl Lifetime {
    async fn next(&mut self, state: &AppState, activity: &Activity) -> Next {
        let cfg = state.config.connections;
        loop {
            let idle_at = activity.idle_deadline(cfg.idle_timeout, cfg.header_read_timeout);
            let hard_stop = self
                .stop_by
                .unwrap_or_else(|| Instant::now() + cfg.idle_timeout);
            let closing = self.stop_by.is_some();
            tokio::select! {
                _ = state.shutdown.cancelled(), if !closing => {
                    self.stop_by = Some(Instant::now() + state.config.shutdown_grace);
                    return Next::Close;
                }
                _ = activity.close.notified(), if !closing => {
                    self.stop_by = Some(Instant::now() + CLOSE_GRACE);
                    return Next::Close;
                }
                _ = tokio::time::sleep_until(idle_at), if !closing => {
                    if activity.idle_deadline(cfg.idle_timeout, cfg.header_read_timeout) <= Instant::now() {
                        tracing::debug!("closing an idle connection");
                        self.stop_by = Some(Instant::now() + CLOSE_GRACE);
                        return Next::Close;
                    }
                }
                _ = tokio::time::sleep_until(hard_stop), if closing => {
                    tracing::debug!("connection did not close in time; dropping it");
                    return Next::Stop;
                }
            }
        }
    }
}

/// What a served connection's loop needs besides the connection.
struct Served<'a> {
    state: &'a AppState,
    activity: &'a Activity,
    remote: SocketAddr,
}

impl Served<'_> {
    /// Polls `conn` (and its streams) until it ends, closes gracefully with `close` when its
    /// [`Lifetime`] says so, and drops it when the grace is over. Boxed so that it can be
    /// dropped (closing the connection) before its streams are let go.
    async fn drive<C, E>(
        &self,
        mut conn: Pin<Box<C>>,
        close: impl Fn(Pin<&mut C>),
        streams: &mut Streams,
    ) where
        C: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut life = Lifetime { stop_by: None };
        loop {
            tokio::select! {
                r = streams.serve(conn.as_mut()) => {
                    if let Err(e) = r {
                        tracing::debug!(remote = %self.remote, error = %e, "connection ended with an error");
                    }
                    break;
                }
                next = life.next(self.state, self.activity) => match next {
                    Next::Close => close(conn.as_mut()),
                    Next::Stop => break,
                },
            }
        }
    }
}

/// Serves one accepted TCP connection to its end. `unauthenticated` is its place among the
/// connections without a client certificate, given back once the handshake shows one.
pub async fn serve_connection(
    state: Arc<AppState>,
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    remote: SocketAddr,
    unauthenticated: PreAuthSlot,
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
    let peer: Option<Arc<Peer>> = tls_stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|der| paddock_pki::parse_peer_cert(der.as_ref()).ok())
        .map(|cert| Arc::new(Peer::new(cert)));
    // A connection with a certificate of paddock's CA is no stranger's; its requests are
    // bounded per tenant (`tenant_permit`).
    let _unauthenticated = peer.is_none().then_some(unauthenticated);
    let h2 = tls_stream.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let context = tls_stream
        .get_ref()
        .1
        .server_name()
        .and_then(paddock_core::identity::oidc::context_tenant)
        .map(Arc::new);
    let (permit, refused) = tenant_permit(&state, peer.as_deref());
    let activity = Arc::new(Activity {
        busy: AtomicUsize::new(0),
        last: Mutex::new(Instant::now()),
        started: std::sync::atomic::AtomicBool::new(false),
        close: Notify::new(),
    });
    let keep_alive = refused.is_none();
    let front = Front {
        state: state.clone(),
        peer,
        context,
        activity: activity.clone(),
        refused,
    };
    let (mut streams, exec) = Streams::new();
    let svc = {
        let exec = exec.clone();
        let body_read_timeout = cfg.body_read_timeout;
        service_fn(move |req: Request<Incoming>| {
            if !answers_small(req.method(), req.uri().path(), req.uri().query()) {
                exec.spawn_next();
            }
            // Boxed once, here: the request's state machine is otherwise copied each time hyper
            // and tokio move it into the stream's task (docs/performance/sessions-07-10.md,
            // session 9).
            let answer = front.answer(req.map(|b| ReqBody::new(b, body_read_timeout)));
            Box::pin(async move { Ok::<_, Infallible>(answer.await) })
        })
    };
    let builder = http_builder(&cfg, keep_alive, exec, h2);
    let io = TokioIo::new(Coalescing::new(tls_stream, h2));
    let served = Served {
        state: &state,
        activity: &activity,
        remote,
    };
    if h2 {
        // ALPN chose HTTP/2: no upgrades exist there, and hyper-util honours HTTP/2-only only
        // without them.
        let conn = Box::pin(builder.serve_connection(io, svc));
        served
            .drive(conn, |c| c.graceful_shutdown(), &mut streams)
            .await;
    } else {
        let conn = Box::pin(builder.serve_connection_with_upgrades(io, svc));
        served
            .drive(conn, |c| c.graceful_shutdown(), &mut streams)
            .await;
    }
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
