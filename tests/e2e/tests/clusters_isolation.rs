//! The isolation suite (`isolation.rs`'s attack table, unchanged, and its bypass) against
//! tenants spanning two clusters (docs/clusters.md): two control
//! planes, paddock fronting both (`default` with the admission webhook, `east` registered),
//! the attacker `alphaa` spanning `default,east` (home `default`), the victim `bravoo`
//! spanning `east,default` (home `east`), and `west`, a registered cluster of neither (its
//! server does not answer). The world's namespaces (the attacker's `web`, the victim's
//! `vault-ns`) are placed on `east`, the attacker's non-home cluster: every namespaced attack
//! routes there through the namespace map, every cluster-scoped write goes to the home first
//! and is copied to `east`. The bypass (the attacker's identity with upstream names) runs
//! straight at EACH apiserver. After the shared table come the spanning cases
//! (`isolation/span_cases.rs`). The deletion of a spanning tenant is checked by
//! `clusters.rs` (nothing left on either cluster).
//!
//! Ignored (two control planes): `make test-clusters`, or
//! `cargo test -p paddock-e2e --test clusters_isolation -- --ignored --nocapture`.
//! `PADDOCK_ISOLATION_CASES=word,word` runs only cases whose id contains one of the words.

#[path = "isolation/cases.rs"]
mod cases;
#[path = "isolation/judge.rs"]
mod judge;
#[path = "isolation/model.rs"]
mod model;
#[path = "isolation/objects.rs"]
mod objects;
#[path = "isolation/policy_cases.rs"]
mod policy_cases;
#[path = "isolation/span_cases.rs"]
mod span_cases;
#[path = "isolation/suite.rs"]
mod suite;

use cases::*;
use judge::*;
use model::*;
use objects::*;
use policy_cases::*;
use span_cases::*;
use suite::*;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::process::Output;
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::token::token_kubeconfig;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

/// Registered, ready clusters (by `paddock cluster list`).
fn ready_clusters(p: &Paddock) -> Result<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(&p.cli(&["cluster", "list", "-o", "json"])?)?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter(|c| c["status"]["ready"] == true)
                .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

#[test]
#[ignore = "two control planes (make test-clusters)"]
fn isolation_spanning_two_clusters() -> Result<()> {
    let mut planes = ControlPlane::start_many(2).context("starting two control planes")?;
    let east = planes.pop().context("second plane")?;
    let home = planes.pop().context("first plane")?;
    let paddock =
        Paddock::start_with_args(&home, StoreKind::Etcd, "paddock", &home.admission_args()?)
            .context("starting paddock")?;
    let ek = east.admin_kubeconfig();
    paddock.cli(&[
        "cluster",
        "add",
        "east",
        "--from-kubeconfig",
        ek.to_str().context("path")?,
    ])?;
    // `west`: registered, of neither tenant; its server does not answer.
    let west_kc = paddock.dir().join("west.kubeconfig");
    let text = std::fs::read_to_string(&ek)?;
    let west: String = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("server:") {
            Some(_) => "    server: https://127.0.0.1:1".to_owned(),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&west_kc, west)?;
    paddock.cli(&[
        "cluster",
        "add",
        "west",
        "--from-kubeconfig",
        west_kc.to_str().context("path")?,
    ])?;
    wait_until("east ready", Duration::from_secs(120), || {
        Ok(ready_clusters(&paddock)?.contains(&"east".to_owned()))
    })?;
    paddock.cli(&["tenant", "create", A, "--clusters", "default,east"])?;
    paddock.cli(&["tenant", "create", B, "--clusters", "east,default"])?;

    let up_east = east.kubectl_admin()?;
    let arena = Arena {
        paddock: &paddock,
        up: up_east.clone(),
        direct_kubeconfig: ek.clone(),
        bypass_at: vec![("up", up_east), ("up-default", home.kubectl_admin()?)],
        place_on: Some("east"),
        extra_cases: span_cases(),
        report: "isolation-spanning-report.md",
        front_proxy: None,
    };
    let result = run_suite(&arena, || {
        Ok("not run here: a spanning tenant's deletion is checked by clusters.rs".to_owned())
    });
    if result.is_err() {
        let dest = workspace_root()
            .join("target")
            .join("e2e-logs-clusters-isolation");
        let _ = std::fs::create_dir_all(&dest);
        for (cp, name) in [(&home, "default"), (&east, "east")] {
            if let Ok(rd) = std::fs::read_dir(cp.dir().join("logs")) {
                for e in rd.flatten() {
                    let to = dest.join(format!("{name}-{}", e.file_name().to_string_lossy()));
                    let _ = std::fs::copy(e.path(), to);
                }
            }
        }
        let _ = std::fs::copy(paddock.log_path(), dest.join("paddock.log"));
        eprintln!("component logs copied to {}", dest.display());
    }
    result
}
