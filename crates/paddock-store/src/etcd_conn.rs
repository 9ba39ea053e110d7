//! How the etcd backend connects: endpoints, TLS files (CA bundle, client certificate and
//! key), user and password. The files are read and checked here (a missing file, a client
//! certificate that has expired, a key without a certificate are named before anything is
//! sent), and every endpoint is probed once at start so that a refusal names its endpoint and
//! its cause (wrong CA, missing or rejected client certificate) instead of surfacing as a
//! timeout: etcd-client's balanced channel connects lazily and only reports "transport error".

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};
use rustls::AlertDescription;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::StoreError;

/// TCP connect and TLS handshake deadline of the start-up probe (per endpoint).
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where and how to reach etcd.
#[derive(Clone)]
pub struct EtcdOptions {
    /// `https://host:port` (with `tls`) or `http://host:port`; several for failover.
    pub endpoints: Vec<String>,
    /// Every key paddock writes lives under this prefix.
    pub prefix: String,
    /// TLS files; required for `https://` endpoints.
    pub tls: Option<EtcdTlsFiles>,
    /// etcd user and password (etcd's own authentication, on top of any client certificate).
    pub user: Option<(String, String)>,
    /// How often the TLS files are checked for changes.
    pub reload_interval: Duration,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // never the password
        f.debug_struct("EtcdOptions")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("tls", &self.tls)
            .field("user", &self.user.as_ref().map(|(u, _)| u))
            .finish()
    }
}

impl EtcdOptions {
    /// Plain endpoints, no TLS, no user (the test bed's own etcd).
    pub fn plain(endpoints: &[String], prefix: &str) -> EtcdOptions {
        EtcdOptions {
            endpoints: endpoints.to_vec(),
            prefix: prefix.to_string(),
            tls: None,
            user: None,
            reload_interval: Duration::from_secs(5),
        }
    }
}

/// The TLS files of the etcd client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdTlsFiles {
    /// CA bundle that signed etcd's serving certificates.
    pub ca: PathBuf,
    /// Client certificate (with its chain) presented to etcd, if etcd asks for one.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key.
    pub key: Option<PathBuf>,
}

/// The contents of the TLS files, checked.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct TlsMaterial {
    ca: Vec<u8>,
    cert: Option<Vec<u8>>,
    key: Option<Vec<u8>>,
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>, StoreError> {
    std::fs::read(path).map_err(|e| {
        StoreError::Invalid(format!("etcd {what} {}: cannot read: {e}", path.display()))
    })
}

impl TlsMaterial {
    /// Reads and checks the files: the CA bundle holds certificates, the certificate and key
    /// come together, and the client certificate is valid now.
    pub(crate) fn load(files: &EtcdTlsFiles) -> Result<TlsMaterial, StoreError> {
        let ca = read("CA file", &files.ca)?;
        let n = CertificateDer::pem_slice_iter(&ca)
            .filter(Result::is_ok)
            .count();
        if n == 0 {
            return Err(StoreError::Invalid(format!(
                "etcd CA file {}: no PEM certificate in it",
                files.ca.display()
            )));
        }
        let (cert, key) = match (&files.cert, &files.key) {
            (None, None) => (None, None),
            (Some(c), Some(k)) => {
                let cert = read("client certificate", c)?;
                let key = read("client key", k)?;
                check_client_cert(c, &cert)?;
                PrivateKeyDer::from_pem_slice(&key).map_err(|e| {
                    StoreError::Invalid(format!(
                        "etcd client key {}: no PEM private key in it ({e})",
                        k.display()
                    ))
                })?;
                (Some(cert), Some(key))
            }
            _ => {
                return Err(StoreError::Invalid(
                    "etcd client certificate and key go together: give both or neither".into(),
                ));
            }
        };
        Ok(TlsMaterial { ca, cert, key })
    }

    /// tonic's TLS settings (rustls with the ring provider).
    pub(crate) fn tonic(&self) -> TlsOptions {
        let mut t = TlsOptions::new().ca_certificate(Certificate::from_pem(&self.ca));
        if let (Some(c), Some(k)) = (&self.cert, &self.key) {
            t = t.identity(Identity::from_pem(c, k));
        }
        t
    }

    /// The same settings for the start-up probe.
    fn rustls(&self) -> Result<Arc<rustls::ClientConfig>, StoreError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&self.ca).flatten() {
            roots
                .add(c)
                .map_err(|e| StoreError::Invalid(format!("etcd CA file: {e}")))?;
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Invalid(format!("etcd TLS: {e}")))?
        .with_root_certificates(roots);
        let mut cfg = match (&self.cert, &self.key) {
            (Some(c), Some(k)) => {
                let chain: Vec<CertificateDer<'static>> =
                    CertificateDer::pem_slice_iter(c).flatten().collect();
                let key = PrivateKeyDer::from_pem_slice(k)
                    .map_err(|e| StoreError::Invalid(format!("etcd client key: {e}")))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    StoreError::Invalid(format!(
                        "etcd client certificate and key do not go together: {e}"
                    ))
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(cfg))
    }
}

