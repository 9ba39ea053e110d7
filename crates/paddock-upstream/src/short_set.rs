//! Short requests on a small set of upstream HTTP/2 connections, one tenant always on the
//! same one (docs/fairshare.md "Noisy neighbour"). On one shared connection every tenant's
//! small requests are streams read by one connection task and share one flow-control
//! window: a noisy tenant's frames queue ahead of everyone else's. With the tenants hashed
//! onto [`SHORT_CONNECTIONS`] connections, a tenant shares its connection with about 1/N of
//! the others; N is fixed, so paddock still opens few connections upstream.
//!
//! In the per-core serving mode (`crate::serving`) each serving thread has a set of its own,
//! dialled from that thread, so the connection's task (`h2_conn`, `paddock_h2::client`, spawned on the
//! runtime that dials) runs on the same thread as the client connections that use it: a
//! small request's two halves then need no wake-up across threads. Other threads share one
//! set. That is up to [`SHORT_CONNECTIONS`] connections per serving thread, opened as
//! tenants arrive on it.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, header};
use http_body::Body as _;
use http_body_util::BodyExt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use paddock_h2::client as lean;
use tokio::time::Instant;

use crate::answer_body::AnswerBody;
use crate::body::UpBody;
use crate::error::ServerError;
use crate::h2_conn::{Dialed, Dialer, exchange, not_processed};
use crate::serving::MAX_SERVING_THREADS;

/// Upstream HTTP/2 connections for short requests.
pub const SHORT_CONNECTIONS: usize = 8;

/// The group paddock asserts on every upstream request of tenant `<tid>`
/// (`paddock_core::identity::TENANT_GROUP_PREFIX`; paddock-upstream does not depend on core).
const TENANT_GROUP_PREFIX: &str = "paddock:tenant:";

/// A client (pool) of hyper's, for an upstream that does not speak HTTP/2.
pub type Fallback = Client<HttpsConnector<HttpConnector>, UpBody>;

/// [`SHORT_CONNECTIONS`] connections, dialled when first needed and again when found closed;
/// requests pick theirs by tenant.
pub struct ShortSet {
    dialer: Dialer,
    /// The set of every thread that is not a serving thread.
    shared: Box<[Slot]>,
    /// Each serving thread's own set, by its index (`crate::serving`), made on first use.
    per_thread: Box<[OnceLock<Box<[Slot]>>]>,
    /// Set when the upstream answered ALPN without `h2`: every request then goes through
    /// `fallback`.
    not_h2: AtomicBool,
    fallback: Fallback,
    /// The bound a deadline was made from (`upstream_timeout`), named in a timeout's error.
    timeout: Duration,
}

/// One connection of the set.
#[derive(Default)]
struct Slot {
    live: parking_lot::Mutex<Option<Live>>,
    /// Serialises dialling, so that a burst of requests opens one connection, not one each.
    dialing: tokio::sync::Mutex<()>,
}

