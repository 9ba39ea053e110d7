//! The authenticated caller of one request (what the audit trail, the access log and the
//! request path know of it).

use std::sync::Arc;

use paddock_core::TenantId;

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// A platform admin (certificate without a tenant).
    Admin {
        /// Certificate CN.
        user: String,
        /// Certificate serial (hex).
        serial: String,
    },
    /// A tenant user.
    Tenant {
        /// The tenant.
        tenant: TenantId,
        /// Certificate CN (shared: every request of a connection hands it on).
        user: Arc<str>,
        /// Certificate O values.
        groups: Arc<[String]>,
        /// Certificate serial (hex).
        serial: String,
    },
}

impl Caller {
    /// For logs and metrics.
    pub fn tenant_label(&self) -> &str {
        match self {
            Caller::Admin { .. } => "_admin",
            Caller::Tenant { tenant, .. } => tenant.as_str(),
        }
    }
    /// User name for logs.
    pub fn user(&self) -> &str {
        match self {
            Caller::Admin { user, .. } => user,
            Caller::Tenant { user, .. } => user,
        }
    }
}
