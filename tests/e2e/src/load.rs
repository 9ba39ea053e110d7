//! The load generator of the HA tests: mixed reads, writes and watches from several tenants,
//! for a fixed time and at most a fixed count, counting what a client would notice.
//!
//! - writes: creates with `generateName` and a unique `seq` label (so "exactly once" is
//!   checkable upstream), merge patches of the worker's own objects (`data.n` counts up);
//! - reads: a GET of an own object, a LIST of the load's objects;
//! - watches: two per tenant on the load's objects; a watch that ends (cleanly, with an ERROR
//!   event, or with a broken connection) is resumed from its last resourceVersion, as
//!   client-go's reflector does; what each watch saw is compared with the final state.
//!
//! A request counts as failed when it got no answer, a broken connection or a status other
//! than the expected one. Requests the server provably never processed (refused stream,
//! connection refused) are retried as client-go does and counted as retries, not failures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::http::{Failure, Tls};

/// Label every object of one load run carries.
pub const RUN_LABEL: &str = "paddock-load";

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Value of [`RUN_LABEL`] on every object.
    pub run: String,
    /// Writers/readers per tenant.
    pub workers: usize,
    /// Watches per tenant.
    pub watches: usize,
    /// Stop after this long...
    pub duration: Duration,
    /// ...or after this many requests in all, whichever comes first.
    pub max_requests: u64,
    /// Pause after each request of a worker.
    pub pause: Duration,
    /// Per-request bound.
    pub request_timeout: Duration,
}

/// One tenant's share of the load: its kubeconfig (pointed at `server`), its namespace.
#[derive(Debug, Clone)]
pub struct TenantLoad {
    pub tenant: String,
    pub kubeconfig: PathBuf,
    pub server: String,
    /// The tenant's namespace (as the tenant names it) and its upstream name.
    pub namespace: String,
}

impl TenantLoad {
    fn upstream_namespace(&self) -> String {
        format!("{}-{}", self.tenant, self.namespace)
    }
}

/// One failed request.
#[derive(Debug, Clone)]
pub struct FailedRequest {
    /// When it was sent, since the load started.
    pub at: Duration,
    /// How long until the answer (or the failure).
    pub latency: Duration,
    /// The HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// Method, path and what went wrong.
    pub what: String,
    /// The answer's body (a `Status`), when there was one.
    pub body: String,
}

#[derive(Default)]
struct Shared {
    requests: AtomicU64,
    failures: parking_lot_free::Mutex<Vec<FailedRequest>>,
    /// seq -> name of creates the client saw acknowledged.
    acked_creates: parking_lot_free::Mutex<BTreeMap<String, String>>,
    /// seqs of creates whose outcome the client does not know.
    unknown_creates: parking_lot_free::Mutex<BTreeSet<String>>,
    /// name -> (last acknowledged n, highest n attempted).
    patches: parking_lot_free::Mutex<BTreeMap<String, (u64, u64)>>,
    writes_done: AtomicBool,
    stop_watches: AtomicBool,
    /// The slowest answer of any request (ms), failed or not.
    max_latency_ms: AtomicU64,
    /// The final state the watches compare themselves with (tenant -> name -> rv).
    targets: parking_lot_free::Mutex<Option<BTreeMap<String, BTreeMap<String, String>>>>,
}

