//! The admission listener's callers: the configured apiserver CA and, for every registered
//! cluster that has one, that cluster's apiserver CA (docs/clusters.md "Governance on every
//! cluster"). A client certificate is accepted when one of them verifies it, and the caller is
//! the cluster whose CA did: a cluster's apiserver is known by its certificate, never by what
//! it asks for. The cluster CAs are replaced as clusters come and go, without a restart.

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore};
use rustls_pki_types::pem::PemObject;

use crate::{PkiError, crypto_provider};

type Verifier = Arc<dyn ClientCertVerifier>;

/// Who called the admission listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The apiserver of the configured (`default`) cluster.
    Default,
    /// The apiserver of a registered cluster.
    Cluster(String),
}

/// See the module comment.
#[derive(Debug)]
pub struct AdmissionCallers {
    default: Verifier,
    clusters: RwLock<Vec<(String, Verifier)>>,
}

fn verifier(roots: RootCertStore) -> Result<Verifier, PkiError> {
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crypto_provider())
        .build()
        .map_err(|e| PkiError::Config(format!("client certificate verifier: {e}")))
}

fn roots_of(pem: &[u8], what: &str) -> Result<RootCertStore, PkiError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem(format!("{what}: {e}")))?;
    if certs.is_empty() {
        return Err(PkiError::Pem(format!("{what}: no CERTIFICATE found")));
    }
    let mut roots = RootCertStore::empty();
    for c in certs {
        roots
            .add(c)
            .map_err(|e| PkiError::Pem(format!("{what}: {e}")))?;
    }
    Ok(roots)
}

impl AdmissionCallers {
    /// The configured CA (PEM file) alone.
    pub fn new(client_ca: &Path) -> Result<Arc<AdmissionCallers>, PkiError> {
        let pem = std::fs::read(client_ca).map_err(crate::io_err(client_ca))?;
        Ok(Arc::new(AdmissionCallers {
            default: verifier(roots_of(&pem, &client_ca.display().to_string())?)?,
            clusters: RwLock::new(Vec::new()),
        }))
    }

    /// Replaces the registered clusters' CAs (name, PEM). A CA that cannot be read is left
    /// out and reported; the others are in force.
    pub fn set_clusters(&self, cas: &[(String, String)]) -> Vec<PkiError> {
        let mut errors = Vec::new();
        let mut next = Vec::new();
        for (name, pem) in cas {
            match roots_of(
                pem.as_bytes(),
                &format!("cluster {name}'s admission client CA"),
            )
            .and_then(verifier)
            {
                Ok(v) => next.push((name.clone(), v)),
                Err(e) => errors.push(e),
            }
        }
        if let Ok(mut c) = self.clusters.write() {
            *c = next;
        }
        errors
    }

    /// The caller whose CA verifies this chain (the configured one first).
    pub fn caller_of(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Option<Caller> {
        if self
            .default
            .verify_client_cert(end_entity, intermediates, now)
            .is_ok()
        {
            return Some(Caller::Default);
        }
        let clusters = self.clusters.read().ok()?;
        clusters
            .iter()
            .find(|(_, v)| v.verify_client_cert(end_entity, intermediates, now).is_ok())
            .map(|(n, _)| Caller::Cluster(n.clone()))
    }
}

impl ClientCertVerifier for AdmissionCallers {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No hints: the CAs change at run time, and an apiserver sends its one certificate
    /// whatever the hints say.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        match self
            .default
            .verify_client_cert(end_entity, intermediates, now)
        {
            Ok(v) => Ok(v),
            Err(first) => {
                let clusters = self.clusters.read().map_err(|_| first.clone())?;
                clusters
                    .iter()
                    .find_map(|(_, v)| v.verify_client_cert(end_entity, intermediates, now).ok())
                    .ok_or(first)
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.default.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.default.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.default.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

    /// A CA (PEM) and a client certificate it signed (DER).
    fn ca_and_client(cn: &str) -> (String, CertificateDer<'static>) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, cn);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "kube-apiserver-admission");
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        (ca_pem, cert.der().clone())
    }

    #[test]
    fn a_caller_is_the_cluster_whose_ca_verifies_it() {
        let dir = tempfile::tempdir().unwrap();
        let (default_ca, default_client) = ca_and_client("default CA");
        let (east_ca, east_client) = ca_and_client("east CA");
        let (_, stranger) = ca_and_client("nobody's CA");
        let path = dir.path().join("ca.crt");
        std::fs::write(&path, &default_ca).unwrap();
        let callers = AdmissionCallers::new(&path).unwrap();
        let now = UnixTime::now();
        assert_eq!(
            callers.caller_of(&default_client, &[], now),
            Some(Caller::Default)
        );
        // east is not registered yet
        assert_eq!(callers.caller_of(&east_client, &[], now), None);
        assert!(callers.verify_client_cert(&east_client, &[], now).is_err());
        let errors = callers.set_clusters(&[
            ("east".into(), east_ca.clone()),
            ("broken".into(), "not a PEM".into()),
        ]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            callers.caller_of(&east_client, &[], now),
            Some(Caller::Cluster("east".into()))
        );
        assert!(callers.verify_client_cert(&east_client, &[], now).is_ok());
        assert_eq!(callers.caller_of(&stranger, &[], now), None);
        assert!(callers.verify_client_cert(&stranger, &[], now).is_err());
        // east removed: refused again
        callers.set_clusters(&[]);
        assert_eq!(callers.caller_of(&east_client, &[], now), None);
        assert!(callers.client_auth_mandatory());
    }
}
