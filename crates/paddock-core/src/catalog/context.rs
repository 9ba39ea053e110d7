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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Tenant `foofoo` over the test catalog: the context of the core's unit tests.
    pub(crate) fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(crate::catalog::tests::catalog()),
        }
    }
}