/// A tiny mutex wrapper that cannot poison (no parking_lot in this crate).
mod parking_lot_free {
    #[derive(Default)]
    pub struct Mutex<T>(std::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub fn lock(&self) -> std::sync::MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}

/// What one watch saw.
#[derive(Debug, Default, Clone)]
pub struct WatchLog {
    /// name -> resourceVersion of the last event seen for it (removed on DELETED).
    pub seen: BTreeMap<String, String>,
    pub events: u64,
    /// Times the watch was started again from its last resourceVersion.
    pub resumes: u64,
    /// `ERROR` events received (with their messages, first few).
    pub error_events: u64,
    pub error_messages: Vec<String>,
    /// 410 Gone: the watch could not resume and had to re-list (events may have been missed).
    pub relists: u64,
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub elapsed: Duration,
    pub requests: u64,
    pub failures: Vec<FailedRequest>,
    /// Transparent retries of requests never processed.
    pub retries: u64,
    pub creates_acked: usize,
    pub patches_acked: usize,
    /// Acknowledged writes missing upstream (creates absent, patches overwritten by older).
    pub lost_writes: Vec<String>,
    /// Creates present more than once upstream.
    pub duplicated_writes: Vec<String>,
    pub watches: Vec<WatchLog>,
    /// Objects whose final resourceVersion some watch never saw.
    pub missed_events: Vec<String>,
    /// The slowest answer of any request (watches: until their headers).
    pub max_latency: Duration,
}

impl Report {
    pub fn failed(&self) -> usize {
        self.failures.len()
    }
    pub fn failure_rate(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.failures.len() as f64 / self.requests as f64
    }
    pub fn watch_events(&self) -> u64 {
        self.watches.iter().map(|w| w.events).sum()
    }
    pub fn watch_resumes(&self) -> u64 {
        self.watches.iter().map(|w| w.resumes).sum()
    }
    pub fn watch_error_events(&self) -> u64 {
        self.watches.iter().map(|w| w.error_events).sum()
    }
    pub fn relists(&self) -> u64 {
        self.watches.iter().map(|w| w.relists).sum()
    }
    /// One line for the test's output and docs/testing.md.
    pub fn summary(&self) -> String {
        format!(
            "{} requests in {:.1} s, {} failed ({:.3} %), {} transparent retries; {} creates and {} patches acknowledged, {} lost, {} duplicated; {} watch events, {} resumes ({} after an ERROR event), {} re-lists, {} missed events",
            self.requests,
            self.elapsed.as_secs_f64(),
            self.failed(),
            self.failure_rate() * 100.0,
            self.retries,
            self.creates_acked,
            self.patches_acked,
            self.lost_writes.len(),
            self.duplicated_writes.len(),
            self.watch_events(),
            self.watch_resumes(),
            self.watch_error_events(),
            self.relists(),
            self.missed_events.len()
        )
    }
}

/// Runs the load and checks the outcome against `admin` (the upstream, directly).
pub async fn run(tenants: Vec<TenantLoad>, spec: Spec, admin: Tls) -> Result<Report> {
    let shared = Arc::new(Shared::default());
    let t0 = Instant::now();
    let mut retries = Vec::new();
    let mut watch_tasks = Vec::new();
    for t in &tenants {
        for w in 0..spec.watches {
            let tls = Tls::from_kubeconfig(&t.kubeconfig, Some(&t.server))?;
            retries.push(tls.retries.clone());
            watch_tasks.push(tokio::spawn(watch_loop(
                tls,
                t.clone(),
                spec.clone(),
                shared.clone(),
                t0,
                w,
            )));
        }
    }
    // Let the watches list and start before the first write.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut workers = Vec::new();
    for t in &tenants {
        for w in 0..spec.workers {
            let tls = Tls::from_kubeconfig(&t.kubeconfig, Some(&t.server))?;
            retries.push(tls.retries.clone());
            workers.push(tokio::spawn(worker(
                tls,
                t.clone(),
                spec.clone(),
                shared.clone(),
                t0,
                w,
            )));
        }
    }
    for w in workers {
        w.await.context("a load worker panicked")?;
    }
    let elapsed = t0.elapsed();
    shared.writes_done.store(true, Ordering::Release);

    // The final state upstream, and the watches given time to catch up with it.
    let mut report = Report {
        elapsed,
        ..Report::default()
    };
    let mut finals = BTreeMap::new();
    for t in &tenants {
        finals.insert(t.tenant.clone(), upstream_state(&admin, t, &spec).await?);
    }
    let catch_up = Instant::now();
    loop {
        let done = watch_tasks.iter().all(|h| h.is_finished());
        if done || catch_up.elapsed() > Duration::from_secs(20) {
            break;
        }
        // Watches stop themselves once they match the final state; see watch_loop.
        publish_targets(&shared, &finals);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    shared.stop_watches.store(true, Ordering::Release);
    let mut watch_logs = Vec::new();
    for h in watch_tasks {
        watch_logs.push(h.await.context("a watch task panicked")?);
    }

    report.requests = shared.requests.load(Ordering::Acquire);
    report.max_latency = Duration::from_millis(shared.max_latency_ms.load(Ordering::Acquire));
    report.failures = shared.failures.lock().clone();
    report.retries = retries.iter().map(|r| r.load(Ordering::Relaxed)).sum();
    let acked = shared.acked_creates.lock().clone();
    let unknown = shared.unknown_creates.lock().clone();
    let patches = shared.patches.lock().clone();
    report.creates_acked = acked.len();
    report.patches_acked = patches.values().filter(|(n, _)| *n > 0).count();
    for (tenant, objs) in &finals {
        let mut by_seq: BTreeMap<&str, Vec<&Obj>> = BTreeMap::new();
        for o in objs.values() {
            by_seq.entry(o.seq.as_str()).or_default().push(o);
        }
        for (seq, name) in acked
            .iter()
            .filter(|(s, _)| s.starts_with(&format!("{tenant}-")))
        {
            match by_seq.get(seq.as_str()).map(Vec::len).unwrap_or(0) {
                0 => report
                    .lost_writes
                    .push(format!("create {seq} ({name}) acknowledged but absent")),
                1 => {}
                n => report
                    .duplicated_writes
                    .push(format!("create {seq} present {n} times")),
            }
        }
        for seq in unknown
            .iter()
            .filter(|s| s.starts_with(&format!("{tenant}-")))
        {
            let n = by_seq.get(seq.as_str()).map(Vec::len).unwrap_or(0);
            if n > 1 {
                report
                    .duplicated_writes
                    .push(format!("create {seq} (outcome unknown) present {n} times"));
            }
        }
        for (name, (acked_n, attempted)) in &patches {
            let Some(o) = objs.get(name) else { continue };
            if o.n < *acked_n || o.n > *attempted {
                report.lost_writes.push(format!(
                    "patch of {name}: upstream n={} but n={acked_n} was acknowledged (highest sent {attempted})",
                    o.n
                ));
            }
        }
    }
    for (i, log) in watch_logs.iter().enumerate() {
        let tenant = &tenants[i / spec.watches.max(1)].tenant;
        if let Some(objs) = finals.get(tenant) {
            for (name, o) in objs {
                if log.seen.get(name) != Some(&o.rv) {
                    report.missed_events.push(format!(
                        "watch {i} of {tenant}: {name} at rv {} (saw {:?})",
                        o.rv,
                        log.seen.get(name)
                    ));
                }
            }
        }
    }
    report.watches = watch_logs;
    // Leave nothing behind: the next run starts below the tenant's namespace quota
    // (1000 ConfigMaps).
    for t in &tenants {
        let path = format!(
            "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
            t.upstream_namespace(),
            spec.run
        );
        match admin
            .send(Method::DELETE, &path, None, Duration::from_secs(60))
            .await
        {
            Ok((s, _)) if s.is_success() => {}
            Ok((s, b)) => anyhow::bail!(
                "deleting the load's objects upstream: {s}: {}",
                String::from_utf8_lossy(&b)
            ),
            Err(e) => anyhow::bail!("deleting the load's objects upstream: {e}"),
        }
    }
    Ok(report)
}

fn publish_targets(shared: &Shared, finals: &BTreeMap<String, BTreeMap<String, Obj>>) {
    let t = finals
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.iter().map(|(n, o)| (n.clone(), o.rv.clone())).collect(),
            )
        })
        .collect();
    *shared.targets.lock() = Some(t);
}

