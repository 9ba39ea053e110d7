//! The admission webhook paddock serves to the upstream apiserver: tenant policy, the guard and
//! tenant-wide quota, and the relay to the tenants' own webhooks.

pub mod admission;
pub mod quota;
pub mod recount;
pub mod relay;
