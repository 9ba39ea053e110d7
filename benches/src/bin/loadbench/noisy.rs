//! The noisy-neighbour benchmark (issue 16): tenant B runs a steady load of small GETs, first
//! alone, then while tenant A runs an unbounded-rate loop of LISTs, writes and watch opens;
//! then alone again. B's latency and errors with A versus alone (same run), A's answers by
//! status (429 = refused by a fair-share limit), paddock's and the apiserver's CPU.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use serde_json::json;
use tokio::task::JoinSet;

use crate::client::{Api, Cred, Proto};
use crate::load::Procs;
use crate::stats::{ms, pct};

/// Tenants of the benchmark.
pub const NOISY: &str = "noisya";
pub const QUIET: &str = "quietb";

/// B's side of one phase.
#[derive(Default)]
pub struct Phase {
    pub lat_ms: Vec<f64>,
    pub errors: usize,
    pub first_error: Option<String>,
    pub paddock_cpu_s: f64,
    pub apiserver_cpu_s: f64,
    pub wall_s: f64,
}

impl Phase {
    fn line(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} | {} | {} | {:.2} | {:.2} |",
            self.lat_ms.len(),
            ms(pct(&self.lat_ms, 50.0)),
            ms(pct(&self.lat_ms, 99.0)),
            self.errors,
            self.paddock_cpu_s / self.wall_s,
            self.apiserver_cpu_s / self.wall_s,
        )
    }
}

