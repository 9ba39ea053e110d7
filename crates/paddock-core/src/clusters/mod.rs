//! Upstream clusters as a platform resource: where a tenant is placed, and which cluster a spanning tenant's namespace lives on.

pub mod cluster;
pub mod span;
