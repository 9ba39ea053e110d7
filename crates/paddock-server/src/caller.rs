//! The authenticated caller of one request (what the audit trail, the access log and the
//! request path know of it).

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
        /// Certificate CN.
        user: String,
        /// Certificate O values.
        groups: Vec<String>,
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
            Caller::Admin { user, .. } | Caller::Tenant { user, .. } => user,
        }
    }
}
