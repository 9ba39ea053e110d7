//! Watches on upstream HTTP/2 connections of their own, each carrying at most
//! [`WATCH_STREAMS_PER_CONN`] watches (`crate::upstream` says why).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::answer_body::AnswerBody;
use crate::body::UpBody;
use crate::error::ServerError;

/// Watches per upstream HTTP/2 connection: below kube-apiserver's limit of concurrent streams
/// (`--http2-max-streams-per-connection`, 100 at the least in any version), so a watch never
/// queues behind others for a stream.
pub const WATCH_STREAMS_PER_CONN: usize = 100;
/// HTTP/2 flow-control window of one watch. Data paddock has not yet passed on to a slow
/// client waits in paddock's memory, at most this much per watch; the connection's window is
/// the sum of its streams', so watches stalled by slow clients never stall the others.
const WATCH_STREAM_WINDOW: u32 = 256 * 1024;

/// One upstream HTTP/2 connection of the watch pool.
struct WatchConn {
    send: hyper::client::conn::http2::SendRequest<UpBody>,
    active: Arc<AtomicUsize>,
}

/// HTTP/2 connections for watches, opened as needed, each carrying at most
/// [`WATCH_STREAMS_PER_CONN`] streams. A connection whose watches have all ended is closed
/// (one idle connection is kept).
pub struct WatchPool {
    connector: HttpsConnector<HttpConnector>,
    conns: parking_lot::Mutex<Vec<WatchConn>>,
    /// Serialises opening connections, so a burst of watches opens one, not one each.
    opening: tokio::sync::Mutex<()>,
}

/// A watch's stream on a [`WatchPool`] connection; keep it as long as the response body.
#[derive(Debug)]
pub struct StreamSlot(Arc<AtomicUsize>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl WatchPool {
    pub(crate) fn new(connector: HttpsConnector<HttpConnector>) -> Self {
        WatchPool {
            connector,
            conns: parking_lot::Mutex::new(Vec::new()),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// A stream on a connection with room, if there is one. Closed connections are dropped,
    /// and so are idle ones beyond the first.
    fn checkout(&self) -> Option<(hyper::client::conn::http2::SendRequest<UpBody>, StreamSlot)> {
        let mut conns = self.conns.lock();
        conns.retain(|c| !c.send.is_closed());
        let mut idle_seen = false;
        conns.retain(|c| {
            if c.active.load(Ordering::Acquire) > 0 {
                return true;
            }
            let keep = !idle_seen;
            idle_seen = true;
            keep
        });
        for c in conns.iter() {
            let n = c.active.load(Ordering::Acquire);
            if n < WATCH_STREAMS_PER_CONN {
                c.active.fetch_add(1, Ordering::AcqRel);
                return Some((c.send.clone(), StreamSlot(c.active.clone())));
            }
        }
        None
    }

    /// Opens a connection (HTTP/2 by ALPN).
    async fn open(&self, uri: &Uri) -> Result<(), ServerError> {
        use tower::ServiceExt;
        let io = self
            .connector
            .clone()
            .oneshot(uri.clone())
            .await
            .map_err(|e| {
                ServerError::UpstreamUnreachable(format!("{uri}: connecting for watches: {e}"))
            })?;
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .initial_stream_window_size(WATCH_STREAM_WINDOW)
            .initial_connection_window_size(WATCH_STREAM_WINDOW * WATCH_STREAMS_PER_CONN as u32)
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20))
            .keep_alive_while_idle(true)
            .handshake(io)
            .await
            .map_err(|e| {
                ServerError::UpstreamUnreachable(format!(
                    "{uri}: HTTP/2 handshake for watches: {e}"
                ))
            })?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "upstream watch connection ended");
            }
        });
        self.conns.lock().push(WatchConn {
            send,
            active: Arc::new(AtomicUsize::new(0)),
        });
        Ok(())
    }

    pub(crate) async fn send(
        &self,
        req: Request<UpBody>,
    ) -> Result<(Response<AnswerBody>, StreamSlot), ServerError> {
        let (mut send, slot) = match self.checkout() {
            Some(x) => x,
            None => {
                let _opening = self.opening.lock().await;
                match self.checkout() {
                    Some(x) => x,
                    None => {
                        self.open(req.uri()).await?;
                        self.checkout().ok_or_else(|| {
                            ServerError::UpstreamUnreachable(
                                "upstream watch connection closed at once".into(),
                            )
                        })?
                    }
                }
            }
        };
        send.ready().await.map_err(|e| {
            ServerError::UpstreamUnreachable(format!("upstream watch connection: {e}"))
        })?;
        let resp = send
            .send_request(req)
            .await
            .map_err(|e| ServerError::UpstreamUnreachable(format!("upstream watch: {e}")))?;
        Ok((resp.map(AnswerBody::Hyper), slot))
    }

    /// Open connections and their streams (for tests and metrics).
    pub fn stats(&self) -> (usize, usize) {
        let conns = self.conns.lock();
        (
            conns.len(),
            conns.iter().map(|c| c.active.load(Ordering::Acquire)).sum(),
        )
    }
}
