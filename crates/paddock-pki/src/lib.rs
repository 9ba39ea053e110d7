//! paddock's certificates: the tenant CA, issuance from CSRs, identity from client
//! certificates, and the rustls configurations (with the one crypto provider, ring).
//!
//! Identity mapping (see docs/pki.md): CN = user, one O per group, OU = tenant id. Platform
//! admins have no OU.
//!
//! # API notes (differences from / additions to the agreed surface)
//!
//! - Everything in the agreed surface exists with the agreed names and signatures.
//! - Additions:
//!   - [`CaInitOutput::admin`]: the [`IssuedCert`] of the admin certificate (serial, validity),
//!     so the caller can record it in the store.
//!   - [`Ca::issue_new`]: make a fresh key and issue a client certificate for it (the
//!     "hand the key out once" path; paddock never stores the key).
//!   - [`Ca::issue_serving_cert`]: issue a serving certificate (for rotation).
//!   - [`Ca::not_after`], [`Ca::cert_der`].
//!   - [`client_cert_verifier`]: the expiry-tolerant client verifier on its own.
//!   - [`PeerCert::is_time_valid`]: the validity check the app MUST do (the TLS layer accepts
//!     expired certificates of our CA on purpose).
//!   - [`normalize_serial_hex`].
//! - Issued certificates are back-dated by [`CLOCK_SKEW`] (5 minutes): `not_before` is
//!   `now - 5 min`, `not_after` is `now + validity` (clamped to the CA's own `not_after`).
//!   All times are whole seconds (X.509 has no sub-second precision).
//! - `Subject::tenant` is validated with `paddock_core::TenantId::parse`; user and group names
//!   must be non-empty and free of control characters.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod callers;
mod der;
mod tls;

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SerialNumber,
    SigningKey,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateSigningRequestDer};
use x509_parser::prelude::FromDer;

pub use tls::{
    admission_server_config, client_cert_verifier, mtls_server_config, server_config,
    upstream_client_config,
};

/// The names a tenant pod reaches paddock by through the tenant's `kubernetes` Service and
/// the tenant DNS (docs/inside.md), in every serving certificate paddock issues itself; a
/// cluster domain other than `cluster.local` is added with `ca init --hostname`.
pub const IN_CLUSTER_NAMES: &[&str] = &[
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// How far issued certificates are back-dated, to tolerate clock skew between machines.
pub const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);
/// Validity of the CA created by [`init_ca`].
pub const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Validity of the serving certificate created by [`init_ca`].
pub const SERVING_VALIDITY: Duration = Duration::from_secs(2 * 365 * 24 * 3600);
/// Validity of the admin certificate created by [`init_ca`].
pub const ADMIN_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// The group of platform administrators.
pub const PLATFORM_ADMINS_GROUP: &str = "paddock:platform-admins";
/// The user name of the admin certificate created by [`init_ca`].
pub const ADMIN_USER: &str = "admin";

/// Errors of this crate. Messages are meant for operators: they name the file or the field.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a CA already exists in {0} (ca.crt or ca.key); refusing to overwrite it (use --force; every certificate it issued will stop working)"
    )]
    AlreadyExists(PathBuf),
    #[error("PEM: {0}")]
    Pem(String),
    #[error("certificate signing request refused: {0}")]
    Csr(String),
    #[error("invalid subject: {0}")]
    InvalidSubject(String),
    #[error("X.509: {0}")]
    X509(String),
    #[error("certificate generation: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    #[error("TLS configuration: {0}")]
    Config(String),
    #[error("no randomness available")]
    Random,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---- crypto provider ----------------------------------------------------------------------

static PROVIDER: OnceLock<Arc<rustls::crypto::CryptoProvider>> = OnceLock::new();

/// The one crypto provider of paddock: ring.
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// Installs ring as the process-wide default rustls provider. Idempotent; if some other
/// provider was installed first, it is left alone (and a warning-free no-op happens).
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means someone raced us and installed one: fine.
        let _ = rustls::crypto::CryptoProvider::install_default((*crypto_provider()).clone());
    }
}

// ---- identities ---------------------------------------------------------------------------

/// The identity put into a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub user: String,
    pub groups: Vec<String>,
    /// Tenant id (OU); `None` for platform admins.
    pub tenant: Option<String>,
}