/// A client certificate that is expired or not yet valid is refused before it is sent.
fn check_client_cert(path: &Path, pem: &[u8]) -> Result<(), StoreError> {
    let der = CertificateDer::pem_slice_iter(pem)
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| {
            StoreError::Invalid(format!(
                "etcd client certificate {}: no PEM certificate in it",
                path.display()
            ))
        })?;
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| {
        StoreError::Invalid(format!(
            "etcd client certificate {}: unreadable: {e}",
            path.display()
        ))
    })?;
    let v = cert.validity();
    let now = x509_parser::time::ASN1Time::now();
    if v.not_after < now {
        return Err(StoreError::Invalid(format!(
            "etcd client certificate {} expired at {}",
            path.display(),
            v.not_after
        )));
    }
    if v.not_before > now {
        return Err(StoreError::Invalid(format!(
            "etcd client certificate {} is not valid before {}",
            path.display(),
            v.not_before
        )));
    }
    Ok(())
}

/// The connection settings in force: options and the TLS material last loaded.
#[derive(Clone)]
pub(crate) struct Conn {
    pub(crate) opts: EtcdOptions,
    pub(crate) tls: Option<TlsMaterial>,
}

impl Conn {
    /// Checks the options and loads the TLS files.
    pub(crate) fn new(opts: EtcdOptions) -> Result<Conn, StoreError> {
        if opts.endpoints.is_empty() {
            return Err(StoreError::Invalid("no etcd endpoints given".into()));
        }
        for ep in &opts.endpoints {
            let https = ep.starts_with("https://");
            if https && opts.tls.is_none() {
                return Err(StoreError::Invalid(format!(
                    "etcd endpoint {ep} is https but no etcd CA file is set"
                )));
            }
            if ep.starts_with("http://") && opts.tls.is_some() {
                return Err(StoreError::Invalid(format!(
                    "etcd endpoint {ep} is plain http but TLS files are set: use https://"
                )));
            }
        }
        // The endpoints are named even when a file is at fault, so that the operator knows
        // which store setting to look at.
        let tls = opts
            .tls
            .as_ref()
            .map(TlsMaterial::load)
            .transpose()
            .map_err(|e| match e {
                StoreError::Invalid(m) => {
                    StoreError::Invalid(format!("etcd at {}: {m}", opts.endpoints.join(",")))
                }
                other => other,
            })?;
        Ok(Conn { opts, tls })
    }

    /// etcd-client's options for this material.
    pub(crate) fn connect_options(
        &self,
        base: ConnectOptions,
        tls: Option<&TlsMaterial>,
    ) -> ConnectOptions {
        let mut o = base;
        if let Some(t) = tls {
            o = o.with_tls(t.tonic());
        }
        if let Some((u, p)) = &self.opts.user {
            o = o.with_user(u.clone(), p.clone());
        }
        o
    }

    /// Probes every endpoint once. A refusal (TLS or certificate problem) on any endpoint is
    /// an error, since failover would hit it later; unreachable endpoints are tolerated as
    /// long as one answers (a member may be down while paddock starts).
    pub(crate) async fn probe_all(&self) -> Result<(), StoreError> {
        let cfg = self.tls.as_ref().map(TlsMaterial::rustls).transpose()?;
        let probes = self
            .opts
            .endpoints
            .iter()
            .map(|ep| probe(ep, cfg.clone(), self.opts.tls.as_ref()));
        let results = futures_join_all(probes).await;
        let mut unreachable = Vec::new();
        for (ep, r) in self.opts.endpoints.iter().zip(results) {
            match r {
                Ok(()) => {}
                Err(ProbeFailure::Refused(why)) => {
                    return Err(StoreError::Refused(format!("etcd at {ep}: {why}")));
                }
                Err(ProbeFailure::Unreachable(why)) => {
                    tracing::warn!(endpoint = %ep, reason = %why, "etcd endpoint unreachable at start");
                    unreachable.push(format!("{ep}: {why}"));
                }
            }
        }
        if unreachable.len() == self.opts.endpoints.len() {
            return Err(StoreError::Unavailable(format!(
                "etcd is unreachable: {}",
                unreachable.join("; ")
            )));
        }
        Ok(())
    }
}

/// Runs the probes concurrently (futures-util is not a dependency of this crate).
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<Result<(), ProbeFailure>>
where
    F: std::future::Future<Output = Result<(), ProbeFailure>> + Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(match h.await {
            Ok(r) => r,
            Err(e) => Err(ProbeFailure::Unreachable(format!("probe failed: {e}"))),
        });
    }
    out
}

enum ProbeFailure {
    /// Nothing answered (down, frozen, wrong address): another endpoint may serve.
    Unreachable(String),
    /// It answered and refused us: a configuration error.
    Refused(String),
}

/// `host` and `port` of `scheme://host:port[/]` (or `host:port`).
fn host_port(endpoint: &str) -> Option<(String, u16)> {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .unwrap_or(endpoint)
        .trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}

