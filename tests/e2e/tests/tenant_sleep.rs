//! A tenant's sleep after inactivity and its wake on the next request (issue 41, acceptance
//! check 2; docs/operations.md "Sleep and wake") against the real control plane (kwok nodes
//! that run pods), two paddock replicas on one etcd, real kubectl. The tenants' requests go
//! through the replica that does not lead, so that the leader, which decides sleeps and does
//! the stopping and the bringing back, knows their activity only through the store:
//!
//! - a tenant with `sleepAfter: 6s`, three Deployments (2, 1 and 3 replicas) and a CronJob
//!   idles (a watch of its own left open all along, which does not count): upstream, read
//!   with the admin kubeconfig, its Deployments go to 0 replicas and its CronJob is
//!   suspended, each recorded; `tenant list` says `Asleep`;
//! - straight at the apiserver its own identity reads zero and does not wake it (only paddock
//!   sees its requests); through paddock its `kubectl get deploy` (a Table) shows its own
//!   counts (READY `0/2`, `0/1`, `0/3`), is answered at once, and wakes it: every pod Running
//!   and Ready again, the CronJob resumed;
//! - `tenant sleep` by hand, then the tenant's write `kubectl scale --replicas=4` while
//!   asleep: it waits for the wake and is not lost (4 replicas upstream, the others back);
//! - `tenant sleep` again: the tenant's `kubectl get deploy -o json` shows its counts in
//!   `spec.replicas`; `tenant sleep` then `tenant wake` by hand brings everything back;
//! - controls: a tenant with the same `sleepAfter` that keeps making requests (through the
//!   other replica) does not sleep, and a tenant without `sleepAfter`, idle all along, never
//!   sleeps; only the leader counts sleeps and wakes, exactly those above (none when the
//!   `sleepAfter` is set on a tenant that has been idle longer than it since its creation).
//!
//! Figures printed (`FIGURE`): time from the last request to the sleep, the waking request's
//! answer time, and the time from it to every pod Ready.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const SLEEPY: &str = "sleepy";
const BUSY: &str = "busy01";
const NEVER: &str = "never1";
const SLEEP_AFTER: u64 = 6;
const DEPLOYMENTS: [(&str, u32); 3] = [("web1", 2), ("web2", 1), ("web3", 3)];

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(100), what, f)
}

/// A metric of replica `p`'s `/metrics` (0 when absent).
fn metric(p: &Paddock, name: &str) -> Result<f64> {
    let text = p.kubectl_admin()?.run(&["get", "--raw", "/metrics"])?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0))
}

/// `src`'s kubeconfig pointed at `url` (another replica), written to `dst`.
fn kubeconfig_for(src: &Path, url: &str, dst: &Path) -> Result<PathBuf> {
    let text = std::fs::read_to_string(src)?;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("server:") {
                format!("    server: {url}")
            } else {
                l.to_owned()
            }
        })
        .collect();
    std::fs::write(dst, out.join("\n") + "\n")?;
    Ok(dst.to_path_buf())
}

/// Tenant `id` through replica `via`.
fn kubectl_via(p: &Paddock, via: &Paddock, id: &str) -> Result<Kubectl> {
    let dst = p.dir().join(format!("{id}-via-other.kubeconfig"));
    Ok(
        Kubectl::new(kubeconfig_for(&p.tenant(id)?, via.url(), &dst)?)?
            .cache_dir(p.dir().join("kubectl-cache-other").join(id)),
    )
}

/// `paddock <a>` as the platform admin: (success, stdout, stderr).
fn cli(p: &Paddock, a: &[&str]) -> Result<(bool, String, String)> {
    let args: Vec<String> = a.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = p.cli_raw(&args, Duration::from_secs(90))?;
    Ok((out.success(), out.stdout, out.stderr))
}

/// The tenant's sleep phase from the admin API (`None`: awake).
fn sleep_phase(p: &Paddock, id: &str) -> Result<Option<String>> {
    let v: serde_json::Value = serde_json::from_str(&p.cli(&["tenant", "get", id, "-o", "json"])?)?;
    Ok(v["status"]["sleep"]["phase"].as_str().map(str::to_owned))
}

