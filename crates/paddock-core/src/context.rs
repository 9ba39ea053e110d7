//! Who is asking: the tenant and the catalog of what its upstream serves.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::tenant::TenantId;

/// Everything the translation needs about the caller. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TenantContext {
    pub tenant: TenantId,
    pub catalog: Arc<Catalog>,
}