impl Subject {
    fn validate(&self) -> Result<(), PkiError> {
        check_name("user", &self.user)?;
        for g in &self.groups {
            check_name("group", g)?;
        }
        if let Some(t) = &self.tenant {
            check_tenant(t).map_err(|e| PkiError::InvalidSubject(format!("tenant: {e}")))?;
        }
        Ok(())
    }
}

/// Tenant id check: `paddock_core::TenantId::parse`.
fn check_tenant(t: &str) -> Result<(), String> {
    paddock_core::TenantId::parse(t)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn check_name(what: &str, s: &str) -> Result<(), PkiError> {
    if s.is_empty() {
        return Err(PkiError::InvalidSubject(format!("{what} name is empty")));
    }
    if s.len() > 1024 {
        return Err(PkiError::InvalidSubject(format!(
            "{what} name is longer than 1024 bytes"
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(PkiError::InvalidSubject(format!(
            "{what} name {s:?} contains control characters"
        )));
    }
    Ok(())
}

/// A certificate issued by the CA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCert {
    pub cert_pem: String,
    /// Lowercase hex of the serial number, without leading zero bytes.
    pub serial_hex: String,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
}

/// The identity read from a client certificate presented to paddock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCert {
    pub user: String,
    pub groups: Vec<String>,
    pub tenant: Option<String>,
    /// Lowercase hex of the serial number, without leading zero bytes.
    pub serial_hex: String,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
}

impl PeerCert {
    /// Whether `now` is inside the certificate's validity window. The TLS layer lets expired
    /// and not-yet-valid certificates of our CA through, so the app must check this.
    pub fn is_time_valid(&self, now: SystemTime) -> bool {
        self.not_before <= now && now <= self.not_after
    }
}

/// Reads the identity out of a DER certificate (x509-parser). Does NOT verify anything: call
/// it on certificates rustls has already verified.
pub fn parse_peer_cert(der: &[u8]) -> Result<PeerCert, PkiError> {
    let (rest, cert) = x509_parser::certificate::X509Certificate::from_der(der)
        .map_err(|e| PkiError::X509(format!("cannot parse certificate: {e}")))?;
    if !rest.is_empty() {
        return Err(PkiError::X509("trailing bytes after certificate".into()));
    }
    let subject = cert.subject();
    let attr_str = |a: &x509_parser::x509::AttributeTypeAndValue<'_>, what: &str| {
        a.as_str()
            .map(str::to_owned)
            .map_err(|e| PkiError::X509(format!("certificate {what} is not a string: {e}")))
    };
    let mut cns = subject.iter_common_name();
    let user = match (cns.next(), cns.next()) {
        (Some(cn), None) => attr_str(cn, "CN")?,
        (None, _) => return Err(PkiError::X509("certificate has no CN (user name)".into())),
        (Some(_), Some(_)) => {
            return Err(PkiError::X509("certificate has more than one CN".into()));
        }
    };
    if user.is_empty() {
        return Err(PkiError::X509("certificate CN (user name) is empty".into()));
    }
    let groups = subject
        .iter_organization()
        .map(|o| attr_str(o, "O"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ous = subject.iter_organizational_unit();
    let tenant = match (ous.next(), ous.next()) {
        (None, _) => None,
        (Some(ou), None) => {
            let t = attr_str(ou, "OU")?;
            check_tenant(&t)
                .map_err(|e| PkiError::X509(format!("certificate OU (tenant): {e}")))?;
            Some(t)
        }
        (Some(_), Some(_)) => {
            return Err(PkiError::X509(
                "certificate has more than one OU (tenant)".into(),
            ));
        }
    };
    let validity = cert.validity();
    Ok(PeerCert {
        user,
        groups,
        tenant,
        serial_hex: normalize_serial_hex(cert.raw_serial()),
        not_before: from_unix(validity.not_before.timestamp()),
        not_after: from_unix(validity.not_after.timestamp()),
    })
}

/// Lowercase hex of a serial number's big-endian bytes, leading zero bytes removed (so the
/// DER form with a sign byte and the raw form give the same string).
pub fn normalize_serial_hex(bytes: &[u8]) -> String {
    let skip = bytes
        .iter()
        .take_while(|b| **b == 0)
        .count()
        .min(bytes.len().saturating_sub(1));
    hex::encode(&bytes[skip..])
}

// ---- time helpers -------------------------------------------------------------------------

fn from_unix(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

/// Truncates to whole seconds (X.509 precision).
fn trunc(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(e) => {
            let d = e.duration();
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            UNIX_EPOCH - Duration::from_secs(secs)
        }
    }
}

fn odt(t: SystemTime) -> time::OffsetDateTime {
    time::OffsetDateTime::from(t)
}

fn random_serial() -> Result<(SerialNumber, String), PkiError> {
    let mut bytes = [0u8; 16];
    crypto_provider()
        .secure_random
        .fill(&mut bytes)
        .map_err(|_| PkiError::Random)?;
    // Positive, and no leading zero byte, so DER keeps exactly these 16 bytes.
    bytes[0] &= 0x7f;
    if bytes[0] == 0 {
        bytes[0] = 0x01;
    }
    Ok((SerialNumber::from_slice(&bytes), hex::encode(bytes)))
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::with_capacity(b64.len() + b64.len() / 64 + 64);
    out.push_str("-----BEGIN ");
    out.push_str(label);
    out.push_str("-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // base64 output is ASCII
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END ");
    out.push_str(label);
    out.push_str("-----\n");
    out
}

fn placeholder_dn() -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "paddock-subject-placeholder");
    dn
}

// ---- client side: key and CSR -------------------------------------------------------------

/// Client side (the CLI): a fresh ECDSA P-256 key and a CSR for it, carrying `subject`
/// (informational: the CA puts in the identity the server decides). Returns (key PEM, CSR PEM).
pub fn generate_key_and_csr(subject: &Subject) -> Result<(String, String), PkiError> {
    subject.validate()?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = placeholder_dn();
    let csr = params.serialize_request(&key)?;
    let name = der::encode_subject(&subject.user, &subject.groups, subject.tenant.as_deref());
    // CertificationRequestInfo ::= SEQUENCE { version, subject, subjectPKInfo, attributes }
    let der = der::replace_subject_and_resign(csr.der(), 1, &name, |tbs| {
        key.sign(tbs).map_err(PkiError::from)
    })?;
    Ok((key.serialize_pem(), pem_encode("CERTIFICATE REQUEST", &der)))
}

// ---- the CA -------------------------------------------------------------------------------

/// The tenant CA: signs client certificates from CSRs.
pub struct Ca {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
    not_after: SystemTime,
}

impl fmt::Debug for Ca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ca")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl Ca {
    /// Loads the CA certificate and its private key (PEM files). Checks that they match.
    pub fn load(cert_pem_path: &Path, key_pem_path: &Path) -> Result<Ca, PkiError> {
        let cert_pem = fs::read_to_string(cert_pem_path).map_err(io_err(cert_pem_path))?;
        let key_pem = fs::read_to_string(key_pem_path).map_err(io_err(key_pem_path))?;
        Self::from_pem(&cert_pem, &key_pem).map_err(|e| match e {
            PkiError::Pem(m) => PkiError::Pem(format!(
                "{} / {}: {m}",
                cert_pem_path.display(),
                key_pem_path.display()
            )),
            other => other,
        })
    }

    /// Like [`Ca::load`], from PEM text.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Ca, PkiError> {
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| PkiError::Pem(format!("CA certificate: {e}")))?;
        let key = KeyPair::from_pem(key_pem)
            .map_err(|e| PkiError::Pem(format!("CA private key: {e}")))?;
        let (_, x509) = x509_parser::certificate::X509Certificate::from_der(&cert_der)
            .map_err(|e| PkiError::X509(format!("CA certificate: {e}")))?;
        if x509.tbs_certificate.subject_pki.raw != key.subject_public_key_info().as_slice() {
            return Err(PkiError::X509(
                "the CA private key does not belong to the CA certificate".into(),
            ));
        }
        if !x509.is_ca() {
            return Err(PkiError::X509(
                "the CA certificate is not a CA (basicConstraints)".into(),
            ));
        }
        let not_after = from_unix(x509.validity().not_after.timestamp());
        let issuer = Issuer::from_ca_cert_der(&cert_der, key)?;
        Ok(Ca {
            cert_pem: pem_encode("CERTIFICATE", &cert_der),
            cert_der,
            issuer,
            not_after,
        })
    }

    /// The CA certificate, PEM (what kubeconfigs carry as certificate-authority-data).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER.
    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// The end of the CA's own validity; issued certificates never outlive it.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// Signs a PKCS#10 CSR (PEM). The CSR only proves possession of the key (its signature is
    /// verified); its subject and requested extensions are ignored: the certificate carries
    /// `subject`, `digitalSignature` and `clientAuth`, and is valid from `now - CLOCK_SKEW` to
    /// `now + validity`.
    pub fn sign_csr(
        &self,
        csr_pem: &str,
        subject: &Subject,
        validity: Duration,
        now: SystemTime,
    ) -> Result<IssuedCert, PkiError> {
        subject.validate()?;
        let csr_der = CertificateSigningRequestDer::from_pem_slice(csr_pem.as_bytes())
            .map_err(|e| PkiError::Csr(format!("not a PEM certificate request: {e}")))?;
        let (rest, csr) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&csr_der)
                .map_err(|e| PkiError::Csr(format!("cannot parse: {e}")))?;
        if !rest.is_empty() {
            return Err(PkiError::Csr("trailing bytes after the request".into()));
        }
        csr.verify_signature().map_err(|e| {
            PkiError::Csr(format!(
                "signature does not verify (the request must be signed by its own key): {e}"
            ))
        })?;
        let spki =
            rcgen::SubjectPublicKeyInfo::from_der(csr.certification_request_info.subject_pki.raw)
                .map_err(|e| PkiError::Csr(format!("unsupported public key: {e}")))?;
        self.issue_client(&spki, subject, validity, now)
    }

    /// Makes a fresh ECDSA P-256 key and a client certificate for it. Returns (key PEM,
    /// certificate). The key is not kept anywhere.
    pub fn issue_new(
        &self,
        subject: &Subject,
        validity: Duration,
        now: SystemTime,
    ) -> Result<(String, IssuedCert), PkiError> {
        subject.validate()?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let issued = self.issue_client(&key, subject, validity, now)?;
        Ok((key.serialize_pem(), issued))
    }

    fn window(&self, validity: Duration, now: SystemTime) -> (SystemTime, SystemTime) {
        let now = trunc(now);
        let not_before = now.checked_sub(CLOCK_SKEW).unwrap_or(now);
        let not_after = now
            .checked_add(Duration::from_secs(validity.as_secs()))
            .unwrap_or(self.not_after)
            .min(self.not_after);
        (not_before, not_after)
    }

    fn issue_client(
        &self,
        key: &impl PublicKeyData,
        subject: &Subject,
        validity: Duration,
        now: SystemTime,
    ) -> Result<IssuedCert, PkiError> {
        if validity.as_secs() == 0 {
            return Err(PkiError::InvalidSubject(
                "validity must be at least 1s".into(),
            ));
        }
        let (not_before, not_after) = self.window(validity, now);
        if not_after <= not_before {
            return Err(PkiError::X509(
                "the CA has expired; it cannot issue certificates".into(),
            ));
        }
        let (serial, serial_hex) = random_serial()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = placeholder_dn();
        params.not_before = odt(not_before);
        params.not_after = odt(not_after);
        params.serial_number = Some(serial);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(key, &self.issuer)?;
        let name = der::encode_subject(&subject.user, &subject.groups, subject.tenant.as_deref());
        // TBSCertificate ::= SEQUENCE { [0] version, serialNumber, signature, issuer,
        //   validity, subject, ... }: subject is element 5 (rcgen always writes the version).
        let der = der::replace_subject_and_resign(cert.der(), 5, &name, |tbs| {
            self.issuer.key().sign(tbs).map_err(PkiError::from)
        })?;
        Ok(IssuedCert {
            cert_pem: pem_encode("CERTIFICATE", &der),
            serial_hex,
            not_before,
            not_after,
        })
    }

    /// Issues a serving certificate (CN=paddock, `serverAuth`) for a fresh key with SANs
    /// localhost, 127.0.0.1, ::1, the names of a tenant's `kubernetes` Service as its pods
    /// use them ([`IN_CLUSTER_NAMES`]), `*.tenants.paddock.internal` (the tenants' server
    /// names) and `hostnames` (IP addresses become IP SANs). Returns
    /// (key PEM, certificate).
    pub fn issue_serving_cert(
        &self,
        hostnames: &[String],
        validity: Duration,
        now: SystemTime,
    ) -> Result<(String, IssuedCert), PkiError> {
        let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        names.extend(IN_CLUSTER_NAMES.iter().map(|n| (*n).to_string()));
        // The tenants' server names (a kubeconfig context's tls-server-name chooses the
        // tenant of a bearer-token connection; docs/security.md "Identities").
        names.push(format!(
            "*.{}",
            paddock_core::identity::oidc::TENANT_SERVER_SUFFIX
        ));
        for h in hostnames {
            let h = h.trim();
            if h.is_empty() {
                continue;
            }
            if !names.iter().any(|n| n == h) {
                names.push(h.to_string());
            }
        }
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let (not_before, not_after) = self.window(validity, now);
        let (serial, serial_hex) = random_serial()?;
        let mut params = CertificateParams::new(names.clone()).map_err(|e| {
            PkiError::InvalidSubject(format!("serving certificate names {names:?}: {e}"))
        })?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "paddock");
        params.distinguished_name = dn;
        params.not_before = odt(not_before);
        params.not_after = odt(not_after);
        params.serial_number = Some(serial);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((
            key.serialize_pem(),
            IssuedCert {
                cert_pem: cert.pem(),
                serial_hex,
                not_before,
                not_after,
            },
        ))
    }
}

