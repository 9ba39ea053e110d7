//! Namespace templates in the embedded store: swapped under the state mutex (one process
//! holds the store); the version is a counter per template.

use paddock_core::templates::NamespaceTemplate;

use super::EmbeddedStore;
use super::cas::swap_versioned;
use crate::StoreError;

impl EmbeddedStore {
    pub(crate) async fn list_templates(&self) -> Result<Vec<(NamespaceTemplate, i64)>, StoreError> {
        let st = self.inner.state.lock();
        Ok(st
            .templates
            .values()
            .map(|(v, t)| (t.clone(), *v))
            .collect())
    }

    pub(crate) async fn get_template(
        &self,
        name: &str,
    ) -> Result<Option<(NamespaceTemplate, i64)>, StoreError> {
        crate::check_template_name(name)?;
        let st = self.inner.state.lock();
        Ok(st.templates.get(name).map(|(v, t)| (t.clone(), *v)))
    }

    pub(crate) async fn swap_template(
        &self,
        t: &NamespaceTemplate,
        expected: i64,
    ) -> Result<bool, StoreError> {
        crate::check_template_name(&t.name)?;
        let t = t.clone();
        self.mutate(move |st| {
            let name = t.name.clone();
            Ok(swap_versioned(&mut st.templates, name, expected, Some(t)))
        })
        .await
    }

    pub(crate) async fn delete_template(
        &self,
        name: &str,
        expected: i64,
    ) -> Result<bool, StoreError> {
        crate::check_template_name(name)?;
        let name = name.to_string();
        self.mutate(move |st| Ok(swap_versioned(&mut st.templates, name, expected, None)))
            .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn templates_swap_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let t = NamespaceTemplate {
            name: "netpol".into(),
            mandatory: true,
            tenants: vec![],
            manifests: vec![
                serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            ],
            generation: 1,
            created: String::new(),
            builtin: false,
        };
        {
            let s = EmbeddedStore::open(dir.path()).await.unwrap();
            assert!(s.swap_template(&t, 0).await.unwrap());
            assert!(
                !s.swap_template(&t, 0).await.unwrap(),
                "create only if absent"
            );
            let (_, v) = s.get_template("netpol").await.unwrap().unwrap();
            let mut t2 = t.clone();
            t2.generation = 2;
            assert!(s.swap_template(&t2, v).await.unwrap());
            assert!(
                !s.swap_template(&t2, v).await.unwrap(),
                "a stale version loses"
            );
            assert!(s.get_template("Bad_Name").await.is_err());
        }
        let s = EmbeddedStore::open(dir.path()).await.unwrap();
        let all = s.list_templates().await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0.generation, 2);
        assert!(!s.delete_template("netpol", 1).await.unwrap());
        assert!(s.delete_template("netpol", all[0].1).await.unwrap());
        assert!(s.get_template("netpol").await.unwrap().is_none());
    }
}
