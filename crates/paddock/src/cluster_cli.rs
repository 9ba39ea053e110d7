//! `paddock cluster add|list|get|label|remove`: the upstream clusters paddock fronts
//! (docs/clusters.md), through the admin API's `clusters.paddock.io/v1alpha1`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use base64::Engine;
use http::Method;
use paddock_upstream::upstream::UpstreamCredential;

use crate::Output;
use crate::admin_client::{AdminClient, check_as};
use crate::output;

use paddock_api::cluster::{Cluster, ClusterRequest, ClusterRequestSpec};
use paddock_api::paths::CLUSTERS as BASE;

#[derive(clap::Subcommand)]
pub enum ClusterCommand {
    /// Register an upstream cluster: paddock's credential for it comes from a kubeconfig
    /// (its current context: server, CA, client certificate and key or token).
    Add {
        /// Cluster name: lowercase letters, digits and '-', starting with a letter.
        name: String,
        /// Kubeconfig with paddock's own credential for that cluster.
        #[arg(long = "from-kubeconfig")]
        from_kubeconfig: PathBuf,
        /// Labels, k=v, repeatable (placement selects clusters by them).
        #[arg(long = "label")]
        labels: Vec<String>,
        /// Most tenants the cluster should hold (placement's hint).
        #[arg(long)]
        capacity: Option<u32>,
        /// PEM CA of the client certificate the cluster's apiserver presents to admission
        /// webhooks: paddock's admission webhook is then installed there too.
        #[arg(long = "admission-client-ca")]
        admission_client_ca: Option<PathBuf>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// List the clusters, with reachability and tenant counts.
    List {
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show one cluster.
    Get {
        name: String,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
    /// Unregister a cluster (refused while tenants live on it).
    Remove { name: String },
    /// Set (k=v) or remove (k-) a cluster's labels; tenants with a span selector follow
    /// (docs/clusters.md "Clusters joining by label").
    Label {
        name: String,
        /// k=v to set, k- to remove, one or more.
        #[arg(required = true)]
        changes: Vec<String>,
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: Output,
    },
}

/// The `Cluster` object `add` posts: the kubeconfig's credential, PEMs base64 as in a
/// kubeconfig.
fn cluster_object(
    name: &str,
    cred: &UpstreamCredential,
    labels: BTreeMap<String, String>,
    capacity: Option<u32>,
    admission_client_ca: Option<&[u8]>,
) -> ClusterRequest {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let pair = cred
        .client_cert_pem
        .as_ref()
        .zip(cred.client_key_pem.as_ref());
    ClusterRequest::new(
        name,
        labels,
        ClusterRequestSpec {
            server: cred.server.clone(),
            ca_data: Some(b64(&cred.ca_pem)),
            client_certificate_data: pair.map(|(c, _)| b64(c)),
            client_key_data: pair.map(|(_, k)| b64(k)),
            token: cred.token.clone(),
            capacity,
            admission_client_ca_data: admission_client_ca.map(b64),
        },
    )
}

pub async fn run(client: &AdminClient, command: ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Add {
            name,
            from_kubeconfig,
            labels,
            capacity,
            admission_client_ca,
            output,
        } => {
            let cred = UpstreamCredential::from_kubeconfig(&from_kubeconfig)
                .with_context(|| format!("reading {}", from_kubeconfig.display()))?;
            let ca = admission_client_ca
                .map(|p| std::fs::read(&p).with_context(|| format!("reading {}", p.display())))
                .transpose()?;
            let labels = serde_json::from_value(output::parse_labels(&labels)?.into())?;
            let body = serde_json::to_value(cluster_object(
                &name,
                &cred,
                labels,
                capacity,
                ca.as_deref(),
            ))?;
            let made: Cluster = check_as(
                client.call(Method::POST, BASE, Some(&body)).await?,
                &format!("adding cluster {name}"),
            )?;
            print_clusters(&[made], output)
        }
        ClusterCommand::List { output } => {
            print_clusters(&client.list_items(BASE, "listing clusters").await?, output)
        }
        ClusterCommand::Get { name, output } => {
            let path = format!("{BASE}/{name}");
            let v: Cluster = client
                .get_object(&path, &format!("getting cluster {name}"))
                .await?;
            print_clusters(&[v], output)
        }
        ClusterCommand::Label {
            name,
            changes,
            output,
        } => {
            let mut labels = serde_json::Map::new();
            for c in &changes {
                if let Some(k) = c.strip_suffix('-').filter(|k| !k.contains('=')) {
                    labels.insert(k.to_string(), serde_json::Value::Null);
                    continue;
                }
                let (k, v) = c
                    .split_once('=')
                    .with_context(|| format!("{c:?}: k=v to set a label, k- to remove one"))?;
                labels.insert(k.to_string(), v.into());
            }
            let body = serde_json::json!({ "metadata": { "labels": labels } });
            let path = format!("{BASE}/{name}");
            let made: Cluster = check_as(
                client.call(Method::PATCH, &path, Some(&body)).await?,
                &format!("labelling cluster {name}"),
            )?;
            print_clusters(&[made], output)
        }
        ClusterCommand::Remove { name } => {
            let path = format!("{BASE}/{name}");
            client
                .delete_object(&path, &format!("removing cluster {name}"))
                .await?;
            eprintln!("cluster {name} removed");
            Ok(())
        }
    }
}

fn print_clusters(items: &[Cluster], out: Output) -> Result<()> {
    if output::structured(items, out)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|c| {
            let labels = c
                .metadata
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            vec![
                output::opt(c.metadata.name.as_ref()),
                c.spec.server.clone(),
                labels,
                output::opt(c.spec.capacity.map(|n| n.to_string())),
                c.status.tenants.to_string(),
                c.status.reachable.to_string(),
                c.status.ready.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(
            &[
                "NAME",
                "SERVER",
                "LABELS",
                "CAPACITY",
                "TENANTS",
                "REACHABLE",
                "READY"
            ],
            rows
        )
    );
    Ok(())
}
