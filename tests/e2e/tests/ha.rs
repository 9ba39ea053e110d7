//! Highly available paddock as operators run it: three replicas on a three-member etcd store
//! (TLS, client certificates) behind HAProxy (TCP mode, TLS passed through, `/readyz` health
//! checks over TLS), all on loopback, under a bounded load of mixed reads, writes and watches
//! from two tenants.
//!
//! 1. Tenant creation, certificate issuance and revocation through one replica take effect on
//!    every replica within 1 s, measured on each replica directly and through the LB.
//! 2. One replica killed with SIGKILL under load: under 1 % of requests fail, every
//!    acknowledged write is upstream exactly once, every watch resumes without missing an event.
//! 3. A rolling restart (SIGTERM, wait for the exit, start again, next) under load: no failed
//!    request, nothing lost, no missed event.
//! 4. etcd members killed under load: with one down, no failed request and tenant creation
//!    works; with two down (no quorum), existing tenants keep working from the cache and
//!    tenant creation fails with a clear 503, leaving nothing upstream; it works again once
//!    the members are back.
//!
//! Needs `haproxy` (scripts/test.sh installs the Debian package when missing). About 3-4 min.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use http::Method;
use paddock_e2e::ha::{Haproxy, haproxy_binary};
use paddock_e2e::http::Tls;
use paddock_e2e::load::report::check;
use paddock_e2e::load::{Spec, TenantLoad, runtime, under_load};
use paddock_e2e::paddock::rewrite_server;
use paddock_e2e::process::tail_file;
use paddock_e2e::{ControlPlane, EtcdCluster, Paddock, StoreKind};
use serde_json::Value;

/// The drain delay the replicas run with: longer than HAProxy needs to mark a replica down
/// (2 failed checks 500 ms apart).
const SHUTDOWN_DELAY: &str = "3s";

/// `GET path` with the credential of `kubeconfig` against `server`, on a fresh connection
/// (so that through the LB, successive calls reach different replicas).
async fn status_of(
    kubeconfig: &std::path::Path,
    server: &str,
    path: &str,
) -> Result<(u16, String)> {
    let tls = Tls::from_kubeconfig(kubeconfig, Some(server))?;
    match tls
        .send(Method::GET, path, None, Duration::from_secs(5))
        .await
    {
        Ok((s, b)) => Ok((s.as_u16(), String::from_utf8_lossy(&b).into_owned())),
        Err(e) => Ok((0, e.to_string())),
    }
}

