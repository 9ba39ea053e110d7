//! rustls configurations: the front end (server side, client certificates of the tenant CA)
//! and the upstream client. Every config is built with `builder_with_provider(ring)`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore};
use rustls_pki_types::pem::PemObject;
use x509_parser::prelude::FromDer;

use crate::{PkiError, crypto_provider, io_err};

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let data = std::fs::read(path).map_err(io_err(path))?;
    let certs = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem(format!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(PkiError::Pem(format!(
            "{}: no CERTIFICATE found",
            path.display()
        )));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, PkiError> {
    let data = std::fs::read(path).map_err(io_err(path))?;
    PrivateKeyDer::from_pem_slice(&data)
        .map_err(|e| PkiError::Pem(format!("{}: no usable private key: {e}", path.display())))
}

fn roots_from(certs: Vec<CertificateDer<'static>>, what: &str) -> Result<RootCertStore, PkiError> {
    let mut roots = RootCertStore::empty();
    for c in certs {
        roots
            .add(c)
            .map_err(|e| PkiError::Config(format!("{what}: unusable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(PkiError::Config(format!("{what}: no CA certificate")));
    }
    Ok(roots)
}

/// A client-certificate verifier that checks the chain to the tenant CA like
/// [`WebPkiClientVerifier`] (client certificates optional), but at a time inside the
/// presented certificate's own validity window. So an expired or not-yet-valid certificate
/// that our CA signed completes the handshake, and the app answers 401 "certificate expired"
/// with a Kubernetes Status body; a certificate not signed by our CA fails the handshake.
///
/// The app MUST check [`crate::PeerCert::is_time_valid`] (and revocation) on every request.
#[derive(Debug)]
struct ExpiryTolerantVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for ExpiryTolerantVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let (_, cert) = x509_parser::certificate::X509Certificate::from_der(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let validity = cert.validity();
        let nb = u64::try_from(validity.not_before.timestamp()).unwrap_or(0);
        let na = u64::try_from(validity.not_after.timestamp()).unwrap_or(0);
        let now_s = now.as_secs();
        let at = if now_s < nb {
            nb
        } else if now_s > na {
            na
        } else {
            return self
                .inner
                .verify_client_cert(end_entity, intermediates, now);
        };
        self.inner.verify_client_cert(
            end_entity,
            intermediates,
            UnixTime::since_unix_epoch(Duration::from_secs(at)),
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// The front end's client-certificate verifier: certificates optional, chain to the CA(s) in
/// `client_ca` (PEM file), checked at a time inside the certificate's own validity window.
pub fn client_cert_verifier(client_ca: &Path) -> Result<Arc<dyn ClientCertVerifier>, PkiError> {
    let roots = roots_from(read_certs(client_ca)?, &client_ca.display().to_string())?;
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crypto_provider())
        .allow_unauthenticated()
        .build()
        .map_err(|e| PkiError::Config(format!("client certificate verifier: {e}")))?;
    Ok(Arc::new(ExpiryTolerantVerifier { inner }))
}

/// rustls ServerConfig for the front end: serving certificate chain and key from PEM files,
/// client certificates (optional at the TLS layer) verified against the tenant CA file, ALPN
/// `h2`, `http/1.1`.
pub fn server_config(
    serving_cert: &Path,
    serving_key: &Path,
    client_ca: &Path,
) -> Result<rustls::ServerConfig, PkiError> {
    serving_config(serving_cert, serving_key, client_cert_verifier(client_ca)?)
}

/// rustls ServerConfig of a listener only one kind of caller may use (paddock's admission
/// webhook, called by the apiserver): a client certificate chaining to `client_ca` is
/// required at the handshake, so a caller without one never gets to send a request.
pub fn mtls_server_config(
    serving_cert: &Path,
    serving_key: &Path,
    client_ca: &Path,
) -> Result<rustls::ServerConfig, PkiError> {
    let roots = roots_from(read_certs(client_ca)?, &client_ca.display().to_string())?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crypto_provider())
        .build()
        .map_err(|e| PkiError::Config(format!("client certificate verifier: {e}")))?;
    serving_config(serving_cert, serving_key, verifier)
}

/// rustls ServerConfig of paddock's admission listener: a client certificate from one of its
/// callers' CAs (the configured one, or a registered cluster's) is required at the handshake.
pub fn admission_server_config(
    serving_cert: &Path,
    serving_key: &Path,
    callers: Arc<crate::callers::AdmissionCallers>,
) -> Result<rustls::ServerConfig, PkiError> {
    serving_config(serving_cert, serving_key, callers)
}

/// A server's config: its certificate chain and key from PEM files, client certificates
/// checked by `verifier`, ALPN `h2`, `http/1.1`.
fn serving_config(
    serving_cert: &Path,
    serving_key: &Path,
    verifier: Arc<dyn ClientCertVerifier>,
) -> Result<rustls::ServerConfig, PkiError> {
    let certs = read_certs(serving_cert)?;
    let key = read_key(serving_key)?;
    let mut config = rustls::ServerConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| {
            PkiError::Config(format!(
                "{} / {}: {e}",
                serving_cert.display(),
                serving_key.display()
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// rustls ClientConfig for paddock → upstream. `ca_pem` must hold at least one CA
/// certificate (there is no insecure mode). Client certificate and key come together or not
/// at all.
pub fn upstream_client_config(
    ca_pem: &[u8],
    client_cert_pem: Option<&[u8]>,
    client_key_pem: Option<&[u8]>,
    alpn: Vec<Vec<u8>>,
) -> Result<rustls::ClientConfig, PkiError> {
    let cas = CertificateDer::pem_slice_iter(ca_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem(format!("upstream CA bundle: {e}")))?;
    if cas.is_empty() {
        return Err(PkiError::Config(
            "upstream CA bundle is empty: paddock needs the upstream CA to verify the apiserver (there is no insecure mode)".into(),
        ));
    }
    let roots = roots_from(cas, "upstream CA bundle")?;
    let builder = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let mut config = match (client_cert_pem, client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| PkiError::Pem(format!("upstream client certificate: {e}")))?;
            if chain.is_empty() {
                return Err(PkiError::Pem(
                    "upstream client certificate: no CERTIFICATE found".into(),
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key)
                .map_err(|e| PkiError::Pem(format!("upstream client key: {e}")))?;
            builder.with_client_auth_cert(chain, key)?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(PkiError::Config(
                "upstream client certificate and key must be given together".into(),
            ));
        }
    };
    config.alpn_protocols = alpn;
    Ok(config)
}