#[derive(Clone)]
struct Live {
    /// Tells connections apart: a request that found its connection closed forgets that
    /// one only, not one another request has dialled since.
    id: u64,
    send: Arc<paddock_h2::client::SendRequest>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl ShortSet {
    /// The set over `dialer`; `fallback` serves an upstream without HTTP/2.
    pub fn new(dialer: Dialer, fallback: Fallback, timeout: Duration) -> Self {
        ShortSet {
            dialer,
            shared: slots(),
            per_thread: (0..MAX_SERVING_THREADS).map(|_| OnceLock::new()).collect(),
            not_h2: AtomicBool::new(false),
            fallback,
            timeout,
        }
    }

    /// The calling thread's set: its own on a serving thread, the shared one elsewhere.
    fn slots(&self) -> &[Slot] {
        match crate::serving::current().and_then(|i| self.per_thread.get(i)) {
            Some(own) => own.get_or_init(slots),
            None => &self.shared,
        }
    }

    /// Sends `req` on the connection of its tenant: chosen by the tenant group among its
    /// `Impersonate-Group` headers; paddock's own requests (no tenant) use the first. On a
    /// serving thread, among that thread's own connections. The answer's head is due by
    /// `deadline` (504 past it). On a live connection that is the connection task's timer,
    /// not one of the request's own; the rare waits (the request's body, a dial, the
    /// HTTP/1.1 fallback) take a timer each.
    pub async fn send(
        &self,
        req: Request<UpBody>,
        deadline: Instant,
    ) -> Result<Response<AnswerBody>, ServerError> {
        if self.not_h2.load(Ordering::Relaxed) {
            let what = named(req.method(), req.uri());
            return self.by(deadline, &what, self.send_fallback(req)).await;
        }
        let slots = self.slots();
        let i = tenant_of(&req).map_or(0, |t| shard(t, slots.len()));
        let slot = &slots[i.min(slots.len().saturating_sub(1))];
        let (parts, body) = req.into_parts();
        let body = if body.is_end_stream() {
            Bytes::new()
        } else {
            let what = named(&parts.method, &parts.uri);
            let read = async {
                body.collect()
                    .await
                    .map_err(|e| ServerError::Internal(format!("request body: {e}")))
            };
            self.by(deadline, &what, read).await?.to_bytes()
        };
        let mut head = Request::from_parts(parts, ());
        if !body.is_empty() && !head.headers().contains_key(header::CONTENT_LENGTH) {
            head.headers_mut().insert(
                header::CONTENT_LENGTH,
                header::HeaderValue::from(body.len()),
            );
        }
        let what = || named(head.method(), head.uri());
        // A connection found closed before the request went out is forgotten and the request
        // tried on a new one (hyper's pool did the same). So is a request the upstream refused
        // unprocessed because the connection was going away (a GOAWAY racing the stream's
        // opening); its head is only encoded, so the same one is sent again. Go's
        // HTTP/2 client retries both the same way (with a backoff; here a new connection is
        // dialled instead).
        let mut closed: Option<u64> = None;
        let mut retries_left = MAX_RETRIES;
        loop {
            let live = match current(slot, closed) {
                Some(live) => Some(live),
                None => self.by(deadline, &what(), self.dial(slot, closed)).await?,
            };
            let Some(live) = live else {
                let what = what();
                let (parts, ()) = head.into_parts();
                let req = Request::from_parts(parts, crate::body::full_up(body));
                return self.by(deadline, &what, self.send_fallback(req)).await;
            };
            // The slot's handle is used through its `Arc`: cloning a `SendRequest` takes the
            // connection's lock twice (its handle count), the Arc's count is one atomic.
            match live.send.usable() {
                Ok(()) => match exchange(&live.send, &head, body.clone(), deadline).await {
                    Ok(resp) => return Ok(resp),
                    Err(lean::Error::TimedOut) => {
                        return Err(ServerError::UpstreamTimeout(self.timeout, what()));
                    }
                    Err(e) if retries_left > 0 && not_processed(&e) => {
                        tracing::debug!(error = %e, "upstream refused the stream unprocessed (GOAWAY); sending it again on a new connection");
                        REFUSED_RETRIES.inc();
                    }
                    Err(e) => return Err(unreachable(&what(), &e)),
                },
                Err(e) if retries_left > 0 => {
                    tracing::debug!(error = %e, "upstream short connection closed; dialling again");
                }
                Err(e) => return Err(unreachable(&what(), &e)),
            }
            retries_left -= 1;
            closed = Some(live.id);
        }
    }

    /// `fut` bounded by `deadline`; `what` names the request in the timeout's error.
    async fn by<T>(
        &self,
        deadline: Instant,
        what: &str,
        fut: impl Future<Output = Result<T, ServerError>>,
    ) -> Result<T, ServerError> {
        match tokio::time::timeout_at(deadline, fut).await {
            Ok(r) => r,
            Err(_) => Err(ServerError::UpstreamTimeout(self.timeout, what.to_owned())),
        }
    }

    async fn send_fallback(
        &self,
        req: Request<UpBody>,
    ) -> Result<Response<AnswerBody>, ServerError> {
        let what = named(req.method(), req.uri());
        match self.fallback.request(req).await {
            Ok(resp) => Ok(resp.map(AnswerBody::Hyper)),
            Err(e) => Err(unreachable(&what, &e)),
        }
    }

    /// The slot's connection, dialled (there was none, or it is `closed`) unless another
    /// request dialled it meanwhile; `None` when the upstream does not speak HTTP/2.
    async fn dial(&self, slot: &Slot, closed: Option<u64>) -> Result<Option<Live>, ServerError> {
        let _dialing = slot.dialing.lock().await;
        if let Some(live) = current(slot, closed) {
            return Ok(Some(live));
        }
        // Boxed: the dial's future (TCP, TLS and HTTP/2 handshakes, about 4 KB) would otherwise
        // be part of every short request's.
        match crate::rare::boxed(|| self.dialer.dial()).await? {
            Dialed::H2(send) => {
                let live = Live {
                    id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                    send: Arc::new(send),
                };
                *slot.live.lock() = Some(live.clone());
                Ok(Some(live))
            }
            Dialed::NotH2 => {
                tracing::info!("the upstream does not offer HTTP/2; short requests use HTTP/1.1");
                self.not_h2.store(true, Ordering::Relaxed);
                Ok(None)
            }
        }
    }
}

/// An empty set of [`SHORT_CONNECTIONS`] slots.
fn slots() -> Box<[Slot]> {
    (0..SHORT_CONNECTIONS).map(|_| Slot::default()).collect()
}

/// How many times one request is sent again on a new connection (connection found closed, or
/// the stream refused unprocessed) before its failure is the answer.
const MAX_RETRIES: u8 = 2;

/// Requests sent again because the upstream refused them unprocessed (GOAWAY or
/// REFUSED_STREAM): `paddock_upstream_refused_retries_total` on `/metrics`. One counter for the
/// process (all upstream clusters), like the other connection-level counters.
pub static REFUSED_RETRIES: std::sync::LazyLock<prometheus_client::metrics::counter::Counter> =
    std::sync::LazyLock::new(Default::default);

/// The slot's connection unless it is the one found `closed` (then forgotten).
fn current(slot: &Slot, closed: Option<u64>) -> Option<Live> {
    let mut live = slot.live.lock();
    match &*live {
        Some(l) if Some(l.id) != closed => Some(l.clone()),
        Some(_) => {
            *live = None;
            None
        }
        None => None,
    }
}

/// A request as errors name it: its method and URI.
fn named(method: &http::Method, uri: &http::Uri) -> String {
    format!("{method} {uri}")
}

/// An upstream failure of request `what` (method and URI).
fn unreachable(what: &str, e: &dyn std::fmt::Display) -> ServerError {
    ServerError::UpstreamUnreachable(format!("{what}: {e}"))
}

/// The tenant id of a request asserting a tenant identity, from its tenant group (either
/// way of asserting it: `crate::front_proxy`).
fn tenant_of<B>(req: &Request<B>) -> Option<&str> {
    let h = req.headers();
    h.get_all("impersonate-group")
        .iter()
        .chain(h.get_all("x-remote-group").iter())
        .filter_map(|v| v.to_str().ok())
        .find_map(|g| g.strip_prefix(TENANT_GROUP_PREFIX))
}

/// A stable shard of `tenant` among `n` (SipHash with fixed keys: the same in every replica
/// and run, which only matters for reading measurements).
fn shard(tenant: &str, n: usize) -> usize {
    let mut h = DefaultHasher::new();
    tenant.hash(&mut h);
    (h.finish() % n.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    fn req(groups: &[&str]) -> Request<UpBody> {
        let mut b = Request::builder().uri("https://127.0.0.1:6443/api");
        for g in groups {
            b = b.header("Impersonate-Group", *g);
        }
        b.body(crate::body::empty_up()).unwrap()
    }

    #[test]
    fn tenant_from_its_group() {
        let r = req(&["paddock:acme01:dev", "paddock:tenant:acme01"]);
        assert_eq!(tenant_of(&r), Some("acme01"));
        assert_eq!(tenant_of(&req(&[])), None);
        assert_eq!(tenant_of(&req(&["system:masters"])), None);
    }

    /// A set whose dialer reaches nothing (port 1): a request dials only where no
    /// connection was put in its slot.
    fn unreachable_set() -> ShortSet {
        unreachable_set_timing_out_after(Duration::from_secs(30))
    }

    /// [`unreachable_set`] whose requests time out after `timeout`.
    pub(super) fn unreachable_set_timing_out_after(timeout: Duration) -> ShortSet {
        paddock_pki::install_crypto_provider();
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let fallback = Client::builder(hyper_util::rt::TokioExecutor::new()).build(
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(tls.clone())
                .https_only()
                .enable_http1()
                .build(),
        );
        ShortSet::new(
            Dialer::new("https://127.0.0.1:1", tls).unwrap(),
            fallback,
            timeout,
        )
    }

    /// The address of the set the calling thread uses.
    fn set_of(set: &ShortSet) -> usize {
        set.slots().as_ptr() as usize
    }

    #[test]
    fn each_serving_thread_has_a_set_of_its_own() {
        let set = std::sync::Arc::new(unreachable_set());
        let on = |index: Option<usize>| {
            let set = set.clone();
            std::thread::spawn(move || {
                if let Some(i) = index {
                    crate::serving::enter(i);
                }
                (set_of(&set), set_of(&set))
            })
            .join()
            .unwrap()
        };
        let (a, a_again) = on(Some(0));
        let (b, _) = on(Some(1));
        let (shared, _) = on(None);
        let (shared_again, _) = on(None);
        let (a_later, _) = on(Some(0));
        assert_eq!(a, a_again, "one thread, one set");
        assert_eq!(
            a, a_later,
            "the same index finds the same set on a later thread"
        );
        assert_ne!(a, b, "two serving threads, two sets");
        assert_ne!(a, shared);
        assert_ne!(b, shared);
        assert_eq!(
            shared, shared_again,
            "threads that do not serve share one set"
        );
        assert_eq!(set.slots().len(), SHORT_CONNECTIONS);
    }

    /// An in-process HTTP/2 server (no TLS) answering every request with `x-conn: name`, and
    /// a connection to it, driven on the calling thread's runtime as a dialled one is.
    async fn fake_connection(name: &'static str) -> paddock_h2::client::SendRequest {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let mut conn = h2::server::handshake(theirs).await.unwrap();
            while let Some(Ok((_req, mut respond))) = conn.accept().await {
                let resp = Response::builder().header("x-conn", name).body(()).unwrap();
                let _ = respond.send_response(resp, true);
            }
        });
        let (send, conn) = paddock_h2::client::connect(ours, crate::h2_conn::config());
        tokio::spawn(conn);
        send
    }

