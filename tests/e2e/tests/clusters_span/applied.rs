//! Namespaces made by a server-side apply (`kubectl apply --server-side`, as Flux and Argo CD
//! do) on the spanning tenant: placed as a create is (by their label, or the emptier cluster),
//! labelled and recorded; applied again, they stay where they are. Before, an apply of a new
//! namespace landed on the home, unlabelled and unrecorded.

use anyhow::{Result, ensure};
use paddock_e2e::Kubectl;

use super::upstream_has;

const APPLIED: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied-east\n  labels: {paddock.io/cluster: east}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied-auto\n";

/// Applies two namespaces server-side, twice, and checks where they live.
pub fn server_side_applied(ts: &Kubectl, up_a: &Kubectl, up_b: &Kubectl) -> Result<()> {
    for round in ["created", "applied again"] {
        ts.run_stdin(
            &["apply", "--server-side", "--field-manager=e2e", "-f", "-"],
            Some(APPLIED),
        )?;
        let east = (
            upstream_has(up_a, &["get", "ns", "spanns-applied-east"])?,
            upstream_has(up_b, &["get", "ns", "spanns-applied-east"])?,
        );
        ensure!(
            east == (false, true),
            "{round}: an applied namespace labelled east on default={} east={}",
            east.0,
            east.1
        );
        let auto = (
            upstream_has(up_a, &["get", "ns", "spanns-applied-auto"])?,
            upstream_has(up_b, &["get", "ns", "spanns-applied-auto"])?,
        );
        ensure!(
            auto.0 != auto.1,
            "{round}: an unlabelled applied namespace on default={} east={}",
            auto.0,
            auto.1
        );
        let label = ts.run(&[
            "get",
            "ns",
            "applied-auto",
            "-o",
            r"jsonpath={.metadata.labels.paddock\.io/cluster}",
        ])?;
        let holder = if auto.0 { "default" } else { "east" };
        ensure!(
            label == holder,
            "{round}: the applied namespace's label {label:?}, it lives on {holder}"
        );
        // Its objects follow it.
        let cm = format!("r{}", round.len());
        ts.run(&["-n", "applied-auto", "create", "configmap", &cm])?;
        let up = if auto.0 { up_a } else { up_b };
        ensure!(
            upstream_has(up, &["-n", "spanns-applied-auto", "get", "configmap", &cm])?,
            "{round}: configmap {cm} not on {holder} with its namespace"
        );
    }
    eprintln!("server-side applied namespaces placed and recorded (east by label, auto by load)");
    Ok(())
}