/// Counters of A's answers, by kind of request and status.
#[derive(Default)]
struct Counts(Mutex<BTreeMap<(&'static str, String), u64>>);

impl Counts {
    fn add(&self, what: &'static str, status: String) {
        if let Ok(mut m) = self.0.lock() {
            *m.entry((what, status)).or_default() += 1;
        }
    }
    fn take(&self) -> BTreeMap<(&'static str, String), u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// B's steady load: `rate` small GETs per second (open loop: a slow answer does not slow the
/// next request down) for `secs`.
async fn quiet_load(b: &Api, rate: u32, secs: u64, procs: Procs) -> Phase {
    let (cpu_p, cpu_a) = (procs.paddock.cpu_secs(), procs.apiserver.cpu_secs());
    let t0 = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut set = JoinSet::new();
    while t0.elapsed() < Duration::from_secs(secs) {
        tick.tick().await;
        let b = b.clone();
        set.spawn(async move {
            let s = Instant::now();
            let r = b
                .call(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps/probe",
                    None,
                )
                .await;
            let lat = s.elapsed().as_secs_f64() * 1e3;
            match r {
                Ok((st, _)) if st.is_success() => Ok(lat),
                Ok((st, body)) => Err(format!(
                    "{st}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                )),
                Err(e) => Err(format!("{e:#}")),
            }
        });
    }
    let mut phase = Phase::default();
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(lat)) => phase.lat_ms.push(lat),
            Ok(Err(e)) => {
                phase.errors += 1;
                phase.first_error.get_or_insert(e);
            }
            Err(e) => {
                phase.errors += 1;
                phase.first_error.get_or_insert(e.to_string());
            }
        }
    }
    phase.wall_s = t0.elapsed().as_secs_f64();
    phase.paddock_cpu_s = procs.paddock.cpu_secs() - cpu_p;
    phase.apiserver_cpu_s = procs.apiserver.cpu_secs() - cpu_a;
    phase
}

/// One of A's workers: LIST, write, watch open, as fast as answers come, until `stop`.
async fn noisy_worker(a: Api, i: usize, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut n = 0u64;
    while !stop.load(Ordering::Acquire) {
        n += 1;
        let (what, r) = match n % 3 {
            0 => (
                "list",
                a.send(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps?limit=500",
                    None,
                    "application/json",
                    "application/json",
                )
                .await,
            ),
            1 => {
                let body = json!({"data": {"n": n.to_string()}}).to_string();
                (
                    "write",
                    a.send(
                        Method::PATCH,
                        &format!("/api/v1/namespaces/default/configmaps/w{}", i % 8),
                        Some(Bytes::from(body)),
                        "application/merge-patch+json",
                        "application/json",
                    )
                    .await,
                )
            }
            _ => (
                "watch",
                a.send(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5",
                    None,
                    "application/json",
                    "application/json",
                )
                .await,
            ),
        };
        match r {
            Ok(resp) => {
                let code = resp.status().as_u16().to_string();
                // A watch is opened and dropped at once; anything else is read to its end.
                if what != "watch" {
                    let _ = resp.into_body().collect().await;
                }
                counts.add(what, code);
            }
            Err(_) => counts.add(what, "transport error".into()),
        }
    }
}

/// Runs the benchmark; returns (B with A p99 / B alone p99, B's errors with A, report text).
pub async fn run(
    admin: &Api,
    a_cred: &Cred,
    b_cred: &Cred,
    procs: Procs,
    secs: u64,
    b_rate: u32,
    a_workers: usize,
) -> Result<(f64, usize, String)> {
    let a = Api::new(a_cred, Proto::H2)?;
    let b = Api::new(b_cred, Proto::H2)?;
    // B's object; A's 100 ConfigMaps to LIST and 8 to write (created as the upstream admin).
    b.ok(
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        Some(Bytes::from(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}, "data": {"x": "y"}})
                .to_string(),
        )),
    )
    .await?;
    let mut set = JoinSet::new();
    for i in 0..108 {
        let admin = admin.clone();
        let name = if i < 8 {
            format!("w{i}")
        } else {
            format!("l{i}")
        };
        set.spawn(async move {
            admin
                .ok(
                    Method::POST,
                    &format!("/api/v1/namespaces/{NOISY}-default/configmaps"),
                    Some(Bytes::from(
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                               "data": {"payload": "x".repeat(512)}})
                        .to_string(),
                    )),
                )
                .await
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }

    let alone_secs = (secs / 2).max(5);
    eprintln!("  B alone: {b_rate} GET/s for {alone_secs} s");
    let before = quiet_load(&b, b_rate, alone_secs, procs).await;
    eprintln!("  B with A ({a_workers} workers, unbounded): {secs} s");
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let apf_before = crate::apf::snapshot(admin).await;
    let mut noisy = JoinSet::new();
    for i in 0..a_workers {
        noisy.spawn(noisy_worker(a.clone(), i, stop.clone(), counts.clone()));
    }
    let with = quiet_load(&b, b_rate, secs, procs).await;
    stop.store(true, Ordering::Release);
    while noisy.join_next().await.is_some() {}
    let a_counts = counts.take();
    let apf_with = match (apf_before, crate::apf::snapshot(admin).await) {
        (Ok(b), Ok(a)) => crate::apf::table(&b, &a),
        (Err(e), _) | (_, Err(e)) => {
            format!("(the apiserver's APF metrics could not be read: {e:#})\n")
        }
    };
    // Let A's last watches and writes settle before B runs alone again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    eprintln!("  B alone again: {alone_secs} s");
    let after = quiet_load(&b, b_rate, alone_secs, procs).await;

    let mut alone = Phase {
        lat_ms: before.lat_ms.iter().chain(&after.lat_ms).copied().collect(),
        errors: before.errors + after.errors,
        first_error: before.first_error.clone().or(after.first_error.clone()),
        paddock_cpu_s: before.paddock_cpu_s + after.paddock_cpu_s,
        apiserver_cpu_s: before.apiserver_cpu_s + after.apiserver_cpu_s,
        wall_s: before.wall_s + after.wall_s,
    };
    if alone.wall_s == 0.0 {
        alone.wall_s = 1.0;
    }
    let ratio = pct(&with.lat_ms, 99.0) / pct(&alone.lat_ms, 99.0);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Noisy neighbour\n\nTenant B: {b_rate} GETs of one ConfigMap per second (HTTP/2, open loop), alone for {alone_secs} s, then for {secs} s while tenant A runs {a_workers} workers in an unbounded loop of LIST (100 ConfigMaps, limit=500), merge-patch of a ConfigMap and watch open (dropped at once), then alone again for {alone_secs} s. Tenant A's limits: the server's defaults unless a note above says otherwise.\n"
    );
    let _ = writeln!(
        out,
        "| B | requests | p50 ms | p99 ms | errors | paddock CPU (cores) | apiserver CPU (cores) |\n|---|---|---|---|---|---|---|"
    );
    let _ = writeln!(out, "{}", before.line("alone (before)"));
    let _ = writeln!(out, "{}", with.line("with A"));
    let _ = writeln!(out, "{}", after.line("alone (after)"));
    let _ = writeln!(out, "{}", alone.line("alone (both)"));
    let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut refused = 0;
    let mut total = 0;
    for ((what, code), n) in &a_counts {
        by_kind
            .entry(what)
            .or_default()
            .push(format!("{code}: {n}"));
        total += n;
        if code == "429" {
            refused += n;
        }
    }
    let _ = writeln!(
        out,
        "\nTenant A: {total} requests in {secs} s ({:.0}/s), {refused} answered 429 ({:.1} %).",
        total as f64 / secs as f64,
        100.0 * refused as f64 / total.max(1) as f64
    );
    for (what, codes) in by_kind {
        let _ = writeln!(out, "- {what}: {}", codes.join(", "));
    }
    if let Some(e) = &with.first_error {
        let _ = writeln!(out, "- B's first error with A: {e}");
    }
    let _ = writeln!(
        out,
        "\nUpstream API Priority and Fairness while A ran (the apiserver's counters, per FlowSchema):\n\n{apf_with}"
    );
    let _ = writeln!(out);
    Ok((ratio, with.errors, out))
}
