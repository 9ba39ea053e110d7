//! Where each namespace of a tenant spanning several clusters lives (docs/clusters.md
//! "Spanning tenants"). etcd keeps `<prefix>/nsmap/<tenant>/<namespace>` holding the
//! cluster's name, taken by compare-and-swap before the namespace is created upstream (two
//! replicas cannot put one namespace on two clusters); the embedded store keeps the same map
//! in its file. Namespaces are the tenant's own names (without the prefix).

use std::collections::BTreeMap;

use etcd_client::{Txn, TxnOp};

use crate::etcd_txn::{create_or_get, holder};
use crate::{EmbeddedStore, EtcdStore, Store, StoreError};

fn check(tenant: &str, ns: &str) -> Result<(), StoreError> {
    crate::check_tenant_id(tenant)?;
    let ok = !ns.is_empty()
        && ns.len() <= 63
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "namespace {ns:?} is not valid"
        )))
    }
}

/// The namespace→cluster map of spanning tenants.
impl Store {
    /// Places `ns` of `tenant` on `cluster` unless it is placed already; answers the cluster
    /// that holds it (the given one, or the one an earlier create chose).
    pub async fn place_namespace(
        &self,
        tenant: &str,
        ns: &str,
        cluster: &str,
    ) -> Result<String, StoreError> {
        check(tenant, ns)?;
        crate::clusters::check_cluster(cluster)?;
        match self {
            Store::Embedded(s) => s.place_namespace(tenant, ns, cluster).await,
            Store::Etcd(s) => s.place_namespace(tenant, ns, cluster).await,
        }
    }

    /// The cluster `ns` of `tenant` lives on, if it is placed.
    pub async fn namespace_cluster(
        &self,
        tenant: &str,
        ns: &str,
    ) -> Result<Option<String>, StoreError> {
        check(tenant, ns)?;
        match self {
            Store::Embedded(s) => Ok(s.inner.state.lock().nsmap.get(&key(tenant, ns)).cloned()),
            Store::Etcd(s) => {
                let resp = s.shared.get(&s.nsmap_key(tenant, ns)).await?;
                Ok(resp
                    .kvs()
                    .first()
                    .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
            }
        }
    }

    /// Forgets where `ns` of `tenant` lives (the namespace is gone). Absent is not an error.
    pub async fn release_namespace(&self, tenant: &str, ns: &str) -> Result<(), StoreError> {
        check(tenant, ns)?;
        match self {
            Store::Embedded(s) => {
                let k = key(tenant, ns);
                s.mutate(move |st| {
                    st.nsmap.remove(&k);
                    Ok(())
                })
                .await
            }
            Store::Etcd(s) => {
                let k = s.nsmap_key(tenant, ns);
                s.shared
                    .txn(Txn::new().and_then([TxnOp::delete(k, None)]))
                    .await?;
                Ok(())
            }
        }
    }

    /// Every placed namespace of every tenant: tenant → (namespace → cluster).
    pub async fn list_namespace_map(
        &self,
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, StoreError> {
        let flat: Vec<(String, String)> = match self {
            Store::Embedded(s) => s
                .inner
                .state
                .lock()
                .nsmap
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            Store::Etcd(s) => {
                let prefix = format!("{}/nsmap/", s.shared.prefix);
                let (kvs, _) = s.shared.range_all(&prefix).await?;
                kvs.iter()
                    .map(|kv| {
                        let k = String::from_utf8_lossy(kv.key());
                        let k = k.strip_prefix(&prefix).unwrap_or_default().to_string();
                        (k, String::from_utf8_lossy(kv.value()).into_owned())
                    })
                    .collect()
            }
        };
        let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (k, cluster) in flat {
            if let Some((tenant, ns)) = k.split_once('/') {
                out.entry(tenant.to_string())
                    .or_default()
                    .insert(ns.to_string(), cluster);
            }
        }
        Ok(out)
    }

    /// Forgets every placed namespace of `tenant` (the tenant is deleted).
    pub async fn release_tenant_namespaces(&self, tenant: &str) -> Result<(), StoreError> {
        crate::check_tenant_id(tenant)?;
        match self {
            Store::Embedded(s) => {
                let prefix = format!("{tenant}/");
                s.mutate(move |st| {
                    st.nsmap.retain(|k, _| !k.starts_with(&prefix));
                    Ok(())
                })
                .await
            }
            Store::Etcd(s) => {
                let prefix = format!("{}/nsmap/{tenant}/", s.shared.prefix);
                let opts = etcd_client::DeleteOptions::new().with_prefix();
                s.shared
                    .txn(Txn::new().and_then([TxnOp::delete(prefix, Some(opts))]))
                    .await?;
                Ok(())
            }
        }
    }
}

fn key(tenant: &str, ns: &str) -> String {
    format!("{tenant}/{ns}")
}

impl EmbeddedStore {
    async fn place_namespace(
        &self,
        tenant: &str,
        ns: &str,
        cluster: &str,
    ) -> Result<String, StoreError> {
        self.first_writer(|st| &mut st.nsmap, key(tenant, ns), cluster)
            .await
    }
}

impl EtcdStore {
    fn nsmap_key(&self, tenant: &str, ns: &str) -> String {
        format!("{}/nsmap/{tenant}/{ns}", self.shared.prefix)
    }

    async fn place_namespace(
        &self,
        tenant: &str,
        ns: &str,
        cluster: &str,
    ) -> Result<String, StoreError> {
        let k = self.nsmap_key(tenant, ns);
        let resp = self.shared.txn(create_or_get(&k, cluster)).await?;
        holder(&resp, cluster, &format!("placing namespace {k}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_placement_wins_survives_reopen_and_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_embedded(dir.path()).await.unwrap();
        assert_eq!(
            s.place_namespace("acme01", "web", "east").await.unwrap(),
            "east"
        );
        // A second create (another replica, a retry) gets the first answer.
        assert_eq!(
            s.place_namespace("acme01", "web", "west").await.unwrap(),
            "east"
        );
        assert_eq!(
            s.place_namespace("acme01", "db", "west").await.unwrap(),
            "west"
        );
        assert!(s.place_namespace("acme01", "Bad_NS", "east").await.is_err());
        assert!(s.place_namespace("acme01", "x", "East").await.is_err());
        drop(s);
        let s = Store::open_embedded(dir.path()).await.unwrap();
        assert_eq!(
            s.namespace_cluster("acme01", "web")
                .await
                .unwrap()
                .as_deref(),
            Some("east")
        );
        let all = s.list_namespace_map().await.unwrap();
        assert_eq!(all["acme01"].len(), 2);
        s.release_namespace("acme01", "web").await.unwrap();
        assert_eq!(s.namespace_cluster("acme01", "web").await.unwrap(), None);
        s.release_tenant_namespaces("acme01").await.unwrap();
        assert!(s.list_namespace_map().await.unwrap().is_empty());
    }
}