/// TCP connect; with TLS also the handshake and the HTTP/2 preface, because with TLS 1.3 the
/// server checks the client certificate after the client's handshake has completed and
/// answers a rejected one with an alert on the first read.
fn probe(
    endpoint: &str,
    cfg: Option<Arc<rustls::ClientConfig>>,
    files: Option<&EtcdTlsFiles>,
) -> impl std::future::Future<Output = Result<(), ProbeFailure>> + Send + 'static {
    let endpoint = endpoint.to_string();
    let files = files.cloned();
    async move {
        let (host, port) = host_port(&endpoint).ok_or_else(|| {
            ProbeFailure::Refused("not an endpoint of the form https://host:port".into())
        })?;
        let tcp = match tokio::time::timeout(
            PROBE_TIMEOUT,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(ProbeFailure::Unreachable(format!("cannot connect: {e}"))),
            Err(_) => return Err(ProbeFailure::Unreachable("connect timed out".into())),
        };
        let Some(cfg) = cfg else { return Ok(()) };
        let name = ServerName::try_from(host.clone())
            .map_err(|e| ProbeFailure::Refused(format!("bad host name {host:?}: {e}")))?;
        let connector = tokio_rustls::TlsConnector::from(cfg);
        let mut tls = match tokio::time::timeout(PROBE_TIMEOUT, connector.connect(name, tcp)).await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(explain(&e, files.as_ref())),
            Err(_) => {
                return Err(ProbeFailure::Unreachable(
                    "no TLS handshake answer within 2s".into(),
                ));
            }
        };
        // HTTP/2 client preface and an empty SETTINGS frame: the server answers with its own
        // SETTINGS once it has accepted us.
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let mut buf = [0u8; 64];
        let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
            tls.write_all(&hello).await?;
            tls.flush().await?;
            tls.read(&mut buf).await
        })
        .await;
        match answer {
            Ok(Ok(n)) if n > 0 => Ok(()),
            Ok(Ok(_)) => Err(ProbeFailure::Refused(format!(
                "etcd closed the connection right after the TLS handshake: it rejected the client certificate{}",
                cert_hint(files.as_ref())
            ))),
            Ok(Err(e)) => Err(explain(&e, files.as_ref())),
            Err(_) => Err(ProbeFailure::Unreachable(
                "no answer after the TLS handshake within 2s".into(),
            )),
        }
    }
}

fn cert_hint(files: Option<&EtcdTlsFiles>) -> String {
    match files.and_then(|f| f.cert.as_ref()) {
        Some(c) => format!(" {}", c.display()),
        None => " (none is configured)".into(),
    }
}

/// The cause of a failed handshake, in an operator's words.
fn explain(e: &std::io::Error, files: Option<&EtcdTlsFiles>) -> ProbeFailure {
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return ProbeFailure::Unreachable(format!("TLS connection failed: {e}"));
    };
    let ca = files
        .map(|f| f.ca.display().to_string())
        .unwrap_or_default();
    ProbeFailure::Refused(match tls {
        rustls::Error::InvalidCertificate(why) => format!(
            "etcd's serving certificate is not trusted ({why:?}): the CA file {ca} did not sign it, or it is expired or not valid for this address"
        ),
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => {
            "etcd requires a client certificate and none was sent: set the etcd client certificate and key".into()
        }
        rustls::Error::AlertReceived(a @ (AlertDescription::BadCertificate
        | AlertDescription::UnknownCA
        | AlertDescription::CertificateExpired
        | AlertDescription::CertificateUnknown
        | AlertDescription::CertificateRevoked
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::AccessDenied)) => format!(
            "etcd rejected the client certificate{} (TLS alert {a:?}): it must be signed by a CA etcd trusts and be valid",
            cert_hint(files)
        ),
        other => format!("TLS handshake failed: {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse() {
        assert_eq!(
            host_port("https://127.0.0.1:2379"),
            Some(("127.0.0.1".into(), 2379))
        );
        assert_eq!(
            host_port("http://etcd-0.etcd:2379/"),
            Some(("etcd-0.etcd".into(), 2379))
        );
        assert_eq!(host_port("[::1]:2379"), Some(("::1".into(), 2379)));
        assert_eq!(host_port("https://nohost"), None);
    }

    #[test]
    fn options_are_checked() {
        let https = EtcdOptions::plain(&["https://127.0.0.1:1".into()], "/p");
        let err = Conn::new(https)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no etcd CA file"), "{err}");
        let mut mixed = EtcdOptions::plain(&["http://127.0.0.1:1".into()], "/p");
        mixed.tls = Some(EtcdTlsFiles {
            ca: "/nonexistent/ca.crt".into(),
            cert: None,
            key: None,
        });
        let err = Conn::new(mixed)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("plain http"), "{err}");
        let mut missing = EtcdOptions::plain(&["https://127.0.0.1:1".into()], "/p");
        missing.tls = Some(EtcdTlsFiles {
            ca: "/nonexistent/ca.crt".into(),
            cert: None,
            key: None,
        });
        let err = Conn::new(missing)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("/nonexistent/ca.crt: cannot read"), "{err}");
        let opts = EtcdOptions {
            user: Some(("paddock".into(), "s3cret".into())),
            ..EtcdOptions::plain(&[], "/p")
        };
        assert!(!format!("{opts:?}").contains("s3cret"));
    }
}
