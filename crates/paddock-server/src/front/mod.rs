//! The TLS front end: accept loop, certificate reload, graceful shutdown. One connection's
//! life (handshake, HTTP/1.1 or HTTP/2 by ALPN, timeouts and limits) is in `conn`.

pub mod coalesce;
pub mod conn;
pub mod preauth;
pub mod serve_threads;
pub mod streams;

use paddock_core::fair::refusal::Limit;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use std::sync::atomic::{AtomicUsize, Ordering};

use arc_swap::ArcSwap;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;

use crate::front::preauth::{PreAuth, Refused};
use crate::front::serve_threads::ServeThreads;
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// Serving TLS configuration that is re-read from disk when the files change.
pub struct ReloadingTls {
    files: [PathBuf; 3],
    current: ArcSwap<rustls::ServerConfig>,
    stamp: parking_lot::Mutex<Vec<Option<SystemTime>>>,
}

fn mtimes(files: &[PathBuf]) -> Vec<Option<SystemTime>> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .collect()
}

impl ReloadingTls {
    /// Loads serving cert, key and client CA.
    pub fn load(cert: PathBuf, key: PathBuf, ca: PathBuf) -> Result<Self, ServerError> {
        let cfg = paddock_pki::server_config(&cert, &key, &ca)
            .map_err(|e| ServerError::Config(format!("TLS: {e}")))?;
        let files = [cert, key, ca];
        let stamp = mtimes(&files);
        Ok(ReloadingTls {
            files,
            current: ArcSwap::from_pointee(cfg),
            stamp: parking_lot::Mutex::new(stamp),
        })
    }

    /// Re-reads the files if any changed. A broken new file keeps the old config in force.
    pub fn reload_if_changed(&self) -> bool {
        let now = mtimes(&self.files);
        let mut stamp = self.stamp.lock();
        if *stamp == now {
            return false;
        }
        match paddock_pki::server_config(&self.files[0], &self.files[1], &self.files[2]) {
            Ok(cfg) => {
                self.current.store(Arc::new(cfg));
                *stamp = now;
                tracing::info!("serving certificate or client CA reloaded from disk");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "certificate files changed but could not be loaded; keeping the old ones");
                false
            }
        }
    }

    /// The acceptor for a new connection.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.current.load_full())
    }
}

/// Accepts connections until shutdown, then drains in-flight requests for the grace period.
/// With `serve_threads` set, connections are served on per-core threads (`serve_threads`),
/// round robin; the accept loop stays here.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
) -> Result<(), ServerError> {
    let open = Arc::new(OpenConnections::default());
    let cfg = state.config.connections;
    let strangers = PreAuth::new(cfg.max_unauthenticated, cfg.max_unauthenticated_per_source);
    let shutdown = state.shutdown.clone();
    let mut per_core = match state.config.serve_threads {
        0 => None,
        n => Some(ServeThreads::start(n, tokio::runtime::Handle::current())?),
    };
    loop {
        let (tcp, remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let slot = match strangers.admit(remote.ip()) {
            Ok(slot) => slot,
            Err(refused) => {
                // Closed before any TLS work: a flood of connections costs an accept each.
                state.metrics.limit_refused(match refused {
                    Refused::Total => Limit::UnauthenticatedConnections,
                    Refused::Source => Limit::UnauthenticatedConnectionsPerSource,
                });
                tracing::debug!(%remote, ?refused, "connection refused: too many without a client certificate");
                drop(tcp);
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = tls.acceptor();
        let state = state.clone();
        let open_guard = open.enter();
        let Some(threads) = per_core.as_mut() else {
            tokio::spawn(async move {
                let _open = open_guard;
                crate::front::conn::serve_connection(state, acceptor, tcp, remote, slot).await;
            });
            continue;
        };
        // The socket leaves this runtime's reactor and joins the serving thread's, so that
        // its readiness is seen by the thread that serves it.
        let tcp = match tcp.into_std() {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(%remote, error = %e, "cannot hand the connection to a serving thread");
                continue;
            }
        };
        threads.spawn(async move {
            let _open = open_guard;
            match TcpStream::from_std(tcp) {
                Ok(tcp) => {
                    crate::front::conn::serve_connection(state, acceptor, tcp, remote, slot).await
                }
                Err(e) => {
                    tracing::warn!(%remote, error = %e, "serving thread cannot take the connection")
                }
            }
        });
    }
    tracing::info!("shutting down: draining in-flight requests");
    tokio::select! {
        _ = open.drained() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(state.config.shutdown_grace) => tracing::warn!("grace period over; closing remaining connections"),
    }
    if let Some(threads) = per_core {
        threads.stop(SERVE_THREADS_STOP).await;
    }
    Ok(())
}

/// How long the end of the serving threads is waited for, after the drain.
const SERVE_THREADS_STOP: Duration = Duration::from_secs(2);

/// Counts the connections being served, so that shutdown can wait for them to finish.
#[derive(Default)]
struct OpenConnections {
    count: AtomicUsize,
    changed: Notify,
}

/// One open connection; dropping it counts it out.
struct OpenGuard(Arc<OpenConnections>);

impl OpenConnections {
    fn enter(self: &Arc<Self>) -> OpenGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        OpenGuard(self.clone())
    }

    async fn drained(&self) {
        loop {
            let notified = self.changed.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_waiters();
    }
}