fn target_reached(shared: &Shared, tenant: &str, seen: &BTreeMap<String, String>) -> bool {
    shared
        .targets
        .lock()
        .as_ref()
        .and_then(|t| t.get(tenant).map(|m| m == seen))
        .unwrap_or(false)
}

#[derive(Debug, Clone)]
struct Obj {
    rv: String,
    seq: String,
    n: u64,
}

async fn upstream_state(admin: &Tls, t: &TenantLoad, spec: &Spec) -> Result<BTreeMap<String, Obj>> {
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
        t.upstream_namespace(),
        spec.run
    );
    let (status, body) = admin
        .send(Method::GET, &path, None, Duration::from_secs(30))
        .await
        .map_err(|e| anyhow::anyhow!("listing the final state upstream: {e}"))?;
    anyhow::ensure!(
        status == StatusCode::OK,
        "listing the final state upstream: {status}"
    );
    let v: Value = serde_json::from_slice(&body)?;
    let mut out = BTreeMap::new();
    for item in v["items"].as_array().cloned().unwrap_or_default() {
        let name = item["metadata"]["name"].as_str().unwrap_or("").to_owned();
        out.insert(
            name,
            Obj {
                rv: item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                seq: item["metadata"]["labels"]["seq"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                n: item["data"]["n"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0),
            },
        );
    }
    Ok(out)
}

