//! Tenants' last activity in the embedded store (docs/operations.md "Sleep and wake"): in
//! memory only, never written to the file. One process holds the embedded store, so the
//! replica that records a tenant's activity is the one that decides its sleep; after a
//! restart the leader counts a tenant's idleness from its own start, which can only delay a
//! sleep.

use super::EmbeddedStore;
use crate::{StoreError, check_tenant_id};

impl EmbeddedStore {
    pub(crate) async fn put_activity(&self, id: &str, unix: i64) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        self.inner
            .state
            .lock()
            .activity
            .insert(id.to_string(), unix);
        Ok(())
    }

    pub(crate) async fn get_activity(&self, id: &str) -> Result<Option<i64>, StoreError> {
        check_tenant_id(id)?;
        Ok(self.inner.state.lock().activity.get(id).copied())
    }
}