/// Upstream `spec.replicas` of the namespace's Deployments, in name order.
fn upstream_replicas(up: &Kubectl, ns: &str) -> Result<Vec<u32>> {
    let out = up.run(&[
        "-n",
        ns,
        "get",
        "deployments",
        "-o",
        "jsonpath={range .items[*]}{.spec.replicas} {end}",
    ])?;
    out.split_whitespace()
        .map(|n| n.parse().context("replicas"))
        .collect()
}

/// Upstream `spec.suspend` of the CronJob `tick`.
fn cron_suspended(up: &Kubectl, ns: &str) -> Result<bool> {
    Ok(up.run(&[
        "-n",
        ns,
        "get",
        "cronjob",
        "tick",
        "-o",
        "jsonpath={.spec.suspend}",
    ])? == "true")
}

/// Pods of the namespace that are Running and Ready.
fn ready_pods(up: &Kubectl, ns: &str) -> Result<usize> {
    let out = up.run(&[
        "-n",
        ns,
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.status.phase}/{.status.conditions[?(@.type==\"Ready\")].status} {end}",
    ])?;
    Ok(out
        .split_whitespace()
        .filter(|s| *s == "Running/True")
        .count())
}

fn asleep_upstream(up: &Kubectl, ns: &str) -> Result<bool> {
    Ok(upstream_replicas(up, ns)?.iter().all(|n| *n == 0) && cron_suspended(up, ns)?)
}

/// A tenant with a Deployment per `(name, replicas)`, its pods Running; the polls go through
/// paddock as the tenant (they are its activity).
fn with_workloads(p: &Paddock, id: &str, deployments: &[(&str, u32)]) -> Result<Kubectl> {
    let k = p.kubectl_tenant(id)?;
    for (name, n) in deployments {
        k.run(&[
            "create",
            "deployment",
            name,
            "--image=registry.k8s.io/pause:3.10",
            &format!("--replicas={n}"),
        ])?;
    }
    let want: u32 = deployments.iter().map(|(_, n)| n).sum();
    within(Duration::from_secs(60), "the tenant's pods Running", || {
        let phases = k.run(&["get", "pods", "-o", "jsonpath={.items[*].status.phase}"])?;
        Ok(phases
            .split_whitespace()
            .filter(|s| *s == "Running")
            .count()
            == want as usize)
    })?;
    Ok(k)
}

/// Keeps tenant `k` busy (a request a second) until `stop`.
fn keep_busy(k: Kubectl, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Result<usize>> {
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            k.run(&["get", "configmaps"])?;
            n += 1;
            std::thread::sleep(Duration::from_secs(1));
        }
        Ok(n)
    })
}