fn fail(shared: &Shared, f: FailedRequest) {
    if std::env::var_os("PADDOCK_E2E_VERBOSE").is_some() {
        eprintln!(
            "  [load +{:.2}s] FAILED after {:?}: {} {}",
            f.at.as_secs_f64(),
            f.latency,
            f.what,
            f.body
        );
    }
    shared.failures.lock().push(f);
}

fn note_latency(shared: &Shared, latency: Duration) {
    shared
        .max_latency_ms
        .fetch_max(latency.as_millis() as u64, Ordering::AcqRel);
}

/// Why a counted request did not succeed.
enum Missed {
    /// An answer with another status.
    Status(u16),
    /// No answer.
    NoAnswer,
}

/// Who sends a counted request.
struct Caller<'a> {
    tls: &'a Tls,
    shared: &'a Shared,
    t0: Instant,
    spec: &'a Spec,
}

/// One request with an expected status; counts it; returns the body when it matched.
async fn call(
    c: &Caller<'_>,
    method: Method,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
    want: StatusCode,
) -> Result<bytes::Bytes, Missed> {
    let (tls, shared, t0, spec) = (c.tls, c.shared, c.t0, c.spec);
    shared.requests.fetch_add(1, Ordering::AcqRel);
    let at = t0.elapsed();
    let started = Instant::now();
    let r = tls
        .send(method.clone(), path, body, spec.request_timeout)
        .await;
    let latency = started.elapsed();
    note_latency(shared, latency);
    match r {
        Ok((status, body)) if status == want => Ok(body),
        Ok((status, body)) => {
            fail(
                shared,
                FailedRequest {
                    at,
                    latency,
                    status: Some(status.as_u16()),
                    what: format!("{method} {path}: {status}"),
                    body: String::from_utf8_lossy(&body).into_owned(),
                },
            );
            Err(Missed::Status(status.as_u16()))
        }
        Err(e) => {
            fail(
                shared,
                FailedRequest {
                    at,
                    latency,
                    status: None,
                    what: format!("{method} {path}: {e}"),
                    body: String::new(),
                },
            );
            Err(Missed::NoAnswer)
        }
    }
}

