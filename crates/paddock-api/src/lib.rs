//! The contract of paddock's admin API (`/apis/paddock.io/v1alpha1`): its group and version,
//! the paths of its resources and the JSON shape of the objects both sides write, declared once
//! for the server that answers (`paddock-server`'s `admin/`) and the CLI that asks (the
//! `paddock` binary's admin commands). Plain data: serde, no I/O.
//!
//! The shapes keep every field the server answers with, in the order it answers them; a field
//! the CLI leaves out is `None` and is not written.

pub mod certificate;
pub mod duration;
pub mod tenant;

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
    /// Tenants (`tenants/<id>`, with `/quota`, `/policy`, `/limits`, `/billing`, `/usage`).
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

#[cfg(test)]
mod tests {
    use super::*;

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
