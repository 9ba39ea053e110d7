//! The users seen in a tenant, in the embedded store's state file (seen_users.rs).

use super::EmbeddedStore;
use crate::seen_users::tenant_users_key;
use crate::{SeenUser, StoreError, check_tenant_id};

impl EmbeddedStore {
    pub(crate) async fn note_user(&self, seen: &SeenUser) -> Result<(), StoreError> {
        let key = seen.key()?;
        let seen = seen.clone();
        self.mutate(move |st| {
            st.users.insert(key, seen);
            Ok(())
        })
        .await
    }

    pub(crate) async fn list_users(&self, tenant: &str) -> Result<Vec<SeenUser>, StoreError> {
        check_tenant_id(tenant)?;
        let prefix = tenant_users_key(tenant);
        let st = self.inner.state.lock();
        Ok(st
            .users
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, u)| u.clone())
            .collect())
    }

    pub(crate) async fn forget_users(&self, tenant: &str) -> Result<(), StoreError> {
        check_tenant_id(tenant)?;
        let tenant = tenant.to_string();
        self.mutate(move |st| {
            forget_embedded(&mut st.users, &tenant);
            Ok(())
        })
        .await
    }
}

/// Drops a tenant's users from the embedded state (with the tenant).
pub(super) fn forget_embedded(
    users: &mut std::collections::BTreeMap<String, SeenUser>,
    tenant: &str,
) {
    let prefix = tenant_users_key(tenant);
    users.retain(|k, _| !k.starts_with(&prefix));
}
