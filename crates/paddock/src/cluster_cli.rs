//! `paddock cluster add|list|get|remove`: the upstream clusters paddock fronts
//! (docs/clusters.md), through the admin API's `clusters.paddock.io/v1alpha1`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use base64::Engine;
use http::Method;
use paddock_upstream::upstream::UpstreamCredential;
use serde_json::{Value, json};

use crate::Output;
use crate::admin_client::{AdminClient, check};
use crate::output;

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
}

/// The `Cluster` object `add` posts: the kubeconfig's credential, PEMs base64 as in a
/// kubeconfig.
fn cluster_object(
    name: &str,
    cred: &UpstreamCredential,
    labels: serde_json::Map<String, Value>,
    capacity: Option<u32>,
) -> Value {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut spec = json!({"server": cred.server, "caData": b64(&cred.ca_pem)});
    if let (Some(c), Some(k)) = (&cred.client_cert_pem, &cred.client_key_pem) {
        spec["clientCertificateData"] = json!(b64(c));
        spec["clientKeyData"] = json!(b64(k));
    }
    if let Some(t) = &cred.token {
        spec["token"] = json!(t);
    }
    if let Some(c) = capacity {
        spec["capacity"] = json!(c);
    }
    json!({"apiVersion": paddock_api::GROUP_VERSION, "kind": "Cluster",
           "metadata": {"name": name, "labels": labels}, "spec": spec})
}

pub async fn run(client: &AdminClient, command: ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Add {
            name,
            from_kubeconfig,
            labels,
            capacity,
            output,
        } => {
            let cred = UpstreamCredential::from_kubeconfig(&from_kubeconfig)
                .with_context(|| format!("reading {}", from_kubeconfig.display()))?;
            let body = cluster_object(&name, &cred, output::parse_labels(&labels)?, capacity);
            let made = check(
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
            let v = client
                .get_object(&path, &format!("getting cluster {name}"))
                .await?;
            print_clusters(&[v], output)
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

fn print_clusters(items: &[Value], out: Output) -> Result<()> {
    if output::structured(items, out)? {
        return Ok(());
    }
    let rows = items
        .iter()
        .map(|c| {
            let labels = c["metadata"]["labels"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            vec![
                output::s(&c["metadata"]["name"]),
                output::s(&c["spec"]["server"]),
                labels,
                output::s(&c["spec"]["capacity"]),
                output::s(&c["status"]["tenants"]),
                output::s(&c["status"]["reachable"]),
                output::s(&c["status"]["ready"]),
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
