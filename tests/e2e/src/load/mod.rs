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

mod call;
pub mod report;
mod verify;
mod watch;
mod worker;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::http::Tls;
use report::{FailedRequest, Report};

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
            watch_tasks.push(tokio::spawn(watch::watch_loop(
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
            workers.push(tokio::spawn(worker::worker(
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
        finals.insert(
            t.tenant.clone(),
            verify::upstream_state(&admin, t, &spec).await?,
        );
    }
    let catch_up = Instant::now();
    loop {
        let done = watch_tasks.iter().all(|h| h.is_finished());
        if done || catch_up.elapsed() > Duration::from_secs(20) {
            break;
        }
        // Watches stop themselves once they match the final state; see watch_loop.
        verify::publish_targets(&shared, &finals);
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
    verify::judge_writes(&mut report, &shared, &finals);
    verify::judge_watches(&mut report, &watch_logs, &finals, &tenants, &spec);
    report.watches = watch_logs;
    verify::clean_up(&admin, &tenants, &spec).await?;
    Ok(report)
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