async fn worker(tls: Tls, t: TenantLoad, spec: Spec, shared: Arc<Shared>, t0: Instant, w: usize) {
    let base = format!("/api/v1/namespaces/{}/configmaps", t.namespace);
    let mut mine: Vec<String> = Vec::new();
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut i: u64 = 0;
    let c = Caller {
        tls: &tls,
        shared: &shared,
        t0,
        spec: &spec,
    };
    while t0.elapsed() < spec.duration
        && shared.requests.load(Ordering::Acquire) < spec.max_requests
    {
        let op = if mine.is_empty() { 0 } else { i % 4 };
        match op {
            0 => {
                let seq = format!("{}-{w}-{i}", t.tenant);
                let obj = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"generateName": "load-", "labels": {RUN_LABEL: spec.run, "seq": seq}},
                    "data": {"n": "0"}
                });
                let body = serde_json::to_vec(&obj).unwrap_or_default();
                match call(
                    &c,
                    Method::POST,
                    &base,
                    Some(("application/json", body)),
                    StatusCode::CREATED,
                )
                .await
                {
                    Ok(b) => {
                        let name = serde_json::from_slice::<Value>(&b)
                            .ok()
                            .and_then(|v| v["metadata"]["name"].as_str().map(str::to_owned))
                            .unwrap_or_default();
                        shared.acked_creates.lock().insert(seq, name.clone());
                        mine.push(name);
                    }
                    // No answer, or a timeout answer (504: the upstream may have applied it
                    // after all): unknown. Any other answer means not created.
                    Err(Missed::NoAnswer | Missed::Status(504)) => {
                        shared.unknown_creates.lock().insert(seq);
                    }
                    Err(Missed::Status(_)) => {}
                }
            }
            1 => {
                let name = &mine[(i as usize / 4) % mine.len()];
                let _ = call(
                    &c,
                    Method::GET,
                    &format!("{base}/{name}"),
                    None,
                    StatusCode::OK,
                )
                .await;
            }
            2 => {
                let name = mine[(i as usize / 4) % mine.len()].clone();
                let n = counters.entry(name.clone()).or_insert(0);
                *n += 1;
                let n = *n;
                shared
                    .patches
                    .lock()
                    .entry(name.clone())
                    .or_insert((0, 0))
                    .1 = n;
                let body =
                    serde_json::to_vec(&json!({"data": {"n": n.to_string()}})).unwrap_or_default();
                if call(
                    &c,
                    Method::PATCH,
                    &format!("{base}/{name}"),
                    Some(("application/merge-patch+json", body)),
                    StatusCode::OK,
                )
                .await
                .is_ok()
                {
                    shared.patches.lock().entry(name).or_insert((0, 0)).0 = n;
                }
            }
            _ => {
                let _ = call(
                    &c,
                    Method::GET,
                    &format!("{base}?labelSelector={RUN_LABEL}%3D{}", spec.run),
                    None,
                    StatusCode::OK,
                )
                .await;
            }
        }
        i += 1;
        tokio::time::sleep(spec.pause).await;
    }
}

