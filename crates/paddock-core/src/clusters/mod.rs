//! Upstream clusters as a platform resource: where a tenant is placed, which clusters join a spanning tenant by label, and which cluster a spanning tenant's namespace lives on.

pub mod cluster;
pub mod join;
pub mod span;
