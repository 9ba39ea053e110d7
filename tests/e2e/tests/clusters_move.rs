//! A tenant imported on a second cluster, and a tenant moved between the two clusters of
//! `make test-clusters` under a steady write load (issue 41 acceptance 4, the second-cluster
//! half, and 5; docs/operations.md "Export, import and move"), against two real control
//! planes, paddock as a real process on etcd, real kubectl and helm:
//!
//! - import: the source tenant of `tenant_export.rs` (CRDs and CRs, RBAC, a Helm release,
//!   ConfigMaps, Secrets, a Deployment) on `default`, exported with `--secrets` (no upstream
//!   prefix in it) and imported into a tenant living on `east`: both views, normalised, equal;
//!   `helm list` shows the release; upstream the copies are on east;
//! - move: a populated tenant on `default` moved to `east` with `paddock tenant move` while a
//!   loop of `kubectl create configmap` (the pinned kubectl, one at a time, through the
//!   tenant's kubeconfig) writes all along: every write's outcome counted; 0 lost (every
//!   create kubectl reported done is there afterwards, on east), no kubectl failed, the 503s
//!   of the pause (paddock's access log) were retried by kubectl itself and at least one write
//!   met it (the pause was exercised); the kubeconfig file is unchanged and still works; the
//!   tenant's other objects are the same before and after; `default` holds nothing of the
//!   tenant afterwards (its labelled namespaces, cluster-scoped objects and CRDs, and no
//!   namespace with its prefix).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::portable::{self, Helm, KINDS};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const SRC: &str = "xsrc01";
const EAST: &str = "xeast1";
const MOVER: &str = "mover1";
/// Most writes the load makes (it stops earlier, a few seconds after the move).
const MAX_WRITES: usize = 3000;

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(500), what, f)
}

#[test]
#[ignore = "two control planes; make test-clusters"]
fn import_on_a_second_cluster_and_move_under_load() -> Result<()> {
    let mut planes = ControlPlane::start_many(2).context("starting two control planes")?;
    let east = planes.pop().context("second plane")?;
    let home = planes.pop().context("first plane")?;
    let p = Paddock::start(&home, StoreKind::Etcd)?;
    p.cli(&[
        "cluster",
        "add",
        "east",
        "--from-kubeconfig",
        east.admin_kubeconfig().to_str().context("path")?,
    ])?;
    within(Duration::from_secs(120), "cluster east ready", || {
        let v: serde_json::Value =
            serde_json::from_str(&p.cli(&["cluster", "get", "east", "-o", "json"])?)?;
        let c = v.as_array().and_then(|a| a.first()).unwrap_or(&v);
        Ok(c["status"]["ready"] == true)
    })?;
    let result = run(&p, &home, &east);
    if result.is_err() {
        eprintln!("paddock log: {}", p.log_path().display());
    }
    result
}

