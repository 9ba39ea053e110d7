//! Upstream faults as a tenant sees them: under a bounded mixed load
//! with open watches, the test bed's kube-apiserver is frozen (SIGSTOP) for 30 s, then killed
//! and started again. paddock (one replica, `--upstream-timeout 5s`) must answer every request
//! within its timeout with a `Status` that names no internal address, turn unready while the
//! upstream does not answer and ready again after, end watches with an ERROR event that
//! clients resume from, and work again within seconds of the apiserver's return, without a
//! restart of its own. About 2 min.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http::Method;
use paddock_e2e::ha::Apiserver;
use paddock_e2e::http::Tls;
use paddock_e2e::load::{self, Spec, TenantLoad};
use paddock_e2e::process::tail_lines;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use serde_json::Value;

const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);
/// Slack on top of the timeout for paddock's own work and a busy machine.
const SLACK: Duration = Duration::from_secs(2);
const FREEZE: Duration = Duration::from_secs(30);

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")
}

/// The HTTP status of `/readyz` (0 when there is no answer).
fn readyz(rt: &tokio::runtime::Runtime, probe: &Tls) -> u16 {
    rt.block_on(probe.send(Method::GET, "/readyz", None, Duration::from_secs(3)))
        .map(|(s, _)| s.as_u16())
        .unwrap_or(0)
}