// ---- init ---------------------------------------------------------------------------------

/// The files written by [`init_ca`].
#[derive(Debug, Clone)]
pub struct CaInitOutput {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    /// The admin certificate's serial and validity (record it in the store).
    pub admin: IssuedCert,
}

/// Creates `dir/ca.crt`, `ca.key` (0600), `serving.crt`/`.key` (SANs localhost, 127.0.0.1,
/// ::1 plus `hostnames`) and `admin.crt`/`.key` (CN=admin, O=paddock:platform-admins, no OU).
/// Refuses to overwrite an existing CA (ca.crt or ca.key present) unless `force`. Every file
/// is written to a temporary name and renamed; the CA files are written last, so an
/// interrupted run leaves no CA behind and can simply be repeated.
pub fn init_ca(
    dir: &Path,
    hostnames: &[String],
    force: bool,
    now: SystemTime,
) -> Result<CaInitOutput, PkiError> {
    let out = CaInitOutput {
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        serving_cert: dir.join("serving.crt"),
        serving_key: dir.join("serving.key"),
        admin_cert: dir.join("admin.crt"),
        admin_key: dir.join("admin.key"),
        admin: IssuedCert {
            cert_pem: String::new(),
            serial_hex: String::new(),
            not_before: now,
            not_after: now,
        },
    };
    if !force && (out.ca_cert.exists() || out.ca_key.exists()) {
        return Err(PkiError::AlreadyExists(dir.to_path_buf()));
    }
    fs::create_dir_all(dir).map_err(io_err(dir))?;

    let now = trunc(now);
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let (serial, _) = random_serial()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "paddock");
    dn.push(DnType::CommonName, "paddock tenant CA");
    params.distinguished_name = dn;
    params.not_before = odt(now.checked_sub(Duration::from_secs(3600)).unwrap_or(now));
    params.not_after = odt(now.checked_add(CA_VALIDITY).unwrap_or(now));
    params.serial_number = Some(serial);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert_pem = params.self_signed(&ca_key)?.pem();
    let ca_key_pem = ca_key.serialize_pem();
    let ca = Ca::from_pem(&ca_cert_pem, &ca_key_pem)?;

    let (serving_key_pem, serving) = ca.issue_serving_cert(hostnames, SERVING_VALIDITY, now)?;
    let admin_subject = Subject {
        user: ADMIN_USER.into(),
        groups: vec![PLATFORM_ADMINS_GROUP.into()],
        tenant: None,
    };
    let (admin_key_pem, admin) = ca.issue_new(&admin_subject, ADMIN_VALIDITY, now)?;

    write_file(&out.serving_key, serving_key_pem.as_bytes(), true)?;
    write_file(&out.serving_cert, serving.cert_pem.as_bytes(), false)?;
    write_file(&out.admin_key, admin_key_pem.as_bytes(), true)?;
    write_file(&out.admin_cert, admin.cert_pem.as_bytes(), false)?;
    write_file(&out.ca_key, ca_key_pem.as_bytes(), true)?;
    write_file(&out.ca_cert, ca_cert_pem.as_bytes(), false)?;
    tracing::info!(dir = %dir.display(), "created tenant CA, serving and admin certificates");
    Ok(CaInitOutput { admin, ..out })
}

/// Writes `data` to `path` atomically (temp file in the same dir, fsync, rename). Private
/// files get mode 0600 from the start.
fn write_file(path: &Path, data: &[u8], private: bool) -> Result<(), PkiError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    let _ = fs::remove_file(&tmp);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut f = opts.open(&tmp).map_err(io_err(&tmp))?;
    f.write_all(data).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok(())
}

#[cfg(test)]
mod tests;