    /// Runs `work` on a new thread marked as serving thread `index`, on a current_thread
    /// runtime of its own as in per-core mode; returns its result.
    fn on_serving_thread<T: Send + 'static>(
        index: usize,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            crate::serving::enter(index);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(work)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_serving_threads_requests_use_its_own_connections() {
        let set = std::sync::Arc::new(unreachable_set());
        let tenant = ["paddock:tenant:acme01"];
        // Serving thread 0, on a current_thread runtime as in per-core mode: its slots get
        // live connections; its requests are answered on them, and its connections stay its own.
        let set0 = set.clone();
        let used0 = on_serving_thread(0, async move {
            for slot in set0.slots() {
                let send = fake_connection("zero").await;
                *slot.live.lock() = Some(Live {
                    id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                    send: Arc::new(send),
                });
            }
            let a = set0.send(req(&tenant), far()).await.unwrap();
            let b = set0.send(req(&tenant), far()).await.unwrap();
            assert_eq!(a.headers()["x-conn"], "zero");
            assert_eq!(b.headers()["x-conn"], "zero");
            let i = shard("acme01", SHORT_CONNECTIONS);
            current(&set0.slots()[i], None).unwrap().id
        });
        // Serving thread 1 has none of them: its request dials (and fails: nothing listens).
        let set1 = set.clone();
        let refused = on_serving_thread(1, async move {
            let i = shard("acme01", SHORT_CONNECTIONS);
            assert!(current(&set1.slots()[i], None).is_none());
            set1.send(req(&tenant), far()).await.is_err()
        });
        assert!(refused, "thread 1 must not reach thread 0's connection");
        // Neither has the shared set of the other threads.
        let i = shard("acme01", SHORT_CONNECTIONS);
        assert!(current(&set.shared[i], None).is_none());
        // Thread 0's connection is still in its slot (thread 1 forgot nothing of it).
        let again = std::thread::spawn(move || {
            crate::serving::enter(0);
            current(&set.slots()[i], None).map(|l| l.id)
        })
        .join()
        .unwrap();
        assert_eq!(again, Some(used0));
    }

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard("acme01", 8), shard("acme01", 8));
        let used: std::collections::HashSet<usize> = (0..64)
            .map(|i| shard(&format!("t{i:05}"), SHORT_CONNECTIONS))
            .collect();
        assert!(used.len() > SHORT_CONNECTIONS / 2, "{used:?}");
        assert!(used.iter().all(|i| *i < SHORT_CONNECTIONS));
    }
}

