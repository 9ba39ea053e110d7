//! `NamespaceTemplate` (`namespacetemplates.paddock.io/v1alpha1`, cluster-scoped): objects
//! stamped into tenants' namespaces (docs/templates.md). The same object is posted by
//! `paddock template create|apply` (name and spec) and answered by the server (with the
//! generation, the creation time and a status). The manifests are the tenant's objects,
//! carried as JSON and judged by the server.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind's name.
pub const KIND: &str = "NamespaceTemplate";
/// The kind of a list of templates.
pub const LIST_KIND: &str = "NamespaceTemplateList";

/// A namespace template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceTemplate {
    /// Always [`crate::GROUP_VERSION`] when written.
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`] when written.
    #[serde(default)]
    pub kind: String,
    /// Name (in a `PUT`, the path's when left out), generation and creation time.
    #[serde(default)]
    pub metadata: TemplateMeta,
    /// What it stamps, and where.
    #[serde(default)]
    pub spec: TemplateSpec,
    /// Answers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TemplateStatus>,
}

/// The template's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMeta {
    /// The template's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Raised by every change of the spec (answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// When it was created (answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// The template's specification. `mandatory` and `manifests` are required in a request;
/// they are optional to serde so that the server can say which one is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateSpec {
    /// Stamped into every namespace of its tenants, locked (else on request only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mandatory: Option<bool>,
    /// The tenants it applies to; empty: every tenant.
    #[serde(default)]
    pub tenants: Vec<String>,
    /// The objects, in the tenant's view, without namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<Value>>,
}

impl TemplateSpec {
    /// The fields of `spec`, as written.
    pub const FIELDS: [&str; 3] = ["mandatory", "tenants", "manifests"];
}

/// The template's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateStatus {
    /// Shipped with paddock (read-only).
    pub builtin: bool,
    /// How many namespaces carry it in step (one template's `GET` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<TemplateNamespaces>,
}

/// Namespaces and a template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateNamespaces {
    /// Namespaces that should carry it.
    pub wanted: u64,
    /// Of those, carrying its generation, stamped without failure.
    pub in_sync: u64,
    /// Of those, whose last stamping failed.
    pub failed: u64,
}

impl NamespaceTemplate {
    /// The object `paddock template create|apply` sends.
    pub fn request(
        name: &str,
        mandatory: bool,
        tenants: Vec<String>,
        manifests: Vec<Value>,
    ) -> NamespaceTemplate {
        NamespaceTemplate {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: TemplateMeta {
                name: Some(name.to_string()),
                ..TemplateMeta::default()
            },
            spec: TemplateSpec {
                mandatory: Some(mandatory),
                tenants,
                manifests: Some(manifests),
            },
            status: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::round_trip;
    use serde_json::json;

    #[test]
    fn answers_have_the_shape_the_server_wrote() {
        // As `admin/templates.rs` wrote it with `json!`: in a list, and one `GET`.
        round_trip::<NamespaceTemplate>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"NamespaceTemplate","metadata":{"name":"platform","generation":2,"creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{"mandatory":true,"tenants":[],"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}}]},"status":{"builtin":false}}"#,
        );
        round_trip::<NamespaceTemplate>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"NamespaceTemplate","metadata":{"name":"paddock-default","generation":1,"creationTimestamp":""},"spec":{"mandatory":false,"tenants":["acme01"],"manifests":[]},"status":{"builtin":true,"namespaces":{"wanted":3,"inSync":2,"failed":1}}}"#,
        );
        round_trip::<crate::List<NamespaceTemplate>>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"NamespaceTemplateList","metadata":{},"items":[]}"#,
        );
    }

    #[test]
    fn a_request_has_the_shape_the_cli_wrote() {
        let r = NamespaceTemplate::request(
            "platform",
            true,
            vec!["acme01".into()],
            vec![json!({"kind": "ConfigMap"})],
        );
        assert_eq!(
            serde_json::to_string(&r).unwrap_or_default(),
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"NamespaceTemplate","metadata":{"name":"platform"},"spec":{"mandatory":true,"tenants":["acme01"],"manifests":[{"kind":"ConfigMap"}]}}"#
        );
    }
}
