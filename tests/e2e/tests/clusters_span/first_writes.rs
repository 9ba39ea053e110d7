//! Issue 39 on the spanning tenant: namespaces created with `generateName` are named by
//! paddock, placed (by their label, or the emptier cluster), labelled, bound and recorded in
//! the namespace map like named ones (a body paddock cannot read is refused, never created
//! unplaced); and a CRD's first custom resources, cluster-scoped on the home and namespaced in
//! a namespace on east, are never refused.

use anyhow::{Result, ensure};
use paddock_e2e::Kubectl;
use paddock_e2e::ns_bodies::{create, is_generated, protobuf_namespace};

use super::upstream_has;

const ON_EAST: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  generateName: dev-\n  labels: {paddock.io/cluster: east}\n";

/// The generated namespaces it made (the tenant's names), for the deletion's check.
pub fn generate_name_across_clusters(
    ts: &Kubectl,
    up_a: &Kubectl,
    up_b: &Kubectl,
) -> Result<Vec<String>> {
    let mut made = Vec::new();
    // Labelled for east: there, and only there, with its set-up; routed there afterwards.
    let name = ts.run_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.metadata.name}"],
        Some(ON_EAST),
    )?;
    let name = name.trim().to_owned();
    ensure!(is_generated(&name, "dev-"), "generated name {name:?}");
    let upstream = format!("spanns-{name}");
    ensure!(
        upstream_has(up_b, &["get", "ns", &upstream])?
            && !upstream_has(up_a, &["get", "ns", &upstream])?,
        "{upstream} should be on east only"
    );
    let labels = up_b.run(&["get", "ns", &upstream, "-o", "jsonpath={.metadata.labels}"])?;
    ensure!(
        labels.contains(r#""paddock.io/tenant":"spanns""#)
            && labels.contains(r#""paddock.io/cluster":"east""#),
        "{upstream}'s labels on east: {labels}"
    );
    ensure!(
        upstream_has(
            up_b,
            &[
                "get",
                "rolebinding",
                "paddock-tenant-admins",
                "-n",
                &upstream
            ]
        )?,
        "{upstream} has no admins' binding on east"
    );
    // Its map entry routes requests in it to east.
    ts.run(&[
        "-n",
        &name,
        "create",
        "configmap",
        "gen",
        "--from-literal=a=b",
    ])?;
    ensure!(
        upstream_has(up_b, &["-n", &upstream, "get", "configmap", "gen"])?,
        "a configmap in {name} is not on east"
    );
    let cluster = ts.run(&[
        "get",
        "ns",
        &name,
        "-o",
        r"jsonpath={.metadata.labels.paddock\.io/cluster}",
    ])?;
    ensure!(cluster == "east", "{name} says it lives on {cluster:?}");
    made.push(name);

    // Unlabelled, in protobuf as client-go sends it: placed on exactly one cluster.
    let kubeconfig = ts.kubeconfig();
    let (status, v) = create(
        kubeconfig,
        "application/vnd.kubernetes.protobuf",
        protobuf_namespace("pb-", &[]),
    )?;
    ensure!(status == 201, "protobuf create: {status} {v}");
    let listed = ts.run(&["get", "ns", "-o", "name"])?;
    let pb: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("namespace/"))
        .filter(|n| is_generated(n, "pb-"))
        .collect();
    ensure!(pb.len() == 1, "one pb- namespace listed once: {listed}");
    let up_pb = format!("spanns-{}", pb[0]);
    let (on_a, on_b) = (
        upstream_has(up_a, &["get", "ns", &up_pb])?,
        upstream_has(up_b, &["get", "ns", &up_pb])?,
    );
    ensure!(on_a != on_b, "{up_pb} on default={on_a} east={on_b}");
    made.push(pb[0].to_owned());

    // A body paddock cannot read: refused, nothing created on either cluster.
    let count = |up: &Kubectl| -> Result<usize> {
        Ok(up
            .run(&["get", "ns", "-o", "name"])?
            .lines()
            .filter(|l| l.contains("spanns-"))
            .count())
    };
    let before = (count(up_a)?, count(up_b)?);
    let (status, v) = create(kubeconfig, "application/cbor", b"\xa1\x64kind".to_vec())?;
    ensure!(status == 415 && v["kind"] == "Status", "{status} {v}");
    ensure!(
        (count(up_a)?, count(up_b)?) == before,
        "a namespace was created"
    );
    Ok(made)
}

/// Cluster-scoped CRs on the home, namespaced ones in `there` (east): 20 rounds.
pub fn crd_first_across_clusters(ts: &Kubectl) -> Result<()> {
    let r = paddock_e2e::crd_first::run(ts.kubeconfig(), "span", "there", 20, 4)?;
    eprintln!("spanning tenant, CRDs and their first custom resources: {r}");
    ensure!(
        r.refusals.is_empty() && r.created == 40,
        "refused: {:#?}",
        r.refusals
    );
    Ok(())
}
