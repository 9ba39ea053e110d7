//! The contract of paddock's admin API (`/apis/paddock.io/v1alpha1`): its group and version,
//! the paths of its resources and the JSON shape of the objects both sides write, declared once
//! for the server that answers (`paddock-server`'s `admin/`) and the CLI that asks (the
//! `paddock` binary's admin commands). Plain data: serde, no I/O.
//!
//! The shapes keep every field the server answers with, in the order it answers them (the
//! workspace's serde_json keeps the order of object keys); a field the CLI leaves out is
//! `None` and is not written. Each module's tests hold its types to the JSON the server and
//! the CLI wrote by hand before these types existed.

pub mod certificate;
pub mod cluster;
pub mod duration;
pub mod lifecycle;
pub mod policy;
pub mod portable;
pub mod quota;
pub mod template;
pub mod tenant;
pub mod usage;
pub mod user;

use serde::{Deserialize, Serialize};

/// The admin API's group.
pub const GROUP: &str = "paddock.io";
/// Its one version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of every object of the admin API.
pub const GROUP_VERSION: &str = "paddock.io/v1alpha1";
/// The group's discovery document (`APIGroup`).
pub const GROUP_PATH: &str = "/apis/paddock.io";
/// Where its resources live.
pub const BASE: &str = "/apis/paddock.io/v1alpha1";

/// The resources under [`BASE`] (plural names, as in a URL).
pub mod resources {
    /// Tenants (`tenants/<id>`, with `/quota`, `/policy`, `/limits`, `/billing`, `/usage`,
    /// `/suspension`, `/protection`).
    pub const TENANTS: &str = "tenants";
    /// Client certificates issued to tenants' users and to admins.
    pub const ISSUED_CERTIFICATES: &str = "issuedcertificates";
    /// Upstream clusters (docs/clusters.md).
    pub const CLUSTERS: &str = "clusters";
    /// Namespace templates (docs/templates.md).
    pub const NAMESPACE_TEMPLATES: &str = "namespacetemplates";
}

/// The collections' paths, [`BASE`]`/<resource>` (constants, for `format!`; a unit test holds
/// them to [`BASE`] and [`resources`]).
pub mod paths {
    /// `tenants`.
    pub const TENANTS: &str = "/apis/paddock.io/v1alpha1/tenants";
    /// `issuedcertificates`.
    pub const ISSUED_CERTIFICATES: &str = "/apis/paddock.io/v1alpha1/issuedcertificates";
    /// `clusters`.
    pub const CLUSTERS: &str = "/apis/paddock.io/v1alpha1/clusters";
    /// `namespacetemplates`.
    pub const NAMESPACE_TEMPLATES: &str = "/apis/paddock.io/v1alpha1/namespacetemplates";
}

/// A list of objects of one kind (`TenantList`, `ClusterList`, ...), as the server answers
/// a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct List<T> {
    /// Always [`GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// The list kind (`LIST_KIND` of the item's module).
    #[serde(default)]
    pub kind: String,
    /// Always empty.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects.
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}

/// A list's metadata: `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListMeta {}

impl<T> List<T> {
    /// A list of `kind` holding `items`.
    pub fn new(kind: &str, items: Vec<T>) -> List<T> {
        List {
            api_version: GROUP_VERSION.to_string(),
            kind: kind.to_string(),
            metadata: ListMeta {},
            items,
        }
    }
}

/// For an `Option<serde_json::Value>` field with `#[serde(default, deserialize_with = ...)]`:
/// present, even as `null`, is `Some` (absent is `None`), so that what is read is written
/// again as it was.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `json` read as a `T` and written again is `json`, byte for byte: the type holds every
    /// field, in the order written, and writes no other.
    pub(crate) fn round_trip<T>(json: &str)
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let read: Result<T, _> = serde_json::from_str(json);
        let written = read.map(|t| serde_json::to_string(&t));
        assert!(
            matches!(&written, Ok(Ok(w)) if w == json),
            "{json}\n -> {written:?}"
        );
    }

    #[test]
    fn the_paths_are_the_base_and_the_resource() {
        for (path, resource) in [
            (paths::TENANTS, resources::TENANTS),
            (paths::ISSUED_CERTIFICATES, resources::ISSUED_CERTIFICATES),
            (paths::CLUSTERS, resources::CLUSTERS),
            (paths::NAMESPACE_TEMPLATES, resources::NAMESPACE_TEMPLATES),
        ] {
            assert_eq!(path, format!("{BASE}/{resource}"));
        }
    }

    #[test]
    fn the_group_version_and_base_agree() {
        assert_eq!(GROUP_VERSION, format!("{GROUP}/{VERSION}"));
        assert_eq!(BASE, format!("/apis/{GROUP_VERSION}"));
        assert_eq!(GROUP_PATH, format!("/apis/{GROUP}"));
    }
}
