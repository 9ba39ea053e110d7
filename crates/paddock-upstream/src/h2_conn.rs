//! One upstream HTTP/2 connection for short requests, driven by paddock's own lean HTTP/2
//! client ([`paddock_h2::client`]).
//!
//! Through hyper's client a short request would cross three tasks: the caller's; hyper's
//! dispatch task, which takes the request off a channel and opens the stream; and a task hyper
//! spawns per request to await the answer's headers and hand them back through a oneshot
//! channel (plus hyper-util's pool look-up and a clone of the whole client per request). Here
//! the caller's task opens the stream and polls its own answer; the connection's one task
//! reads and writes the socket and wakes it (docs/performance/sessions-07-10.md has the
//! profile).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::answer_body::AnswerBody;
use crate::error::ServerError;
use paddock_h2::client as lean;

/// Bound on the TCP connect (the TLS and HTTP/2 handshakes are bounded by the request's
/// deadline, which the dial runs under).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A PING this long after the last one answered, as hyper's client did for the short pool...
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// ...and the connection is closed when its answer takes longer (a frozen or vanished
/// upstream), so that the next request dials a new one.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Flow-control windows: hyper's client defaults, so a short answer (up to a few MiB, e.g.
/// discovery documents) never waits for a WINDOW_UPDATE round trip.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
/// Largest header block of an answer.
const MAX_HEADER_LIST: u32 = 1024 * 1024;

/// Opens connections to the upstream: TCP, TLS with ALPN `h2` (and `http/1.1`, to notice an
/// upstream without HTTP/2), the HTTP/2 handshake, and a task that drives the connection.
pub struct Dialer {
    tls: TlsConnector,
    host: String,
    port: u16,
    name: ServerName<'static>,
}

/// A dialled connection.
pub enum Dialed {
    H2(lean::SendRequest),
    /// The upstream chose HTTP/1.1 (or no ALPN): use hyper's pooled client instead.
    NotH2,
}

impl Dialer {
    /// A dialer for `server` (`https://host:port`) with `tls` (its ALPN list is replaced).
    pub fn new(server: &str, mut tls: rustls::ClientConfig) -> Result<Self, ServerError> {
        let uri: Uri = server
            .parse()
            .map_err(|e| ServerError::Config(format!("upstream server {server:?}: {e}")))?;
        let host = uri
            .host()
            .ok_or_else(|| ServerError::Config(format!("upstream server {server:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(443);
        let name = ServerName::try_from(host.as_str())
            .map_err(|e| ServerError::Config(format!("upstream server name {host:?}: {e}")))?
            .to_owned();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Dialer {
            tls: TlsConnector::from(Arc::new(tls)),
            host,
            port,
            name,
        })
    }

    fn unreachable(&self, what: &str, e: impl std::fmt::Display) -> ServerError {
        ServerError::UpstreamUnreachable(format!("{}:{}: {what}: {e}", self.host, self.port))
    }

    /// Opens a connection; its task runs until the connection ends.
    pub async fn dial(&self) -> Result<Dialed, ServerError> {
        let connect = TcpStream::connect((self.host.as_str(), self.port));
        let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(self.unreachable("connecting", e)),
            Err(_) => return Err(self.unreachable("connecting", "timed out")),
        };
        let _ = tcp.set_nodelay(true);
        let tls = self
            .tls
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| self.unreachable("TLS handshake", e))?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2".as_slice()) {
            return Ok(Dialed::NotH2);
        }
        let (send, conn) = lean::connect(tls, config());
        tokio::spawn(conn);
        Ok(Dialed::H2(send))
    }
}

/// The settings of a short connection.
pub(crate) fn config() -> lean::Config {
    lean::Config {
        stream_window: STREAM_WINDOW,
        conn_window: CONNECTION_WINDOW,
        max_header_list: MAX_HEADER_LIST,
        keepalive_interval: KEEPALIVE_INTERVAL,
        keepalive_timeout: KEEPALIVE_TIMEOUT,
    }
}

/// Sends `head` with `body` (empty: none) on a ready connection; the answer's headers. The
/// head is only read (encoded): a retry sends the same one again.
pub async fn exchange(
    send: &lean::SendRequest,
    head: &Request<()>,
    body: Bytes,
    deadline: tokio::time::Instant,
) -> Result<Response<AnswerBody>, lean::Error> {
    let (resp, recv) = send.send_until(head, body, deadline).await?;
    let (parts, ()) = resp.into_parts();
    let body = AnswerBody::h2(recv, &parts.headers);
    Ok(Response::from_parts(parts, body))
}

