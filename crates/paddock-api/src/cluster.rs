//! `Cluster` (`clusters.paddock.io/v1alpha1`, cluster-scoped): an upstream cluster paddock
//! fronts (docs/clusters.md). What `paddock cluster add` posts ([`ClusterRequest`]: the
//! credential, PEMs base64 as in a kubeconfig) differs from what the server answers
//! ([`Cluster`]): the key and the token are write-only, an answer says only which kind of
//! credential is held.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kind's name.
pub const KIND: &str = "Cluster";
/// The kind of a list of clusters.
pub const LIST_KIND: &str = "ClusterList";

/// A cluster as the server answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// Name, labels, creation time.
    pub metadata: ClusterMeta,
    /// Where it is and what paddock holds for it.
    pub spec: ClusterSpec,
    /// What paddock sees of it.
    pub status: ClusterStatus,
}

/// The metadata of a cluster, in a request and in an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMeta {
    /// The cluster name (lowercase letters, digits and '-'); required in a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Placement selects clusters by these.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// When it was registered (answers only; empty for the configured upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// The specification of a cluster as answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// The apiserver's URL.
    pub server: String,
    /// Most tenants it should hold (`null`: no bound).
    #[serde(default)]
    pub capacity: Option<u32>,
    /// The kind of credential held: one of the `CREDENTIAL_*` constants.
    pub credential: String,
    /// paddock's admission webhook is installed on the cluster (its apiserver's client CA is
    /// registered; always for `default` when the webhook is served).
    #[serde(default)]
    pub admission_webhook: bool,
}

/// A client certificate and key.
pub const CREDENTIAL_CLIENT_CERTIFICATE: &str = "clientCertificate";
/// A bearer token.
pub const CREDENTIAL_TOKEN: &str = "token";
/// None.
pub const CREDENTIAL_NONE: &str = "none";
/// The configured upstream's kubeconfig (the `default` cluster).
pub const CREDENTIAL_UPSTREAM_KUBECONFIG: &str = "upstream_kubeconfig";

/// What paddock sees of a cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Its apiserver answers.
    pub reachable: bool,
    /// Reachable, bootstrapped and its catalogs synced.
    pub ready: bool,
    /// How many tenants live on it.
    pub tenants: u64,
}

/// What `paddock cluster add` posts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRequest {
    /// Always [`crate::GROUP_VERSION`] when written.
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`] when written.
    #[serde(default)]
    pub kind: String,
    /// Name and labels.
    #[serde(default)]
    pub metadata: ClusterMeta,
    /// Where the cluster is and paddock's credential for it.
    #[serde(default)]
    pub spec: ClusterRequestSpec,
}

/// The cluster asked for. Every field is optional to serde so that the server can say which
/// one is missing or wrong; [`ClusterRequestSpec::FIELDS`] are the only ones it takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRequestSpec {
    /// The apiserver's `https://` URL (required).
    #[serde(default)]
    pub server: String,
    /// Base64 of the PEM CA bundle that verifies it (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_data: Option<String>,
    /// Base64 of the PEM client certificate (with `clientKeyData`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// Base64 of the PEM client key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<String>,
    /// A bearer token (instead of a client certificate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Most tenants it should hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// Base64 of the PEM CA of the client certificate the cluster's apiserver presents to
    /// paddock's admission webhook (its AdmissionConfiguration): paddock's webhook is then
    /// installed on the cluster too.
    #[serde(
        default,
        rename = "admissionClientCAData",
        skip_serializing_if = "Option::is_none"
    )]
    pub admission_client_ca_data: Option<String>,
}

impl ClusterRequestSpec {
    /// The fields of `spec` in a request, as written.
    pub const FIELDS: [&str; 7] = [
        "server",
        "caData",
        "clientCertificateData",
        "clientKeyData",
        "token",
        "capacity",
        "admissionClientCAData",
    ];
}

impl ClusterRequest {
    /// A request with its `apiVersion` and `kind` set.
    pub fn new(
        name: &str,
        labels: BTreeMap<String, String>,
        spec: ClusterRequestSpec,
    ) -> ClusterRequest {
        ClusterRequest {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: ClusterMeta {
                name: Some(name.to_string()),
                labels,
                creation_timestamp: None,
            },
            spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::round_trip;

    #[test]
    fn an_answer_has_the_shape_the_server_wrote() {
        // As `admin/clusters.rs` wrote it with `json!` (the default cluster, then a member).
        round_trip::<Cluster>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Cluster","metadata":{"name":"default","labels":{},"creationTimestamp":""},"spec":{"server":"https://127.0.0.1:6443","capacity":null,"credential":"upstream_kubeconfig","admissionWebhook":true},"status":{"reachable":true,"ready":true,"tenants":2}}"#,
        );
        round_trip::<Cluster>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Cluster","metadata":{"name":"east","labels":{"env":"prod","zone":"a"},"creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{"server":"https://10.0.0.1:6443","capacity":300,"credential":"token","admissionWebhook":false},"status":{"reachable":false,"ready":false,"tenants":0}}"#,
        );
    }

    #[test]
    fn a_request_has_the_shape_the_cli_wrote() {
        // As `paddock cluster add` wrote it with `json!`: a certificate, a token, neither.
        round_trip::<ClusterRequest>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Cluster","metadata":{"name":"east","labels":{"env":"prod"}},"spec":{"server":"https://10.0.0.1:6443","caData":"Q0E=","clientCertificateData":"Q0VSVA==","clientKeyData":"S0VZ","capacity":300}}"#,
        );
        round_trip::<ClusterRequest>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Cluster","metadata":{"name":"west","labels":{}},"spec":{"server":"https://10.0.0.2:6443","caData":"Q0E=","token":"t0ken"}}"#,
        );
    }

    #[test]
    fn the_request_fields_are_those_written() {
        let full = ClusterRequestSpec {
            server: "https://x".into(),
            ca_data: Some(String::new()),
            client_certificate_data: Some(String::new()),
            client_key_data: Some(String::new()),
            token: Some(String::new()),
            capacity: Some(1),
            admission_client_ca_data: Some(String::new()),
        };
        let v = serde_json::to_value(full).unwrap_or_default();
        let keys: Vec<&str> = v
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ClusterRequestSpec::FIELDS);
    }
}
