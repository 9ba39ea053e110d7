//! Cluster records in etcd: `<prefix>/clusters/<name>`, JSON (clusters.rs). Created by
//! compare-and-swap (absent), so two replicas registering one name cannot both win.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use crate::StoreError;
use crate::clusters::ClusterRecord;
use crate::etcd::EtcdStore;

impl EtcdStore {
    fn cluster_key(&self, name: &str) -> String {
        format!("{}/clusters/{name}", self.shared.prefix)
    }

    pub(crate) async fn create_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        let k = self.cluster_key(&rec.name);
        let value = serde_json::to_vec(rec)
            .map_err(|e| StoreError::Backend(format!("encoding cluster {}: {e}", rec.name)))?;
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k, value, None)]);
        if self.shared.txn(txn).await?.succeeded() {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(format!("cluster {}", rec.name)))
        }
    }

    pub(crate) async fn delete_cluster(&self, name: &str) -> Result<(), StoreError> {
        let k = self.cluster_key(name);
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::NotEqual, 0)])
            .and_then([TxnOp::delete(k, None)]);
        if self.shared.txn(txn).await?.succeeded() {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!("cluster {name}")))
        }
    }

    pub(crate) async fn list_clusters(&self) -> Result<Vec<ClusterRecord>, StoreError> {
        let prefix = format!("{}/clusters/", self.shared.prefix);
        let (kvs, _) = self.shared.range_all(&prefix).await?;
        kvs.iter()
            .map(|kv| {
                serde_json::from_slice(kv.value()).map_err(|e| {
                    StoreError::Corrupt(format!("{}: {e}", String::from_utf8_lossy(kv.key())))
                })
            })
            .collect()
    }
}