/// Whether the upstream certainly did not process the request that failed with `e`, so that
/// sending it again (on another connection) cannot apply it twice, whatever its method:
/// RFC 9113 §6.8 (a GOAWAY's last stream id is below the stream's: those streams fail, and
/// every stream opened after the GOAWAY, with [`lean::Error::GoAway`]) and §8.7
/// (`REFUSED_STREAM`), or a connection found closed before the stream was opened.
/// kube-apiserver sends such GOAWAYs on shutdown and, with `--goaway-chance`, at random to
/// rebalance clients; Go's HTTP/2 client retries these requests transparently, so a client of
/// a real cluster never sees them.
pub fn not_processed(e: &lean::Error) -> bool {
    lean::not_processed(e)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn far() -> tokio::time::Instant {
        tokio::time::Instant::now() + std::time::Duration::from_secs(30)
    }
    use http_body::Body;
    use http_body_util::BodyExt;

    /// An in-process HTTP/2 server (no TLS: plumbing only) answering every request with
    /// `size` bytes and the length of the request body it read in `x-got`.
    fn serve(io: tokio::io::DuplexStream, size: usize) {
        tokio::spawn(async move {
            let mut conn = h2::server::handshake(io).await.unwrap();
            while let Some(Ok((req, mut respond))) = conn.accept().await {
                tokio::spawn(async move {
                    let mut body = req.into_body();
                    let mut got = 0;
                    while let Some(Ok(d)) = body.data().await {
                        got += d.len();
                        let _ = body.flow_control().release_capacity(d.len());
                    }
                    let resp = Response::builder()
                        .header("x-got", got.to_string())
                        .header("content-length", size.to_string())
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(resp, size == 0).unwrap();
                    if size > 0 {
                        send.send_data(Bytes::from(vec![b'x'; size]), true).unwrap();
                    }
                });
            }
        });
    }

    async fn connection(size: usize) -> lean::SendRequest {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        serve(theirs, size);
        let (send, conn) = lean::connect(ours, config());
        tokio::spawn(conn);
        send.ready().await.unwrap()
    }

    #[tokio::test]
    async fn an_answer_larger_than_both_windows_is_read_whole() {
        // Only if the body gives the windows back as it is read does this not stall.
        let size = CONNECTION_WINDOW as usize + 1;
        let send = connection(size).await;
        let head = Request::get("https://upstream.test/api").body(()).unwrap();
        let resp = exchange(&send, &head, Bytes::new(), far()).await.unwrap();
        assert_eq!(resp.body().size_hint().exact(), Some(size as u64));
        let got = tokio::time::timeout(Duration::from_secs(60), resp.into_body().collect())
            .await
            .expect("the answer stalled: flow-control capacity not released")
            .unwrap()
            .to_bytes();
        assert_eq!(got.len(), size);
    }

    #[tokio::test]
    async fn a_request_body_is_sent_and_an_empty_answer_ends_at_once() {
        let send = connection(0).await;
        let head = Request::post("https://upstream.test/api/v1/namespaces")
            .body(())
            .unwrap();
        let resp = exchange(
            &send,
            &head,
            Bytes::from_static(b"{\"kind\":\"Namespace\"}"),
            far(),
        )
        .await
        .unwrap();
        assert_eq!(resp.headers()["x-got"], "20");
        assert!(resp.body().is_end_stream());
        let got = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(got.is_empty());
    }

    /// An in-process HTTP/2 server (no TLS: plumbing only) that treats every stream with
    /// `fate`, and the client's connection to it.
    async fn refusing(fate: Fate) -> lean::SendRequest {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let mut conn = h2::server::handshake(theirs).await.unwrap();
            if let Fate::GoAwayFirst = fate {
                // Before any stream: its GOAWAY says no stream was processed.
                conn.abrupt_shutdown(h2::Reason::NO_ERROR);
            }
            while let Some(Ok((_req, mut respond))) = conn.accept().await {
                match fate {
                    Fate::Refuse => respond.send_reset(h2::Reason::REFUSED_STREAM),
                    Fate::Fail => respond.send_reset(h2::Reason::INTERNAL_ERROR),
                    Fate::Drop => return,
                    Fate::GoAwayFirst => {}
                }
            }
        });
        let (send, conn) = lean::connect(ours, config());
        tokio::spawn(conn);
        send
    }

    #[derive(Clone, Copy)]
    enum Fate {
        GoAwayFirst,
        Refuse,
        Fail,
        Drop,
    }

    #[tokio::test]
    async fn only_streams_the_upstream_never_processed_count_as_safe_to_send_again() {
        for (fate, safe) in [
            (Fate::GoAwayFirst, true),
            (Fate::Refuse, true),
            (Fate::Fail, false),
            (Fate::Drop, false),
        ] {
            let send = refusing(fate).await;
            let head = Request::post("https://upstream.test/api/v1/namespaces")
                .body(())
                .unwrap();
            let outcome = tokio::time::timeout(Duration::from_secs(10), async {
                let send = send.ready().await?;
                exchange(&send, &head, Bytes::from_static(b"{}"), far()).await
            })
            .await
            .expect("the exchange hung");
            let Err(e) = outcome else {
                panic!("the server answered nothing, yet the exchange succeeded")
            };
            assert_eq!(not_processed(&e), safe, "{e:?}");
        }
    }
}
