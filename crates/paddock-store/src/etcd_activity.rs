//! Tenants' last activity in etcd: `<prefix>/activity/<id>`, seconds since the epoch as text
//! (docs/operations.md "Sleep and wake"). Written by every replica that serves the tenant, at
//! most once per share interval; read by the leader only at a tenant's sleep deadline. Not in
//! the cache (the watch skips it without copying the snapshot). A plain put: two replicas may
//! write out of order, moving the value back by less than one share interval, which the
//! leader's deadline allows for (core `lifecycle::sleep::sleeps_at`).

use etcd_client::{Txn, TxnOp};

use crate::etcd::EtcdStore;
use crate::{StoreError, check_tenant_id};

impl EtcdStore {
    pub(crate) async fn put_activity(&self, id: &str, unix: i64) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let key = self.shared.activity_key(id);
        let put = Txn::new().and_then([TxnOp::put(key, unix.to_string(), None)]);
        self.shared.txn(put).await?;
        Ok(())
    }

    pub(crate) async fn get_activity(&self, id: &str) -> Result<Option<i64>, StoreError> {
        check_tenant_id(id)?;
        let key = self.shared.activity_key(id);
        let resp = self.shared.get(&key).await?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| std::str::from_utf8(kv.value()).ok()?.parse().ok()))
    }

    pub(crate) async fn delete_activity(&self, id: &str) -> Result<(), StoreError> {
        check_tenant_id(id)?;
        let key = self.shared.activity_key(id);
        self.shared
            .txn(Txn::new().and_then([TxnOp::delete(key, None)]))
            .await?;
        Ok(())
    }
}
