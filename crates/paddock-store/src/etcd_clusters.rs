//! Cluster records in etcd: `<prefix>/clusters/<name>`, JSON (clusters.rs). Created by
//! compare-and-swap (absent), so two replicas registering one name cannot both win.

use crate::StoreError;
use crate::clusters::ClusterRecord;
use crate::etcd::EtcdStore;
use crate::etcd_txn::{Expect, delete_if, put_if};

impl EtcdStore {
    fn cluster_key(&self, name: &str) -> String {
        format!("{}/clusters/{name}", self.shared.prefix)
    }

    pub(crate) async fn create_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        let k = self.cluster_key(&rec.name);
        let value = serde_json::to_vec(rec)
            .map_err(|e| StoreError::Backend(format!("encoding cluster {}: {e}", rec.name)))?;
        if self
            .shared
            .txn(put_if(k, value, Expect::Absent))
            .await?
            .succeeded()
        {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(format!("cluster {}", rec.name)))
        }
    }

    pub(crate) async fn replace_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        let k = self.cluster_key(&rec.name);
        let value = serde_json::to_vec(rec)
            .map_err(|e| StoreError::Backend(format!("encoding cluster {}: {e}", rec.name)))?;
        if self
            .shared
            .txn(put_if(k, value, Expect::Present))
            .await?
            .succeeded()
        {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!("cluster {}", rec.name)))
        }
    }

    pub(crate) async fn delete_cluster(&self, name: &str) -> Result<(), StoreError> {
        let k = self.cluster_key(name);
        if self
            .shared
            .txn(delete_if(k, Expect::Present))
            .await?
            .succeeded()
        {
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
