//! The TLS front end: accept loop, certificate reload, HTTP/1.1 and HTTP/2 by ALPN, graceful
//! shutdown.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use paddock_pki::PeerCert;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::error::ServerError;
use crate::state::AppState;

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
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
) -> Result<(), ServerError> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let shutdown = state.shutdown.clone();
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
        let _ = tcp.set_nodelay(true);
        let acceptor = tls.acceptor();
        let state = state.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls_stream =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
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
            let svc = service_fn(move |req| {
                let state = state.clone();
                let peer = peer.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(crate::router::handle(state, peer, req).await)
                }
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls_stream), svc);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%remote, error = %e, "connection ended with an error");
            }
        });
    }
    tracing::info!("shutting down: draining in-flight requests");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections drained"),
        _ = tokio::time::sleep(state.config.shutdown_grace) => tracing::warn!("grace period over; closing remaining connections"),
    }
    Ok(())
}