/// Polls `f` every 100 ms until it holds, at most `limit`; the time it took.
fn until(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[derive(Default, Debug)]
struct Timeline {
    freeze: Duration,
    unready_after: Option<Duration>,
    ready_during_freeze: u32,
    kill: Duration,
    apiserver_ready: Duration,
    apiserver_start_took: Duration,
    ready_after: Option<Duration>,
    get_after: Option<Duration>,
    create_after: Option<Duration>,
    /// `paddock_upstream_up` while frozen (after /readyz turned 503) and after the return.
    metric_during: String,
    metric_after: String,
}

/// The `paddock_upstream_up` line of `/metrics` (platform-admin certificate).
fn upstream_up(rt: &tokio::runtime::Runtime, admin: &Tls) -> String {
    rt.block_on(admin.send(Method::GET, "/metrics", None, Duration::from_secs(3)))
        .map(|(_, b)| {
            String::from_utf8_lossy(&b)
                .lines()
                .find(|l| l.starts_with("paddock_upstream_up "))
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default()
}

#[test]
fn upstream_frozen_then_killed_and_restarted() -> Result<()> {
    let cp = ControlPlane::start()?;
    let timeout = format!("{}s", UPSTREAM_TIMEOUT.as_secs());
    let p = Paddock::start_with_args(
        &cp,
        StoreKind::Etcd,
        "paddock",
        // Text logs, to check that a log file gets no terminal colour codes.
        &[
            "--upstream-timeout".into(),
            timeout,
            "--log-format".into(),
            "text".into(),
        ],
    )?;
    let pid = p.pid().context("paddock pid")?;
    let kc = p.tenant("faulty")?;
    let mut api = Apiserver::of(&cp)?;
    let api_port = cp
        .apiserver_url()?
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let rt = runtime()?;
    let probe = Tls::from_kubeconfig(&p.admin_kubeconfig(), None)?;
    let tenant = Tls::from_kubeconfig(&kc, None)?;
    let admin = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    if readyz(&rt, &probe) != 200 {
        bail!("paddock not ready at the start");
    }
    let spec = Spec {
        run: "faults".into(),
        workers: 2,
        watches: 2,
        duration: Duration::from_secs(75),
        max_requests: 20_000,
        pause: Duration::from_millis(50),
        // Longer than paddock's bound: a request still unanswered at this point is a failure
        // of the bound itself.
        request_timeout: UPSTREAM_TIMEOUT + Duration::from_secs(15),
    };
    let spec_workers = spec.workers;
    let tenants = vec![TenantLoad {
        tenant: "faulty".into(),
        kubeconfig: kc.clone(),
        server: p.url().to_owned(),
        namespace: "default".into(),
    }];
    // A cluster-wide watch (paddock fans it out over the tenant's namespaces): it too must end
    // with an ERROR event and a clean end of stream.
    let fan_tls = tenant.clone();
    let fanout = std::thread::spawn(move || -> Result<(bool, String)> {
        runtime()?.block_on(async move {
            use http_body_util::BodyExt;
            let resp = fan_tls
                .start(Method::GET, "/api/v1/configmaps?watch=1", None)
                .await
                .map_err(|e| anyhow::anyhow!("cluster-wide watch: {e}"))?;
            anyhow::ensure!(
                resp.status() == 200,
                "cluster-wide watch: {}",
                resp.status()
            );
            let mut body = resp.into_body();
            let mut text = Vec::new();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                match tokio::time::timeout_at(deadline, body.frame()).await {
                    Err(_) => return Ok((false, "still open after 60 s".into())),
                    Ok(None) => break,
                    Ok(Some(Err(e))) => {
                        return Ok((false, format!("broken: {}", paddock_e2e::http::chain(&e))));
                    }
                    Ok(Some(Ok(f))) => {
                        if let Ok(d) = f.into_data() {
                            text.extend_from_slice(&d);
                        }
                    }
                }
            }
            let text = String::from_utf8_lossy(&text).into_owned();
            let last = text.lines().last().unwrap_or("").to_owned();
            Ok((last.contains("\"type\":\"ERROR\""), last))
        })
    });
    // And kubectl's own watch (the pinned kubectl), as an operator tried it: its output is
    // reported (kubectl get -w never re-watches; it must not die of a reset stream).
    let kubectl_log = cp.dir().join("logs").join("kubectl-watch.log");
    let mut kubectl_watch = std::process::Command::new(paddock_e2e::kubectl::find_kubectl()?)
        .arg("--kubeconfig")
        .arg(&kc)
        .args([
            "get",
            "configmaps",
            "-n",
            "default",
            "-w",
            "--request-timeout=0",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(std::fs::File::create(
            &kubectl_log,
        )?))
        .stderr(std::process::Stdio::from(std::fs::File::create(
            kubectl_log.with_extension("err"),
        )?))
        .spawn()
        .context("starting kubectl get -w")?;
    let t0 = Instant::now();
    let load_admin = admin.clone();
    let load =
        std::thread::spawn(move || runtime()?.block_on(load::run(tenants, spec, load_admin)));

    // ---- the fault ----------------------------------------------------------------------
    let mut tl = Timeline::default();
    let disrupt = (|| -> Result<()> {
        std::thread::sleep(Duration::from_secs(6));
        api.freeze();
        tl.freeze = t0.elapsed();
        let frozen = Instant::now();
        tl.unready_after = until(Duration::from_secs(20), || readyz(&rt, &probe) == 503);
        tl.metric_during = upstream_up(&rt, &probe);
        while frozen.elapsed() < FREEZE {
            if readyz(&rt, &probe) == 200 {
                tl.ready_during_freeze += 1;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        api.kill()?;
        tl.kill = t0.elapsed();
        std::thread::sleep(Duration::from_secs(3));
        tl.apiserver_start_took = api.start(&cp)?;
        tl.apiserver_ready = t0.elapsed();
        let back = Instant::now();
        tl.ready_after =
            until(Duration::from_secs(30), || readyz(&rt, &probe) == 200).map(|_| back.elapsed());
        tl.get_after = until(Duration::from_secs(30), || {
            rt.block_on(tenant.send(
                Method::GET,
                "/api/v1/namespaces/default/configmaps",
                None,
                Duration::from_secs(10),
            ))
            .is_ok_and(|(s, _)| s.as_u16() == 200)
        })
        .map(|_| back.elapsed());
        let body =
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"after-"}}"#;
        // (Polled: a scrape may race the probe that turned it back.)
        until(Duration::from_secs(5), || {
            tl.metric_after = upstream_up(&rt, &probe);
            tl.metric_after == "paddock_upstream_up 1"
        });
        tl.create_after = until(Duration::from_secs(30), || {
            rt.block_on(tenant.send(
                Method::POST,
                "/api/v1/namespaces/default/configmaps",
                Some(("application/json", body.to_vec())),
                Duration::from_secs(10),
            ))
            .is_ok_and(|(s, _)| s.as_u16() == 201)
        })
        .map(|_| back.elapsed());
        Ok(())
    })();
    let report = load
        .join()
        .map_err(|_| anyhow::anyhow!("the load thread panicked"))??;
    // Whatever happened, never leave the apiserver frozen.
    api.thaw();
    let kubectl_exit = match kubectl_watch.try_wait() {
        Ok(Some(s)) => s.to_string(),
        _ => {
            let _ = kubectl_watch.kill();
            let _ = kubectl_watch.wait();
            "still running at the end (killed)".to_owned()
        }
    };
    let kubectl_err =
        std::fs::read_to_string(kubectl_log.with_extension("err")).unwrap_or_default();
    disrupt?;
    let fanout = fanout
        .join()
        .map_err(|_| anyhow::anyhow!("the cluster-wide watch thread panicked"))??;

    // ---- checks -------------------------------------------------------------------------
    let mut failures = Vec::new();
    let bound = UPSTREAM_TIMEOUT + SLACK;
    let recovered =
        tl.apiserver_ready + tl.ready_after.unwrap_or_default() + Duration::from_secs(5);
    let mut codes = std::collections::BTreeMap::<u16, u32>::new();
    let mut cut_mid_body = 0;
    for f in &report.failures {
        let Some(code) = f.status else {
            // A short answer whose head paddock had relayed when the apiserver froze, and whose
            // body the frozen apiserver never finished: paddock cuts it at upstream_timeout
            // (its log says so). After a head no `Status` can follow; an apiserver that dies
            // mid-answer looks the same to its client. Only a request already under way at the
            // freeze may end so, one per load worker at most (counted below).
            if f.what.contains(paddock_e2e::http::CUT_MID_BODY)
                && f.at <= tl.freeze + Duration::from_millis(500)
                && f.latency <= bound
            {
                cut_mid_body += 1;
                continue;
            }
            failures.push(format!("no answer: {} after {:?}", f.what, f.latency));
            continue;
        };
        *codes.entry(code).or_default() += 1;
        if f.latency > bound {
            failures.push(format!(
                "answered after {:?} (> {bound:?}): {}",
                f.latency, f.what
            ));
        }
        match serde_json::from_str::<Value>(&f.body) {
            Ok(v) if v["kind"] == "Status" && v["code"] == code => {
                let msg = v["message"].as_str().unwrap_or("");
                if msg.contains("127.0.0.1") || msg.contains(&api_port) {
                    failures.push(format!("a Status names an internal address: {msg}"));
                }
            }
            _ => failures.push(format!("not a Status: {} {}", f.what, f.body)),
        }
        if f.at + Duration::from_secs(1) < tl.freeze || f.at > recovered {
            failures.push(format!(
                "failed outside the outage ({:?}, outage {:?}..{recovered:?}): {} {}",
                f.at, tl.freeze, f.what, f.body
            ));
        }
    }
    let log = std::fs::read_to_string(p.log_path()).unwrap_or_default();
    if cut_mid_body > spec_workers
        || (cut_mid_body > 0
            && !log.contains("upstream answer not complete within upstream_timeout"))
    {
        failures.push(format!(
            "{cut_mid_body} answer(s) broke after their head (at most {spec_workers}, one per worker in flight at the freeze, each logged by paddock as cut off)"
        ));
    }
    if report.max_latency > bound {
        failures.push(format!(
            "slowest answer {:?} > {bound:?}",
            report.max_latency
        ));
    }
    match tl.unready_after {
        Some(d) if d <= Duration::from_secs(15) => {}
        other => failures.push(format!(
            "/readyz did not turn 503 within 15 s of the freeze: {other:?}"
        )),
    }
    if tl.metric_during != "paddock_upstream_up 0" || tl.metric_after != "paddock_upstream_up 1" {
        failures.push(format!(
            "paddock_upstream_up: {:?} while frozen, {:?} after",
            tl.metric_during, tl.metric_after
        ));
    }
    if tl.ready_during_freeze > 0 {
        failures.push(format!(
            "/readyz answered 200 {} times while the apiserver was frozen",
            tl.ready_during_freeze
        ));
    }
    for (what, d) in [
        ("/readyz 200", tl.ready_after),
        ("a tenant GET", tl.get_after),
        ("a tenant create", tl.create_after),
    ] {
        match d {
            Some(d) if d <= Duration::from_secs(10) => {}
            other => failures.push(format!(
                "{what} not working within 10 s of the apiserver's return: {other:?}"
            )),
        }
    }
    for (i, w) in report.watches.iter().enumerate() {
        if w.error_events == 0 || w.resumes == 0 {
            failures.push(format!(
                "watch {i} did not end with an ERROR event and resume: {w:?}"
            ));
        }
    }
    if !report.missed_events.is_empty() {
        failures.push(format!("missed watch events: {:?}", report.missed_events));
    }
    if !report.lost_writes.is_empty() || !report.duplicated_writes.is_empty() {
        failures.push(format!(
            "writes lost {:?} / duplicated {:?}",
            report.lost_writes, report.duplicated_writes
        ));
    }
    if kubectl_err.contains("INTERNAL_ERROR") || kubectl_err.contains("127.0.0.1") {
        failures.push(format!("kubectl get -w: {kubectl_err}"));
    }
    if !fanout.0 {
        failures.push(format!(
            "the cluster-wide watch did not end with an ERROR event and a clean end: {}",
            fanout.1
        ));
    }
    if p.exited().is_some() || p.pid() != Some(pid) || p.restarts() > 0 {
        failures.push("paddock restarted or exited".into());
    }
    if log.contains("panicked") {
        failures.push("paddock panicked".into());
    }
    if log.contains('\u{1b}') {
        failures.push("paddock's text log file carries terminal colour codes".into());
    }
    if !log.contains("upstream stopped answering") {
        failures.push("paddock's log does not say that the upstream stopped answering".into());
    }
    println!(
        "\n== upstream frozen {FREEZE:?}, killed, restarted (upstream_timeout {UPSTREAM_TIMEOUT:?}) =="
    );
    println!("  {}", report.summary());
    println!("  answers cut after their head at the freeze: {cut_mid_body}");
    println!(
        "  failed requests by status: {codes:?}; slowest answer {:?}",
        report.max_latency
    );
    println!(
        "  frozen at {:.1} s; /readyz 503 after {:?}; killed at {:.1} s; apiserver ready again at {:.1} s (start took {:?}); then /readyz 200 after {:?}, tenant GET after {:?}, create after {:?}",
        tl.freeze.as_secs_f64(),
        tl.unready_after,
        tl.kill.as_secs_f64(),
        tl.apiserver_ready.as_secs_f64(),
        tl.apiserver_start_took,
        tl.ready_after,
        tl.get_after,
        tl.create_after
    );
    for (i, w) in report.watches.iter().enumerate() {
        println!(
            "  watch {i}: {} events, {} resumes, {} ERROR events ({:?}), {} re-lists",
            w.events,
            w.resumes,
            w.error_events,
            w.error_messages.first(),
            w.relists
        );
    }
    println!(
        "  cluster-wide (fan-out) watch ended cleanly after: {}",
        fanout.1
    );
    println!(
        "  kubectl get -w: {kubectl_exit}; stderr: {}",
        kubectl_err.trim()
    );
    for code in codes.keys() {
        if let Some(f) = report.failures.iter().find(|f| f.status == Some(*code)) {
            println!(
                "  a {code} as the tenant sees it (at {:?}, {}): {}",
                f.at, f.what, f.body
            );
        }
    }
    for f in report
        .failures
        .iter()
        .filter(|f| f.status.is_none())
        .take(5)
    {
        println!(
            "  no answer (at {:?}, after {:?}): {}",
            f.at, f.latency, f.what
        );
    }
    if !failures.is_empty() {
        // The failed checks come first and last, the log tail (paddock's own lines, not the
        // access log) between: CI shows only a window of a failing test's output.
        let list = format!(
            "{} check(s) failed:\n  {}",
            failures.len(),
            failures
                .iter()
                .take(30)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n  ")
        );
        let log_tail = tail_lines(
            &std::fs::read_to_string(p.log_path())
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.contains("paddock::access"))
                .collect::<Vec<_>>()
                .join("\n"),
            15,
        );
        bail!(
            "{list}\n--- paddock log tail (access log left out) ---\n{log_tail}\n--- again: {list}"
        );
    }
    Ok(())
}
