//! Cluster-wide claims in etcd (Ingress hosts; docs/security.md "Ingress hosts").

use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use crate::StoreError;
use crate::etcd::EtcdStore;
use crate::etcd_txn::{Expect, create_or_get, delete_if, holder};

/// Cluster-wide claims (docs/security.md "Ingress hosts"): `<prefix>/claims/<kind>/<key>`
/// holds the owning tenant's id; taken by compare-and-swap (create if absent), so two replicas
/// admitting the same host at once cannot both win.
impl EtcdStore {
    fn claim_key(&self, kind: &str, key: &str) -> String {
        format!("{}/claims/{kind}/{key}", self.shared.prefix)
    }

    pub(crate) async fn claim(
        &self,
        kind: &str,
        key: &str,
        tenant: &str,
    ) -> Result<String, StoreError> {
        crate::check_claim(kind, key, tenant)?;
        let s = &self.shared;
        let k = self.claim_key(kind, key);
        let resp = s.txn(create_or_get(&k, tenant)).await?;
        holder(&resp, tenant, &format!("claim {k}"))
    }

    pub(crate) async fn release_claims(&self, tenant: &str) -> Result<usize, StoreError> {
        let s = &self.shared;
        let prefix = format!("{}/claims/", s.prefix);
        let (kvs, _) = s.range_all(&prefix).await?;
        let mut n = 0;
        for kv in kvs.iter().filter(|kv| kv.value() == tenant.as_bytes()) {
            // Only if it is still the same claim (not re-taken by another tenant meanwhile).
            let unchanged = Expect::Revision(kv.mod_revision());
            if s.txn(delete_if(kv.key(), unchanged)).await?.succeeded() {
                n += 1;
            }
        }
        Ok(n)
    }

    pub(crate) async fn list_claims(
        &self,
        kind: &str,
    ) -> Result<Vec<crate::ClaimEntry>, StoreError> {
        let s = &self.shared;
        let prefix = format!("{}/claims/{kind}/", s.prefix);
        let (kvs, _) = s.range_all(&prefix).await?;
        Ok(kvs
            .iter()
            .map(|kv| crate::ClaimEntry {
                key: String::from_utf8_lossy(&kv.key()[prefix.len().min(kv.key().len())..])
                    .into_owned(),
                tenant: String::from_utf8_lossy(kv.value()).into_owned(),
                version: kv.mod_revision(),
            })
            .collect())
    }

    pub(crate) async fn release_claim(
        &self,
        kind: &str,
        entry: &crate::ClaimEntry,
    ) -> Result<bool, StoreError> {
        let key = self.claim_key(kind, &entry.key);
        // Only if it is still the claim that was read (not released and re-taken since).
        let txn = Txn::new()
            .when([
                Compare::mod_revision(key.clone(), CompareOp::Equal, entry.version),
                Compare::value(
                    key.clone(),
                    CompareOp::Equal,
                    entry.tenant.as_bytes().to_vec(),
                ),
            ])
            .and_then([TxnOp::delete(key, None)]);
        Ok(self.shared.txn(txn).await?.succeeded())
    }
}
