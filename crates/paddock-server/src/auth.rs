//! Who is calling: the client certificate (parsed once per connection) checked against the
//! store cache on every request, so a revocation or a tenant suspension applies to open
//! connections too, within the cache's propagation time.

use std::sync::Arc;
use std::time::SystemTime;

use paddock_core::TenantId;
use paddock_pki::PeerCert;
use paddock_store::{StoreCache, TenantPhase};

use crate::error::ServerError;

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

/// Authenticates one request from the connection's peer certificate.
pub fn authenticate(peer: Option<&Arc<PeerCert>>, cache: &StoreCache, now: SystemTime) -> Result<Caller, ServerError> {
    let Some(cert) = peer else {
        return Err(ServerError::Unauthorized(
            "a client certificate issued by paddock is required".into(),
        ));
    };
    if now > cert.not_after {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) has expired; ask the platform admin for a new one",
            cert.serial_hex
        )));
    }
    if now < cert.not_before {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) is not valid yet",
            cert.serial_hex
        )));
    }
    if cache.is_revoked(&cert.serial_hex) {
        return Err(ServerError::Unauthorized(format!(
            "the client certificate (serial {}) has been revoked",
            cert.serial_hex
        )));
    }
    let Some(tid) = &cert.tenant else {
        return Ok(Caller::Admin { user: cert.user.clone(), serial: cert.serial_hex.clone() });
    };
    let tenant = TenantId::parse(tid)
        .map_err(|_| ServerError::Unauthorized(format!("the client certificate names an invalid tenant {tid:?}")))?;
    match cache.tenant(tenant.as_str()) {
        None => Err(ServerError::Unauthorized(format!("tenant {tenant} does not exist"))),
        Some(rec) => match rec.phase {
            TenantPhase::Active => Ok(Caller::Tenant {
                tenant,
                user: cert.user.clone(),
                groups: cert.groups.clone(),
                serial: cert.serial_hex.clone(),
            }),
            TenantPhase::Suspended => Err(ServerError::Unauthorized(format!("tenant {tenant} is suspended"))),
            TenantPhase::Terminating => Err(ServerError::Unauthorized(format!("tenant {tenant} is being deleted"))),
        },
    }
}
