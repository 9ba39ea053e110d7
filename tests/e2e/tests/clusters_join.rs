//! Issue 39, acceptance 2, in `make test-clusters`: a cluster registered after a tenant with a
//! span selector exists, carrying matching labels, joins the tenant without a restart; once
//! relabelled it drains by the documented rule (docs/clusters.md "Clusters joining by
//! label").
//!
//! - tenant `joinsp` created on the default cluster with `--span-selector region=eu`, with a
//!   CRD and a ClusterRole; tenant `plain1` created without one (the control);
//! - `east` registered with `region=eu`: within 30 s a namespace `joinsp` creates labelled
//!   for east is created there (read with east's admin kubeconfig), the CRD and ClusterRole
//!   are on east, and a custom resource in that namespace is served; `plain1` never gets
//!   anything on east;
//! - east relabelled `region=us`: the record says east is draining; a namespace labelled for
//!   east is a 409 naming the drain; an unlabelled one lands on default; the namespace
//!   already on east keeps working; once it is deleted, east leaves the tenant: the record
//!   names default only and east holds nothing of `joinsp`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::Value;

const T: &str = "joinsp";
const PLAIN: &str = "plain1";

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(250), what, f)
}

fn tenant_json(p: &Paddock, id: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(&p.cli(&["tenant", "get", id, "-o", "json"])?)?;
    Ok(v.as_array().and_then(|a| a.first()).cloned().unwrap_or(v))
}

/// Objects carrying `tenant`'s label on a cluster, as its admin lists them.
fn labelled(up: &Kubectl, tenant: &str) -> Result<String> {
    up.run(&[
        "get",
        "namespaces,clusterroles,customresourcedefinitions",
        "-l",
        &format!("paddock.io/tenant={tenant}"),
        "-o",
        "name",
    ])
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.shop.example.com}
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

#[test]
#[ignore = "two control planes; make test-clusters"]
fn a_cluster_joins_by_label_and_drains_when_relabelled() -> Result<()> {
    let mut planes = ControlPlane::start_many(2).context("starting two control planes")?;
    let east = planes.pop().context("second plane")?;
    let home = planes.pop().context("first plane")?;
    let p = Paddock::start(&home, StoreKind::Etcd)?;
    let result = run(&p, &east);
    if result.is_err() {
        eprintln!("paddock log: {}", p.log_path().display());
    }
    result
}