async fn watch_loop(
    tls: Tls,
    t: TenantLoad,
    spec: Spec,
    shared: Arc<Shared>,
    t0: Instant,
    _w: usize,
) -> WatchLog {
    let base = format!(
        "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
        t.namespace, spec.run
    );
    let mut log = WatchLog::default();
    let mut rv: Option<String> = None;
    let mut started = false;
    let c = Caller {
        tls: &tls,
        shared: &shared,
        t0,
        spec: &spec,
    };
    loop {
        if shared.stop_watches.load(Ordering::Acquire) {
            return log;
        }
        if shared.writes_done.load(Ordering::Acquire)
            && target_reached(&shared, &t.tenant, &log.seen)
        {
            return log;
        }
        let Some(from) = rv.clone() else {
            // (Re-)list.
            match call(&c, Method::GET, &base, None, StatusCode::OK).await {
                Ok(b) => {
                    let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
                    log.seen.clear();
                    for item in v["items"].as_array().cloned().unwrap_or_default() {
                        if let (Some(n), Some(r)) = (
                            item["metadata"]["name"].as_str(),
                            item["metadata"]["resourceVersion"].as_str(),
                        ) {
                            log.seen.insert(n.to_owned(), r.to_owned());
                        }
                    }
                    rv = v["metadata"]["resourceVersion"].as_str().map(str::to_owned);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
            continue;
        };
        if started {
            log.resumes += 1;
        }
        started = true;
        shared.requests.fetch_add(1, Ordering::AcqRel);
        let path = format!("{base}&watch=1&resourceVersion={from}&timeoutSeconds=300");
        let at = t0.elapsed();
        let started = Instant::now();
        let sent = tokio::time::timeout(spec.request_timeout, tls.start(Method::GET, &path, None))
            .await
            .unwrap_or(Err(Failure::Timeout));
        let latency = started.elapsed();
        note_latency(&shared, latency);
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                // Retried below like any re-watch; a request that never got an answer counts.
                if !matches!(e, Failure::NotProcessed(_)) {
                    fail(
                        &shared,
                        FailedRequest {
                            at,
                            latency,
                            status: None,
                            what: format!("WATCH {path}: {e}"),
                            body: String::new(),
                        },
                    );
                } else {
                    tls.retries.fetch_add(1, Ordering::Relaxed);
                    shared.requests.fetch_sub(1, Ordering::AcqRel);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if resp.status() != StatusCode::OK {
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if status == StatusCode::GONE {
                log.relists += 1;
                rv = None;
            } else {
                fail(
                    &shared,
                    FailedRequest {
                        at,
                        latency,
                        status: Some(status.as_u16()),
                        what: format!("WATCH {path}: {status}"),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    },
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            continue;
        }
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        'stream: loop {
            if shared.stop_watches.load(Ordering::Acquire)
                || (shared.writes_done.load(Ordering::Acquire)
                    && target_reached(&shared, &t.tenant, &log.seen))
            {
                return log;
            }
            let frame = match tokio::time::timeout(Duration::from_millis(500), body.frame()).await {
                Err(_) => continue,
                Ok(None) => break 'stream,
                Ok(Some(Err(_))) => break 'stream,
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                let Ok(ev) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                let obj = &ev["object"];
                match ev["type"].as_str().unwrap_or("") {
                    "ADDED" | "MODIFIED" => {
                        log.events += 1;
                        if let (Some(n), Some(r)) = (
                            obj["metadata"]["name"].as_str(),
                            obj["metadata"]["resourceVersion"].as_str(),
                        ) {
                            log.seen.insert(n.to_owned(), r.to_owned());
                            rv = Some(r.to_owned());
                        }
                    }
                    "DELETED" => {
                        log.events += 1;
                        if let Some(n) = obj["metadata"]["name"].as_str() {
                            log.seen.remove(n);
                        }
                        rv = obj["metadata"]["resourceVersion"]
                            .as_str()
                            .map(str::to_owned)
                            .or(rv);
                    }
                    "BOOKMARK" => {
                        rv = obj["metadata"]["resourceVersion"]
                            .as_str()
                            .map(str::to_owned)
                            .or(rv);
                    }
                    "ERROR" => {
                        log.error_events += 1;
                        if log.error_messages.len() < 5 {
                            log.error_messages
                                .push(obj["message"].as_str().unwrap_or("").to_owned());
                        }
                        if obj["code"] == 410 {
                            log.relists += 1;
                            rv = None;
                        }
                        break 'stream;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The runtime the load runs on (two threads: the load is light; the machine is shared).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")
}

/// Runs the load on a thread of its own while `disrupt` runs here; returns the report and
/// the instant the load started.
pub fn under_load(
    tenants: &[TenantLoad],
    spec: Spec,
    admin: &Tls,
    disrupt: impl FnOnce(Instant) -> Result<Vec<String>>,
) -> Result<(Report, Vec<String>)> {
    let tenants = tenants.to_vec();
    let admin = admin.clone();
    let t0 = Instant::now();
    let h = std::thread::spawn(move || -> Result<Report> {
        runtime()?.block_on(run(tenants, spec, admin))
    });
    let notes = disrupt(t0);
    let report = h
        .join()
        .map_err(|_| anyhow::anyhow!("the load thread panicked"))??;
    Ok((report, notes?))
}

/// Adds to `failures` what a client would have noticed in `r`: more than `max_failures` failed
/// requests, lost or duplicated writes, missed watch events, watches that had to re-list, or a
/// load that did nothing.
pub fn check(name: &str, r: &Report, max_failures: usize, failures: &mut Vec<String>) {
    if r.failed() > max_failures {
        failures.push(format!(
            "{name}: {} failed requests (at most {max_failures} allowed), first: {:?}",
            r.failed(),
            r.failures.iter().take(5).collect::<Vec<_>>()
        ));
    }
    if !r.lost_writes.is_empty() {
        failures.push(format!("{name}: lost writes {:?}", r.lost_writes));
    }
    if !r.duplicated_writes.is_empty() {
        failures.push(format!(
            "{name}: duplicated writes {:?}",
            r.duplicated_writes
        ));
    }
    if !r.missed_events.is_empty() {
        failures.push(format!(
            "{name}: {} missed watch events, first {:?}",
            r.missed_events.len(),
            r.missed_events.iter().take(5).collect::<Vec<_>>()
        ));
    }
    if r.relists() > 0 {
        failures.push(format!(
            "{name}: {} watches could not resume (410) and re-listed",
            r.relists()
        ));
    }
    if r.creates_acked == 0 || r.watch_events() == 0 {
        failures.push(format!("{name}: the load did nothing: {}", r.summary()));
    }
}
