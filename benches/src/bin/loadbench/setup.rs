//! Set-up shared by the benchmark parts: the tenant's namespaces and objects, quotas, the
//! two sides of a pair, request counts, restarting paddock and waiting for it to settle.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http::Method;
use paddock_e2e::{ControlPlane, Paddock};
use serde_json::json;

use crate::client::{Api, Cred, Proto};
use crate::load::{Side, Work};
use crate::objects;
use crate::procstat::Proc;
use crate::{Args, TENANT, paddock_pid};

/// `perf record` of paddock (sampling the CPU clock: this machine kind has no hardware
/// counters), stopped with SIGINT after the load part.
pub(crate) fn start_perf(out: &std::path::Path, p: Proc) -> Result<std::process::Child> {
    let child = std::process::Command::new("perf")
        .args([
            "record",
            "-e",
            "cpu-clock",
            "-F",
            "2999",
            "--call-graph",
            "dwarf,32768",
            "-p",
        ])
        .arg(p.pid.to_string())
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting perf record")?;
    eprintln!(
        "  perf record of paddock (pid {}) into {}",
        p.pid,
        out.display()
    );
    Ok(child)
}

/// Namespaces `bench` and `watch`, ConfigMap `small`, and the pods of the LIST.
pub(crate) async fn setup_tenant(args: &Args, admin: &Api, tenant_cred: &Cred) -> Result<()> {
    eprintln!("== set-up: tenant {TENANT}, namespaces, {} pods", args.pods);
    let tenant = Api::new(tenant_cred, Proto::H2)?;
    for ns in ["bench", "watch"] {
        objects::tenant_namespace(&tenant, ns).await?;
    }
    objects::put_configmap(
        &tenant,
        "bench",
        "small",
        json!({"greeting": "hello", "size": "small"}),
    )
    .await?;
    // paddock gives every tenant namespace a count quota (500 pods, 1,000 ConfigMaps): the
    // platform admin raises it for the benchmark's namespaces.
    for ns in ["default", "bench", "watch"] {
        raise_quota(admin, &format!("{TENANT}-{ns}")).await?;
    }
    objects::create_pods(
        admin,
        &format!("{TENANT}-default"),
        "web-5d8fc7b9",
        args.pods,
        32,
    )
    .await?;
    let b = admin
        .get_drain(
            &format!("/api/v1/namespaces/{TENANT}-default/pods"),
            "application/json",
        )
        .await?;
    eprintln!(
        "  the LIST is {:.1} MB ({:.0} bytes per pod)",
        b as f64 / 1e6,
        b as f64 / args.pods.max(1) as f64
    );
    Ok(())
}

/// Raises paddock's count quota of an upstream namespace (as the upstream admin).
pub(crate) async fn raise_quota(admin: &Api, ns: &str) -> Result<()> {
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas/paddock-tenant-limits");
    let body = json!({"spec": {"hard": {"pods": "100000", "configmaps": "100000"}}}).to_string();
    let resp = admin
        .send(
            Method::PATCH,
            &path,
            Some(bytes::Bytes::from(body)),
            "application/merge-patch+json",
            "application/json",
        )
        .await?;
    match resp.status() {
        s if s.is_success() || s == http::StatusCode::NOT_FOUND => Ok(()),
        s => bail!("raising the quota of {ns}: {s}"),
    }
}

pub(crate) fn sides(admin: &Cred, tenant: &Cred, proto: Proto) -> Result<(Side, Side)> {
    Ok((
        Side {
            api: Api::new(admin, proto)?,
            prefix: format!("{TENANT}-"),
        },
        Side {
            api: Api::new(tenant, proto)?,
            prefix: String::new(),
        },
    ))
}

pub(crate) fn count_for(work: Work, conc: usize, quick: bool) -> usize {
    let n = match (work, conc) {
        (Work::Get, 1) => 1000,
        (Work::Get, c) if c <= 16 => 3000,
        (Work::Get, _) => 5000,
        (Work::CreateDelete, 1) => 300,
        (Work::CreateDelete, c) if c <= 16 => 800,
        (Work::CreateDelete, _) => 1200,
        (Work::Table, 1) => 40,
        (Work::Table, c) if c <= 16 => 96,
        (Work::Table, _) => 192,
        (Work::List, 1) => 6,
        (Work::List, c) => 4 * c,
    };
    if quick { (n / 10).max(conc.min(n)) } else { n }
}

/// Stops paddock (TERM, by its pid) and starts it again with the same settings: a fresh
/// process for memory figures.
pub(crate) async fn restart_paddock(cp: &ControlPlane, p: &Paddock) -> Result<Proc> {
    let old = paddock_pid(cp)?;
    paddock_e2e::process::signal(old.pid, "TERM");
    let t0 = Instant::now();
    while p.exited().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("paddock did not stop within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.ensure_running()?;
    let newp = paddock_pid(cp)?;
    if newp.pid == old.pid {
        bail!("paddock did not restart");
    }
    Ok(newp)
}

/// Waits until `p` has used less than a fifth of a core in each of three 2-s windows in a
/// row (at most `max`).
pub(crate) async fn settle(p: Proc, max: Duration) -> Duration {
    let t0 = Instant::now();
    let mut quiet_windows = 0;
    while t0.elapsed() < max && quiet_windows < 3 {
        let c0 = p.cpu_secs();
        tokio::time::sleep(Duration::from_secs(2)).await;
        if p.cpu_secs() - c0 < 0.4 {
            quiet_windows += 1;
        } else {
            quiet_windows = 0;
        }
    }
    t0.elapsed()
}