fn run(p: &Paddock, east: &ControlPlane) -> Result<()> {
    let up_east = east.kubectl_admin()?;
    p.tenant_with(T, &["--span-selector", "region=eu"])?;
    p.tenant_with(PLAIN, &[])?;
    let k = p.kubectl_tenant(T)?;
    k.run_stdin(&["apply", "-f", "-"], Some(CRD))?;
    k.run(&[
        "create",
        "clusterrole",
        "reader",
        "--verb=get",
        "--resource=pods",
    ])?;
    let before = tenant_json(p, T)?;
    ensure!(
        before["spec"]["clusters"] == serde_json::json!(["default"])
            && before["spec"]["span"]["selector"] == "region=eu",
        "the tenant before east exists: {before}"
    );

    // ---- east registered with matching labels ------------------------------------------
    let ek = east.admin_kubeconfig();
    let added = Instant::now();
    p.cli(&[
        "cluster",
        "add",
        "east",
        "--from-kubeconfig",
        ek.to_str().context("path")?,
        "--label",
        "region=eu",
    ])?;
    let far = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: far\n  labels: {paddock.io/cluster: east}\n";
    within(
        Duration::from_secs(30),
        "a namespace placed on east",
        || {
            let (_, out) = k.run_raw(
                &["apply".to_string(), "-f".into(), "-".into()],
                Some(far),
                &Default::default(),
                None,
            )?;
            Ok(out.success())
        },
    )?;
    let joined_in = added.elapsed();
    let on_east = labelled(&up_east, T)?;
    ensure!(
        on_east.contains(&format!("namespace/{T}-far"))
            && on_east.contains("customresourcedefinition")
            && on_east.contains("clusterrole"),
        "east after the join holds: {on_east}"
    );
    within(
        Duration::from_secs(30),
        "a Widget in the namespace on east",
        || {
            let (_, out) = k.run_raw(
            &["apply".to_string(), "-f".into(), "-".into()],
            Some("apiVersion: shop.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: far}\n"),
            &Default::default(),
            None,
        )?;
            Ok(out.success())
        },
    )?;
    let rec = tenant_json(p, T)?;
    ensure!(
        rec["spec"]["clusters"] == serde_json::json!(["default", "east"])
            && rec["spec"]["span"]["joined"] == serde_json::json!(["east"]),
        "the record after the join: {rec}"
    );
    println!(
        "FIGURE east registered with region=eu: a namespace of {T} placed there {:.1} s later",
        joined_in.as_secs_f64()
    );
    // Each cluster's reachability on /metrics.
    let metrics = p.kubectl_admin()?.run(&["get", "--raw", "/metrics"])?;
    for c in ["default", "east"] {
        ensure!(
            metrics.contains(&format!("paddock_cluster_up{{cluster=\"{c}\"}} 1")),
            "/metrics without paddock_cluster_up for {c}"
        );
    }
    // Control: the tenant without a span selector is not on east.
    std::thread::sleep(Duration::from_secs(6));
    ensure!(
        labelled(&up_east, PLAIN)?.trim().is_empty()
            && tenant_json(p, PLAIN)?["spec"]["clusters"] == serde_json::json!(["default"]),
        "{PLAIN} (no span selector) joined east"
    );

    // ---- east relabelled: it drains ---------------------------------------------------
    p.cli(&["cluster", "label", "east", "region=us"])?;
    within(
        Duration::from_secs(20),
        "east draining in the record",
        || Ok(tenant_json(p, T)?["spec"]["span"]["draining"] == serde_json::json!(["east"])),
    )?;
    let refused = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: later\n  labels: {paddock.io/cluster: east}\n";
    let (_, out) = k.run_raw(
        &["apply".to_string(), "-f".into(), "-".into()],
        Some(refused),
        &Default::default(),
        None,
    )?;
    ensure!(
        !out.success() && out.stderr.contains("is draining"),
        "a namespace labelled for the draining cluster: {}",
        out.stderr
    );
    k.run(&["create", "namespace", "near"])?;
    let near = k.run(&[
        "get",
        "namespace",
        "near",
        "-o",
        "jsonpath={.metadata.labels.paddock\\.io/cluster}",
    ])?;
    ensure!(
        near == "default",
        "an unlabelled namespace while east drains went to {near:?}"
    );
    // The namespace already on east keeps working.
    k.run(&["-n", "far", "create", "configmap", "still-here"])?;
    ensure!(
        up_east
            .run(&[
                "-n",
                &format!("{T}-far"),
                "get",
                "configmap",
                "still-here",
                "-o",
                "name"
            ])?
            .contains("still-here"),
        "the ConfigMap in the namespace on east"
    );
    // Its last namespace gone, east leaves.
    let t0 = Instant::now();
    k.run(&["delete", "namespace", "far", "--wait=false"])?;
    within(Duration::from_secs(90), "east leaving the tenant", || {
        Ok(tenant_json(p, T)?["spec"]["clusters"] == serde_json::json!(["default"]))
    })?;
    within(
        Duration::from_secs(60),
        "nothing of the tenant on east",
        || Ok(labelled(&up_east, T)?.trim().is_empty()),
    )?;
    println!(
        "FIGURE east relabelled region=us: drained; left {:.1} s after the tenant's last namespace there was deleted",
        t0.elapsed().as_secs_f64()
    );
    // The tenant still works on default.
    k.run(&["-n", "near", "create", "configmap", "after"])?;
    ensure!(
        k.run(&["get", "widgets", "-A", "-o", "name"]).is_ok(),
        "the tenant's CRD on its home after east left"
    );
    // Nobody lives on east any more: it can be removed, and its series goes with it.
    p.cli(&["cluster", "remove", "east"])?;
    let metrics = p.kubectl_admin()?.run(&["get", "--raw", "/metrics"])?;
    ensure!(
        !metrics.contains("paddock_cluster_up{cluster=\"east\"}")
            && metrics.contains("paddock_cluster_up{cluster=\"default\"} 1"),
        "/metrics after east was removed still has its series, or lost default's"
    );
    Ok(())
}
