//! Namespace templates in etcd (docs/templates.md): `<prefix>/templates/<name>` holds the
//! template as JSON; writes are compare-and-swap on the key's mod revision, so two admins (or
//! replicas) changing one template at once cannot lose a change or reuse a generation.

use paddock_core::templates::NamespaceTemplate;

use crate::StoreError;
use crate::etcd::EtcdStore;
use crate::etcd_txn::{Expect, delete_if, put_if};

impl EtcdStore {
    fn template_key(&self, name: &str) -> String {
        format!("{}/templates/{name}", self.shared.prefix)
    }

    pub(crate) async fn list_templates(&self) -> Result<Vec<(NamespaceTemplate, i64)>, StoreError> {
        let prefix = format!("{}/templates/", self.shared.prefix);
        let (kvs, _) = self.shared.range_all(&prefix).await?;
        kvs.iter()
            .map(|kv| {
                let t = serde_json::from_slice(kv.value()).map_err(|e| {
                    StoreError::Corrupt(format!("{}: {e}", String::from_utf8_lossy(kv.key())))
                })?;
                Ok((t, kv.mod_revision()))
            })
            .collect()
    }

    pub(crate) async fn get_template(
        &self,
        name: &str,
    ) -> Result<Option<(NamespaceTemplate, i64)>, StoreError> {
        crate::check_template_name(name)?;
        let key = self.template_key(name);
        let resp = self.shared.get(&key).await?;
        match resp.kvs().first() {
            None => Ok(None),
            Some(kv) => Ok(Some((
                serde_json::from_slice(kv.value())
                    .map_err(|e| StoreError::Corrupt(format!("{key}: {e}")))?,
                kv.mod_revision(),
            ))),
        }
    }

    pub(crate) async fn swap_template(
        &self,
        t: &NamespaceTemplate,
        expected: i64,
    ) -> Result<bool, StoreError> {
        crate::check_template_name(&t.name)?;
        let key = self.template_key(&t.name);
        let value = serde_json::to_vec(t).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let swap = put_if(key, value, Expect::Revision(expected));
        Ok(self.shared.txn(swap).await?.succeeded())
    }

    pub(crate) async fn delete_template(
        &self,
        name: &str,
        expected: i64,
    ) -> Result<bool, StoreError> {
        crate::check_template_name(name)?;
        let key = self.template_key(name);
        let delete = delete_if(key, Expect::Revision(expected));
        Ok(self.shared.txn(delete).await?.succeeded())
    }
}
