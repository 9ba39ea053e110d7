//! `POST tenants/<id>/move`: a tenant carried to another cluster.

use std::sync::Arc;

use paddock_api::portable::MoveSummary;
use paddock_core::TenantId;

use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// Moves `tenant` to cluster `to`.
pub async fn move_tenant(
    _state: &Arc<AppState>,
    tenant: &TenantId,
    to: &str,
) -> Result<MoveSummary, ServerError> {
    Err(ServerError::Unavailable(format!(
        "moving tenant {tenant} to {to}: not built yet"
    )))
}
