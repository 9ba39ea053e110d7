//! `IssuedCertificate` (`issuedcertificates.paddock.io/v1alpha1`): the request to sign a
//! tenant user's (or an admin's) certificate signing request.

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
}