fn run(p: &Paddock, home: &ControlPlane, east: &ControlPlane) -> Result<()> {
    let (up_home, up_east) = (home.kubectl_admin()?, east.kubectl_admin()?);
    let helm = Helm::new(&home.dir().join("helm-move"))?;

    // ---- acceptance 4 on a second cluster ----------------------------------------------------
    let src = p.kubectl_tenant(SRC)?;
    portable::populate(&src, &helm)?;
    let dst = Kubectl::new(p.tenant_with(EAST, &["--clusters", "east"])?)?;
    let tar = portable::export(p, SRC, true)?;
    ensure!(
        !tar.contains(&format!("{SRC}-")),
        "the upstream prefix in the archive"
    );
    let out = portable::cli(p, &["tenant", "import", EAST], Some(&tar))?;
    ensure!(
        out.success(),
        "import on east: {}{}",
        out.stdout,
        out.stderr
    );
    println!("import on east: {}", out.stderr.trim());
    for (k, what) in [(&src, "source"), (&dst, "copy on east")] {
        within(
            Duration::from_secs(90),
            &format!("the {what}'s 2 pods"),
            || Ok(portable::web_pods_running(k)? == 2),
        )?;
    }
    portable::same(
        &portable::snapshot(&src, KINDS)?,
        &portable::snapshot(&dst, KINDS)?,
        "the source on default and its copy on east",
    )?;
    let releases = helm.run(&dst, &["list", "-n", "apps"])?;
    ensure!(
        releases.contains("rel") && releases.contains("deployed"),
        "{releases}"
    );
    up_east.run(&[
        "-n",
        &format!("{EAST}-apps"),
        "get",
        "configmap",
        "settings",
    ])?;
    let (_, none) = up_home.run_raw(
        &["get".into(), "ns".into(), format!("{EAST}-apps")],
        None,
        &Default::default(),
        None,
    )?;
    ensure!(!none.success(), "{EAST}-apps exists on default");

    // ---- acceptance 5: a move under load -----------------------------------------------------
    let kubeconfig = p.tenant(MOVER)?;
    let mover = p.kubectl_tenant(MOVER)?;
    portable::populate(&mover, &helm)?;
    within(Duration::from_secs(90), "the mover's 2 pods", || {
        Ok(portable::web_pods_running(&mover)? == 2)
    })?;
    // Refused before anything changes: a cluster that does not exist, the one it is on.
    for (to, words) in [("nowhere", "not found"), ("default", "lives on")] {
        let out = portable::cli(p, &["tenant", "move", MOVER, "--to", to], None)?;
        ensure!(
            !out.success() && out.stderr.contains(words),
            "tenant move --to {to}: {}{}",
            out.stdout,
            out.stderr
        );
    }
    let before = portable::snapshot(&mover, KINDS)?;
    let kubeconfig_bytes = std::fs::read(&kubeconfig)?;
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (k, stop) = (mover.clone(), stop.clone());
        std::thread::spawn(move || write_load(&k, &stop))
    };
    // Some writes before the move.
    std::thread::sleep(Duration::from_secs(3));
    let t0 = Instant::now();
    let out = portable::cli(p, &["tenant", "move", MOVER, "--to", "east"], None)?;
    let took = t0.elapsed();
    // And some after it.
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Release);
    let writes = load
        .join()
        .map_err(|_| anyhow::anyhow!("the load thread panicked"))??;
    ensure!(out.success(), "tenant move: {}{}", out.stdout, out.stderr);
    let summary: serde_json::Value = serde_json::from_str(&out.stdout)?;
    println!(
        "FIGURE move: {:.2} s in all, writes held {:.2} s, {} objects ({})",
        took.as_secs_f64(),
        summary["writesPausedSeconds"].as_f64().unwrap_or(-1.0),
        summary["objects"],
        out.stderr.trim()
    );

    // Every write's outcome.
    let done: Vec<&Write> = writes.iter().filter(|w| w.ok).collect();
    let failed: Vec<&Write> = writes.iter().filter(|w| !w.ok).collect();
    let slowest = writes.iter().map(|w| w.took).max().unwrap_or_default();
    println!(
        "FIGURE load: {} creates, {} done, {} failed, slowest {:.2} s",
        writes.len(),
        done.len(),
        failed.len(),
        slowest.as_secs_f64()
    );
    ensure!(
        failed.is_empty(),
        "writes failed (kubectl gave up): {:?}",
        failed.iter().map(|w| &w.error).collect::<Vec<_>>()
    );
    let log = std::fs::read_to_string(p.log_path())?;
    let answers = |status: &str| {
        log.lines()
            .filter(|l| {
                l.contains(&format!("\"tenant\":\"{MOVER}\""))
                    && l.contains("\"user\":\"admin\"")
                    && l.contains("\"verb\":\"create\"")
                    && l.contains("/configmaps\"")
                    && l.contains(&format!("\"status\":{status}"))
            })
            .count()
    };
    let (held, created) = (answers("503"), answers("201"));
    let other: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains(&format!("\"tenant\":\"{MOVER}\""))
                && l.contains("\"user\":\"admin\"")
                && l.contains("\"verb\":\"create\"")
                && l.contains("/configmaps\"")
                && !l.contains("\"status\":201")
                && !l.contains("\"status\":503")
        })
        .collect();
    println!(
        "FIGURE the load's creates at paddock: {created} answered 201, {held} answered 503 and retried by kubectl"
    );
    ensure!(
        held > 0,
        "no write met the pause: the move was not exercised under load"
    );
    ensure!(
        other.is_empty(),
        "creates answered otherwise than 201 or 503: {other:?}"
    );
    // 0 lost: every create kubectl reported done is there, on east, and nothing on default.
    let listed = mover.run(&["get", "configmaps", "-o", "name"])?;
    let upstream = up_east.run(&[
        "-n",
        &format!("{MOVER}-default"),
        "get",
        "configmaps",
        "-o",
        "name",
    ])?;
    let lost: Vec<String> = done
        .iter()
        .map(|w| format!("configmap/{}", w.name))
        .filter(|n| !listed.lines().any(|l| l == n) || !upstream.lines().any(|l| l == n))
        .collect();
    ensure!(lost.is_empty(), "{} writes lost: {lost:?}", lost.len());
    println!("FIGURE 0 of {} writes lost", done.len());

    // The kubeconfig is unchanged and still works; the tenant's objects are as before.
    ensure!(
        std::fs::read(&kubeconfig)? == kubeconfig_bytes,
        "the kubeconfig changed"
    );
    Kubectl::new(kubeconfig.clone())?.run(&["get", "configmap", &done[0].name])?;
    within(
        Duration::from_secs(90),
        "the moved Deployment's 2 pods",
        || Ok(portable::web_pods_running(&mover)? == 2),
    )?;
    let after = portable::snapshot(&mover, KINDS)?;
    let without_load = |v: &serde_json::Value| -> serde_json::Value {
        v.as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|i| {
                        !i["metadata"]["name"]
                            .as_str()
                            .is_some_and(|n| n.starts_with("load-"))
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    portable::same(
        &without_load(&before),
        &without_load(&after),
        "the tenant before and after its move",
    )?;
    let releases = helm.run(&mover, &["list", "-n", "apps"])?;
    ensure!(
        releases.contains("rel") && releases.contains("deployed"),
        "{releases}"
    );

    // The source is empty of the tenant.
    let left = up_home.run(&[
        "get",
        "namespaces,clusterroles,clusterrolebindings,customresourcedefinitions",
        "-l",
        &format!("paddock.io/tenant={MOVER}"),
        "-o",
        "name",
    ])?;
    ensure!(left.trim().is_empty(), "left on default: {left}");
    let namespaces = up_home.run(&["get", "namespaces", "-o", "name"])?;
    ensure!(
        !namespaces.contains(&format!("namespace/{MOVER}-")),
        "a namespace of {MOVER} on default: {namespaces}"
    );
    let crds = up_home.run(&["get", "crd", "-o", "name"])?;
    ensure!(
        !crds.contains(&format!(".{MOVER}-")),
        "a CRD of {MOVER} on default: {crds}"
    );
    Ok(())
}

/// One `kubectl create configmap` of the load.
struct Write {
    name: String,
    ok: bool,
    error: String,
    took: Duration,
}

/// Creates ConfigMaps one after another until `stop` (at most [`MAX_WRITES`]).
fn write_load(k: &Kubectl, stop: &AtomicBool) -> Result<Vec<Write>> {
    let mut out = Vec::new();
    for i in 0..MAX_WRITES {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let name = format!("load-{i:04}");
        let t0 = Instant::now();
        let (_, o) = k.run_raw(
            &[
                "create".into(),
                "configmap".into(),
                name.clone(),
                format!("--from-literal=i={i}"),
            ],
            None,
            &Default::default(),
            Some(Duration::from_secs(120)),
        )?;
        out.push(Write {
            name,
            ok: o.success(),
            error: o.stderr,
            took: t0.elapsed(),
        });
    }
    Ok(out)
}
