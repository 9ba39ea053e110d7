//! Registered upstream clusters (docs/clusters.md): one record per cluster, with paddock's
//! credential for it. The etcd backend keeps them under `<prefix>/clusters/<name>`
//! (`etcd_clusters.rs`), the embedded store in its file. Not in the cache: the gateway's
//! cluster registry reads the list at start, after each change it makes, and periodically
//! (so a cluster added through another replica arrives within that period).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{EmbeddedStore, Store, StoreError};

/// One upstream cluster and paddock's credential for it. The key and the token are secrets:
/// the admin API never returns them (docs/clusters.md "Credentials").
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRecord {
    pub name: String,
    /// Base URL of its apiserver, `https://host:port`.
    pub server: String,
    /// PEM CA bundle that verifies the apiserver's certificate.
    pub ca_pem: String,
    /// PEM client certificate and key (mutual TLS), if paddock authenticates that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert_pem: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_pem: Option<String>,
    /// Bearer token, if paddock authenticates that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Most tenants it should hold (placement's hint); `None`: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// PEM CA of the client certificate this cluster's apiserver presents to paddock's
    /// admission webhook: with it, the webhook and the relay are installed there too
    /// (docs/clusters.md "Governance on every cluster"); `None`: the guard alone holds there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_client_ca_pem: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub created: String,
}

impl std::fmt::Debug for ClusterRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print keys or tokens.
        f.debug_struct("ClusterRecord")
            .field("name", &self.name)
            .field("server", &self.server)
            .field("labels", &self.labels)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

pub(crate) fn check_cluster(name: &str) -> Result<(), StoreError> {
    paddock_core::clusters::cluster::check_cluster_name(name)
        .map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Cluster records.
impl Store {
    /// Registers a cluster; [`StoreError::AlreadyExists`] if the name is taken.
    pub async fn create_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        check_cluster(&rec.name)?;
        match self {
            Store::Embedded(s) => s.create_cluster(rec).await,
            Store::Etcd(s) => s.create_cluster(rec).await,
        }
    }

    /// Replaces a registered cluster's record (its labels or capacity changed);
    /// [`StoreError::NotFound`] if there is none.
    pub async fn replace_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        check_cluster(&rec.name)?;
        match self {
            Store::Embedded(s) => s.replace_cluster(rec).await,
            Store::Etcd(s) => s.replace_cluster(rec).await,
        }
    }

    /// Removes a cluster's record; [`StoreError::NotFound`] if there is none.
    pub async fn delete_cluster(&self, name: &str) -> Result<(), StoreError> {
        check_cluster(name)?;
        match self {
            Store::Embedded(s) => s.delete_cluster(name).await,
            Store::Etcd(s) => s.delete_cluster(name).await,
        }
    }

    /// Every registered cluster, sorted by name (read from the backend).
    pub async fn list_clusters(&self) -> Result<Vec<ClusterRecord>, StoreError> {
        match self {
            Store::Embedded(s) => Ok(s.inner.state.lock().clusters.values().cloned().collect()),
            Store::Etcd(s) => s.list_clusters().await,
        }
    }
}

impl EmbeddedStore {
    async fn create_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        let rec = rec.clone();
        self.mutate(move |st| {
            if st.clusters.contains_key(&rec.name) {
                return Err(StoreError::AlreadyExists(format!("cluster {}", rec.name)));
            }
            st.clusters.insert(rec.name.clone(), rec);
            Ok(())
        })
        .await
    }

    async fn replace_cluster(&self, rec: &ClusterRecord) -> Result<(), StoreError> {
        let rec = rec.clone();
        self.mutate(move |st| match st.clusters.get_mut(&rec.name) {
            Some(slot) => {
                *slot = rec;
                Ok(())
            }
            None => Err(StoreError::NotFound(format!("cluster {}", rec.name))),
        })
        .await
    }

    async fn delete_cluster(&self, name: &str) -> Result<(), StoreError> {
        let name = name.to_string();
        self.mutate(move |st| match st.clusters.remove(&name) {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(format!("cluster {name}"))),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str) -> ClusterRecord {
        ClusterRecord {
            name: name.into(),
            server: "https://127.0.0.1:6443".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----".into(),
            token: Some("secret-token".into()),
            labels: [("env".to_string(), "prod".to_string())].into(),
            capacity: Some(10),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn clusters_crud_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open_embedded(dir.path()).await.unwrap();
            s.create_cluster(&rec("b")).await.unwrap();
            s.create_cluster(&rec("a")).await.unwrap();
            assert!(matches!(
                s.create_cluster(&rec("a")).await,
                Err(StoreError::AlreadyExists(_))
            ));
            assert!(matches!(
                s.create_cluster(&rec("Bad")).await,
                Err(StoreError::Invalid(_))
            ));
            let names: Vec<String> = s
                .list_clusters()
                .await
                .unwrap()
                .into_iter()
                .map(|c| c.name)
                .collect();
            assert_eq!(names, ["a", "b"]);
            let mut relabelled = rec("b");
            relabelled.labels = [("env".to_string(), "staging".to_string())].into();
            s.replace_cluster(&relabelled).await.unwrap();
            assert_eq!(s.list_clusters().await.unwrap()[1], relabelled);
            assert!(matches!(
                s.replace_cluster(&rec("c")).await,
                Err(StoreError::NotFound(_))
            ));
            s.delete_cluster("b").await.unwrap();
            assert!(matches!(
                s.delete_cluster("b").await,
                Err(StoreError::NotFound(_))
            ));
        }
        let s = Store::open_embedded(dir.path()).await.unwrap();
        assert_eq!(s.list_clusters().await.unwrap(), vec![rec("a")]);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut r = rec("a");
        r.client_key_pem = Some("PRIVATE KEY".into());
        let d = format!("{r:?}");
        assert!(!d.contains("secret-token") && !d.contains("PRIVATE"), "{d}");
    }

    #[test]
    fn tenant_records_without_clusters_live_on_default() {
        let old = r#"{"id":"acme01","phase":"Active","created":"2026-01-01T00:00:00Z"}"#;
        let t: crate::TenantRecord = serde_json::from_str(old).unwrap();
        assert!(t.lives_on("default") && !t.lives_on("b"));
        assert!(!serde_json::to_string(&t).unwrap().contains("clusters"));
    }
}
