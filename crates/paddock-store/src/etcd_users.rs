//! The users seen in a tenant, in etcd (seen_users.rs).

use etcd_client::{DeleteOptions, Txn, TxnOp};

use crate::etcd::EtcdStore;
use crate::seen_users::tenant_users_key;
use crate::{SeenUser, StoreError, check_tenant_id};

impl EtcdStore {
    pub(crate) async fn note_user(&self, seen: &SeenUser) -> Result<(), StoreError> {
        let key = format!("{}/{}", self.shared.prefix, seen.key()?);
        let value = serde_json::to_vec(seen).map_err(|e| StoreError::Invalid(e.to_string()))?;
        self.shared
            .txn(Txn::new().and_then([TxnOp::put(key, value, None)]))
            .await?;
        Ok(())
    }

    pub(crate) async fn list_users(&self, tenant: &str) -> Result<Vec<SeenUser>, StoreError> {
        check_tenant_id(tenant)?;
        let s = &self.shared;
        let (kvs, _) = s
            .range_all(&format!("{}/{}", s.prefix, tenant_users_key(tenant)))
            .await?;
        Ok(kvs
            .iter()
            .filter_map(|kv| match serde_json::from_slice::<SeenUser>(kv.value()) {
                Ok(u) => Some(u),
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(kv.key()), error = %e, "ignoring an unreadable user record");
                    None
                }
            })
            .collect())
    }

    pub(crate) async fn forget_users(&self, tenant: &str) -> Result<(), StoreError> {
        check_tenant_id(tenant)?;
        let key = format!("{}/{}", self.shared.prefix, tenant_users_key(tenant));
        let delete = TxnOp::delete(key, Some(DeleteOptions::new().with_prefix()));
        self.shared.txn(Txn::new().and_then([delete])).await?;
        Ok(())
    }
}
