//! What a replica tells operators: access log, audit trail, Prometheus metrics, per-tenant meters and usage, upstream health.

pub mod access_log;
pub mod audit;
pub mod audit_answer;
pub mod health;
pub mod metering;
#[cfg(test)]
mod metering_tests;
pub mod metric_values;
pub mod metrics;
