//! The noisy-neighbour benchmark (docs/performance.md "Noisy neighbour"): tenant B runs a
//! steady load of small GETs, first alone, then while tenant A runs an unbounded-rate loop of
//! LISTs, writes and watch opens; then alone again. B's latency and errors with A versus alone
//! (same run), A's answers by status (429 = refused by a fair-share limit), paddock's and the
//! apiserver's CPU.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
use crate::noisy_split;
use crate::stats::{ms, pct};

/// Tenants of the benchmark.
pub const NOISY: &str = "noisya";
pub const QUIET: &str = "quietb";

/// B's side of one phase.
#[derive(Default)]
pub struct Phase {
    pub lat_ms: Vec<f64>,
    /// When each request of `lat_ms` was sent, seconds from the phase's start.
    pub sent_s: Vec<f64>,
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
async fn quiet_load(b: &Api, path: &str, rate: u32, secs: u64, procs: Procs) -> Phase {
    let (cpu_p, cpu_a) = (procs.paddock.cpu_mark(), procs.apiserver.cpu_mark());
    let t0 = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut set = JoinSet::new();
    while t0.elapsed() < Duration::from_secs(secs) {
        tick.tick().await;
        let (b, path) = (b.clone(), path.to_owned());
        set.spawn(async move {
            let s = Instant::now();
            let sent = s.duration_since(t0).as_secs_f64();
            let r = b.call(Method::GET, &path, None).await;
            let lat = s.elapsed().as_secs_f64() * 1e3;
            match r {
                Ok((st, _)) if st.is_success() => Ok((sent, lat)),
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
            Ok(Ok((sent, lat))) => {
                phase.sent_s.push(sent);
                phase.lat_ms.push(lat);
            }
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
    phase.paddock_cpu_s = procs.paddock.cpu_secs_since(&cpu_p);
    phase.apiserver_cpu_s = procs.apiserver.cpu_secs_since(&cpu_a);
    phase
}

/// [`quiet_load`] on a thread and a tokio runtime of its own, with a client of its own (its
/// connection's task in that runtime too), warmed by one untimed GET: B's latencies do not
/// include waits for the harness's runtime, busy with A's workers.
async fn quiet_load_apart(t: &Target, path: &str, rate: u32, secs: u64, procs: Procs) -> Phase {
    let failed = |e: String| Phase {
        errors: 1,
        first_error: Some(e),
        wall_s: 1.0,
        ..Phase::default()
    };
    let b = match Api::new(&t.b_cred, Proto::H2) {
        Ok(b) => b.with_headers(t.b_headers.clone()),
        Err(e) => return failed(format!("B's client: {e:#}")),
    };
    let path = path.to_owned();
    let run = move || -> Phase {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return failed(format!("B's runtime: {e}")),
        };
        rt.block_on(async {
            if let Err(e) = b.ok(Method::GET, &path, None).await {
                return failed(format!("B's warm-up GET: {e:#}"));
            }
            quiet_load(&b, &path, rate, secs, procs).await
        })
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(phase) => phase,
        Err(e) => failed(format!("B's thread: {e}")),
    }
}

/// Where the two tenants' requests go: through paddock (the tenants' certificates, their
/// namespace `default`), or straight to the apiserver (the upstream admin's certificate
/// impersonating the identities paddock sends upstream, in the upstream namespaces).
pub struct Target {
    pub name: &'static str,
    pub a: Api,
    /// B's certificate and the headers it adds (impersonation, straight at the apiserver):
    /// each phase makes B a client of its own on a thread and runtime of its own.
    pub b_cred: Cred,
    pub b_headers: http::HeaderMap,
    pub a_ns: String,
    pub b_ns: String,
    /// A's requests in all per second (None: as fast as answers come).
    pub a_rate: Option<f64>,
    /// paddock's platform admin, to scrape paddock's metrics (None when paddock is bypassed).
    pub padmin: Option<Api>,
}

/// A's requests spread at a fixed total rate: the direct run's A sends what paddock let
/// through in the paddock run, so both runs load the apiserver alike.
struct Pacer {
    t0: Instant,
    rate: f64,
    n: AtomicU64,
}

impl Pacer {
    async fn wait(&self) {
        let k = self.n.fetch_add(1, Ordering::Relaxed);
        let at = self.t0 + Duration::from_secs_f64(k as f64 / self.rate);
        tokio::time::sleep_until(at.into()).await;
    }
}

/// One of A's workers: LIST, write, watch open, as fast as answers come (or as the pacer
/// allows), until `stop`.
async fn noisy_worker(
    a: Api,
    ns: String,
    i: usize,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    pacer: Option<Arc<Pacer>>,
) {
    let mut n = 0u64;
    while !stop.load(Ordering::Acquire) {
        if let Some(p) = &pacer {
            p.wait().await;
        }
        n += 1;
        let (what, r) = match n % 3 {
            0 => (
                "list",
                a.send(
                    Method::GET,
                    &format!("/api/v1/namespaces/{ns}/configmaps?limit=500"),
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
                        &format!("/api/v1/namespaces/{ns}/configmaps/w{}", i % 8),
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
                    &format!("/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=5"),
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

/// B's samples of several repetitions together: with A, and alone (before and after).
struct Pooled {
    with: Vec<f64>,
    alone: Vec<f64>,
    with_errors: usize,
}

impl Pooled {
    fn of(runs: &[Measured]) -> Pooled {
        Pooled {
            with: runs
                .iter()
                .flat_map(|m| m.with.lat_ms.iter().copied())
                .collect(),
            alone: runs
                .iter()
                .flat_map(|m| m.alone.lat_ms.iter().copied())
                .collect(),
            with_errors: runs.iter().map(|m| m.with.errors).sum(),
        }
    }

    fn ratio(&self) -> f64 {
        pct(&self.with, 99.0) / pct(&self.alone, 99.0)
    }

    /// One line per repetition, then the pooled figure with its bootstrap interval.
    fn section(&self, runs: &[Measured], secs: u64) -> String {
        let mut out = format!(
            "### Noisy neighbour through paddock, {} repetitions pooled\n\n| repetition | B alone p99 ms | B with A p99 ms | ratio (95 % interval) | A sent/s | A admitted/s | B errors |\n|---|---|---|---|---|---|---|\n",
            runs.len()
        );
        for (i, m) in runs.iter().enumerate() {
            let (lo, hi) = crate::stats::p99_ratio_interval(&m.with.lat_ms, &m.alone.lat_ms, 400);
            let sent: u64 = m.a_counts.values().sum();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} ({}-{}) | {:.0} | {:.0} | {} |",
                i + 1,
                ms(pct(&m.alone.lat_ms, 99.0)),
                ms(pct(&m.with.lat_ms, 99.0)),
                crate::stats::ratio(m.ratio()),
                crate::stats::ratio(lo),
                crate::stats::ratio(hi),
                sent as f64 / secs.max(1) as f64,
                m.a_admitted_rate(secs),
                m.with.errors,
            );
        }
        let (lo, hi) = crate::stats::p99_ratio_interval(&self.with, &self.alone, 400);
        let _ = writeln!(
            out,
            "| pooled ({} with A, {} alone) | {} | {} | **{}** ({}-{}) | | | {} |\n",
            self.with.len(),
            self.alone.len(),
            ms(pct(&self.alone, 99.0)),
            ms(pct(&self.with, 99.0)),
            crate::stats::ratio(self.ratio()),
            crate::stats::ratio(lo),
            crate::stats::ratio(hi),
            self.with_errors,
        );
        out
    }
}

/// The figures of one target.
struct Measured {
    before: Phase,
    with: Phase,
    after: Phase,
    alone: Phase,
    a_counts: BTreeMap<(&'static str, String), u64>,
    apf: String,
    split: String,
    /// Load averages when A started and when it stopped.
    load: [String; 2],
}

impl Measured {
    fn ratio(&self) -> f64 {
        pct(&self.with.lat_ms, 99.0) / pct(&self.alone.lat_ms, 99.0)
    }

    /// A's requests that were not refused with 429 (what went upstream), per second.
    fn a_admitted_rate(&self, secs: u64) -> f64 {
        let n: u64 = self
            .a_counts
            .iter()
            .filter(|((_, code), _)| code != "429" && code != "transport error")
            .map(|(_, n)| n)
            .sum();
        n as f64 / secs.max(1) as f64
    }
}

/// B alone, B with A, B alone again, against one target.
async fn measure(
    admin: &Api,
    t: &Target,
    procs: Procs,
    secs: u64,
    b_rate: u32,
    a_workers: usize,
) -> Measured {
    let b_path = format!("/api/v1/namespaces/{}/configmaps/probe", t.b_ns);
    let alone_secs = (secs / 2).max(5);
    let mut scrapes = Vec::new();
    let mut scrape_error = None;
    let mut take = |r: Result<noisy_split::Scrape>| match r {
        Ok(s) => scrapes.push(s),
        Err(e) => {
            scrape_error.get_or_insert(format!("{e:#}"));
        }
    };
    take(noisy_split::scrape(t.padmin.as_ref(), admin).await);
    eprintln!("  [{}] B alone: {b_rate} GET/s for {alone_secs} s", t.name);
    let before = quiet_load_apart(t, &b_path, b_rate, alone_secs, procs).await;
    take(noisy_split::scrape(t.padmin.as_ref(), admin).await);
    eprintln!("  [{}] B with A ({a_workers} workers): {secs} s", t.name);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let apf_before = crate::apf::snapshot(admin).await;
    let load_start = crate::procstat::loadavg();
    let pacer = t.a_rate.filter(|r| *r > 0.0).map(|rate| {
        Arc::new(Pacer {
            t0: Instant::now(),
            rate,
            n: AtomicU64::new(0),
        })
    });
    let mut noisy = JoinSet::new();
    for i in 0..a_workers {
        noisy.spawn(noisy_worker(
            t.a.clone(),
            t.a_ns.clone(),
            i,
            stop.clone(),
            counts.clone(),
            pacer.clone(),
        ));
    }
    let with = quiet_load_apart(t, &b_path, b_rate, secs, procs).await;
    stop.store(true, Ordering::Release);
    while noisy.join_next().await.is_some() {}
    take(noisy_split::scrape(t.padmin.as_ref(), admin).await);
    let load_end = crate::procstat::loadavg();
    let a_counts = counts.take();
    let apf = match (apf_before, crate::apf::snapshot(admin).await) {
        (Ok(b), Ok(a)) => crate::apf::table(&b, &a),
        (Err(e), _) | (_, Err(e)) => {
            format!("(the apiserver's APF metrics could not be read: {e:#})\n")
        }
    };
    // Let A's last watches and writes settle before B runs alone again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    eprintln!("  [{}] B alone again: {alone_secs} s", t.name);
    let after = quiet_load_apart(t, &b_path, b_rate, alone_secs, procs).await;

    let split = match scrape_error {
        Some(e) => format!("(the servers' metrics could not be read: {e})\n"),
        None => noisy_split::table(
            &[
                ("alone (before)", before.lat_ms.as_slice()),
                ("with A", with.lat_ms.as_slice()),
            ],
            &scrapes,
        ),
    };
    let mut alone = Phase {
        lat_ms: before.lat_ms.iter().chain(&after.lat_ms).copied().collect(),
        sent_s: Vec::new(),
        errors: before.errors + after.errors,
        first_error: before.first_error.clone().or(after.first_error.clone()),
        paddock_cpu_s: before.paddock_cpu_s + after.paddock_cpu_s,
        apiserver_cpu_s: before.apiserver_cpu_s + after.apiserver_cpu_s,
        wall_s: before.wall_s + after.wall_s,
    };
    if alone.wall_s == 0.0 {
        alone.wall_s = 1.0;
    }
    Measured {
        before,
        with,
        after,
        alone,
        a_counts,
        apf,
        split,
        load: [load_start, load_end],
    }
}

/// B's requests with A by when they were sent (windows of `window` s): is the tail spread
/// over the phase or bunched (A's start, a burst)?
fn timeline(with: &Phase, alone_p50: f64, window: f64) -> String {
    let slow = 4.0 * alone_p50;
    let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (s, l) in with.sent_s.iter().zip(&with.lat_ms) {
        by.entry((s / window) as u64).or_default().push(*l);
    }
    let mut out = format!(
        "| B with A, sent in second | requests | p50 ms | p99 ms | max ms | over {} ms (4x alone p50) |\n|---|---|---|---|---|---|\n",
        ms(slow)
    );
    for (w, l) in by {
        let from = w as f64 * window;
        let _ = writeln!(
            out,
            "| {from:.0}-{:.0} | {} | {} | {} | {} | {} |",
            from + window,
            l.len(),
            ms(pct(&l, 50.0)),
            ms(pct(&l, 99.0)),
            ms(pct(&l, 100.0)),
            l.iter().filter(|x| **x > slow).count(),
        );
    }
    out
}

fn section(t: &Target, m: &Measured, secs: u64, b_rate: u32, a_workers: usize) -> String {
    let alone_secs = (secs / 2).max(5);
    let mut out = String::new();
    let pace = match t.a_rate {
        Some(r) => format!("paced at {r:.0} requests/s in all"),
        None => "unbounded".into(),
    };
    let _ = writeln!(
        out,
        "### Noisy neighbour, {}\n\nTenant B: {b_rate} GETs of one ConfigMap per second (HTTP/2, open loop), alone for {alone_secs} s, then for {secs} s while tenant A runs {a_workers} workers ({pace}) in a loop of LIST (100 ConfigMaps, limit=500), merge-patch of a ConfigMap and watch open (dropped at once), then alone again for {alone_secs} s. Tenant A's limits: the server's defaults unless a note above says otherwise. Load average when A started: {}; when it stopped: {}.\n",
        t.name, m.load[0], m.load[1]
    );
    let _ = writeln!(
        out,
        "| B | requests | p50 ms | p99 ms | errors | paddock CPU (cores) | apiserver CPU (cores) |\n|---|---|---|---|---|---|---|"
    );
    let _ = writeln!(out, "{}", m.before.line("alone (before)"));
    let _ = writeln!(out, "{}", m.with.line("with A"));
    let _ = writeln!(out, "{}", m.after.line("alone (after)"));
    let _ = writeln!(out, "{}", m.alone.line("alone (both)"));
    let (lo, hi) = crate::stats::p99_ratio_interval(&m.with.lat_ms, &m.alone.lat_ms, 400);
    let _ = writeln!(
        out,
        "\nB's p99 with A / alone (both): {} (95 % bootstrap interval {}-{}: how much this run's ratio owes to its few slowest samples).",
        crate::stats::ratio(m.ratio()),
        crate::stats::ratio(lo),
        crate::stats::ratio(hi),
    );
    let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut refused = 0;
    let mut total = 0;
    for ((what, code), n) in &m.a_counts {
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
    if let Some(e) = &m.with.first_error {
        let _ = writeln!(out, "- B's first error with A: {e}");
    }
    let _ = writeln!(
        out,
        "\nWhere B's GETs spent their time (each server's own histogram, scraped at the phases' boundaries):\n\n{}",
        m.split
    );
    let _ = writeln!(
        out,
        "B's GETs with A over time:\n\n{}",
        timeline(&m.with, pct(&m.alone.lat_ms, 50.0), 5.0)
    );
    let _ = writeln!(
        out,
        "Upstream API Priority and Fairness while A ran (the apiserver's counters, per FlowSchema):\n\n{}",
        m.apf
    );
    out
}

/// What [`run`] measured.
pub struct Outcome {
    /// Through paddock: B's p99 with A / alone, and B's errors with A (None: not run, a
    /// sweep of the direct reference only).
    pub through: Option<(f64, usize)>,
    /// The same straight at the apiserver: A's rate (paced), B's p99 ratio, B's errors.
    pub direct: Vec<(f64, f64, usize)>,
    pub report: String,
}

/// The tenants' objects: B's ConfigMap; A's 100 ConfigMaps to LIST and 8 to write (created
/// as the upstream admin).
async fn set_up(admin: &Api, b: &Api) -> Result<()> {
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
    Ok(())
}

/// The clients of the two tenants and of the upstream admin.
pub struct Creds<'a> {
    pub admin: &'a Cred,
    pub a: &'a Cred,
    pub b: &'a Cred,
}

/// How the benchmark runs: its phases' length, the two tenants' loads, and the direct
/// reference.
pub struct Shape {
    pub secs: u64,
    pub b_rate: u32,
    pub a_workers: usize,
    /// Then run straight at the apiserver, A paced at paddock's admitted rate.
    pub direct: bool,
    /// Run only straight at the apiserver, once per rate of A (requests per second in all):
    /// what rate of A's work the apiserver itself tolerates beside B.
    pub direct_rates: Vec<f64>,
    /// Through paddock, the three phases this many times in a row (at least 1); with more
    /// than one, the goal's figure is the ratio of B's pooled samples.
    pub repeat: usize,
}

/// The target straight at the apiserver: the upstream admin impersonating the tenants'
/// upstream identities, A paced at `rate`.
fn straight(creds: &Creds<'_>, rate: f64) -> Result<Target> {
    Ok(Target {
        name: "straight at the apiserver (no paddock)",
        a: Api::new(creds.admin, Proto::H2)?.with_headers(creds.a.impersonation_headers()?),
        b_cred: creds.admin.clone(),
        b_headers: creds.b.impersonation_headers()?,
        a_ns: format!("{NOISY}-default"),
        b_ns: format!("{QUIET}-default"),
        a_rate: Some(rate),
        padmin: None,
    })
}

/// Runs the benchmark through paddock and, with `direct`, then straight at the apiserver;
/// or, with `direct_rates`, only straight at the apiserver at each rate.
pub async fn run(
    admin: &Api,
    padmin: &Api,
    creds: Creds<'_>,
    procs: Procs,
    shape: &Shape,
) -> Result<Outcome> {
    let (secs, b_rate, a_workers) = (shape.secs, shape.b_rate, shape.a_workers);
    if !shape.direct_rates.is_empty() {
        set_up(admin, &Api::new(creds.b, Proto::H2)?).await?;
        let mut outcome = Outcome {
            through: None,
            direct: Vec::new(),
            report: String::new(),
        };
        for rate in &shape.direct_rates {
            let target = straight(&creds, *rate)?;
            let d = measure(admin, &target, procs, secs, b_rate, a_workers).await;
            outcome
                .report
                .push_str(&section(&target, &d, secs, b_rate, a_workers));
            outcome.direct.push((*rate, d.ratio(), d.with.errors));
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        return Ok(outcome);
    }
    let through = Target {
        name: "through paddock",
        a: Api::new(creds.a, Proto::H2)?,
        b_cred: creds.b.clone(),
        b_headers: http::HeaderMap::new(),
        a_ns: "default".into(),
        b_ns: "default".into(),
        a_rate: None,
        padmin: Some(padmin.clone()),
    };
    set_up(admin, &Api::new(creds.b, Proto::H2)?).await?;
    let mut runs = Vec::new();
    let mut report = String::new();
    for i in 0..shape.repeat.max(1) {
        if i > 0 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            eprintln!(
                "  [through paddock] repetition {} of {}",
                i + 1,
                shape.repeat
            );
        }
        let m = measure(admin, &through, procs, secs, b_rate, a_workers).await;
        report.push_str(&section(&through, &m, secs, b_rate, a_workers));
        runs.push(m);
    }
    let pooled = Pooled::of(&runs);
    if runs.len() > 1 {
        report.push_str(&pooled.section(&runs, secs));
    }
    let mut outcome = Outcome {
        through: Some((pooled.ratio(), pooled.with_errors)),
        direct: Vec::new(),
        report: String::new(),
    };
    let Some(m) = runs.last() else {
        anyhow::bail!("no repetition ran");
    };
    if shape.direct {
        // Separate connections for A and B, as through paddock.
        let rate = m.a_admitted_rate(secs);
        let target = straight(&creds, rate)?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let d = measure(admin, &target, procs, secs, b_rate, a_workers).await;
        report.push_str(&section(&target, &d, secs, b_rate, a_workers));
        outcome.direct.push((rate, d.ratio(), d.with.errors));
    }
    outcome.report = report;
    Ok(outcome)
}
