//! What is recorded about tenants, as decisions: the audit policy and events, usage figures, the billing key, upstream health with hysteresis.

pub mod audit;
pub mod audit_platform;
pub mod billing;
pub mod health;
pub mod usage;
pub mod usage_cache;