/// Polls every target (each replica directly, and the LB three times in a row on fresh
/// connections) every 20 ms until `ok` holds for all, at most `limit`; returns the time.
fn everywhere(
    rt: &tokio::runtime::Runtime,
    targets: &[String],
    lb: &str,
    kubeconfig: &std::path::Path,
    path: &str,
    limit: Duration,
    ok: impl Fn(u16, &str) -> bool,
) -> Result<Duration> {
    let t0 = Instant::now();
    let mut pending: Vec<String> = targets.to_vec();
    let mut lb_streak = 0;
    loop {
        let mut still = Vec::new();
        for t in &pending {
            let (code, body) = rt.block_on(status_of(kubeconfig, t, path))?;
            if !ok(code, &body) {
                still.push(t.clone());
            }
        }
        pending = still;
        if lb_streak < 3 {
            let (code, body) = rt.block_on(status_of(kubeconfig, lb, path))?;
            lb_streak = if ok(code, &body) { lb_streak + 1 } else { 0 };
        }
        if pending.is_empty() && lb_streak >= 3 {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > limit {
            bail!("not in effect after {limit:?}: replicas {pending:?}, LB streak {lb_streak}/3");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn propagation(
    rt: &tokio::runtime::Runtime,
    replicas: &[&Paddock],
    lb: &Haproxy,
    work: &std::path::Path,
    report: &mut Vec<String>,
) -> Result<()> {
    let targets: Vec<String> = replicas.iter().map(|r| r.url().to_owned()).collect();
    let path = "/api/v1/namespaces/default/configmaps";
    let limit = Duration::from_secs(1);

    // A tenant created through replica 1.
    let kc = work.join("propag.kubeconfig");
    std::fs::write(&kc, replicas[0].cli(&["tenant", "create", "propag"])?)?;
    let took = everywhere(rt, &targets, &lb.url(), &kc, path, limit, |c, _| c == 200)
        .context("a tenant created through replica 1 was not usable everywhere within 1 s")?;
    report.push(format!(
        "tenant created through replica 1: usable on all 3 replicas and through the LB after {took:?}"
    ));

    // A user certificate issued through replica 2: usable everywhere, listed everywhere.
    let alice = work.join("alice.kubeconfig");
    std::fs::write(
        &alice,
        replicas[1].cli(&["user", "issue", "propag", "alice", "--group", "devs"])?,
    )?;
    let took = everywhere(rt, &targets, &lb.url(), &alice, path, limit, |c, _| {
        c == 200 || c == 403
    })
    .context("a certificate issued through replica 2 was not accepted everywhere within 1 s")?;
    let serial = {
        let v: Value = serde_json::from_str(
            &replicas[1].cli(&["cert", "list", "--tenant", "propag", "-o", "json"])?,
        )?;
        let items = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
        items
            .iter()
            .find(|c| c["spec"]["user"] == "alice")
            .and_then(|c| c["metadata"]["name"].as_str().map(str::to_owned))
            .context("alice's certificate is not listed")?
    };
    let t0 = Instant::now();
    for r in replicas {
        let listed = r.cli(&["cert", "list", "--tenant", "propag", "-o", "json"])?;
        ensure!(
            listed.contains(&serial),
            "alice's certificate is not listed through {}",
            r.url()
        );
    }
    report.push(format!(
        "certificate issued through replica 2: accepted everywhere after {took:?} (a certificate of paddock's CA needs no propagation), listed on all 3 after {:?}",
        t0.elapsed()
    ));

    // Revoked through replica 3: refused everywhere within 1 s.
    replicas[2].cli(&["cert", "revoke", &serial])?;
    let took = everywhere(rt, &targets, &lb.url(), &alice, path, limit, |c, b| {
        c == 401 && b.contains("revoked")
    })
    .context("a certificate revoked through replica 3 was still accepted somewhere after 1 s")?;
    report.push(format!(
        "certificate revoked through replica 3: refused on all 3 replicas and through the LB after {took:?}"
    ));
    Ok(())
}

#[test]
fn ha_behind_haproxy() -> Result<()> {
    haproxy_binary()?;
    let cp = ControlPlane::start()?;
    let mut etcd = EtcdCluster::start_in(&cp)?;
    let mut extra = etcd.paddock_args("/paddock-ha");
    extra.extend(["--shutdown-delay".to_owned(), SHUTDOWN_DELAY.to_owned()]);
    let r1 = Paddock::start_with_args(&cp, StoreKind::Args, "replica1", &extra)?;
    let r2 = Paddock::start_replica(&cp, &r1, "replica2", &extra)?;
    let r3 = Paddock::start_replica(&cp, &r1, "replica3", &extra)?;
    let replicas = [&r1, &r2, &r3];
    let lb = Haproxy::start(
        &cp,
        &[r1.port(), r2.port(), r3.port()],
        &r1.certs_dir().join("ca.crt"),
    )?;
    let work = cp.dir().join("ha");
    std::fs::create_dir_all(&work)?;
    let rt = runtime()?;
    let mut report = vec![format!(
        "3 replicas ready, HAProxy up on 127.0.0.1:{} with all 3 servers UP",
        lb.port
    )];
    let mut failures = Vec::new();

    // ---- acceptance 2: creation, issuance, revocation everywhere within 1 s -------------
    if let Err(e) = propagation(&rt, &replicas, &lb, &work, &mut report) {
        failures.push(format!("propagation: {e:#}"));
    }

    // ---- the load's tenants, created through the LB ------------------------------------
    let lb_admin = work.join("admin-via-lb.kubeconfig");
    rewrite_server(&r1.admin_kubeconfig(), &lb.url(), &lb_admin)?;
    let mut tenants = Vec::new();
    for id in ["haload", "hbload"] {
        let kc = work.join(format!("{id}.kubeconfig"));
        let (line, out) = r1.cli_raw_with(
            &lb_admin,
            &["tenant".into(), "create".into(), id.into()],
            Duration::from_secs(60),
        )?;
        ensure!(out.success(), "{line}: {}", out.stderr);
        std::fs::write(&kc, out.stdout)?;
        tenants.push(TenantLoad {
            tenant: id.into(),
            kubeconfig: kc,
            server: lb.url(),
            namespace: "default".into(),
        });
    }
    let admin = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    let spec = |run: &str, secs: u64| Spec {
        run: run.into(),
        workers: 3,
        watches: 2,
        duration: Duration::from_secs(secs),
        // A quarter are creates, shared by two tenants: at most ~750 each, below the
        // tenant's namespace quota of 1000 ConfigMaps (each run deletes its objects after).
        max_requests: 6_000,
        pause: Duration::from_millis(20),
        request_timeout: Duration::from_secs(20),
    };

    // ---- (a) one replica killed with SIGKILL ----------------------------------------------
    let (a, notes) = under_load(&tenants, spec("kill", 30), &admin, |t0| {
        std::thread::sleep(Duration::from_secs(10));
        let at = t0.elapsed();
        r2.kill()?;
        let killed = Instant::now();
        // HAProxy's view: the dead replica goes DOWN.
        let mut down_after = None;
        while killed.elapsed() < Duration::from_secs(10) {
            if !lb.servers_up()?.iter().any(|s| s == "replica2") {
                down_after = Some(killed.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(vec![
            format!(
                "replica 2 SIGKILLed {:.1} s into the load; HAProxy marked it DOWN after {:?}",
                at.as_secs_f64(),
                down_after
            ),
            format!("{}", at.as_millis()),
        ])
    })?;
    let kill_at = Duration::from_millis(notes.get(1).and_then(|s| s.parse().ok()).unwrap_or(0));
    // A failure counts from when it was noticed (sent + latency): requests in flight at the
    // kill were sent before it.
    let after_kill: Vec<_> = a
        .failures
        .iter()
        .filter(|f| f.at + f.latency >= kill_at)
        .collect();
    let failover = after_kill
        .iter()
        .map(|f| (f.at + f.latency).saturating_sub(kill_at))
        .max()
        .unwrap_or_default();
    report.push(notes[0].clone());
    report.push(format!("(a) SIGKILL: {}", a.summary()));
    report.push(format!(
        "(a) failover: {} failures noticed after the kill, the last {:?} after it",
        after_kill.len(),
        failover
    ));
    for f in a.failures.iter().take(5) {
        report.push(format!(
            "(a) failed: sent at {:?}, after {:?}: {} {}",
            f.at,
            f.latency,
            f.what,
            f.body.chars().take(200).collect::<String>()
        ));
    }
    let allowed = (a.requests as f64 * 0.01).floor() as usize;
    check("(a) SIGKILL", &a, allowed.saturating_sub(1), &mut failures);
    let t = Instant::now();
    r2.restart()?;
    report.push(format!(
        "replica 2 started again, ready after {:?}",
        t.elapsed()
    ));

    // ---- (b) rolling restart: SIGTERM, exit, start, next ----------------------------------
    while lb.servers_up()?.len() < 3 {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (b, notes) = under_load(&tenants, spec("rolling", 40), &admin, |_| {
        let mut notes = Vec::new();
        std::thread::sleep(Duration::from_secs(4));
        for (i, r) in replicas.iter().enumerate() {
            let name = format!("replica{}", i + 1);
            let (drain, status) = r.terminate(Duration::from_secs(30))?;
            let t = Instant::now();
            r.restart()?;
            let ready = t.elapsed();
            while !lb.servers_up()?.contains(&name) {
                if t.elapsed() > Duration::from_secs(20) {
                    bail!("HAProxy did not take {name} back within 20 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            notes.push(format!(
                "{name}: SIGTERM -> exit ({status}) in {drain:?} (drain delay {SHUTDOWN_DELAY}), ready again after {ready:?}, UP in HAProxy after {:?}",
                t.elapsed()
            ));
            std::thread::sleep(Duration::from_secs(2));
        }
        Ok(notes)
    })?;
    report.extend(notes);
    report.push(format!("(b) rolling restart: {}", b.summary()));
    check("(b) rolling restart", &b, 0, &mut failures);

    // ---- (c) etcd members down ------------------------------------------------------------
    let create = |id: &str| -> Result<(bool, String, Duration)> {
        let t = Instant::now();
        let (_, out) = r1.cli_raw_with(
            &lb_admin,
            &["tenant".into(), "create".into(), id.into()],
            Duration::from_secs(60),
        )?;
        Ok((out.success(), out.stderr.trim().to_owned(), t.elapsed()))
    };
    let (c, notes) = under_load(&tenants, spec("etcd", 45), &admin, |_| {
        let mut notes = Vec::new();
        std::thread::sleep(Duration::from_secs(4));
        etcd.kill_member(0)?;
        std::thread::sleep(Duration::from_secs(1));
        // With one member down the other two still have a quorum, but if the killed member led
        // they first elect a new leader: a write in that window gets etcd's "leader changed"
        // (paddock answers 503, as etcd's own clients see it). What is checked is a write once
        // the two have a leader (etcd's /health says so).
        etcd.wait_healthy(1, Duration::from_secs(15))?;
        etcd.wait_healthy(2, Duration::from_secs(15))?;
        let (ok, err, took) = create("etcdon")?;
        notes.push(format!(
            "etcd member 0 killed: tenant creation through the LB {} in {took:?} {err}",
            if ok { "succeeded" } else { "FAILED" }
        ));
        std::thread::sleep(Duration::from_secs(4));
        etcd.kill_member(1)?;
        std::thread::sleep(Duration::from_secs(1));
        let (ok, err, took) = create("etcdno")?;
        notes.push(format!(
            "etcd members 0 and 1 killed (no quorum): tenant creation {} in {took:?}: {err}",
            if ok { "SUCCEEDED" } else { "refused" }
        ));
        std::thread::sleep(Duration::from_secs(8));
        let t = Instant::now();
        etcd.restart_member(1)?;
        etcd.restart_member(0)?;
        notes.push(format!(
            "etcd members back and healthy after {:?}",
            t.elapsed()
        ));
        let t = Instant::now();
        let mut back = None;
        while t.elapsed() < Duration::from_secs(30) {
            if create("etcdbk")?.0 {
                back = Some(t.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        notes.push(format!("tenant creation worked again after {back:?}"));
        Ok(notes)
    })?;
    for n in &notes {
        report.push(n.clone());
    }
    report.push(format!("(c) etcd members down: {}", c.summary()));
    check("(c) etcd members down", &c, 0, &mut failures);
    if !notes.first().is_some_and(|n| n.contains("succeeded")) {
        failures.push(format!(
            "(c) tenant creation with one etcd member down: {notes:?}"
        ));
    }
    match notes.get(1) {
        Some(n) if n.contains("refused") && (n.contains("503") || n.contains("navailable")) => {}
        other => failures.push(format!(
            "(c) tenant creation without etcd quorum was not refused with a clear 503: {other:?}"
        )),
    }
    if !notes.get(3).is_some_and(|n| n.contains("Some(")) {
        failures.push(format!("(c) tenant creation did not work again: {notes:?}"));
    }
    let (_, ns) = rt
        .block_on(admin.send(
            Method::GET,
            "/api/v1/namespaces",
            None,
            Duration::from_secs(10),
        ))
        .map_err(|e| anyhow::anyhow!("listing namespaces upstream: {e}"))?;
    if String::from_utf8_lossy(&ns).contains("\"etcdno-") {
        failures.push("(c) the refused tenant creation left namespaces upstream".into());
    }

    for r in replicas {
        let log = std::fs::read_to_string(r.log_path()).unwrap_or_default();
        if log.contains("panicked") {
            failures.push(format!("{} panicked (see its log)", r.log_path().display()));
        }
    }
    println!("\n== HA behind HAProxy ==");
    for r in &report {
        println!("  {r}");
    }
    if !failures.is_empty() {
        let logs: PathBuf = r1.log_path().to_path_buf();
        bail!(
            "{} check(s) failed:\n  {}\n--- replica 1 log tail ---\n{}\n--- haproxy log ---\n{}",
            failures.len(),
            failures.join("\n  "),
            tail_file(&logs, 30),
            tail_file(&lb.log, 30)
        );
    }
    Ok(())
}