/// `kubectl get configmaps --watch` as the tenant, left open (watches do not count).
fn open_watch(k: &Kubectl) -> Result<Child> {
    Command::new(k.bin())
        .arg("--kubeconfig")
        .arg(k.kubeconfig())
        .args(["get", "configmaps", "--watch", "--request-timeout=0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting kubectl --watch")
}

#[test]
fn idle_tenants_sleep_and_their_next_request_wakes_them() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let started = Instant::now();
    let p = Paddock::start(&cp, StoreKind::Etcd)?;
    let p2 = Paddock::start_replica(&cp, &p, "paddock-2", &[])?;
    let up = cp.kubectl_admin()?;
    within(Duration::from_secs(30), "one replica leading", || {
        Ok(metric(&p, "paddock_leader")? + metric(&p2, "paddock_leader")? == 1.0)
    })?;
    let (leader, other) = if metric(&p, "paddock_leader")? == 1.0 {
        (&p, &p2)
    } else {
        (&p2, &p)
    };
    println!(
        "leader: {}; the tenants' requests go through {}",
        leader.url(),
        other.url()
    );
    let policy = format!(r#"{{"sleepAfter":"{SLEEP_AFTER}s"}}"#);
    // Each tenant's `sleepAfter` is set once its workloads run (the polls until then are its
    // requests, but the other tenants' setup is not), and the busy one kept busy from then.
    // Created first: by the time its `sleepAfter` is set it is older than that, and its
    // requests until then were not kept (no sleepAfter): the clock starts when it is set.
    p.tenant(SLEEPY)?;
    let sleepy_created = Instant::now();
    with_workloads(&p, NEVER, &[("web", 1)])?;
    with_workloads(&p, BUSY, &[("web", 1)])?;
    let busy = kubectl_via(&p, other, BUSY)?;
    busy.run(&["get", "configmaps"])?;
    p.cli(&["tenant", "policy", BUSY, "--patch", &policy])?;
    let stop = Arc::new(AtomicBool::new(false));
    let busy_thread = keep_busy(busy, stop.clone());
    let ns = format!("{SLEEPY}-default");
    with_workloads(&p, SLEEPY, &DEPLOYMENTS)?;
    let k = kubectl_via(&p, other, SLEEPY)?;
    k.run(&[
        "create",
        "cronjob",
        "tick",
        "--image=registry.k8s.io/pause:3.10",
        "--schedule=*/30 * * * *",
    ])?;
    // Older than its sleepAfter and a share interval when it is set (the control above).
    let older = Duration::from_secs(SLEEP_AFTER + 2);
    std::thread::sleep(older.saturating_sub(sleepy_created.elapsed()));
    p.cli(&["tenant", "policy", SLEEPY, "--patch", &policy])?;
    let mut watch = open_watch(&k)?;
    let want: usize = DEPLOYMENTS.iter().map(|(_, n)| *n as usize).sum();

    // ---- idle past sleepAfter: asleep upstream ---------------------------------------------
    k.run(&["get", "cronjob", "tick"])?;
    let last_request = Instant::now();
    within(
        Duration::from_secs(SLEEP_AFTER + 15),
        "the idle tenant asleep upstream",
        || asleep_upstream(&up, &ns),
    )?;
    let to_sleep = last_request.elapsed();
    println!(
        "FIGURE time to sleep after the last request: {:.1} s (sleepAfter {SLEEP_AFTER} s)",
        to_sleep.as_secs_f64()
    );
    ensure!(
        to_sleep >= Duration::from_secs(SLEEP_AFTER),
        "asleep {to_sleep:?} after the last request, before its sleepAfter"
    );
    let _ = watch.kill();
    let _ = watch.wait();
    let recorded = up.run(&[
        "-n",
        &ns,
        "get",
        "deployments",
        "-o",
        "jsonpath={range .items[*]}{.metadata.annotations.paddock\\.io/slept} {end}",
    ])?;
    ensure!(
        recorded.split_whitespace().eq(["2", "1", "3"]),
        "recorded counts: {recorded}"
    );
    within(Duration::from_secs(10), "the record Asleep", || {
        Ok(sleep_phase(&p, SLEEPY)?.as_deref() == Some("Asleep"))
    })?;
    let (_, list, _) = cli(&p, &["tenant", "list"])?;
    let row = list
        .lines()
        .find(|l| l.starts_with(SLEEPY))
        .unwrap_or_default();
    ensure!(
        row.contains("Asleep"),
        "tenant list without Asleep:\n{list}"
    );
    println!("asleep: upstream replicas 0 (recorded 2 1 3), CronJob suspended\n{list}");

    // Straight at the apiserver, the tenant's own identity reads upstream as it is (zero), and
    // does not wake it: only paddock sees its requests.
    let direct = up.run(&[
        "-n",
        &ns,
        "get",
        "deployments",
        "-o",
        "jsonpath={range .items[*]}{.spec.replicas} {end}",
        &format!("--as=paddock:{SLEEPY}:admin"),
        &format!("--as-group=paddock:{SLEEPY}:tenant-admins"),
        &format!("--as-group=paddock:tenant:{SLEEPY}"),
    ])?;
    ensure!(
        direct.split_whitespace().eq(["0", "0", "0"]),
        "straight at the apiserver while asleep: {direct}"
    );
    std::thread::sleep(Duration::from_secs(1));
    ensure!(
        asleep_upstream(&up, &ns)?,
        "a read straight at the apiserver woke the tenant"
    );
    println!(
        "straight at the apiserver, the tenant's identity reads replicas {direct}(and stays asleep)"
    );

    // ---- its next request: answered at once, as it left its objects, and wakes it ---------
    let woken_at = Instant::now();
    let table = k.run(&["get", "deployments"])?;
    let answered = woken_at.elapsed();
    for (name, n) in DEPLOYMENTS {
        ensure!(
            table
                .lines()
                .any(|l| l.starts_with(name)
                    && l.split_whitespace().nth(1) == Some(&format!("0/{n}"))),
            "kubectl get deploy while asleep should show READY 0/{n} for {name}:\n{table}"
        );
    }
    println!("the tenant's kubectl get deploy while asleep:\n{table}");
    within(
        Duration::from_secs(60),
        "every pod Ready after the wake",
        || Ok(ready_pods(&up, &ns)? == want),
    )?;
    let to_ready = woken_at.elapsed();
    println!(
        "FIGURE waking request answered in {:.2} s; from it to all {want} pods Ready: {:.1} s",
        answered.as_secs_f64(),
        to_ready.as_secs_f64()
    );
    ensure!(
        answered < Duration::from_secs(3),
        "the waking request took {answered:?}"
    );
    ensure!(
        !cron_suspended(&up, &ns)?,
        "the CronJob is still suspended after the wake"
    );
    ensure!(
        upstream_replicas(&up, &ns)? == [2, 1, 3],
        "replicas after the wake"
    );

    // ---- a write while asleep waits for the wake and is not lost --------------------------
    let (ok, out, err) = cli(&p, &["tenant", "sleep", SLEEPY])?;
    ensure!(ok && out.contains("Asleep"), "tenant sleep: {out}{err}");
    ensure!(
        asleep_upstream(&up, &ns)?,
        "tenant sleep answered before the sleep"
    );
    let t0 = Instant::now();
    k.run(&["scale", "deployment", "web1", "--replicas=4"])?;
    println!(
        "FIGURE a write while asleep (kubectl scale) answered in {:.2} s (it waits for the wake)",
        t0.elapsed().as_secs_f64()
    );
    ensure!(
        upstream_replicas(&up, &ns)? == [4, 1, 3],
        "the scale while asleep lost or the others not back: {:?}",
        upstream_replicas(&up, &ns)?
    );
    within(
        Duration::from_secs(60),
        "every pod Ready after the write",
        || Ok(ready_pods(&up, &ns)? == want + 2),
    )?;

    // ---- spec.replicas as the tenant left it; the hand's wake ---------------------------------
    cli(&p, &["tenant", "sleep", SLEEPY])?;
    ensure!(asleep_upstream(&up, &ns)?, "not asleep after tenant sleep");
    let json = k.run(&[
        "get",
        "deployments",
        "-o",
        "jsonpath={range .items[*]}{.spec.replicas} {end}",
    ])?;
    ensure!(
        json.split_whitespace().eq(["4", "1", "3"]),
        "spec.replicas while asleep should read 4 1 3: {json}"
    );
    within(
        Duration::from_secs(60),
        "every pod Ready after the read",
        || Ok(ready_pods(&up, &ns)? == want + 2),
    )?;
    cli(&p, &["tenant", "sleep", SLEEPY])?;
    let (ok, out, err) = cli(&p, &["tenant", "wake", SLEEPY])?;
    ensure!(
        ok && sleep_phase(&p, SLEEPY)?.is_none(),
        "tenant wake: {out}{err}"
    );
    ensure!(
        upstream_replicas(&up, &ns)? == [4, 1, 3] && !cron_suspended(&up, &ns)?,
        "tenant wake did not bring everything back"
    );
    println!("tenant sleep/wake by hand, a write while asleep kept, spec.replicas as left");

    // ---- controls ------------------------------------------------------------------------------
    stop.store(true, Ordering::Relaxed);
    let busy_requests = busy_thread
        .join()
        .map_err(|_| anyhow::anyhow!("busy thread panicked"))??;
    for id in [BUSY, NEVER] {
        ensure!(sleep_phase(&p, id)?.is_none(), "{id} fell asleep");
        ensure!(
            upstream_replicas(&up, &format!("{id}-default"))? == [1],
            "{id}'s Deployment was scaled"
        );
    }
    println!(
        "controls: {BUSY} ({busy_requests} requests, one a second) and {NEVER} (no sleepAfter) awake after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let count = |r: &Paddock| -> Result<(f64, f64)> {
        Ok((
            metric(r, "paddock_tenant_sleeps_total")?,
            metric(r, "paddock_tenant_wakes_total")?,
        ))
    };
    let (led, others) = (count(leader)?, count(other)?);
    ensure!(
        led == (4.0, 4.0) && others == (0.0, 0.0),
        "sleeps and wakes (leader {led:?}, other {others:?}): only the leader does them, 4 of each \
         (one idle and three by hand; a table read, a write, a JSON read and one by hand): none \
         when a sleepAfter is set on a tenant idle since long before"
    );
    println!("sleeps, wakes: leader {led:?}, other replica {others:?}");
    Ok(())
}
