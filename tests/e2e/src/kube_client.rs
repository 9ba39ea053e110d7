//! The `kube` crate as a second client (a different HTTP/TLS stack from kubectl's client-go).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// A client from a kubeconfig file (rustls with the ring provider).
pub async fn client(kubeconfig: &Path) -> Result<Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .context("kube config from the kubeconfig")?;
    Client::try_from(cfg).context("building the kube client")
}

/// As a tenant: lists its namespaces (exactly the four defaults, plus `extra`), then creates,
/// reads, lists and deletes a ConfigMap `name` in `default`.
pub async fn tenant_roundtrip(kubeconfig: &Path, name: &str, extra: &[&str]) -> Result<()> {
    let c = client(kubeconfig).await?;
    let ns: Api<Namespace> = Api::all(c.clone());
    let mut names: Vec<String> = ns
        .list(&ListParams::default())
        .await
        .context("listing namespaces")?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    let mut want: Vec<String> = ["default", "kube-node-lease", "kube-public", "kube-system"]
        .iter()
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect();
    want.sort();
    ensure!(names == want, "namespaces {names:?}, expected {want:?}");

    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                "client".to_owned(),
                "kube-rs".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    };
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .context("creating a ConfigMap")?;
    ensure!(
        created.metadata.namespace.as_deref() == Some("default"),
        "created ConfigMap has namespace {:?}",
        created.metadata.namespace
    );
    let got = cms.get(name).await.context("getting the ConfigMap")?;
    ensure!(
        got.data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str)
            == Some("v"),
        "ConfigMap data {:?}",
        got.data
    );
    let all: Api<ConfigMap> = Api::all(c.clone());
    let listed = all
        .list(&ListParams::default().labels("client=kube-rs"))
        .await
        .context("listing ConfigMaps in all namespaces")?;
    let seen: Vec<(Option<String>, Option<String>)> = listed
        .items
        .iter()
        .map(|c| (c.metadata.namespace.clone(), c.metadata.name.clone()))
        .collect();
    ensure!(
        seen == vec![(Some("default".to_owned()), Some(name.to_owned()))],
        "cluster-wide list shows {seen:?}"
    );
    cms.delete(name, &DeleteParams::default())
        .await
        .context("deleting the ConfigMap")?;
    Ok(())
}
