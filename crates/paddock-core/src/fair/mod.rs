//! Fair share between tenants: the pure decisions behind per-tenant limits, request weights and the tenant-fair work queue.

pub mod queue;
pub mod refusal;
pub mod share;
pub mod weight;
