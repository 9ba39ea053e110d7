//! A tenant's objects exported, imported and moved (docs/operations.md "Export, import and
//! move"): what `paddock tenant export|import|move` send and read.
//!
//! - `GET tenants/<id>/export[?secrets=true]` answers the archive (`application/x-tar`).
//! - `POST tenants/<id>/import[?dryRun=true]` with the archive as its body answers an
//!   [`ImportSummary`] (201, or 200 for a dry run); a refused archive is a 400 `Status`
//!   naming why, and nothing is written.
//! - `POST tenants/<id>/move` with a [`MoveRequest`] answers a [`MoveSummary`].

use serde::{Deserialize, Serialize};

/// The subresource of a tenant's export (GET).
pub const EXPORT: &str = "export";
/// The subresource of an import into a tenant (POST, the archive as the body).
pub const IMPORT: &str = "import";
/// The subresource that moves a tenant to another cluster (POST).
pub const MOVE: &str = "move";
/// The archive's media type.
pub const ARCHIVE_TYPE: &str = "application/x-tar";
/// `kind` of an [`ImportSummary`].
pub const IMPORT_KIND: &str = "TenantImport";
/// `kind` of a [`MoveSummary`].
pub const MOVE_KIND: &str = "TenantMove";

/// What an import did (or, for a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportSummary {
    pub api_version: String,
    pub kind: String,
    /// The tenant imported into.
    pub tenant: String,
    /// The tenant the archive was exported from.
    pub source_tenant: String,
    /// Only checked: nothing was written.
    pub dry_run: bool,
    /// Objects in the archive.
    pub objects: usize,
    /// Objects created (a dry run: that passed the server-side dry run).
    pub created: usize,
    /// Namespaces the tenant had already (its default ones), kept as they are.
    #[serde(default)]
    pub kept: Vec<String>,
}

/// What `tenant move` asks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MoveRequest {
    /// The cluster to move the tenant to.
    pub to: String,
}

/// What a move did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MoveSummary {
    pub api_version: String,
    pub kind: String,
    pub tenant: String,
    /// The cluster it left.
    pub from: String,
    /// The cluster it lives on now.
    pub to: String,
    /// Objects carried over.
    pub objects: usize,
    /// How long its writes were answered 503 (seconds).
    pub writes_paused_seconds: f64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_answers_are_the_json_the_cli_reads() {
        let s = ImportSummary {
            api_version: crate::GROUP_VERSION.into(),
            kind: IMPORT_KIND.into(),
            tenant: "barbar".into(),
            source_tenant: "foofoo".into(),
            dry_run: true,
            objects: 20,
            created: 16,
            kept: vec!["default".into()],
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion": "paddock.io/v1alpha1", "kind": "TenantImport",
                "tenant": "barbar", "sourceTenant": "foofoo", "dryRun": true, "objects": 20,
                "created": 16, "kept": ["default"]})
        );
        assert_eq!(serde_json::from_value::<ImportSummary>(v).unwrap(), s);
        let m: MoveSummary = serde_json::from_str(
            r#"{"apiVersion": "paddock.io/v1alpha1", "kind": "TenantMove", "tenant": "foofoo",
                "from": "default", "to": "east", "objects": 55, "writesPausedSeconds": 7.4}"#,
        )
        .unwrap();
        assert_eq!((m.to.as_str(), m.objects), ("east", 55));
        assert_eq!(
            serde_json::to_value(MoveRequest { to: "east".into() }).unwrap(),
            serde_json::json!({"to": "east"})
        );
    }
}
