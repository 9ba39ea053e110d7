//! `IssuedCertificate` (`issuedcertificates.paddock.io/v1alpha1`): the request to sign a
//! tenant user's (or an admin's) certificate signing request, and the issued certificate as
//! the server answers it (listed, revoked, or just issued with the certificate itself).

use serde::{Deserialize, Serialize};

/// The kind's name.
pub const KIND: &str = "IssuedCertificate";
/// The kind of a list of issued certificates.
pub const LIST_KIND: &str = "IssuedCertificateList";

/// What `paddock user issue` (and `paddock admin issue`) posts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueRequest {
    /// Always [`crate::GROUP_VERSION`] when written.
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`] when written.
    #[serde(default)]
    pub kind: String,
    /// What to sign.
    pub spec: IssueSpec,
}

/// The certificate asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueSpec {
    /// The tenant (absent: a platform admin's certificate).
    pub tenant: Option<String>,
    /// The user (the certificate's CN).
    pub user: String,
    /// The user's groups (O values).
    #[serde(default)]
    pub groups: Vec<String>,
    /// The PEM certificate signing request.
    pub csr: String,
    /// How long it is valid, in seconds (absent: the server's default).
    pub validity_seconds: Option<u64>,
}

/// An issued certificate as the server answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedCertificate {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// Its serial.
    pub metadata: CertificateMeta,
    /// Whose it is.
    pub spec: CertificateSpec,
    /// Validity and revocation (and, when just issued, the certificate).
    pub status: CertificateStatus,
}

/// An issued certificate's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateMeta {
    /// The serial, lowercase hex.
    pub name: String,
}

/// Whose certificate it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateSpec {
    /// The tenant (`null`: a platform admin's certificate).
    pub tenant: Option<String>,
    /// The user (CN).
    pub user: String,
    /// The groups (O values).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// An issued certificate's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// The end of its validity (RFC 3339).
    pub not_after: String,
    /// Whether it was revoked.
    pub revoked: bool,
    /// When (RFC 3339; `null` when not revoked).
    #[serde(default)]
    pub revoked_at: Option<String>,
    /// The PEM certificate (the answer to an issue only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// The PEM CA certificate that verifies paddock (the answer to an issue only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<String>,
    /// paddock's public URL (the answer to an issue only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl IssueRequest {
    /// A request with its `apiVersion` and `kind` set.
    pub fn new(spec: IssueSpec) -> IssueRequest {
        IssueRequest {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_has_the_shape_the_server_reads() {
        let r = IssueRequest::new(IssueSpec {
            tenant: Some("acme01".into()),
            user: "alice".into(),
            groups: vec!["devs".into()],
            csr: "PEM".into(),
            validity_seconds: None,
        });
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            v,
            json!({"apiVersion": "paddock.io/v1alpha1", "kind": "IssuedCertificate",
                   "spec": {"tenant": "acme01", "user": "alice", "groups": ["devs"], "csr": "PEM", "validitySeconds": null}})
        );
        let back: IssueRequest = serde_json::from_value(v).unwrap_or_else(|_| r.clone());
        assert_eq!(back, r);
    }

    #[test]
    fn answers_have_the_shape_the_server_wrote() {
        // As `admin/mod.rs` wrote them with `json!`: listed (an admin's, a revoked one) and
        // just issued.
        let admin = r#"{"apiVersion":"paddock.io/v1alpha1","kind":"IssuedCertificate","metadata":{"name":"0a1b"},"spec":{"tenant":null,"user":"root","groups":[]},"status":{"notAfter":"2027-01-01T00:00:00Z","revoked":false,"revokedAt":null}}"#;
        crate::tests::round_trip::<IssuedCertificate>(admin);
        crate::tests::round_trip::<crate::List<IssuedCertificate>>(&format!(
            r#"{{"apiVersion":"paddock.io/v1alpha1","kind":"IssuedCertificateList","metadata":{{}},"items":[{admin}]}}"#
        ));
        crate::tests::round_trip::<IssuedCertificate>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"IssuedCertificate","metadata":{"name":"0c"},"spec":{"tenant":"acme01","user":"alice","groups":["devs"]},"status":{"notAfter":"2027-01-01T00:00:00Z","revoked":true,"revokedAt":"2026-06-01T00:00:00Z"}}"#,
        );
        crate::tests::round_trip::<IssuedCertificate>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"IssuedCertificate","metadata":{"name":"0d"},"spec":{"tenant":"acme01","user":"admin","groups":["paddock:tenant-admins"]},"status":{"notAfter":"2027-01-01T00:00:00Z","revoked":false,"revokedAt":null,"certificate":"CERT","caCertificate":"CA","server":"https://paddock:8443"}}"#,
        );
    }
}
