//! The admission webhook paddock serves to the upstream apiserver: tenant policy, the guard and tenant-wide quota.

pub mod admission;
pub mod quota;
pub mod recount;