#[cfg(test)]
mod deadline_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An in-process HTTP/2 server that takes requests and never answers them.
    async fn silent_connection() -> paddock_h2::client::SendRequest {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let mut conn = h2::server::handshake(theirs).await.unwrap();
            let mut held = Vec::new();
            while let Some(Ok((req, respond))) = conn.accept().await {
                held.push((req, respond));
            }
        });
        let (send, conn) = paddock_h2::client::connect(ours, crate::h2_conn::config());
        tokio::spawn(conn);
        send
    }

    #[tokio::test]
    async fn a_short_request_unanswered_by_its_deadline_is_an_upstream_timeout() {
        let timeout = Duration::from_millis(150);
        let set = super::tests::unreachable_set_timing_out_after(timeout);
        let send = silent_connection().await;
        for slot in set.slots() {
            *slot.live.lock() = Some(Live {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                send: Arc::new(send.clone()),
            });
        }
        let req = Request::builder()
            .uri("https://127.0.0.1:6443/api/v1/namespaces/acme01-web/configmaps/c")
            .body(crate::body::empty_up())
            .unwrap();
        let start = Instant::now();
        let answer = tokio::time::timeout(Duration::from_secs(10), set.send(req, start + timeout))
            .await
            .expect("the deadline did not end the request");
        match answer {
            Err(ServerError::UpstreamTimeout(after, what)) => {
                assert_eq!(after, timeout);
                assert_eq!(
                    what,
                    "GET https://127.0.0.1:6443/api/v1/namespaces/acme01-web/configmaps/c"
                );
            }
            Err(other) => panic!("not a timeout: {other}"),
            Ok(resp) => panic!("answered: {}", resp.status()),
        }
        assert!(start.elapsed() >= timeout);
    }
}
